package lapack

const (
	trdNB = 32  // panel width of Dsytrd and Zhetrd
	trdNX = 128 // trailing size below which the unblocked code is used
	trdBW = 256 // column block of the gemm-based rank-2k update
)

// Dsytrd reduces the n×n real symmetric matrix A, given by the lower triangle
// of the column-major a (leading dimension lda ≥ max(1, n)), to symmetric
// tridiagonal form T = Qᵀ·A·Q by an orthogonal similarity (LAPACK dsytrd,
// uplo = 'L'). On return d (length n) holds the diagonal and e (length n−1)
// the off-diagonal of T, and Q = H(0)·H(1)···H(n−2) is given by the
// reflectors H(i) = I − tau[i]·v·vᵀ (tau of length n−1), v[0:i+1] = 0,
// v[i+1] = 1 and v[i+2:n] stored in a[i+2:n, i] (below the subdiagonal,
// which holds e). The strict upper triangle of the n×n block is used as
// scratch and holds junk on return; rows n..lda-1 are not touched. Dsytrd
// allocates its own workspace.
//
// The reduction is blocked (panels of 32 columns, dlatrd, then the rank-2k
// trailing update A22 −= V·Wᵀ + W·Vᵀ by Dgemm), with the unblocked dsytd2
// for the last 128 columns. Half of the work is the symmetric matrix–vector
// product of dlatrd, done by a fused single-pass kernel split between up to
// four goroutines (dsymv.go).
func Dsytrd(n int, a []float64, lda int, d, e, tau []float64) {
	checkMatrix("Dsytrd", "a", n, n, lda, len(a))
	checkVector("Dsytrd", "d", len(d), n)
	checkVector("Dsytrd", "e", len(e), n-1)
	checkVector("Dsytrd", "tau", len(tau), n-1)
	if n == 0 {
		return
	}
	w := make([]float64, n*trdNB)
	var x, y []float64
	i := 0
	for ; i < n-trdNX; i += trdNB {
		m := n - i
		ldw := m
		dlatrdLower(m, trdNB, a[i+i*lda:], lda, e[i:], tau[i:], w[:m*trdNB], ldw)
		// A22 -= V·Wᵀ + W·Vᵀ, V = A[i+nb:, i:i+nb], W = W[nb:, :].
		m2 := m - trdNB
		if cap(x) < 2*trdNB*m2 {
			x = make([]float64, 2*trdNB*m2)
			y = make([]float64, 2*trdNB*m2)
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
		a22 := a[i+trdNB+(i+trdNB)*lda:]
		for c0 := 0; c0 < m2; c0 += trdBW {
			bw := min(trdBW, m2-c0)
			Dgemm(false, true, m2-c0, bw, 2*trdNB, -1, x[c0:], m2, y[c0:], m2, 1, a22[c0+c0*lda:], lda)
		}
		for j := i; j < i+trdNB; j++ {
			a[j+1+j*lda] = e[j]
			d[j] = a[j+j*lda]
		}
	}
	dsytd2Lower(n-i, a[i+i*lda:], lda, d[i:], e[i:], tau[i:])
}

// dlatrdLower reduces the first nb columns of the m×m trailing matrix and
// returns W (m×nb) for the update A22 −= V·Wᵀ + W·Vᵀ.
func dlatrdLower(m, nb int, a []float64, lda int, e, tau []float64, w []float64, ldw int) {
	for i := 0; i < nb; i++ {
		col := a[i+i*lda : m+i*lda]
		if i > 0 {
			// A[i:m, i] -= A[i:m, 0:i]·W[i, 0:i]ᵀ + W[i:m, 0:i]·A[i, 0:i]ᵀ
			for p := 0; p < i; p++ {
				s1 := w[i+p*ldw]
				s2 := a[i+p*lda]
				ap := a[i+p*lda : m+p*lda]
				wp := w[i+p*ldw : m+p*ldw]
				for r := range col {
					col[r] -= ap[r]*s1 + wp[r]*s2
				}
			}
		}
		if i >= m-1 {
			continue
		}
		v := a[i+1+i*lda : m+i*lda]
		tau[i] = dlarfg(&v[0], v[1:])
		e[i] = v[0]
		v[0] = 1
		wi := w[i+1+i*ldw : m+i*ldw]
		dsymvLower(m-i-1, a[i+1+(i+1)*lda:], lda, v, wi)
		if i > 0 {
			tmp := w[i*ldw : i*ldw+i] // W[0:i, i] as scratch
			// tmp = W[i+1:m, 0:i]ᵀ·v ; wi -= A[i+1:m, 0:i]·tmp
			for p := 0; p < i; p++ {
				tmp[p] = dot(w[i+1+p*ldw:m+p*ldw], v)
			}
			for p := 0; p < i; p++ {
				axpy(-tmp[p], a[i+1+p*lda:m+p*lda], wi)
			}
			// tmp = A[i+1:m, 0:i]ᵀ·v ; wi -= W[i+1:m, 0:i]·tmp
			for p := 0; p < i; p++ {
				tmp[p] = dot(a[i+1+p*lda:m+p*lda], v)
			}
			for p := 0; p < i; p++ {
				axpy(-tmp[p], w[i+1+p*ldw:m+p*ldw], wi)
			}
		}
		t := tau[i]
		for r := range wi {
			wi[r] *= t
		}
		alpha := -0.5 * t * dot(wi, v)
		axpy(alpha, v, wi)
	}
}

// dsytd2Lower is the unblocked reduction.
func dsytd2Lower(n int, a []float64, lda int, d, e, tau []float64) {
	y := make([]float64, n)
	for i := 0; i < n-1; i++ {
		v := a[i+1+i*lda : n+i*lda]
		taui := dlarfg(&v[0], v[1:])
		e[i] = v[0]
		if taui != 0 {
			v[0] = 1
			m := n - i - 1
			yy := y[:m]
			dsymvLower(m, a[i+1+(i+1)*lda:], lda, v, yy)
			for r := range yy {
				yy[r] *= taui
			}
			alpha := -0.5 * taui * dot(yy, v)
			axpy(alpha, v, yy)
			// A22 -= v·yᵀ + y·vᵀ (lower)
			for c := 0; c < m; c++ {
				vc, yc := v[c], yy[c]
				dst := a[i+1+c+(i+1+c)*lda : n+(i+1+c)*lda]
				vv := v[c:]
				yv := yy[c:]
				for r := range dst {
					dst[r] -= vv[r]*yc + yv[r]*vc
				}
			}
			v[0] = e[i]
		}
		d[i] = a[i+i*lda]
		tau[i] = taui
	}
	d[n-1] = a[n-1+(n-1)*lda]
}
