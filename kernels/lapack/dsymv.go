package lapack

import (
	"math"
	"runtime"
	"sync"
)

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
