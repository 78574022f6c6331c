package lapack

import (
	"gonum.org/v1/gonum/blas"

	"github.com/mgla/mgla/kernels/cpubackend"
)

// Dgemm computes C = alpha·op(A)·op(B) + beta·C (BLAS dgemm) for column-major
// float64 matrices, element (i, j) of X at x[i+j*ldx]: C is m×n, op(A) m×k
// and op(B) k×n, and op(X) is X, or Xᵀ when its flag tA or tB is set. Each
// leading dimension is at least max(1, rows of the stored matrix). Only the
// m×n block of c is written; when beta is zero it is not read.
//
// The product runs on the row-major BLAS of kernels/cpubackend (gonum, or
// OpenBLAS with the openblas tag): the row-major view of a column-major matrix
// is its transpose, so Cᵀ = op(B)ᵀ·op(A)ᵀ is computed, without copies.
func Dgemm(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkGemm("Dgemm", tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// Some backends reject lda < 1 for empty operands; scale C directly.
		for j := 0; j < n; j++ {
			cc := c[j*ldc : j*ldc+m]
			for i := range cc {
				if beta == 0 {
					cc[i] = 0
				} else {
					cc[i] *= beta
				}
			}
		}
		return
	}
	cpubackend.BLAS.Dgemm(blasTrans(tB), blasTrans(tA), n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
}

func blasTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}
