package kernels

import (
	"errors"
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

// TestParallelScans: the NaN/Inf scan and the zeroing of the strict upper
// triangle give the serial answers on matrices large enough for
// columnBlocks to share them out: the first non-finite element in column
// order, wherever the blocks finish.
func TestParallelScans(t *testing.T) {
	const n, lda = 777, 780
	a := make([]float64, lda*n)
	for i := range a {
		a[i] = 1
	}
	if err := checkFiniteF64(n, n, a, lda, false); err != nil {
		t.Fatalf("finite matrix: %v", err)
	}
	a[700+600*lda] = math.Inf(1) // a late column
	a[650+130*lda] = math.NaN()  // the first in column order
	a[20+100*lda] = math.NaN()   // above the diagonal: only the full scan sees it
	for _, tc := range []struct {
		lowerOnly bool
		row, col  int
	}{{false, 20, 100}, {true, 650, 130}} {
		var nf *NonFiniteError
		if err := checkFiniteF64(n, n, a, lda, tc.lowerOnly); !errors.As(err, &nf) || nf.Row != tc.row || nf.Col != tc.col {
			t.Errorf("lowerOnly=%v: %v, want the element (%d,%d)", tc.lowerOnly, err, tc.row, tc.col)
		}
	}
	zeroStrictUpperF64(n, a, lda)
	for j := range n {
		for i := range lda {
			v := a[i+j*lda]
			if i < j && v != 0 || i >= j && v == 0 {
				t.Fatalf("after zeroStrictUpperF64, element (%d,%d) = %v", i, j, v)
			}
		}
	}
}
