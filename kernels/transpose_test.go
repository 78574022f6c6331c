package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Transpose against the definition, element by element: shapes thin and
// wide, across the 64-wide blocks and the parallel threshold, leading
// dimensions beyond the rows (what lies between the columns of dst stays
// as it was), real and complex.
func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ m, n, lds, ldd int }{
		{0, 0, 1, 1}, {1, 1, 1, 1}, {1, 7, 1, 7}, {7, 1, 7, 1}, {3, 5, 4, 6},
		{65, 130, 70, 131}, {1000, 777, 1000, 777}, {129, 2000, 131, 2003},
	} {
		t.Run(fmt.Sprintf("%dx%d", c.m, c.n), func(t *testing.T) {
			src := make([]complex128, max(0, (c.n-1)*c.lds+c.m))
			for i := range src {
				src[i] = complex(rng.NormFloat64(), rng.NormFloat64())
			}
			dst := make([]complex128, max(0, (c.m-1)*c.ldd+c.n))
			const junk = complex(-7, 7)
			for i := range dst {
				dst[i] = junk
			}
			Transpose(c.m, c.n, src, c.lds, dst, c.ldd)
			real64 := make([]float64, len(src))
			for i, v := range src {
				real64[i] = real(v)
			}
			dst64 := make([]float64, len(dst))
			Transpose(c.m, c.n, real64, c.lds, dst64, c.ldd)
			for i := range c.m {
				for j := range c.n {
					if got, want := dst[j+i*c.ldd], src[i+j*c.lds]; got != want {
						t.Fatalf("dst[%d,%d] = %v, want %v", j, i, got, want)
					}
					if got, want := dst64[j+i*c.ldd], real64[i+j*c.lds]; got != want {
						t.Fatalf("float64: dst[%d,%d] = %v, want %v", j, i, got, want)
					}
				}
				if i+1 < c.m {
					for k := c.n; k < c.ldd; k++ {
						if dst[k+i*c.ldd] != junk {
							t.Fatalf("dst[%d] between columns written", k+i*c.ldd)
						}
					}
				}
			}
		})
	}
}
