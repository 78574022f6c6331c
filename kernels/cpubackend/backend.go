// Package cpubackend is the BLAS/LAPACK implementation under the CPU kernels
// of package kernels: gonum's pure-Go blas/gonum and lapack/gonum by default,
// and with the openblas build tag OpenBLAS (cblas through gonum.org/v1/netlib)
// plus LAPACK's column-major Fortran routines called directly through cgo. It
// sits beside the GPU backends kernels/cusolver and kernels/ptx.
//
// It owns the backend choice (Name), the row-major LAPACK and BLAS values the
// float64 kernels call (LAPACK, BLAS) and the native hooks (DpotrfNative and
// the others), which run a whole LAPACK routine on column-major storage in
// place and report handled = false in the pure-Go build. It reports LAPACK's
// info values, not errors: package kernels turns them into its errors.
//
// It may import gonum and gonum.org/v1/netlib only, nothing of this module.
package cpubackend

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// Lapack64 is the subset of a row-major gonum-style LAPACK implementation the
// float64 kernels use. It is provided by gonum's pure-Go implementation or, with
// the openblas build tag, by gonum.org/v1/netlib (see gonum.go and openblas.go).
//
// The implementations are row-major; a column-major matrix is the row-major
// view of its transpose, so the kernels pass uplo/trans flipped where needed.
type Lapack64 interface {
	Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool
	Dpotri(ul blas.Uplo, n int, a []float64, lda int) bool
	Dsteqr(compz lapack.EVComp, n int, d, e, z []float64, ldz int, work []float64) bool
}

// BlasReal is the real BLAS used by the real kernels and by the complex gemm
// (which is split into real products only through its own kernel, see
// kernels/lapack/zgemm.go).
type BlasReal interface {
	blas.Float64Level3
	blas.Float32Level3
}
