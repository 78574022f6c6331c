package lapack

import "fmt"

// Ztrtri inverts the n×n lower triangular matrix L with a non-unit diagonal
// in place (LAPACK ztrtri, uplo = 'L', diag = 'N'), column-major in a with
// leading dimension lda ≥ max(1, n). The strict upper triangle must be zero on
// entry (the recursion multiplies diagonal blocks as full blocks) and is zero
// on return; rows n..lda-1 are not touched. work is scratch of length at least
// (n/2)·(n−n/2).
//
// The inverse is recursive, inv([A 0; B C]) = [inv(A) 0; −inv(C)·B·inv(A)
// inv(C)], with the products by Zgemm and unblocked ztrti2 below order 32. No
// singularity check is made: a zero on the diagonal gives Inf or NaN (callers
// check the diagonal first, as LAPACK's info > 0 would).
func Ztrtri(n int, a []complex128, lda int, work []complex128) {
	checkMatrix("Ztrtri", "a", n, n, lda, len(a))
	if len(work) < (n/2)*(n-n/2) {
		panic(fmt.Sprintf("lapack: Ztrtri: len(work) = %d, need (n/2)·(n−n/2) = %d", len(work), (n/2)*(n-n/2)))
	}
	ztrtri(n, a, lda, work)
}

func ztrtri(n int, a []complex128, lda int, tmp []complex128) {
	if n <= 32 {
		// LAPACK ztrti2 (lower, non-unit): from the last column backwards,
		// a[j+1:, j] = -inv(a[j,j]) · T · a[j+1:, j] with T the already
		// inverted trailing block.
		for j := n - 1; j >= 0; j-- {
			a[j+j*lda] = 1 / a[j+j*lda]
			ajj := -a[j+j*lda]
			if j < n-1 {
				// x := T·x with T lower triangular (n-j-1), in place from the bottom.
				x := a[j+1+j*lda : n+j*lda]
				m := n - j - 1
				for i := m - 1; i >= 0; i-- {
					var s complex128
					for p := 0; p <= i; p++ {
						s += a[j+1+i+(j+1+p)*lda] * x[p]
					}
					x[i] = s
				}
				for i := range x {
					x[i] *= ajj
				}
			}
		}
		return
	}
	n1 := n / 2
	n2 := n - n1
	ztrtri(n1, a, lda, tmp)
	ztrtri(n2, a[n1+n1*lda:], lda, tmp)
	// B := -inv(C)·B·inv(A): tmp = B·inv(A), then B = -inv(C)·tmp. Both
	// products skip the zero blocks above the diagonal of the triangles.
	t := tmp[:n2*n1]
	const bs = 96
	for j0 := 0; j0 < n1; j0 += bs {
		jb := min(bs, n1-j0)
		// tmp[:, J] = B[:, j0:] · inv(A)[j0:, J]
		Zgemm(false, false, n2, jb, n1-j0, 1, a[n1+j0*lda:], lda, a[j0+j0*lda:], lda, 0, t[j0*n2:], n2)
	}
	c := a[n1+n1*lda:]
	for i0 := 0; i0 < n2; i0 += bs {
		ib := min(bs, n2-i0)
		// B[I, :] = -inv(C)[I, 0:i0+ib] · tmp[0:i0+ib, :]
		Zgemm(false, false, ib, n1, i0+ib, -1, c[i0:], lda, t, n2, 0, a[n1+i0:], lda)
	}
}
