package lapack

// Zlauum computes the product Mᴴ·M of the n×n lower triangular matrix M in a
// (column-major, leading dimension lda ≥ max(1, n)), as LAPACK zlauum with
// uplo = 'L' does, and unlike zlauum writes the full result: both triangles of
// the leading n×n block of a are overwritten with Mᴴ·M, which is exactly
// Hermitian (a[j,i] == conj(a[i,j]) bitwise, real diagonal). The strict upper
// triangle of M must be zero on entry (blocks are multiplied as full blocks);
// rows n..lda-1 are not touched. With M = L⁻¹ from Ztrtri the result is
// (L·Lᴴ)⁻¹, the second half of LAPACK's zpotri.
//
// Only the lower blocks (I, J), I ≥ J, are computed, each as
// M[I:, I]ᴴ·M[I:, J] by Zgemm into an n×n workspace that Zlauum allocates.
func Zlauum(n int, a []complex128, lda int) {
	checkMatrix("Zlauum", "a", n, n, lda, len(a))
	const nb = 128
	out := make([]complex128, n*n)
	for i0 := 0; i0 < n; i0 += nb {
		ib := min(nb, n-i0)
		for j0 := 0; j0 <= i0; j0 += nb {
			jb := min(nb, n-j0)
			Zgemm(true, false, ib, jb, n-i0, 1, a[i0+i0*lda:], lda, a[i0+j0*lda:], lda, 0, out[i0+j0*n:], n)
		}
	}
	for j := 0; j < n; j++ {
		a[j+j*lda] = complex(real(out[j+j*n]), 0)
		for i := j + 1; i < n; i++ {
			v := out[i+j*n]
			a[i+j*lda] = v
			a[j+i*lda] = conj(v)
		}
	}
}
