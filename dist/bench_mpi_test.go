//go:build mpi

package dist_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mgla/mgla/dist"
)

// BenchmarkPotrs times dist.Potrs against p?potrf + p?potrs called straight
// on the same local arrays in the same processes (DirectPotrs), float64, on
// the near-square grid of the world, N from MGLA_DIST_BENCH_N (default
// 4000), 64×64 blocks, 16 right-hand sides. Every rank must run the same
// number of iterations: run it with a fixed -test.benchtime=Nx. Rank 0
// prints op/direct.
func BenchmarkPotrs(b *testing.B) {
	n := 4000
	if v, err := strconv.Atoi(os.Getenv("MGLA_DIST_BENCH_N")); err == nil {
		n = v
	}
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	full := make([]float64, n*n)
	for i := range full {
		full[i] = rng.Float64() - 0.5
	}
	for i := range n {
		for j := range i {
			full[j+i*n] = full[i+j*n]
		}
		full[i+i*n] += float64(n)
	}
	rhs := make([]float64, n*16)
	for i := range rhs {
		rhs[i] = rng.Float64()
	}
	a, err := dist.FromReplicated(g, n, n, 64, full)
	if err != nil {
		b.Fatal(err)
	}
	bb, err := dist.FromReplicated(g, n, 16, 64, rhs)
	if err != nil {
		b.Fatal(err)
	}
	l, x := a.Clone(), bb.Clone()
	// Op and direct alternate, so that both see the same machine state
	// (this VM's two cores are shared).
	b.Run(fmt.Sprintf("N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		var op, direct time.Duration
		if info := dist.DirectPotrs(a, bb, l, x); info != 0 { // warm up
			b.Fatal(info)
		}
		for b.Loop() {
			start := time.Now()
			if _, err := dist.Potrs(a, bb); err != nil {
				b.Fatal(err)
			}
			op += time.Since(start)
			start = time.Now()
			if info := dist.DirectPotrs(a, bb, l, x); info != 0 {
				b.Fatal(info)
			}
			direct += time.Since(start)
		}
		b.ReportMetric(float64(op.Milliseconds())/float64(b.N), "op-ms")
		b.ReportMetric(float64(direct.Milliseconds())/float64(b.N), "direct-ms")
		b.ReportMetric(float64(op)/float64(direct), "op/direct")
		if world.Rank() == 0 {
			fmt.Printf("Potrs N=%d on %d processes (%d×%d grid): op %.1f ms, direct p?potrf+p?potrs %.1f ms, op/direct = %.3f\n",
				n, world.Size(), pqOf(g)[0], pqOf(g)[1], float64(op.Microseconds())/1e3/float64(b.N), float64(direct.Microseconds())/1e3/float64(b.N), float64(op)/float64(direct))
		}
	})
}

func pqOf(g *dist.Grid) [2]int {
	p, q := g.Shape()
	return [2]int{p, q}
}

// TestGatherGemr2d checks the p?gemr2d gather that BenchmarkGather times.
func TestGatherGemr2d(t *testing.T) {
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		m, err := dist.NewMatrix[float64](g, 11, 7, 3)
		if err != nil {
			t.Fatal(err)
		}
		m.Fill(func(r, c int) float64 { return float64(r*7 + c + 1) })
		full := dist.GatherGemr2d(m)
		if (world.Rank() == 0) != (full != nil) {
			t.Fatalf("rank %d: %d elements", world.Rank(), len(full))
		}
		for c := 0; c < 7 && full != nil; c++ {
			for r := range 11 {
				if full[r+c*11] != float64(r*7+c+1) {
					t.Fatalf("%v: element (%d,%d) = %v", pq, r, c, full[r+c*11])
				}
			}
		}
	}
}

// BenchmarkGather times Matrix.Gather(0) (a sum over MPI of each rank's
// blocks placed in a zero matrix) against p?gemr2d into a 1×1 grid on rank
// 0, N×N float64 (MGLA_DIST_BENCH_N, default 4000). Fixed -test.benchtime=Nx.
func BenchmarkGather(b *testing.B) {
	n := 4000
	if v, err := strconv.Atoi(os.Getenv("MGLA_DIST_BENCH_N")); err == nil {
		n = v
	}
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	m, err := dist.NewMatrix[float64](g, n, n, 64)
	if err != nil {
		b.Fatal(err)
	}
	m.Fill(func(r, c int) float64 { return float64(r - c) })
	var sum, gemr time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := m.Gather(0); err != nil {
			b.Fatal(err)
		}
		sum += time.Since(start)
		start = time.Now()
		dist.GatherGemr2d(m)
		gemr += time.Since(start)
	}
	if world.Rank() == 0 {
		fmt.Printf("Gather N=%d on %d processes: sum over MPI %.1f ms, p?gemr2d %.1f ms\n", n, world.Size(),
			float64(sum.Microseconds())/1e3/float64(b.N), float64(gemr.Microseconds())/1e3/float64(b.N))
	}
}
