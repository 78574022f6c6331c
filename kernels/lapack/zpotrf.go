package lapack

import "math"

const (
	zcholNB    = 128 // outer (left-looking) block size of Zpotrf
	zpanelBase = 8   // width below which the recursive panel is unblocked
)

// Zpotrf computes the Cholesky factorization A = L·Lᴴ of the n×n Hermitian
// positive definite matrix A (LAPACK zpotrf, uplo = 'L'), column-major with
// leading dimension lda ≥ max(1, n). Only the lower triangle of a is read
// (the imaginary parts of the diagonal are ignored); on return it holds L.
// The strict upper triangle is used as scratch and holds junk on return
// (callers that need it zero clear it); rows n..lda-1 are not touched.
//
// The factorization is left-looking and blocked (blocks of 128 columns);
// each block column is updated by one Zgemm and factorized by a recursive
// panel Cholesky that puts most of its work into Zgemm too. No workspace is
// needed beyond Zgemm's pooled packing buffers.
//
// Zpotrf returns info = 0 on success, or the 1-based order of the first
// leading minor that is not positive definite (its pivot is ≤ 0, +Inf or
// NaN), as LAPACK's info > 0; the factorization stops there and the content
// of a from that column on is unspecified.
func Zpotrf(n int, a []complex128, lda int) int {
	checkMatrix("Zpotrf", "a", n, n, lda, len(a))
	for j := 0; j < n; j += zcholNB {
		jb := min(zcholNB, n-j)
		// Left-looking update of the block column: A[j:n, j:j+jb] -= L[j:n,0:j]·L[j:j+jb,0:j]ᴴ.
		if j > 0 {
			Zgemm(false, true, n-j, jb, j, -1, a[j:], lda, a[j:], lda, 1, a[j+j*lda:], lda)
		}
		if info := zpanelChol(n-j, jb, a[j+j*lda:], lda); info > 0 {
			return j + info
		}
	}
	return 0
}

// zpanelChol factors an m×w panel (m ≥ w): the w×w top block is Cholesky
// factorized and the rows below are solved against its factor. Recursive on
// the width so that most work is in Zgemm.
func zpanelChol(m, w int, a []complex128, lda int) int {
	if w <= zpanelBase {
		for jj := 0; jj < w; jj++ {
			col := a[jj*lda : jj*lda+m]
			d := real(col[jj])
			if !(d > 0) || math.IsInf(d, 0) {
				return jj + 1
			}
			d = math.Sqrt(d)
			col[jj] = complex(d, 0)
			inv := 1 / d
			below := col[jj+1 : m]
			for i := range below {
				below[i] = complex(real(below[i])*inv, imag(below[i])*inv)
			}
			for q := jj + 1; q < w; q++ {
				t := conj(col[q])
				dst := a[q*lda+q : q*lda+m]
				src := col[q:m]
				for i, v := range src {
					dst[i] -= v * t
				}
			}
		}
		return 0
	}
	w1 := w / 2
	if info := zpanelChol(m, w1, a, lda); info > 0 {
		return info
	}
	Zgemm(false, true, m-w1, w-w1, w1, -1, a[w1:], lda, a[w1:], lda, 1, a[w1+w1*lda:], lda)
	if info := zpanelChol(m-w1, w-w1, a[w1+w1*lda:], lda); info > 0 {
		return w1 + info
	}
	return 0
}
