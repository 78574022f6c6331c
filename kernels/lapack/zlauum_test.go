package lapack

import (
	"math/cmplx"
	"testing"
)

// TestZlauum checks the full, exactly Hermitian Mᴴ·M against the triple
// loop on orders around its block size (128), padding rows untouched.
func TestZlauum(t *testing.T) {
	rnd := newRand(t, 8)
	for _, n := range []int{1, 3, 127, 128, 129, 260} {
		lda := n + 1
		a := randMat(rnd, n, n, lda, true)
		for j := 0; j < n; j++ {
			clear(a[j*lda : j*lda+j])
		}
		m := lowerOf(n, a, lda)
		ref := naiveGemm(true, false, n, n, n, m, n, m, n)
		Zlauum(n, a, lda)
		if !paddingIntact(a, n, n, lda) {
			t.Errorf("n=%d: Zlauum wrote the padding rows", n)
		}
		if r := diffNorm(n, n, a, lda, ref, n) / frob(n, n, ref, n); !(r <= 4*0x1p-53*float64(n)) {
			t.Errorf("seed %d n=%d: ‖Zlauum − Mᴴ·M‖/‖Mᴴ·M‖ = %.3g", testSeed, n, r)
		}
		for j := 0; j < n; j++ {
			if imag(a[j+j*lda]) != 0 {
				t.Fatalf("n=%d: diagonal (%d,%d) = %v is not real", n, j, j, a[j+j*lda])
			}
			for i := j + 1; i < n; i++ {
				if a[j+i*lda] != cmplx.Conj(a[i+j*lda]) {
					t.Fatalf("n=%d: (%d,%d) is not the conjugate of (%d,%d)", n, j, i, i, j)
				}
			}
		}
	}
}
