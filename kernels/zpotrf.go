package kernels

import "math"

// Pure-Go complex Cholesky kernels (column-major, lower triangle, complex128
// arithmetic). Storage may be complex64 or complex128 (S); the potrf/potri
// entry points work on complex128 buffers and the complex64 dtype is widened
// by the caller.

const (
	zcholNB    = 128 // outer (left-looking) block size of zpotrf
	zpanelBase = 8   // width below which the recursive panel is unblocked
	ztrsmNB    = 64  // block size of the triangular solves
)

// zpotrf factors the Hermitian matrix held in the lower triangle of a as
// L·Lᴴ, overwriting it with L. It returns 0 or the 1-based order of the first
// leading minor that is not positive definite. The strict upper triangle may
// be overwritten with junk (callers clear it).
func zpotrf(n int, a []complex128, lda int) int {
	for j := 0; j < n; j += zcholNB {
		jb := min(zcholNB, n-j)
		// Left-looking update of the block column: A[j:n, j:j+jb] -= L[j:n,0:j]·L[j:j+jb,0:j]ᴴ.
		if j > 0 {
			zgemm(false, true, n-j, jb, j, -1, a[j:], lda, a[j:], lda, 1, a[j+j*lda:], lda)
		}
		if info := zpanelChol(n-j, jb, a[j+j*lda:], lda); info > 0 {
			return j + info
		}
	}
	return 0
}

// zpanelChol factors an m×w panel (m ≥ w): the w×w top block is Cholesky
// factorized and the rows below are solved against its factor. Recursive on
// the width so that most work is in zgemm.
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
	zgemm(false, true, m-w1, w-w1, w1, -1, a[w1:], lda, a[w1:], lda, 1, a[w1+w1*lda:], lda)
	if info := zpanelChol(m-w1, w-w1, a[w1+w1*lda:], lda); info > 0 {
		return w1 + info
	}
	return 0
}

// ztrsmLowerLeft solves L·X = B, or Lᴴ·X = B when conjTrans, in place in the
// m×n matrix b; L is m×m lower triangular with a non-unit diagonal.
func ztrsmLowerLeft[S complexStore](conjTrans bool, m, n int, l []S, ldl int, b []S, ldb int) {
	if m == 0 || n == 0 {
		return
	}
	if !conjTrans {
		for i0 := 0; i0 < m; i0 += ztrsmNB {
			ib := min(ztrsmNB, m-i0)
			ztrsmSmall(false, ib, n, l[i0+i0*ldl:], ldl, b[i0:], ldb)
			if i0+ib < m {
				zgemm(false, false, m-i0-ib, n, ib, -1, l[i0+ib+i0*ldl:], ldl, b[i0:], ldb, 1, b[i0+ib:], ldb)
			}
		}
		return
	}
	last := (m - 1) / ztrsmNB * ztrsmNB
	for i0 := last; i0 >= 0; i0 -= ztrsmNB {
		ib := min(ztrsmNB, m-i0)
		ztrsmSmall(true, ib, n, l[i0+i0*ldl:], ldl, b[i0:], ldb)
		if i0 > 0 {
			// B[0:i0] -= L[i0:i0+ib, 0:i0]ᴴ · X[i0:i0+ib]
			zgemm(true, false, i0, n, ib, -1, l[i0:], ldl, b[i0:], ldb, 1, b, ldb)
		}
	}
}

// ztrsmSmall is the unblocked triangular solve for one diagonal block.
func ztrsmSmall[S complexStore](conjTrans bool, m, n int, l []S, ldl int, b []S, ldb int) {
	for j := 0; j < n; j++ {
		x := b[j*ldb : j*ldb+m]
		if !conjTrans {
			for p := 0; p < m; p++ {
				lc := l[p*ldl : p*ldl+m]
				xp := complex128(x[p]) / complex128(lc[p])
				x[p] = S(xp)
				if xp == 0 {
					continue
				}
				for i := p + 1; i < m; i++ {
					x[i] = S(complex128(x[i]) - complex128(lc[i])*xp)
				}
			}
			continue
		}
		for p := m - 1; p >= 0; p-- {
			lc := l[p*ldl : p*ldl+m]
			s := complex128(x[p])
			for i := p + 1; i < m; i++ {
				s -= conj(complex128(lc[i])) * complex128(x[i])
			}
			x[p] = S(s / conj(complex128(lc[p])))
		}
	}
}

// ztrtri inverts the lower triangular n×n matrix a in place (strict upper
// triangle must be zero; it stays zero). Recursive:
// inv([A 0; B C]) = [inv(A) 0; -inv(C)·B·inv(A) inv(C)].
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
		zgemm(false, false, n2, jb, n1-j0, 1, a[n1+j0*lda:], lda, a[j0+j0*lda:], lda, 0, t[j0*n2:], n2)
	}
	c := a[n1+n1*lda:]
	for i0 := 0; i0 < n2; i0 += bs {
		ib := min(bs, n2-i0)
		// B[I, :] = -inv(C)[I, 0:i0+ib] · tmp[0:i0+ib, :]
		zgemm(false, false, ib, n1, i0+ib, -1, c[i0:], lda, t, n2, 0, a[n1+i0:], lda)
	}
}

// zpotriFromInv forms inv(A) = Mᴴ·M from M = inv(L) (lower, strict upper
// zero) in a, writing the full exactly-Hermitian result into a. Only lower
// blocks are computed: block (I,J), I ≥ J, is M[I:, I]ᴴ·M[I:, J].
func zpotriFromInv(n int, a []complex128, lda int) {
	const nb = 128
	out := make([]complex128, n*n)
	for i0 := 0; i0 < n; i0 += nb {
		ib := min(nb, n-i0)
		for j0 := 0; j0 <= i0; j0 += nb {
			jb := min(nb, n-j0)
			zgemm(true, false, ib, jb, n-i0, 1, a[i0+i0*lda:], lda, a[i0+j0*lda:], lda, 0, out[i0+j0*n:], n)
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
