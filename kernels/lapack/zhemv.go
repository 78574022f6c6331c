package lapack

import (
	"math"
	"runtime"
	"sync"
)

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
