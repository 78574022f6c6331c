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

// syevdNative would run a native Dsyevd; the pure-Go build has none, so it
// reports that it did not handle the call.
func syevdNative(n int, a []float64, lda int, w []float64, vectors bool) (handled bool, err error) {
	return false, nil
}

// zgemmNative would run a native complex128 gemm; the pure-Go build uses the
// package's own kernel (zgemm.go).
func zgemmNative(tA, tB bool, m, n, k int, alpha complex128, a []complex128, lda int, b []complex128, ldb int, beta complex128, c []complex128, ldc int) bool {
	return false
}
