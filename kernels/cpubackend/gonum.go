//go:build !openblas

package cpubackend

import (
	"gonum.org/v1/gonum/blas/gonum"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
)

// Name names the BLAS/LAPACK implementation behind the real kernels:
// "gonum" (pure Go) or, when built with -tags openblas, "openblas".
const Name = "gonum"

// SerialTriangular says that the backend's triangular solve and product
// (Dtrsm, Dtrmm, Strsm, Strmm) run on one goroutine: gonum's do, its gemm
// does not.
const SerialTriangular = true

var (
	LAPACK Lapack64 = lapackgonum.Implementation{}
	BLAS   BlasReal = gonum.Implementation{}
)

// The native hooks would run column-major LAPACK routines in place; the
// pure-Go build has none, so each reports that it did not handle the call and
// the kernels use their own code (openblas.go has the real ones).

// DpotrfNative reports that it did not handle the call (no LAPACK here).
func DpotrfNative(n int, a []float64, lda int) (info int, handled bool) { return 0, false }

// DpotrsNative reports that it did not handle the call.
func DpotrsNative(n, nrhs int, l []float64, ldl int, b []float64, ldb int) (handled bool) {
	return false
}

// DpotriNative reports that it did not handle the call.
func DpotriNative(n int, l []float64, ldl int) (info int, handled bool) { return 0, false }

// DsyevdNative reports that it did not handle the call.
func DsyevdNative(n int, a []float64, lda int, w []float64, vectors bool) (info int, handled bool) {
	return 0, false
}

// ZpotrfNative reports that it did not handle the call.
func ZpotrfNative(n int, a []complex128, lda int) (info int, handled bool) { return 0, false }

// ZpotrsNative reports that it did not handle the call.
func ZpotrsNative(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) (handled bool) {
	return false
}

// ZpotriNative reports that it did not handle the call.
func ZpotriNative(n int, l []complex128, ldl int) (info int, handled bool) { return 0, false }

// ZheevdNative reports that it did not handle the call.
func ZheevdNative(n int, a []complex128, lda int, w []float64, vectors bool) (info int, handled bool) {
	return 0, false
}

// ZgemmNative would run a native complex128 gemm; the pure-Go build uses the
// pure-Go kernel of kernels/lapack (Zgemm).
func ZgemmNative(tA, tB bool, m, n, k int, alpha complex128, a []complex128, lda int, b []complex128, ldb int, beta complex128, c []complex128, ldc int) bool {
	return false
}
