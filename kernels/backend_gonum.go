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

// The pure-Go build has no native LAPACK: the hooks below report that they
// did not handle the call, and the kernels run their own code.
func potrfNativeF64(int, []float64, int) (bool, int)                      { return false, 0 }
func potrsNativeF64(int, int, []float64, int, []float64, int) bool        { return false }
func potriNativeF64(int, []float64, int) (bool, int)                      { return false, 0 }
func potrfNativeC128(int, []complex128, int) (bool, int)                  { return false, 0 }
func potrsNativeC128(int, int, []complex128, int, []complex128, int) bool { return false }
func potriNativeC128(int, []complex128, int) (bool, int)                  { return false, 0 }
func heevdNative(int, []complex128, int, []float64, bool) (bool, error)   { return false, nil }

// zgemmNative would run a native complex128 gemm; the pure-Go build uses the
// package's own kernel (zgemm.go).
func zgemmNative(tA, tB bool, m, n, k int, alpha complex128, a []complex128, lda int, b []complex128, ldb int, beta complex128, c []complex128, ldc int) bool {
	return false
}
