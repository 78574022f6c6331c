//go:build mpi

package distops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkPotrs times the graph op mgla.Potrs(a, b, WithGrid(On(grid)))
// run by a TapeMachine against the same work done with package dist
// directly in the same processes: distribute the replicated A and B
// (dist.FromReplicated), dist.Potrs, and X back to every rank
// (Gather(-1)). The graph also brings the factor L back to every rank (the
// Cholesky node that Potrs and LogDet share) and distributes it again.
// float64 on the near-square grid of the world, N from MGLA_DIST_BENCH_N
// (default 2000), 64×64 blocks, 16 right-hand sides. Every rank must run
// the same number of iterations: run it with a fixed -test.benchtime=Nx.
// Rank 0 prints graph/direct.
func BenchmarkPotrs(b *testing.B) {
	n, k := 2000, 16
	if v, err := strconv.Atoi(os.Getenv("MGLA_DIST_BENCH_N")); err == nil {
		n = v
	}
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer grid.Close()
	// The Kac–Murdock–Szegő matrix A_ij = ½^|i−j|: symmetric positive
	// definite, condition number below 9, and column-major as it is.
	am := make([]float64, n*n)
	for i := range n {
		for j := range n {
			am[i*n+j] = math.Pow(0.5, math.Abs(float64(i-j)))
		}
	}
	a := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(am))
	rng := rand.New(rand.NewPCG(1, 2))
	rhs := matrix[float64](rng, n, k)
	bm := make([]float64, n*k)
	for i := range n {
		for j := range k {
			bm[i+j*n] = rhs.Data().([]float64)[i*k+j]
		}
	}

	g := G.NewGraph()
	an, bn := input(g, "A", a), input(g, "B", rhs)
	x, err := mgla.Potrs(an, bn, mgla.WithGrid(distops.On(grid)), mgla.WithTile(64))
	if err != nil {
		b.Fatal(err)
	}
	var xv G.Value
	G.Read(x, &xv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	graph := func() {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
	}
	direct := func() {
		da, err := dist.FromReplicated(grid, n, n, 64, am)
		if err != nil {
			b.Fatal(err)
		}
		db, err := dist.FromReplicated(grid, n, k, 64, bm)
		if err != nil {
			b.Fatal(err)
		}
		x, err := dist.Potrs(da, db)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Gather(-1); err != nil {
			b.Fatal(err)
		}
	}
	p, q := grid.Shape()
	// Graph and direct alternate, so that both see the same machine state
	// (this VM's two cores are shared).
	b.Run(fmt.Sprintf("N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		graph() // warm up
		direct()
		var tg, td time.Duration
		for b.Loop() {
			start := time.Now()
			graph()
			tg += time.Since(start)
			start = time.Now()
			direct()
			td += time.Since(start)
		}
		b.ReportMetric(float64(tg.Microseconds())/1e3/float64(b.N), "graph-ms")
		b.ReportMetric(float64(td.Microseconds())/1e3/float64(b.N), "direct-ms")
		b.ReportMetric(float64(tg)/float64(td), "graph/direct")
		if world.Rank() == 0 {
			fmt.Printf("Potrs N=%d on %d processes (%d×%d grid): graph %.1f ms, direct dist calls %.1f ms, graph/direct = %.3f\n",
				n, world.Size(), p, q, float64(tg.Microseconds())/1e3/float64(b.N), float64(td.Microseconds())/1e3/float64(b.N), float64(tg)/float64(td))
		}
	})
}
