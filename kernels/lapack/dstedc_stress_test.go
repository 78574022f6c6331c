package lapack

import (
	"math"
	"testing"
)

// TestStressDC runs the divide and conquer tridiagonal solver Dstedc on many
// random matrices from hard families (clusters, tiny and graded couplings,
// glued copies, Clement and Wilkinson matrices).
func TestStressDC(t *testing.T) {
	rnd := newRand(t, 77)
	worstRes, worstOrth := 0.0, 0.0
	for it := 0; it < 250; it++ {
		n := 26 + rnd.IntN(300)
		d := make([]float64, n)
		e := make([]float64, n-1)
		fam := it % 9
		switch fam {
		case 0:
			for i := range d {
				d[i] = rnd.NormFloat64()
			}
			for i := range e {
				e[i] = rnd.NormFloat64()
			}
		case 1: // few distinct values, tiny couplings
			for i := range d {
				d[i] = float64(rnd.IntN(3))
			}
			for i := range e {
				e[i] = 1e-9 * rnd.NormFloat64()
			}
		case 2: // extreme off-diagonal magnitudes
			for i := range d {
				d[i] = rnd.NormFloat64()
			}
			for i := range e {
				e[i] = math.Pow(10, -20*rnd.Float64())
			}
		case 3: // zero diagonal
			for i := range e {
				e[i] = 1
			}
		case 4: // Clement
			for i := range e {
				e[i] = math.Sqrt(float64((i + 1) * (n - 1 - i)))
			}
		case 5: // Wilkinson W+
			for i := range d {
				d[i] = math.Abs(float64(i - n/2))
			}
			for i := range e {
				e[i] = 1
			}
		case 6: // graded
			for i := range d {
				d[i] = math.Pow(10, -15*float64(i)/float64(n))
			}
			for i := range e {
				e[i] = 0.3 * math.Sqrt(d[i]*d[i+1])
			}
		case 7: // glued copies of the same block
			bs := 10 + rnd.IntN(20)
			bd := make([]float64, bs)
			be := make([]float64, bs)
			for i := range bd {
				bd[i] = rnd.NormFloat64()
				be[i] = rnd.NormFloat64()
			}
			for i := range d {
				d[i] = bd[i%bs]
			}
			for i := range e {
				if i%bs == bs-1 {
					e[i] = 1e-12
				} else {
					e[i] = be[i%bs]
				}
			}
		case 8: // constant matrix-ish: d = 1, e = tiny random with some exact zeros
			for i := range d {
				d[i] = 1
			}
			for i := range e {
				if rnd.IntN(4) > 0 {
					e[i] = 1e-15 * rnd.NormFloat64()
				}
			}
		}
		d0 := append([]float64(nil), d...)
		e0 := append([]float64(nil), e...)
		z := make([]float64, n*n)
		if !Dstedc(n, d, e, z, n) {
			t.Fatalf("seed %d it %d fam %d n=%d: Dstedc did not converge", testSeed, it, fam, n)
		}
		res, orth := tridiagResidual(d0, e0, d, z, n)
		for i := 1; i < n; i++ {
			if d[i] < d[i-1] {
				t.Fatalf("seed %d it %d: eigenvalues not sorted", testSeed, it)
			}
		}
		worstRes = max(worstRes, res)
		worstOrth = max(worstOrth, orth)
		if res > 1e-14 || orth > 1e-13 || math.IsNaN(res+orth) {
			t.Errorf("seed %d it %d fam %d n=%d: res %.3g orth %.3g", testSeed, it, fam, n, res, orth)
		}
	}
	t.Logf("worst res %.3g orth %.3g", worstRes, worstOrth)
}
