//go:build openblas

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mgla/mgla/internal/benchpair"
	"github.com/mgla/mgla/kernels/cpubackend"
)

// Benchmarks of the openblas build against LAPACK itself: each iteration runs
// the kernel API as package ops calls it (PotrfTo+Potrs, PotriTo, and Syevd
// on a copy) and the bare column-major LAPACK calls on the same input, both
// keeping the input unchanged (LAPACK on a copy), in turns (which one goes
// first alternates). They report "x-vs-lapack" = LAPACK time ÷ kernels time
// over all iterations (1 means no overhead; the target is ≥ 0.91),
// "median-pair", the median over the iterations of the same ratio within
// each iteration (which one slow iteration of either, from a neighbour on
// the machine, does not move), "fastest", the ratio of each side's fastest
// iteration (a neighbour only ever slows a call down), and "lapack-s/op".
// Run with
//
//	CGO_LDFLAGS='-llapacke -lopenblas' go test -tags openblas -run '^$' -bench 'VsLAPACK' -benchtime 9x ./kernels/

// vsLAPACK times lapack() and mgla() in turns (benchpair), b.N times each,
// and reports the ratios; ns/op is mgla's time.
func vsLAPACK(b *testing.B, mgla, lapack func()) {
	mgla() // warm up both (workspace queries, page faults)
	lapack()
	b.StopTimer()
	var p benchpair.Pairs
	for range b.N {
		p.Time(lapack, mgla)
	}
	b.ReportMetric(float64(p.Total(1).Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(p.Total(0))/float64(p.Total(1)), "x-vs-lapack")
	b.ReportMetric(p.MedianRatio(), "median-pair")
	b.ReportMetric(p.FastestRatio(), "fastest")
	b.ReportMetric(p.Total(0).Seconds()/float64(b.N), "lapack-s/op")
}

func BenchmarkPotrsVsLAPACK(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		for _, nrhs := range []int{1, 64} {
			b.Run(fmt.Sprintf("N=%d/nrhs=%d", n, nrhs), func(b *testing.B) {
				a0 := randSPD(n, uint64(n))
				rnd := rand.New(rand.NewPCG(1, 2))
				b0 := make([]float64, n*nrhs)
				for i := range b0 {
					b0[i] = rnd.NormFloat64()
				}
				a := make([]float64, n*n)
				x := make([]float64, n*nrhs)
				vsLAPACK(b, func() {
					copy(x, b0)
					if err := PotrfTo(n, a0, n, a, n); err != nil {
						b.Fatal(err)
					}
					if err := Potrs(n, nrhs, a, n, x, n); err != nil {
						b.Fatal(err)
					}
				}, func() {
					copy(a, a0)
					copy(x, b0)
					if info := cpubackend.DpotrfLAPACK(n, a, n); info != 0 {
						b.Fatalf("dpotrf info %d", info)
					}
					if info := cpubackend.DpotrsLAPACK(n, nrhs, a, n, x, n); info != 0 {
						b.Fatalf("dpotrs info %d", info)
					}
				})
			})
		}
	}
}

func BenchmarkPotriVsLAPACK(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			l0 := randSPD(n, uint64(n))
			if err := Potrf(n, l0, n); err != nil {
				b.Fatal(err)
			}
			l := make([]float64, n*n)
			vsLAPACK(b, func() {
				if err := PotriTo(n, l0, n, l, n); err != nil {
					b.Fatal(err)
				}
			}, func() {
				copy(l, l0)
				if info := cpubackend.DpotriLAPACK(n, l, n); info != 0 {
					b.Fatalf("dpotri info %d", info)
				}
			})
		})
	}
}

func BenchmarkSyevdVsLAPACK(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			a0 := randSym(n, uint64(n))
			a := make([]float64, n*n)
			w := make([]float64, n)
			vsLAPACK(b, func() {
				copy(a, a0)
				if err := Syevd(n, a, n, w, true); err != nil {
					b.Fatal(err)
				}
			}, func() {
				copy(a, a0)
				if info := cpubackend.DsyevdLAPACK(n, a, n, w, true); info != 0 {
					b.Fatalf("dsyevd info %d", info)
				}
			})
		})
	}
}
