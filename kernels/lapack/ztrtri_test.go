package lapack

import "testing"

// TestZtrtri checks L·L⁻¹ = I on orders around the recursion's base (32),
// with the smallest workspace allowed, the strict upper triangle zero before
// and after, and the padding rows untouched.
func TestZtrtri(t *testing.T) {
	rnd := newRand(t, 6)
	for _, n := range []int{1, 2, 31, 32, 33, 65, 130} {
		lda := n + 2
		l := wellCondLower(rnd, n, lda)
		l0 := lowerOf(n, l, lda)
		Ztrtri(n, l, lda, make([]complex128, (n/2)*(n-n/2)))
		if !paddingIntact(l, n, n, lda) {
			t.Errorf("n=%d: Ztrtri wrote the padding rows", n)
		}
		inv := lowerOf(n, l, lda)
		for j := 0; j < n; j++ {
			for i := 0; i < j; i++ {
				if l[i+j*lda] != 0 {
					t.Fatalf("n=%d: Ztrtri wrote the strict upper triangle at (%d,%d)", n, i, j)
				}
			}
		}
		p := naiveGemm(false, false, n, n, n, l0, n, inv, n)
		r := diffNorm(n, n, p, n, identity(n), n) / (frob(n, n, l0, n) * frob(n, n, inv, n))
		if !(r <= 4*0x1p-53*float64(n)) {
			t.Errorf("seed %d n=%d: ‖L·L⁻¹ − I‖/(‖L‖‖L⁻¹‖) = %.3g", testSeed, n, r)
		}
	}
}
