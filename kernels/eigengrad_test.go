package kernels

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// SymmetricEigenvectorTerms against the pair-by-pair loop it replaces, in
// both real types, at orders below, at and across the tile width, with one
// goroutine and with the column blocks in parallel (GOMAXPROCS 4, which
// needs 12 blocks: n = 1000); with an undefined pair, the first one in
// column order is reported.
func TestSymmetricEigenvectorTerms(t *testing.T) {
	rng := newRand(t, 61)
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{1, 2, 5, 64, 65, 200, 1000} {
			w := make([]float64, n)
			for i := range w {
				w[i] = float64(i) + rng.Float64()/2
			}
			gap := EigenGapTolerance(w, false)
			m := make([]float64, n*n)
			for i := range m {
				m[i] = rng.NormFloat64()
			}
			want := eigenvectorTermsByPairs(n, m, w, gap)
			what := fmt.Sprintf("GOMAXPROCS %d, n = %d", procs, n)
			got := append([]float64(nil), m...)
			if _, _, ok := SymmetricEigenvectorTerms(n, got, n, w, gap); !ok {
				t.Fatalf("%s: an undefined pair at distinct eigenvalues", what)
			}
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("%s, float64: element %d = %v, want %v", what, k, got[k], want[k])
				}
			}
			// float32: the same terms from the rounded entries, in float64,
			// then rounded.
			single, rounded := make([]float32, n*n), make([]float64, n*n)
			for k, v := range m {
				single[k] = float32(v)
				rounded[k] = float64(single[k])
			}
			if _, _, ok := SymmetricEigenvectorTerms(n, single, n, w, gap); !ok {
				t.Fatalf("%s: an undefined pair at distinct eigenvalues (float32)", what)
			}
			for k, v := range eigenvectorTermsByPairs(n, rounded, w, gap) {
				if single[k] != float32(v) {
					t.Fatalf("%s, float32: element %d = %v, want %v", what, k, single[k], float32(v))
				}
			}
			if n < 5 {
				continue
			}
			// Two pairs of equal eigenvalues: the one in the earlier
			// column is reported, whichever block finds it.
			bad := append([]float64(nil), w...)
			bad[n-2] = bad[n-1]
			bad[1] = bad[3]
			got = append([]float64(nil), m...)
			i, j, ok := SymmetricEigenvectorTerms(n, got, n, bad, gap)
			if ok || i != 1 || j != 3 {
				t.Fatalf("%s: repeated eigenvalues 1 and 3, n−2 and n−1: got (%d, %d, %t)", what, i, j, ok)
			}
			if n < 200 {
				continue
			}
			// In one column block, a pair that a tile nearer the diagonal
			// finds after one in an earlier tile but in a later column.
			bad = append([]float64(nil), w...)
			bad[65] = bad[66]
			bad[10] = bad[120]
			got = append([]float64(nil), m...)
			if i, j, ok := SymmetricEigenvectorTerms(n, got, n, bad, gap); ok || i != 65 || j != 66 {
				t.Fatalf("%s: repeated eigenvalues 65 and 66, 10 and 120: got (%d, %d, %t)", what, i, j, ok)
			}
		}
		runtime.GOMAXPROCS(old)
	}
	// Halves that are not exact (subnormals) are rounded before the sum, as
	// the GPU kernel rounds them, in builds that fuse multiply-adds too.
	u := math.SmallestNonzeroFloat64
	for _, c := range [][2]float64{{u, -2 * u}, {2 * u, -u}} {
		w := []float64{0, 1}
		m := []float64{0, c[1], c[0], 0} // M_01 = c[0], M_10 = c[1]
		if _, _, ok := SymmetricEigenvectorTerms(2, m, 2, w, EigenGapTolerance(w, false)); !ok {
			t.Fatalf("M_01 = %g, M_10 = %g: undefined", c[0], c[1])
		}
		a, b := c[0]/(w[1]-w[0]), c[1]/(w[0]-w[1])
		want := float64(a*0.5) + float64(b*0.5)
		if math.Float64bits(m[2]) != math.Float64bits(want) {
			t.Errorf("M_01 = %g, M_10 = %g: %g, want %g (each half rounded)", c[0], c[1], m[2], want)
		}
	}
}

// eigenvectorTermsByPairs is sym(F∘M) a pair at a time, column by column:
// the loop SymmetricEigenvectorTerms replaces (all pairs defined).
func eigenvectorTermsByPairs(n int, m, w []float64, gap float64) []float64 {
	out := append([]float64(nil), m...)
	for j := range n {
		out[j+j*n] = 0
		for i := range j {
			a, _ := EigenvectorTerm(m[i+j*n], m[j+i*n], w[i], w[j], gap)
			b, _ := EigenvectorTerm(m[j+i*n], m[i+j*n], w[j], w[i], gap)
			out[i+j*n] = float64(a/2) + float64(b/2)
			out[j+i*n] = out[i+j*n]
		}
	}
	return out
}
