package kernels

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/mgla/mgla/kernels/cpubackend"
	"github.com/mgla/mgla/kernels/lapack"
)

// Blocked Householder reduction of a complex Hermitian matrix (lower
// triangle, column-major) to real symmetric tridiagonal form (LAPACK
// zhetrd/zlatrd/zhetd2, uplo = 'L'). The complex reflectors are chosen (as
// zlarfg does) so that the off-diagonal β's are real, so T is real: its
// eigenvectors come from the real tridiagonal solver and are mapped back with
// the complex reflectors by zunmtrLower.
//
// Reflectors: H(i) = I − tau[i]·v·vᴴ, v[i+1] = 1, v[i+2:] in a[i+2:, i];
// Q = H(0)···H(n−2), A = Q·T·Qᴴ. The strict upper triangle is scratch.

func zhetrdLower(n int, a []complex128, lda int, d, e []float64, tau []complex128) {
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
			lapack.Zgemm(false, true, m2-c0, bw, 2*trdNB, -1, x[c0:], m2, y[c0:], m2, 1, a22[c0+c0*lda:], lda)
		}
		for j := i; j < i+trdNB; j++ {
			a[j+1+j*lda] = complex(e[j], 0)
			d[j] = real(a[j+j*lda])
		}
	}
	zhetd2Lower(n-i, a[i+i*lda:], lda, d[i:], e[i:], tau[i:])
}

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

// zlarfg generates H = I − tau·v·vᴴ with Hᴴ·[alpha; x] = [beta; 0], beta
// real; on return *alpha = beta and x holds v[1:]. Unlike the real case the
// reflector is not the identity when x = 0 but alpha has an imaginary part.
func zlarfg(alpha *complex128, x []complex128) complex128 {
	xnorm := znrm2(x)
	alphr, alphi := real(*alpha), imag(*alpha)
	if xnorm == 0 && alphi == 0 {
		return 0
	}
	const safmin = 0x1p-1022 / dlamchE
	beta := -math.Copysign(dlapy3(alphr, alphi, xnorm), alphr)
	knt := 0
	if math.Abs(beta) < safmin {
		rsafmn := 1 / safmin
		for {
			knt++
			for i := range x {
				x[i] *= complex(rsafmn, 0)
			}
			beta *= rsafmn
			alphr *= rsafmn
			alphi *= rsafmn
			if math.Abs(beta) >= safmin || knt >= 20 {
				break
			}
		}
		xnorm = znrm2(x)
		beta = -math.Copysign(dlapy3(alphr, alphi, xnorm), alphr)
	}
	tau := complex((beta-alphr)/beta, -alphi/beta)
	s := 1 / complex(alphr-beta, alphi)
	for i := range x {
		x[i] *= s
	}
	for ; knt > 0; knt-- {
		beta *= safmin
	}
	*alpha = complex(beta, 0)
	return tau
}

func dlapy3(x, y, z float64) float64 {
	w := max(math.Abs(x), math.Abs(y), math.Abs(z))
	if w == 0 {
		return math.Abs(x) + math.Abs(y) + math.Abs(z)
	}
	x /= w
	y /= w
	z /= w
	return w * math.Sqrt(x*x+y*y+z*z)
}

func znrm2(x []complex128) float64 {
	return nrm2(parts[float64](x))
}

// zdotc returns Σ conj(x_k)·y_k.
func zdotc(x, y []complex128) complex128 {
	y = y[:len(x)]
	var sr, si float64
	for i, v := range x {
		w := y[i]
		sr += real(v)*real(w) + imag(v)*imag(w)
		si += real(v)*imag(w) - imag(v)*real(w)
	}
	return complex(sr, si)
}

func zaxpy(alpha complex128, x, y []complex128) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// zhemvLower computes y = A·x for the Hermitian A given by its lower triangle
// (the imaginary parts of the diagonal are ignored), in one pass over the
// triangle, split between goroutines like dsymvLower.
func zhemvLower(n int, a []complex128, lda int, x, y []complex128) {
	nw := runtime.GOMAXPROCS(0)
	if n < 256 || nw < 2 {
		clear(y[:n])
		zhemvLowerCols(0, n, n, a, lda, x, y)
		return
	}
	nw = min(nw, 4)
	bounds := make([]int, nw+1)
	total := float64(n) * float64(n) / 2
	for p := 1; p < nw; p++ {
		target := total * float64(p) / float64(nw)
		fn := float64(n)
		c := fn - math.Sqrt(fn*fn-2*target)
		bounds[p] = min(n, max(bounds[p-1], int(c)))
	}
	bounds[nw] = n
	bufs := make([][]complex128, nw)
	var wg sync.WaitGroup
	for p := 0; p < nw; p++ {
		var yy []complex128
		if p == 0 {
			yy = y[:n]
		} else {
			yy = make([]complex128, n)
		}
		bufs[p] = yy
		clear(yy)
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			zhemvLowerCols(bounds[p], bounds[p+1], n, a, lda, x, bufs[p])
		}(p)
	}
	wg.Wait()
	for p := 1; p < nw; p++ {
		zaxpy(1, bufs[p][bounds[p]:n], y[bounds[p]:n])
	}
}

