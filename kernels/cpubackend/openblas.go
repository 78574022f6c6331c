//go:build openblas

package cpubackend

// This file routes the kernels through OpenBLAS: Cholesky, solve, inverse and
// the eigensolver (float64 and complex128, and through them float32 and
// complex64) call LAPACK's column-major routines directly (lapack_openblas.go);
// the remaining real BLAS/LAPACK calls go through gonum.org/v1/netlib. Build
// with
//
//	CGO_LDFLAGS='-llapacke -lopenblas' go build -tags openblas
//
// (Debian packages libopenblas-dev and liblapacke-dev).

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"gonum.org/v1/netlib/blas/netlib"
	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// Name names the BLAS/LAPACK implementation behind the real kernels:
// "gonum" (pure Go) or, when built with -tags openblas, "openblas".
const Name = "openblas"

// SerialTriangular says that the backend's triangular solve and product
// (Dtrsm, Dtrmm, Strsm, Strmm) run on one goroutine: OpenBLAS's are
// threaded.
const SerialTriangular = false

var (
	LAPACK Lapack64 = lapacknetlib.Implementation{}
	BLAS   BlasReal = netlib.Implementation{}
)

// The native hooks below run the column-major LAPACK routines of
// lapack_openblas.go on the kernels' own storage (lower triangle, no
// transposition). Each reports handled = true, but for eigenvectors of an
// order whose workspace does not fit LAPACK's 32-bit INTEGER (syevdFits);
// the pure-Go build's versions (gonum.go) report false and the kernels use
// their own code.

// DpotrfNative factorizes the lower triangle of a in place by dpotrf('L'):
// LAPACK's info, and whether it handled the call.
func DpotrfNative(n int, a []float64, lda int) (info int, handled bool) {
	return DpotrfLAPACK(n, a, lda), true
}

// DpotrsNative solves L·Lᵀ·X = B in place of b by dpotrs('L'), and
// reports whether it handled the call.
func DpotrsNative(n, nrhs int, l []float64, ldl int, b []float64, ldb int) (handled bool) {
	DpotrsLAPACK(n, nrhs, l, ldl, b, ldb) // info < 0 only for bad arguments, checked by the caller
	return true
}

// DpotriNative writes the lower triangle of A⁻¹ over that of the factor L
// by dpotri('L'): LAPACK's info, and whether it handled the call.
func DpotriNative(n int, l []float64, ldl int) (info int, handled bool) {
	return DpotriLAPACK(n, l, ldl), true
}

// DsyevdNative computes the eigenvalues (and with vectors the eigenvectors,
// over a) of the symmetric matrix in a's lower triangle by dsyevd('L'):
// LAPACK's info, and whether it handled the call.
func DsyevdNative(n int, a []float64, lda int, w []float64, vectors bool) (info int, handled bool) {
	if !syevdFits(n, vectors) {
		return 0, false
	}
	return DsyevdLAPACK(n, a, lda, w, vectors), true
}

// syevdFits reports whether the workspaces of dsyevd and zheevd of order n
// fit LAPACK's 32-bit INTEGER: with vectors they take 1 + 6n + 2n² reals
// (dsyevd's WORK, zheevd's RWORK), past math.MaxInt32 from n = 32767, where
// the workspace query itself overflows (it returned 1,114,078 for dsyevd).
// Larger orders with vectors run the pure-Go eigensolver.
func syevdFits(n int, vectors bool) bool {
	return !vectors || 1+6*n+2*n*n <= math.MaxInt32
}

// ZpotrfNative is DpotrfNative for complex128 (zpotrf).
func ZpotrfNative(n int, a []complex128, lda int) (info int, handled bool) {
	return ZpotrfLAPACK(n, a, lda), true
}

// ZpotrsNative is DpotrsNative for complex128 (zpotrs).
func ZpotrsNative(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) (handled bool) {
	ZpotrsLAPACK(n, nrhs, l, ldl, b, ldb)
	return true
}

// ZpotriNative is DpotriNative for complex128 (zpotri).
func ZpotriNative(n int, l []complex128, ldl int) (info int, handled bool) {
	return ZpotriLAPACK(n, l, ldl), true
}

// ZheevdNative is DsyevdNative for Hermitian complex128 matrices (zheevd).
func ZheevdNative(n int, a []complex128, lda int, w []float64, vectors bool) (info int, handled bool) {
	if !syevdFits(n, vectors) {
		return 0, false
	}
	return ZheevdLAPACK(n, a, lda, w, vectors), true
}

// ZgemmNative runs complex128 products through OpenBLAS's zgemm (row-major
// cblas: Cᵀ = op(B)ᵀ·op(A)ᵀ, where op(X)ᵀ of a conjugate transpose is the
// conjugate transpose of the row-major view).
func ZgemmNative(tA, tB bool, m, n, k int, alpha complex128, a []complex128, lda int, b []complex128, ldb int, beta complex128, c []complex128, ldc int) bool {
	ct := func(t bool) blas.Transpose {
		if t {
			return blas.ConjTrans
		}
		return blas.NoTrans
	}
	netlib.Implementation{}.Zgemm(ct(tB), ct(tA), n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
	return true
}
