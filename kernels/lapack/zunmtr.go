package lapack

// Zunmtr overwrites the n×ncols matrix C in c (column-major, leading
// dimension ldc ≥ max(1, n)) with Q·C, where Q = H(0)·H(1)···H(n−2) is the
// unitary matrix of the reduction by Zhetrd, given by its reflectors in the
// lower triangle of a (leading dimension lda ≥ max(1, n)) and tau (length
// n−1) (LAPACK zunmtr with side = 'L', uplo = 'L', trans = 'N'). a and tau are
// not modified; only the n×ncols block of c is written.
//
// The reflectors are applied in blocks of 64 as I − V·T·Vᴴ (zlarft, zlarfb:
// forward, columnwise), the products by Zgemm; Zunmtr allocates its own
// workspace. Dormtr is the same for real matrices.
func Zunmtr(n, ncols int, a []complex128, lda int, tau []complex128, c []complex128, ldc int) {
	checkMatrix("Zunmtr", "a", n, n, lda, len(a))
	checkMatrix("Zunmtr", "c", n, ncols, ldc, len(c))
	checkVector("Zunmtr", "tau", len(tau), n-1)
	unmtr(n, ncols, a, lda, tau, c, ldc, Zgemm[complex128], zdotc)
}

// unmtr is Zunmtr and Dormtr: Q·C by blocks of reflectors, with the gemm
// and the dot product (conjugating its first argument) of the element type.
func unmtr[T float64 | complex128](n, ncols int, a []T, lda int, tau []T, c []T, ldc int,
	gemm func(tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int),
	dotc func(x, y []T) T) {
	const nb = 64
	k := n - 1 // number of reflectors
	if k <= 0 || ncols == 0 {
		return
	}
	m := n - 1 // reflectors act on rows 1..n-1
	vbuf := make([]T, m*nb)
	t := make([]T, nb*nb)
	wbuf := make([]T, 2*nb*ncols)
	last := (k - 1) / nb * nb
	for i0 := last; i0 >= 0; i0 -= nb {
		ib := min(nb, k-i0)
		rows := m - i0 // reflector i0 starts at row i0+1 of the full matrix
		// Dense V (rows×ib): column p has zeros above row p, 1 at row p.
		v := vbuf[:rows*ib]
		for p := 0; p < ib; p++ {
			col := v[p*rows : (p+1)*rows]
			clear(col[:p])
			col[p] = 1
			copy(col[p+1:], a[i0+1+p+1+(i0+p)*lda:n+(i0+p)*lda])
		}
		// T (ib×ib upper): T[p,p] = tau_p, T[0:p, p] = −tau_p·T[0:p,0:p]·V[:,0:p]ᴴ·V[:,p].
		// Every entry of V is used: unlike gonum's dlarft (v0.17), which
		// trims trailing zeros of the reflectors and at p = 1 loses the
		// length of reflector 0, giving a wrong T.
		tt := t[:ib*ib]
		clear(tt)
		for p := 0; p < ib; p++ {
			tp := tau[i0+p]
			tt[p+p*ib] = tp
			if p == 0 || tp == 0 {
				continue
			}
			vp := v[p*rows : (p+1)*rows]
			col := tt[p*ib : p*ib+p]
			for q := 0; q < p; q++ {
				// V[:, q] is zero above row q; V[:, p] is zero above row p > q.
				col[q] = -tp * dotc(v[q*rows+p:(q+1)*rows], vp[p:])
			}
			// col = T[0:p,0:p]·col (upper triangular, in place from the top)
			for r := 0; r < p; r++ {
				var s T
				for q := r; q < p; q++ {
					s += tt[r+q*ib] * col[q]
				}
				col[r] = s
			}
		}
		cc := c[i0+1:]
		w := wbuf[:ib*ncols]
		w2 := wbuf[nb*ncols : nb*ncols+ib*ncols]
		// W = Vᴴ·C ; W = T·W ; C −= V·W
		gemm(true, false, ib, ncols, rows, 1, v, rows, cc, ldc, 0, w, ib)
		gemm(false, false, ib, ncols, ib, 1, tt, ib, w, ib, 0, w2, ib)
		gemm(false, false, rows, ncols, ib, -1, v, rows, w2, ib, 1, cc, ldc)
	}
}
