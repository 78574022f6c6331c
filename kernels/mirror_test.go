package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMirrorLowerF64: the strict upper triangle becomes the transpose of the
// strict lower one, which stays as it was, and so do the diagonal and the
// rows past n of each column; sizes on both sides of the parallel threshold
// (n = 512) and of the 64-wide blocks.
func TestMirrorLowerF64(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed, 17))
	for _, n := range []int{1, 2, 63, 64, 65, 511, 512, 700, 1031} {
		lda := n + 3
		a := make([]float64, lda*n)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		for j := range n {
			for i := range j {
				a[i+j*lda] = math.NaN() // the upper triangle is overwritten
			}
		}
		before := append([]float64(nil), a...)
		mirrorLowerF64(n, a, lda)
		for j := range n {
			for i := range lda {
				got, at := a[i+j*lda], before[i+j*lda]
				switch {
				case i < j:
					if want := before[j+i*lda]; got != want {
						t.Fatalf("seed %d n=%d: upper (%d,%d) = %v, want the lower (%d,%d) = %v", testSeed, n, i, j, got, j, i, want)
					}
				case got != at:
					t.Fatalf("seed %d n=%d: element (%d,%d) changed from %v to %v", testSeed, n, i, j, at, got)
				}
			}
		}
	}
}
