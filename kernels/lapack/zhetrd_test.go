package lapack

import (
	"fmt"
	"testing"
)

// TestZhetrd checks the complex reduction Qᴴ·A·Q = T, T real, on random
// Hermitian matrices with junk in the strict upper triangle and the padding
// rows and non-real diagonal entries, whose imaginary parts must be ignored.
func TestZhetrd(t *testing.T) {
	rnd := newRand(t, 12)
	for _, n := range tridiagSizes {
		lda := n + 2
		a, full := randHermitian(rnd, n, lda, true)
		for j := 0; j < n; j++ {
			a[j+j*lda] += complex(0, 5) // ignored: full has the real diagonal
		}
		d := make([]float64, n)
		e := make([]float64, n-1)
		tau := make([]complex128, n-1)
		Zhetrd(n, a, lda, d, e, tau)
		checkReduction(t, fmt.Sprintf("Zhetrd n=%d", n), n, full, a, lda, d, e, tau)
	}
}
