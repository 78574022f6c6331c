//go:build openblas

package kernels

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
	"fmt"

	"gonum.org/v1/gonum/blas"

	"gonum.org/v1/netlib/blas/netlib"
	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// Backend names the BLAS/LAPACK implementation behind the real kernels:
// "gonum" (pure Go) or, when built with -tags openblas, "openblas".
const Backend = "openblas"

var (
	lapackImpl lapack64 = lapacknetlib.Implementation{}
	blasImpl   blasReal = netlib.Implementation{}
)

// The native hooks below run the column-major LAPACK routines of
// lapack_openblas.go on the kernels' own storage (lower triangle, no
// transposition). Each reports handled = true; the pure-Go build's versions
// (backend_gonum.go) report false and the kernels use their own code.

func potrfNative(n int, a []float64, lda int) (info int, handled bool) {
	return dpotrfLAPACK(n, a, lda), true
}

func potrsNative(n, nrhs int, l []float64, ldl int, b []float64, ldb int) (handled bool) {
	dpotrsLAPACK(n, nrhs, l, ldl, b, ldb) // info < 0 only for bad arguments, checked by the caller
	return true
}

func potriNative(n int, l []float64, ldl int) (info int, handled bool) {
	return dpotriLAPACK(n, l, ldl), true
}

func syevdNative(n int, a []float64, lda int, w []float64, vectors bool) (handled bool, err error) {
	if dsyevdLAPACK(n, a, lda, w, vectors) != 0 {
		return true, fmt.Errorf("%w (LAPACK dsyevd)", ErrNoConvergence)
	}
	return true, nil
}

func zpotrfNative(n int, a []complex128, lda int) (info int, handled bool) {
	return zpotrfLAPACK(n, a, lda), true
}

func zpotrsNative(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) (handled bool) {
	zpotrsLAPACK(n, nrhs, l, ldl, b, ldb)
	return true
}

func zpotriNative(n int, l []complex128, ldl int) (info int, handled bool) {
	return zpotriLAPACK(n, l, ldl), true
}

func heevdNative(n int, a []complex128, lda int, w []float64, vectors bool) (handled bool, err error) {
	if zheevdLAPACK(n, a, lda, w, vectors) != 0 {
		return true, fmt.Errorf("%w (LAPACK zheevd)", ErrNoConvergence)
	}
	return true, nil
}

// zgemmNative runs complex128 products through OpenBLAS's zgemm (row-major
// cblas: Cᵀ = op(B)ᵀ·op(A)ᵀ, where op(X)ᵀ of a conjugate transpose is the
// conjugate transpose of the row-major view).
func zgemmNative(tA, tB bool, m, n, k int, alpha complex128, a []complex128, lda int, b []complex128, ldb int, beta complex128, c []complex128, ldc int) bool {
	if m*n*k < zgemmSmall {
		return false
	}
	ct := func(t bool) blas.Transpose {
		if t {
			return blas.ConjTrans
		}
		return blas.NoTrans
	}
	netlib.Implementation{}.Zgemm(ct(tB), ct(tA), n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
	return true
}
