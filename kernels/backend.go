package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// lapack64 is the subset of a row-major gonum-style LAPACK implementation the
// float64 kernels use. It is provided by gonum's pure-Go implementation or, with
// the openblas build tag, by gonum.org/v1/netlib (see backend_*.go).
//
// The implementations are row-major; a column-major matrix is the row-major
// view of its transpose, so the kernels pass uplo/trans flipped where needed.
type lapack64 interface {
	Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool
	Dpotri(ul blas.Uplo, n int, a []float64, lda int) bool
	Dormlq(side blas.Side, trans blas.Transpose, m, n, k int, a []float64, lda int, tau, c []float64, ldc int, work []float64, lwork int)
	Dsterf(n int, d, e []float64) bool
	Dsteqr(compz lapack.EVComp, n int, d, e, z []float64, ldz int, work []float64) bool
}

// blasReal is the real BLAS used by the real kernels and by the complex gemm
// (which is split into real products only through its own kernel, see zgemm.go).
type blasReal interface {
	blas.Float64Level3
	blas.Float32Level3
}