func zhemvLowerCols(c0, c1, n int, a []complex128, lda int, x, y []complex128) {
	for j := c0; j < c1; j++ {
		col := a[j*lda+j+1 : j*lda+n]
		xj := x[j]
		xx := x[j+1 : n]
		yy := y[j+1 : n]
		xx = xx[:len(col)]
		yy = yy[:len(col)]
		var sr, si float64
		xr, xi := real(xj), imag(xj)
		for r, v := range col {
			vr, vi := real(v), imag(v)
			u := xx[r]
			ur, ui := real(u), imag(u)
			// conj(v)·u
			sr += vr*ur + vi*ui
			si += vr*ui - vi*ur
			// y += v·xj
			yy[r] += complex(vr*xr-vi*xi, vr*xi+vi*xr)
		}
		y[j] += complex(real(a[j+j*lda]), 0)*xj + complex(sr, si)
	}
}

// zunmtrLower overwrites the n×ncols matrix c with Q·c, Q = H(0)···H(n−2)
// from zhetrdLower (reflectors in the lower triangle of a), blocked: each
// block of reflectors is applied as I − V·T·Vᴴ (zlarft/zlarfb, forward,
// columnwise) with gemm.
func zunmtrLower(n, ncols int, a []complex128, lda int, tau []complex128, c []complex128, ldc int) {
	const nb = 64
	k := n - 1 // number of reflectors
	if k <= 0 || ncols == 0 {
		return
	}
	m := n - 1 // reflectors act on rows 1..n-1
	vbuf := make([]complex128, m*nb)
	t := make([]complex128, nb*nb)
	wbuf := make([]complex128, 2*nb*ncols)
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
				col[q] = -tp * zdotc(v[q*rows+p:(q+1)*rows], vp[p:])
			}
			// col = T[0:p,0:p]·col (upper triangular, in place from the top)
			for r := 0; r < p; r++ {
				var s complex128
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
		lapack.Zgemm(true, false, ib, ncols, rows, 1, v, rows, cc, ldc, 0, w, ib)
		lapack.Zgemm(false, false, ib, ncols, ib, 1, tt, ib, w, ib, 0, w2, ib)
		lapack.Zgemm(false, false, rows, ncols, ib, -1, v, rows, w2, ib, 1, cc, ldc)
	}
}

// heevdC128 is the complex Hermitian eigensolver on the lower triangle of a.
func heevdC128(n int, a []complex128, lda int, w []float64, vectors bool) error {
	if err := CheckFinite(n, n, a, lda, true); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if n == 1 {
		w[0] = real(a[0])
		if vectors {
			a[0] = 1
		}
		return nil
	}
	anrm := 0.0
	for j := 0; j < n; j++ {
		for _, v := range a[j*lda+j : j*lda+n] {
			anrm = max(anrm, cabs(v))
		}
	}
	rmin := math.Sqrt(0x1p-1022 / dlamchE)
	rmax := 1 / rmin
	scale := 1.0
	if anrm > 0 && anrm < rmin {
		scale = rmin / anrm
	} else if anrm > rmax {
		scale = rmax / anrm
	}
	if scale != 1 {
		for j := 0; j < n; j++ {
			for i := j; i < n; i++ {
				a[i+j*lda] *= complex(scale, 0)
			}
		}
	}
	if info, handled := cpubackend.ZheevdNative(n, a, lda, w, vectors); handled {
		if info != 0 {
			return fmt.Errorf("%w (LAPACK zheevd info %d)", ErrNoConvergence, info)
		}
		for i := range w[:n] {
			w[i] /= scale
		}
		return nil
	}
	d := make([]float64, n)
	e := make([]float64, n-1)
	tau := make([]complex128, n-1)
	zhetrdLower(n, a, lda, d, e, tau)
	var err error
	if !vectors {
		if !cpubackend.LAPACK.Dsterf(n, d, e) {
			err = ErrNoConvergence
		}
	} else {
		z := make([]float64, n*n)
		err = tridiagEig(n, d, e, z, n)
		if err == nil {
			c := make([]complex128, n*n)
			for i, v := range z {
				c[i] = complex(v, 0)
			}
			zunmtrLower(n, n, a, lda, tau, c, n)
			for j := 0; j < n; j++ {
				copy(a[j*lda:j*lda+n], c[j*n:(j+1)*n])
			}
		}
	}
	if err != nil {
		return err
	}
	for i := range d {
		w[i] = d[i] / scale
	}
	return nil
}
