//go:build !openblas

package kernels

import (
	"gonum.org/v1/gonum/blas/gonum"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
)

// Backend names the BLAS/LAPACK implementation behind the real kernels:
// "gonum" (pure Go) or, when built with -tags openblas, "openblas".
const Backend = "gonum"

var (
	lapackImpl lapack64 = lapackgonum.Implementation{}
	blasImpl   blasReal = gonum.Implementation{}
)

// The native hooks would run column-major LAPACK routines in place; the
// pure-Go build has none, so each reports that it did not handle the call and
// the kernels use their own code (backend_openblas.go has the real ones).

func potrfNative(n int, a []float64, lda int) (info int, handled bool) { return 0, false }

func potrsNative(n, nrhs int, l []float64, ldl int, b []float64, ldb int) (handled bool) {
	return false
}

func potriNative(n int, l []float64, ldl int) (info int, handled bool) { return 0, false }

func syevdNative(n int, a []float64, lda int, w []float64, vectors bool) (handled bool, err error) {
	return false, nil
}

func zpotrfNative(n int, a []complex128, lda int) (info int, handled bool) { return 0, false }

func zpotrsNative(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) (handled bool) {
	return false
}

func zpotriNative(n int, l []complex128, ldl int) (info int, handled bool) { return 0, false }

func heevdNative(n int, a []complex128, lda int, w []float64, vectors bool) (handled bool, err error) {
	return false, nil
}

// zgemmNative would run a native complex128 gemm; the pure-Go build uses the
// package's own kernel (zgemm.go).
func zgemmNative(tA, tB bool, m, n, k int, alpha complex128, a []complex128, lda int, b []complex128, ldb int, beta complex128, c []complex128, ldc int) bool {
	return false
}
