package lapack

// Zhetrd reduces the n×n complex Hermitian matrix A, given by the lower
// triangle of the column-major a (leading dimension lda ≥ max(1, n); the
// imaginary parts of the diagonal are ignored), to real symmetric tridiagonal
// form T = Qᴴ·A·Q by a unitary similarity (LAPACK zhetrd, uplo = 'L'). The
// reflectors are chosen as zlarfg does, so that the off-diagonal of T is
// real. On return d (length n) holds the diagonal and e (length n−1) the
// off-diagonal of T, and Q = H(0)·H(1)···H(n−2) is given by the reflectors
// H(i) = I − tau[i]·v·vᴴ (tau of length n−1), v[0:i+1] = 0, v[i+1] = 1 and
// v[i+2:n] stored in a[i+2:n, i]; Zunmtr applies Q. The strict upper triangle
// of the n×n block is used as scratch and holds junk on return; rows
// n..lda-1 are not touched. Zhetrd allocates its own workspace.
//
// The blocking is that of Dsytrd: panels of 32 columns (zlatrd), the rank-2k
// trailing update by Zgemm, the unblocked zhetd2 for the last 128 columns and
// the Hermitian matrix–vector product split between goroutines (zhemv.go).
func Zhetrd(n int, a []complex128, lda int, d, e []float64, tau []complex128) {
	checkMatrix("Zhetrd", "a", n, n, lda, len(a))
	checkVector("Zhetrd", "d", len(d), n)
	checkVector("Zhetrd", "e", len(e), n-1)
	checkVector("Zhetrd", "tau", len(tau), n-1)
	if n == 0 {
		return
	}
	w := make([]complex128, n*trdNB)
	var x, y []complex128
	i := 0
	for ; i < n-trdNX; i += trdNB {
		m := n - i
		ldw := m
		zlatrdLower(m, trdNB, a[i+i*lda:], lda, e[i:], tau[i:], w[:m*trdNB], ldw)
		m2 := m - trdNB
		if cap(x) < 2*trdNB*m2 {
			x = make([]complex128, 2*trdNB*m2)
			y = make([]complex128, 2*trdNB*m2)
		}
		x = x[:2*trdNB*m2]
		y = y[:2*trdNB*m2]
		for c := 0; c < trdNB; c++ {
			v := a[i+trdNB+(i+c)*lda : n+(i+c)*lda]
			wc := w[trdNB+c*ldw : m+c*ldw]
			copy(x[c*m2:(c+1)*m2], v)
			copy(x[(trdNB+c)*m2:(trdNB+c+1)*m2], wc)
			copy(y[c*m2:(c+1)*m2], wc)
			copy(y[(trdNB+c)*m2:(trdNB+c+1)*m2], v)
		}
		// A22 −= V·Wᴴ + W·Vᴴ = [V W]·[W V]ᴴ, lower part by column blocks.
		a22 := a[i+trdNB+(i+trdNB)*lda:]
		for c0 := 0; c0 < m2; c0 += trdBW {
			bw := min(trdBW, m2-c0)
			Zgemm(false, true, m2-c0, bw, 2*trdNB, -1, x[c0:], m2, y[c0:], m2, 1, a22[c0+c0*lda:], lda)
		}
		for j := i; j < i+trdNB; j++ {
			a[j+1+j*lda] = complex(e[j], 0)
			d[j] = real(a[j+j*lda])
		}
	}
	zhetd2Lower(n-i, a[i+i*lda:], lda, d[i:], e[i:], tau[i:])
}

// zlatrdLower reduces the first nb columns of the m×m trailing matrix and
// returns W (m×nb) for the update A22 −= V·Wᴴ + W·Vᴴ (LAPACK zlatrd).
func zlatrdLower(m, nb int, a []complex128, lda int, e []float64, tau []complex128, w []complex128, ldw int) {
	for i := 0; i < nb; i++ {
		col := a[i+i*lda : m+i*lda]
		col[0] = complex(real(col[0]), 0)
		if i > 0 {
			// A[i:m, i] −= A[i:m, 0:i]·conj(W[i, 0:i])ᵀ + W[i:m, 0:i]·conj(A[i, 0:i])ᵀ
			for p := 0; p < i; p++ {
				s1 := conj(w[i+p*ldw])
				s2 := conj(a[i+p*lda])
				ap := a[i+p*lda : m+p*lda]
				wp := w[i+p*ldw : m+p*ldw]
				for r := range col {
					col[r] -= ap[r]*s1 + wp[r]*s2
				}
			}
			col[0] = complex(real(col[0]), 0)
		}
		if i >= m-1 {
			continue
		}
		v := a[i+1+i*lda : m+i*lda]
		tau[i] = zlarfg(&v[0], v[1:])
		e[i] = real(v[0])
		v[0] = 1
		wi := w[i+1+i*ldw : m+i*ldw]
		zhemvLower(m-i-1, a[i+1+(i+1)*lda:], lda, v, wi)
		if i > 0 {
			tmp := w[i*ldw : i*ldw+i]
			for p := 0; p < i; p++ {
				tmp[p] = zdotc(w[i+1+p*ldw:m+p*ldw], v)
			}
			for p := 0; p < i; p++ {
				zaxpy(-tmp[p], a[i+1+p*lda:m+p*lda], wi)
			}
			for p := 0; p < i; p++ {
				tmp[p] = zdotc(a[i+1+p*lda:m+p*lda], v)
			}
			for p := 0; p < i; p++ {
				zaxpy(-tmp[p], w[i+1+p*ldw:m+p*ldw], wi)
			}
		}
		t := tau[i]
		for r := range wi {
			wi[r] *= t
		}
		alpha := -0.5 * t * zdotc(wi, v)
		zaxpy(alpha, v, wi)
	}
}

// zhetd2Lower is the unblocked reduction (LAPACK zhetd2).
func zhetd2Lower(n int, a []complex128, lda int, d, e []float64, tau []complex128) {
	a[0] = complex(real(a[0]), 0)
	y := make([]complex128, n)
	for i := 0; i < n-1; i++ {
		v := a[i+1+i*lda : n+i*lda]
		taui := zlarfg(&v[0], v[1:])
		e[i] = real(v[0])
		if taui != 0 {
			v[0] = 1
			m := n - i - 1
			yy := y[:m]
			zhemvLower(m, a[i+1+(i+1)*lda:], lda, v, yy)
			for r := range yy {
				yy[r] *= taui
			}
			alpha := -0.5 * taui * zdotc(yy, v)
			zaxpy(alpha, v, yy)
			// A22 −= v·yᴴ + y·vᴴ (lower, real diagonal)
			for c := 0; c < m; c++ {
				vc, yc := conj(v[c]), conj(yy[c])
				dst := a[i+1+c+(i+1+c)*lda : n+(i+1+c)*lda]
				vv := v[c:]
				yv := yy[c:]
				for r := range dst {
					dst[r] -= vv[r]*yc + yv[r]*vc
				}
				dst[0] = complex(real(dst[0]), 0)
			}
		} else {
			a[i+1+(i+1)*lda] = complex(real(a[i+1+(i+1)*lda]), 0)
		}
		v[0] = complex(e[i], 0)
		d[i] = real(a[i+i*lda])
		tau[i] = taui
	}
	d[n-1] = real(a[n-1+(n-1)*lda])
}
