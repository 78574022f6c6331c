//go:build openblas

package kernels

// This file routes the float64 (and through it the float32) kernels through
// OpenBLAS and the reference LAPACKE interface via gonum.org/v1/netlib. Build
// with
//
//	CGO_LDFLAGS='-llapacke -lopenblas' go build -tags openblas
//
// (Debian packages libopenblas-dev and liblapacke-dev).

import (
	"fmt"

	"gonum.org/v1/gonum/blas"

	"gonum.org/v1/netlib/blas/netlib"
	"gonum.org/v1/netlib/lapack/lapacke"
	lapacknetlib "gonum.org/v1/netlib/lapack/netlib"
)

// Backend names the BLAS/LAPACK implementation behind the real kernels:
// "gonum" (pure Go) or, when built with -tags openblas, "openblas".
const Backend = "openblas"

var (
	lapackImpl lapack64 = lapacknetlib.Implementation{}
	blasImpl   blasReal = netlib.Implementation{}
)

// syevdNative runs LAPACK's Dsyevd (divide and conquer) on the lower triangle
// of the column-major a. The LAPACKE row-major interface sees the transpose,
// that is the upper triangle of the same symmetric matrix; its eigenvectors
// come back as rows, so they are transposed in place at the end.
func syevdNative(n int, a []float64, lda int, w []float64, vectors bool) (handled bool, err error) {
	jobz := byte('N')
	if vectors {
		jobz = 'V'
	}
	work := make([]float64, 1)
	iwork := make([]int32, 1)
	lapacke.Dsyevd(jobz, 'U', n, a, lda, w, work, -1, iwork, -1)
	lwork := int(work[0])
	liwork := int(iwork[0])
	work = make([]float64, max(1, lwork))
	iwork = make([]int32, max(1, liwork))
	if !lapacke.Dsyevd(jobz, 'U', n, a, lda, w, work, lwork, iwork, liwork) {
		return true, fmt.Errorf("%w (LAPACK dsyevd)", ErrNoConvergence)
	}
	if vectors {
		transposeSquare(n, a, lda)
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
