package kernels

import (
	"math"
	"runtime"
	"sync"

	"github.com/mgla/mgla/kernels/lapack"
)

// Blocked Householder tridiagonalization of a real symmetric matrix given by
// its lower triangle, column-major (LAPACK dsytrd/dlatrd/dsytd2, uplo = 'L').
// On return d and e hold the tridiagonal matrix, and the reflectors
// H(i) = I − tau[i]·v·vᵀ (v[i+1] = 1, v[i+2:] stored in a[i+2:, i]) give
// Q = H(0)·H(1)···H(n−2) with A = Q·T·Qᵀ. Only the lower triangle is read;
// the strict upper triangle is used as scratch.
//
// Half of the work is the symmetric matrix–vector product of dlatrd, done by
// a fused single-pass kernel split between GOMAXPROCS goroutines; the other
// half is the rank-2k trailing update, done by gemm.

const (
	trdNB = 32  // panel width
	trdNX = 128 // trailing size below which the unblocked code is used
	trdBW = 256 // column block of the gemm-based rank-2k update
)

func dsytrdLower(n int, a []float64, lda int, d, e, tau []float64) {
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
			lapack.Dgemm(false, true, m2-c0, bw, 2*trdNB, -1, x[c0:], m2, y[c0:], m2, 1, a22[c0+c0*lda:], lda)
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

// dlarfg generates an elementary reflector H = I − tau·v·vᵀ with
// H·[alpha; x] = [beta; 0]; on return *alpha = beta and x holds v[1:].
func dlarfg(alpha *float64, x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	xnorm := nrm2(x)
	if xnorm == 0 {
		return 0
	}
	const safmin = 0x1p-1022 / dlamchE
	beta := -math.Copysign(math.Hypot(*alpha, xnorm), *alpha)
	knt := 0
	if math.Abs(beta) < safmin {
		rsafmn := 1 / safmin
		for {
			knt++
			for i := range x {
				x[i] *= rsafmn
			}
			beta *= rsafmn
			*alpha *= rsafmn
			if math.Abs(beta) >= safmin || knt >= 20 {
				break
			}
		}
		xnorm = nrm2(x)
		beta = -math.Copysign(math.Hypot(*alpha, xnorm), *alpha)
	}
	tau := (beta - *alpha) / beta
	s := 1 / (*alpha - beta)
	for i := range x {
		x[i] *= s
	}
	for ; knt > 0; knt-- {
		beta *= safmin
	}
	*alpha = beta
	return tau
}

func nrm2(x []float64) float64 {
	scale := 0.0
	for _, v := range x {
		scale = max(scale, math.Abs(v))
	}
	if scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return scale
	}
	var s float64
	inv := 1 / scale
	for _, v := range x {
		t := v * inv
		s += t * t
	}
	return scale * math.Sqrt(s)
}

func dot(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpy(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// dsymvLower computes y = A·x for the n×n symmetric A given by its lower
// triangle (column-major). The lower triangle is read once; large problems
// are split by columns (balanced by area) between goroutines, each with its
// own accumulator.
func dsymvLower(n int, a []float64, lda int, x, y []float64) {
	nw := runtime.GOMAXPROCS(0)
	if n < 384 || nw < 2 {
		clear(y[:n])
		dsymvLowerCols(0, n, n, a, lda, x, y)
		return
	}
	nw = min(nw, 4)
	// Column boundaries with equal triangle area: area(0..c) = n·c − c²/2.
	bounds := make([]int, nw+1)
	total := float64(n) * float64(n) / 2
	for p := 1; p < nw; p++ {
		target := total * float64(p) / float64(nw)
		// solve n·c − c²/2 = target
		fn := float64(n)
		c := fn - math.Sqrt(fn*fn-2*target)
		bounds[p] = min(n, max(bounds[p-1], int(c)))
	}
	bounds[nw] = n
	bufs := make([][]float64, nw)
	var wg sync.WaitGroup
	for p := 0; p < nw; p++ {
		var yy []float64
		if p == 0 {
			yy = y[:n]
		} else {
			yy = make([]float64, n)
		}
		bufs[p] = yy
		clear(yy)
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			dsymvLowerCols(bounds[p], bounds[p+1], n, a, lda, x, bufs[p])
		}(p)
	}
	wg.Wait()
	for p := 1; p < nw; p++ {
		// Only rows ≥ bounds[p] can be nonzero in worker p's accumulator.
		axpy(1, bufs[p][bounds[p]:n], y[bounds[p]:n])
	}
}

// dsymvLowerCols accumulates the contribution of columns [c0, c1) of the
// lower triangle into y: y[j] += Σ_{i≥j} a[i,j]·x[i], y[i] += a[i,j]·x[j].
// Two columns are processed per pass over y.
func dsymvLowerCols(c0, c1, n int, a []float64, lda int, x, y []float64) {
	j := c0
	for ; j+1 < c1; j += 2 {
		a0 := a[j*lda : j*lda+n]
		a1 := a[(j+1)*lda : (j+1)*lda+n]
		x0, x1 := x[j], x[j+1]
		// Diagonal part: a0[j], a0[j+1], a1[j+1].
		s0 := a0[j]*x0 + a0[j+1]*x1
		s1 := a0[j+1]*x0 + a1[j+1]*x1
		lo := j + 2
		aa0 := a0[lo:n]
		aa1 := a1[lo:n]
		xx := x[lo:n]
		yy := y[lo:n]
		aa1 = aa1[:len(aa0)]
		xx = xx[:len(aa0)]
		yy = yy[:len(aa0)]
		var t0, t1, u0, u1 float64
		r := 0
		for ; r+2 <= len(aa0); r += 2 {
			p0, p1 := aa0[r], aa1[r]
			q0, q1 := aa0[r+1], aa1[r+1]
			xr, xs := xx[r], xx[r+1]
			t0 += p0 * xr
			t1 += p1 * xr
			u0 += q0 * xs
			u1 += q1 * xs
			yy[r] += p0*x0 + p1*x1
			yy[r+1] += q0*x0 + q1*x1
		}
		for ; r < len(aa0); r++ {
			p0, p1 := aa0[r], aa1[r]
			t0 += p0 * xx[r]
			t1 += p1 * xx[r]
			yy[r] += p0*x0 + p1*x1
		}
		y[j] += s0 + t0 + u0
		y[j+1] += s1 + t1 + u1
	}
	if j < c1 {
		a0 := a[j*lda : j*lda+n]
		x0 := x[j]
		s := a0[j] * x0
		for r := j + 1; r < n; r++ {
			s += a0[r] * x[r]
			y[r] += a0[r] * x0
		}
		y[j] += s
	}
}
