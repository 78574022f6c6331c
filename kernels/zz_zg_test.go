package kernels

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkScratchZgemm(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{1000, 1000, 1000}, {1000, 1000, 64}, {64, 1000, 1000}} {
		m, n, k := sz[0], sz[1], sz[2]
		a := make([]complex128, m*k)
		bb := make([]complex128, k*n)
		c := make([]complex128, m*n)
		for i := range a {
			a[i] = complex(rnd.NormFloat64(), 1)
		}
		for i := range bb {
			bb[i] = complex(rnd.NormFloat64(), 1)
		}
		b.Run("", func(b *testing.B) {
			for b.Loop() {
				zgemm(false, false, m, n, k, 1, a, m, bb, k, 0, c, m)
			}
			b.ReportMetric(8*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFlops")
		})
	}
}
