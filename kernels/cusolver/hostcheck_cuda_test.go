//go:build mglacuda

package cusolver

import (
	"math"
	"math/cmplx"
	"sort"
	"testing"
)

// hostCholSolve solves A·X = B on the host with a Cholesky factorization.
func hostCholSolve(a, b *cmat) *cmat {
	n := a.r
	l := newCmat(n, n)
	for j := 0; j < n; j++ {
		s := real(a.at(j, j))
		for k := 0; k < j; k++ {
			s -= real(l.at(j, k) * cmplx.Conj(l.at(j, k)))
		}
		d := math.Sqrt(s)
		l.set(j, j, complex(d, 0))
		for i := j + 1; i < n; i++ {
			v := a.at(i, j)
			for k := 0; k < j; k++ {
				v -= l.at(i, k) * cmplx.Conj(l.at(j, k))
			}
			l.set(i, j, v/complex(d, 0))
		}
	}
	x := b.clone()
	for c := 0; c < x.c; c++ {
		y := x.col(c)
		for i := 0; i < n; i++ {
			for k := 0; k < i; k++ {
				y[i] -= l.at(i, k) * y[k]
			}
			y[i] /= l.at(i, i)
		}
		for i := n - 1; i >= 0; i-- {
			for k := i + 1; k < n; k++ {
				y[i] -= cmplx.Conj(l.at(k, i)) * y[k]
			}
			y[i] /= l.at(i, i)
		}
	}
	return x
}

// TestHostHelpers validates the host-side checking code (no GPU needed):
// the layout, the encoding, and that the residual ratios are small for right
// answers and large for wrong ones.
func TestHostHelpers(t *testing.T) {
	for _, c := range []struct{ cols, tile, nd int }{{1537, 256, 3}, {1000, 512, 4}, {7, 256, 2}, {515, 256, 4}, {1, 1, 1}} {
		seen := make([]int, c.cols)
		total := 0
		for d := 0; d < c.nd; d++ {
			cols := localColumns(c.cols, c.tile, c.nd, d)
			if len(cols) != LocalCols(c.cols, c.tile, c.nd, d) {
				t.Errorf("%+v: device %d: %d columns, LocalCols %d", c, d, len(cols), LocalCols(c.cols, c.tile, c.nd, d))
			}
			for k, col := range cols {
				seen[col]++
				if (col/c.tile)%c.nd != d {
					t.Errorf("%+v: column %d on device %d", c, col, d)
				}
				if k > 0 && cols[k-1] >= col {
					t.Errorf("%+v: device %d: columns out of order", c, d)
				}
			}
			total += len(cols)
		}
		for col, s := range seen {
			if s != 1 {
				t.Errorf("%+v: column %d held %d times", c, col, s)
			}
		}
		if total != c.cols {
			t.Errorf("%+v: %d columns in all", c, total)
		}
	}
	rng := newRNG(t)
	for _, p := range precs {
		v := randMat(rng, 5, 3, p)
		if got := decode(p.dt, encode(p.dt, v.d)); len(got) != len(v.d) {
			t.Fatalf("%s: decode length %d", p.name, len(got))
		} else {
			for i := range got {
				if got[i] != v.d[i] {
					t.Fatalf("%s: roundtrip %v -> %v", p.name, v.d[i], got[i])
				}
			}
		}

		const n = 120
		a := randHPD(rng, n, p)
		for i := 0; i < n; i++ {
			if a.at(i, i) != complex(real(a.at(i, i)), 0) || a.at(i, 0) != cmplx.Conj(a.at(0, i)) {
				t.Fatalf("%s: randHPD is not Hermitian", p.name)
			}
		}
		b := randMat(rng, n, 4, p)
		x := hostCholSolve(a, b)
		// A float64 host solve is exact to well below float32 eps.
		if r := solveRatio(a, x, b, p.eps); r > 1 {
			t.Errorf("%s: solveRatio of a right answer = %g", p.name, r)
		}
		x.set(3, 1, x.at(3, 1)*1.5+0.1)
		if r := solveRatio(a, x, b, p.eps); r < 10*ratioLimit {
			t.Errorf("%s: solveRatio of a wrong answer = %g", p.name, r)
		}
		id := newCmat(n, n)
		for i := 0; i < n; i++ {
			id.set(i, i, 1)
		}
		ainv := hostCholSolve(a, id)
		lower := ainv.clone()
		for j := 0; j < n; j++ {
			for i := 0; i < j; i++ {
				lower.set(i, j, complex(99, 99)) // upper triangle must be ignored
			}
		}
		if r := inverseRatio(a, hermFromLower(lower), p.eps); r > 1 {
			t.Errorf("%s: inverseRatio of a right answer = %g", p.name, r)
		}
		ainv.set(5, 2, ainv.at(5, 2)+0.05)
		if r := inverseRatio(a, ainv, p.eps); r < 10*ratioLimit {
			t.Errorf("%s: inverseRatio of a wrong answer = %g", p.name, r)
		}

		// A = Q·Λ·Qᴴ with Q = I − 2uuᴴ/‖u‖² (Hermitian and unitary).
		u := randMat(rng, n, 1, p).col(0)
		var un float64
		for _, e := range u {
			un += real(e * cmplx.Conj(e))
		}
		q := newCmat(n, n)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				v := -2 * u[i] * cmplx.Conj(u[j]) / complex(un, 0)
				if i == j {
					v++
				}
				q.set(i, j, v)
			}
		}
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(i) - 40 + rng.Float64()
		}
		sort.Float64s(w)
		ql := q.clone()
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				ql.set(i, j, ql.at(i, j)*complex(w[j], 0))
			}
		}
		qh := newCmat(n, n)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				qh.set(i, j, cmplx.Conj(q.at(j, i)))
			}
		}
		ae := mul(ql, qh)
		res, orth := eigRatios(ae, q, w, p.eps)
		if res > 1 || orth > 1 {
			t.Errorf("%s: eigRatios of a right answer = %g, %g", p.name, res, orth)
		}
		if r := traceRatio(t, ae, w, p.eps); r > 1 {
			t.Errorf("%s: traceRatio of a right answer = %g", p.name, r)
		}
		w2 := append([]float64(nil), w...)
		w2[7] += 5 // ~3000 for float32 (0.5 gave ~300, at the detection limit)
		if res, _ := eigRatios(ae, q, w2, p.eps); res < 10*ratioLimit {
			t.Errorf("%s: eigRatios of wrong eigenvalues = %g", p.name, res)
		}
		q2 := q.clone()
		q2.set(3, 3, q2.at(3, 3)+0.1)
		if _, orth := eigRatios(ae, q2, w, p.eps); orth < 10*ratioLimit {
			t.Errorf("%s: orthogonality ratio of a perturbed basis = %g", p.name, orth)
		}
	}
}
