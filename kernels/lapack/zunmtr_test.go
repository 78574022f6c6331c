package lapack

import (
	"slices"
	"testing"
)

// TestZunmtr checks Q·C against Q formed from the reflectors of Zhetrd, for
// orders around the block size (64) and several column counts, and that a
// and tau are not modified and the padding rows of c stay untouched.
func TestZunmtr(t *testing.T) {
	rnd := newRand(t, 13)
	for _, n := range []int{1, 2, 64, 65, 130, 200} {
		lda := n + 1
		a, _ := randHermitian(rnd, n, lda, true)
		d := make([]float64, n)
		e := make([]float64, n-1)
		tau := make([]complex128, n-1)
		Zhetrd(n, a, lda, d, e, tau)
		a0, tau0 := slices.Clone(a), slices.Clone(tau)
		q := reflectorProduct(n, a, lda, tau)
		for _, ncols := range []int{1, 7, n} {
			ldc := n + 2
			c := randMat(rnd, n, ncols, ldc, true)
			ref := naiveGemm(false, false, n, ncols, n, q, n, c, ldc)
			Zunmtr(n, ncols, a, lda, tau, c, ldc)
			if r := diffNorm(n, ncols, c, ldc, ref, n) / frob(n, ncols, ref, n); !(r <= 4*0x1p-53*float64(n)) {
				t.Errorf("seed %d n=%d ncols=%d: ‖Zunmtr − Q·C‖/‖Q·C‖ = %.3g", testSeed, n, ncols, r)
			}
			if !paddingIntact(c, n, ncols, ldc) {
				t.Errorf("n=%d ncols=%d: Zunmtr wrote the padding rows of c", n, ncols)
			}
			for i := range a {
				if !sameBits(a[i], a0[i]) {
					t.Fatalf("n=%d: Zunmtr modified a[%d]", n, i)
				}
			}
			if !slices.Equal(tau, tau0) {
				t.Fatalf("n=%d: Zunmtr modified tau", n)
			}
		}
	}
}
