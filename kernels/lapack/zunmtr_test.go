package lapack

import (
	"math"
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

// TestDormtr is TestZunmtr for Dormtr and Dsytrd, with the all-ones matrix
// besides random ones: its reflectors end in zeros, where gonum's blocked
// dormlq (which Dormtr replaces) built a wrong block reflector.
func TestDormtr(t *testing.T) {
	rnd := newRand(t, 17)
	for _, n := range []int{1, 2, 39, 64, 65, 100, 130} {
		lda := n + 1
		for _, ones := range []bool{false, true} {
			a, _ := randHermitian(rnd, n, lda, false)
			if ones {
				for j := 0; j < n; j++ {
					for i := j; i < n; i++ {
						a[i+j*lda] = 1
					}
				}
			}
			ar := realOf(a)
			d := make([]float64, n)
			e := make([]float64, n-1)
			tau := make([]float64, n-1)
			Dsytrd(n, ar, lda, d, e, tau)
			a0, tau0 := slices.Clone(ar), slices.Clone(tau)
			q := reflectorProduct(n, complexOf(ar), lda, complexOf(tau))
			for _, ncols := range []int{1, 7, n} {
				ldc := n + 2
				c := randMat(rnd, n, ncols, ldc, false)
				ref := naiveGemm(false, false, n, ncols, n, q, n, c, ldc)
				cr := realOf(c)
				Dormtr(n, ncols, ar, lda, tau, cr, ldc)
				c = complexOf(cr)
				if r := diffNorm(n, ncols, c, ldc, ref, n) / frob(n, ncols, ref, n); !(r <= 4*0x1p-53*float64(n)) {
					t.Errorf("seed %d n=%d ones=%v ncols=%d: ‖Dormtr − Q·C‖/‖Q·C‖ = %.3g", testSeed, n, ones, ncols, r)
				}
				if !paddingIntact(c, n, ncols, ldc) {
					t.Errorf("n=%d ncols=%d: Dormtr wrote the padding rows of c", n, ncols)
				}
				same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
				if !slices.EqualFunc(ar, a0, same) || !slices.EqualFunc(tau, tau0, same) {
					t.Fatalf("n=%d: Dormtr modified a or tau", n)
				}
			}
		}
	}
}
