//go:build openblas

package kernels

// This file routes the BLAS of the kernels through OpenBLAS (gonum.org/v1/netlib)
// and, in lapack_openblas.go, the LAPACK routines of Cholesky, solve, inverse
// and eigensolver to OpenBLAS's column-major LAPACK directly. Build with
//
//	CGO_LDFLAGS='-llapacke -lopenblas' go build -tags openblas
//
// (Debian packages libopenblas-dev and liblapacke-dev).

import (
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
