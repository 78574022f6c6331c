package lapack

const ztrsmNB = 64 // block size of Ztrsm

// Ztrsm solves op(L)·X = B in place for X (BLAS ztrsm with side = 'L',
// uplo = 'L', diag = 'N'), where L is the m×m lower triangular matrix with a
// non-unit diagonal in l (leading dimension ldl ≥ max(1, m)) and B is the m×n
// matrix in b (leading dimension ldb ≥ max(1, m)), both column-major. op(L)
// is L, or Lᴴ when conjTrans is set.
//
// Only the lower triangle of l is read and only the m×n block of b is
// written. Storage may be complex64 or complex128; the arithmetic is
// complex128. The solve is blocked by 64 rows, the updates done by Zgemm. No singularity check is made: a zero on
// the diagonal gives Inf or NaN.
func Ztrsm[S Complex](conjTrans bool, m, n int, l []S, ldl int, b []S, ldb int) {
	checkMatrix("Ztrsm", "l", m, m, ldl, len(l))
	checkMatrix("Ztrsm", "b", m, n, ldb, len(b))
	if m == 0 || n == 0 {
		return
	}
	if !conjTrans {
		for i0 := 0; i0 < m; i0 += ztrsmNB {
			ib := min(ztrsmNB, m-i0)
			ztrsmSmall(false, ib, n, l[i0+i0*ldl:], ldl, b[i0:], ldb)
			if i0+ib < m {
				Zgemm(false, false, m-i0-ib, n, ib, -1, l[i0+ib+i0*ldl:], ldl, b[i0:], ldb, 1, b[i0+ib:], ldb)
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
			Zgemm(true, false, i0, n, ib, -1, l[i0:], ldl, b[i0:], ldb, 1, b, ldb)
		}
	}
}

// ztrsmSmall is the unblocked triangular solve for one diagonal block.
func ztrsmSmall[S Complex](conjTrans bool, m, n int, l []S, ldl int, b []S, ldb int) {
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
