package kernels

import (
	"gonum.org/v1/gonum/blas"

	"github.com/mgla/mgla/kernels/cpubackend"
	"github.com/mgla/mgla/kernels/lapack"
)

// Gemm computes C = alpha·op(A)·op(B) + beta·C for column-major matrices,
// element (i,j) of X at x[i+j*ldx]. op(X) is X when the flag is false and Xᴴ
// when it is true: the conjugate transpose for complex types, the transpose
// for real ones. C is m×n, op(A) is m×k, op(B) is k×n. When beta is zero C is
// only written, so NaNs already in C do not propagate.
//
// float64 and float32 use the BLAS backend (gonum, or OpenBLAS with the
// openblas tag) in their own precision; complex64 and complex128 use the
// package's pure-Go kernel, which accumulates in complex128.
func Gemm[T Scalar](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("a", ar, ac, lda, len(a))
	checkMatrix("b", br, bc, ldb, len(b))
	checkMatrix("c", m, n, ldc, len(c))
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
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
	switch dtypeOf[T]() {
	case dtFloat64:
		lapack.Dgemm(transA, transB, m, n, k, castScalar[float64](alpha), cast[float64](a), lda, cast[float64](b), ldb, castScalar[float64](beta), cast[float64](c), ldc)
	case dtFloat32:
		// Row-major view: Cᵀ = op(B)ᵀ·op(A)ᵀ.
		cpubackend.BLAS.Sgemm(blasTrans(transB), blasTrans(transA), n, m, k, castScalar[float32](alpha), cast[float32](b), ldb, cast[float32](a), lda, castScalar[float32](beta), cast[float32](c), ldc)
	case dtComplex128:
		lapack.Zgemm(transA, transB, m, n, k, castScalar[complex128](alpha), cast[complex128](a), lda, cast[complex128](b), ldb, castScalar[complex128](beta), cast[complex128](c), ldc)
	default:
		lapack.Zgemm(transA, transB, m, n, k, complex128(castScalar[complex64](alpha)), cast[complex64](a), lda, cast[complex64](b), ldb, complex128(castScalar[complex64](beta)), cast[complex64](c), ldc)
	}
}

// TrmmLowerLeft overwrites the real m×n matrix B (leading dimension ldb)
// with op(L)·B, where L is m×m lower triangular with a non-unit diagonal
// (leading dimension ldl; only its lower triangle is read) and op(L) is L,
// or Lᵀ when trans is set: the BLAS triangular multiply, half the flops of
// a general product with L. Where blockTriangular says so it is blocked
// like the triangular solve (trsmLowerLeftReal): the diagonal blocks by the
// backend's trmm, the rest by Gemm.
func TrmmLowerLeft[T float32 | float64](trans bool, m, n int, l []T, ldl int, b []T, ldb int) {
	checkMatrix("l", m, m, ldl, len(l))
	checkMatrix("b", m, n, ldb, len(b))
	if m == 0 || n == 0 {
		return
	}
	const nb = triangularBlock
	if !blockTriangular[T](m, n) {
		backendTrmm(trans, n, m, l, ldl, b, ldb)
		return
	}
	if trans {
		// Row block I of LᵀB is L_IIᵀ·B_I + L_KIᵀ·B_K over the blocks K below
		// I: top down, the rows below are still B's.
		for i0 := 0; i0 < m; i0 += nb {
			ib := min(nb, m-i0)
			backendTrmm(true, n, ib, l[i0+i0*ldl:], ldl, b[i0:], ldb)
			if i0+ib < m {
				Gemm(true, false, ib, n, m-i0-ib, 1, l[i0+ib+i0*ldl:], ldl, b[i0+ib:], ldb, 1, b[i0:], ldb)
			}
		}
		return
	}
	// Row block I of LB is L_II·B_I + L_IK·B_K over the blocks K above I:
	// bottom up, the rows above are still B's.
	for i0 := (m - 1) / nb * nb; i0 >= 0; i0 -= nb {
		ib := min(nb, m-i0)
		backendTrmm(false, n, ib, l[i0+i0*ldl:], ldl, b[i0:], ldb)
		if i0 > 0 {
			Gemm(false, false, ib, n, i0, 1, l[i0:], ldl, b, ldb, 1, b[i0:], ldb)
		}
	}
}

func blasTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}
