//go:build mpi

package distops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	"github.com/mgla/mgla/examples/builders"
	"github.com/mgla/mgla/internal/benchpair"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkPotrs times two graphs run by a TapeMachine against the same
// work done with package dist directly in the same processes, with the
// same data in and out:
//
//   - replicated: mgla.Potrs(a, b, WithGrid(On(grid))) on host A and B
//     every rank holds, against distributing them (dist.FromReplicated),
//     dist.Potrs, and X back to every rank (Gather(-1));
//   - rowblocks: the grid-resident path, A from each rank's band of rows
//     (Ops.FromRowBlocks, the block split of the rows), Ops.Potrs on the
//     grid value and X gathered (Ops.Gather(x, -1)), against
//     dist.FromRowBlocks of the same (column-major) band, B from
//     FromReplicated, dist.Potrs and Gather(-1).
//
// float64 on the near-square grid of the world, N from MGLA_DIST_BENCH_N
// (default 2000), 64×64 blocks, 16 right-hand sides. Every rank must run
// the same number of iterations: run it with a fixed -test.benchtime=Nx.
// Rank 0 prints graph/direct, one line per path.
func BenchmarkPotrs(b *testing.B) {
	n, grid := benchGrid(b)
	k := 16
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
	x, err := mgla.Potrs(input(g, "A", a), input(g, "B", rhs), mgla.WithGrid(distops.On(grid)), mgla.WithTile(64))
	if err != nil {
		b.Fatal(err)
	}
	graph := runner(b, g, x)
	direct := directPotrs(b, grid, n, k, bm, func() (*dist.Matrix[float64], error) {
		return dist.FromReplicated(grid, n, n, 64, am)
	})

	// The grid-resident path: A from each rank's band of rows (the block
	// split), Potrs on the grid value, X gathered to every rank; directly:
	// dist.FromRowBlocks, dist.Potrs, Gather(-1) on the same data.
	per := (n + world.Size() - 1) / world.Size()
	if (world.Size()-1)*per >= n { // the same verdict on every rank
		b.Skipf("N=%d leaves the last of %d processes no rows", n, world.Size())
	}
	r0, r1 := world.Rank()*per, min((world.Rank()+1)*per, n)
	bandCM := make([]float64, (r1-r0)*n)
	for i := range r1 - r0 {
		for j := range n {
			bandCM[i+j*(r1-r0)] = am[(r0+i)*n+j]
		}
	}
	band := rowsOf(a, r0, r1)
	rg := G.NewGraph()
	on := distops.On(grid)
	kn := G.Must(on.FromRowBlocks(input(rg, "band", band), n, 64))
	rx, err := on.Gather(G.Must(on.Potrs(kn, input(rg, "B", rhs), 0)), -1)
	if err != nil {
		b.Fatal(err)
	}
	gridGraph := runner(b, rg, rx)
	gridDirect := directPotrs(b, grid, n, k, bm, func() (*dist.Matrix[float64], error) {
		return dist.FromRowBlocks(grid, n, 64, r1-r0, bandCM)
	})
	// The same grid-resident graph against the direct path given the same
	// row-major bands a Gorgonia program holds (dist.FromRowBlocksRowMajor):
	// both then pay for the layout change, so the ratio is the graph's own
	// cost; the column-major baseline above is the strict one.
	bandRM := band.Data().([]float64)
	gridDirectRM := directPotrs(b, grid, n, k, bm, func() (*dist.Matrix[float64], error) {
		return dist.FromRowBlocksRowMajor(grid, n, 64, r1-r0, bandRM)
	})
	b.Run(fmt.Sprintf("N=%d/P=%d/replicated", n, world.Size()), func(b *testing.B) {
		timePair(b, grid, "Potrs", "replicated A and B: graph (mgla.Potrs WithGrid)", "direct dist calls", n, graph, direct)
	})
	b.Run(fmt.Sprintf("N=%d/P=%d/rowblocks", n, world.Size()), func(b *testing.B) {
		timePair(b, grid, "Potrs", "A from row blocks (grid value), X gathered: graph (Ops.Potrs)", "direct dist calls", n, gridGraph, gridDirect)
	})
	b.Run(fmt.Sprintf("N=%d/P=%d/rowblocks-rowmajor", n, world.Size()), func(b *testing.B) {
		timePair(b, grid, "Potrs", "A from row blocks, direct from the same row-major bands: graph (Ops.Potrs)", "direct dist calls", n, gridGraph, gridDirectRM)
	})
	// The control: the direct path against itself, timed as the pairs
	// above. Its ratios would all be 1 on a quiet machine; how far they are
	// from 1 is what the machine's noise alone does to the ratios above.
	b.Run(fmt.Sprintf("N=%d/P=%d/control", n, world.Size()), func(b *testing.B) {
		timePair(b, grid, "Potrs", "control, the direct path from row-major bands against itself: first", "direct dist calls", n, gridDirectRM, gridDirectRM)
	})
}

// benchGrid is a benchmark's N (MGLA_DIST_BENCH_N, default 2000) and the
// near-square grid of the world, closed when the benchmark ends.
func benchGrid(b *testing.B) (int, *dist.Grid) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("MGLA_DIST_BENCH_N")); err == nil {
		n = v
	}
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { grid.Close() })
	return n, grid
}

// runner is a run of a TapeMachine on g (built once), reading x out.
func runner(b *testing.B, g *G.ExprGraph, x *G.Node) func() {
	var xv G.Value
	G.Read(x, &xv)
	vm := G.NewTapeMachine(g)
	b.Cleanup(func() { vm.Close() })
	return func() {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
	}
}

// directPotrs is the direct dist path: A from distribute, B (n×k,
// column-major bm) from every rank's copy, dist.Potrs, and X back to every
// rank.
func directPotrs(b *testing.B, grid *dist.Grid, n, k int, bm []float64, distribute func() (*dist.Matrix[float64], error)) func() {
	return func() {
		da, err := distribute()
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
}

// timePair times graph against direct in turns (benchpair), reports the
// times, their ratio, the median of the per-iteration ratios and the ratio
// of the fastest iterations, and prints one line from rank 0 about op
// (what the graph is, base what it is timed against).
func timePair(b *testing.B, grid *dist.Grid, op, what, base string, n int, graph, direct func()) {
	p, q := grid.Shape()
	graph() // warm up
	direct()
	var pairs benchpair.Pairs
	for b.Loop() {
		pairs.Time(graph, direct)
	}
	tg, td := pairs.Total(0), pairs.Total(1)
	gms, dms := float64(tg.Microseconds())/1e3/float64(b.N), float64(td.Microseconds())/1e3/float64(b.N)
	median, fastest, ratios := pairs.MedianRatio(), pairs.FastestRatio(), pairs.Ratios()
	b.ReportMetric(gms, "graph-ms")
	b.ReportMetric(dms, "direct-ms")
	b.ReportMetric(float64(tg)/float64(td), "graph/direct")
	b.ReportMetric(median, "median-pair")
	b.ReportMetric(fastest, "fastest-ratio")
	if world.Rank() == 0 {
		fmt.Printf("%s N=%d on %d processes (%d×%d grid), %s %.1f ms, %s %.1f ms, graph/direct = %.3f, median of %d pairs %.3f (%.3f–%.3f), fastest %.1f / %.1f ms = %.3f\n",
			op, n, world.Size(), p, q, what, gms, base, dms, float64(tg)/float64(td), len(ratios), median, ratios[0], ratios[len(ratios)-1],
			float64(pairs.Fastest(0).Microseconds())/1e3, float64(pairs.Fastest(1).Microseconds())/1e3, fastest)
	}
}

// BenchmarkKernelGP times a Gaussian process's NLL with K made on the grid
// (mgla.SquaredExponential and GaussianLogDensity with WithGrid, run by a
// TapeMachine) in the same processes:
//
//   - forward: the NLL against the same work with package dist directly
//     (dist.KernelMatrix, Cholesky, PotrsFromFactor, LogDetFromFactor,
//     K⁻¹y gathered);
//   - step: the NLL and its gradient with respect to the three
//     log-parameters against the same step with K from each rank's band
//     of rows built with Gorgonia's ops (Ops.FromRowBlocks, the band's
//     share of the gradient summed by an AllReduce node: examples/distributed
//     -kernel bands).
//
// float64, points in one dimension, N from MGLA_DIST_BENCH_N (default
// 2000), 64×64 blocks. Run it with a fixed -test.benchtime=Nx.
func BenchmarkKernelGP(b *testing.B) {
	n, grid := benchGrid(b)
	nb := 64
	rng := rand.New(rand.NewPCG(3, 4))
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = 10*float64(i)/float64(n) + 0.01*rng.Float64()
		y[i] = math.Sin(x[i]) + 0.1*rng.NormFloat64()
	}
	theta := [3]float64{math.Log(0.5), math.Log(2), math.Log(0.1)}
	p := sharding.KernelParams{Family: sharding.SquaredExp, LengthScale: 0.5, SignalVar: 2, NoiseVar: 0.1}
	on := distops.On(grid)

	// The graph with K on the grid: nll, and the gradient when grad is set.
	gridGraph := func(grad bool) func() {
		g := G.NewGraph()
		var params [3]*G.Node
		var positive [3]*G.Node
		for i, name := range []string{"logEll", "logSig", "logNoise"} {
			params[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue(theta[i]))
			positive[i] = G.Must(G.Exp(params[i]))
		}
		xn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(x))))
		yn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("y"), G.WithValue(tensor.New(tensor.WithBacking(y))))
		opts := mgla.Options(mgla.WithGrid(on), mgla.WithTile(nb))
		k := G.Must(mgla.SquaredExponential(xn, positive[0], positive[1], positive[2], opts))
		nll := G.Must(G.Neg(G.Must(mgla.GaussianLogDensity(k, yn, opts))))
		if grad {
			if _, err := G.Grad(nll, params[:]...); err != nil {
				b.Fatal(err)
			}
		}
		return runner(b, g, nll)
	}
	direct := func() {
		k, err := dist.KernelMatrix[float64](grid, x, n, 1, nb, p)
		if err != nil {
			b.Fatal(err)
		}
		l, err := dist.Cholesky(k)
		if err != nil {
			b.Fatal(err)
		}
		ym, err := dist.FromReplicated(grid, n, 1, nb, y)
		if err != nil {
			b.Fatal(err)
		}
		alpha, err := dist.PotrsFromFactor(l, ym)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dist.LogDetFromFactor(l); err != nil {
			b.Fatal(err)
		}
		if _, err := alpha.Gather(-1); err != nil {
			b.Fatal(err)
		}
	}
	// The step with K from each rank's band of rows (the block split).
	per := (n + world.Size() - 1) / world.Size()
	if (world.Size()-1)*per >= n {
		b.Skipf("N=%d leaves the last of %d processes no rows", n, world.Size())
	}
	r0, r1 := world.Rank()*per, min((world.Rank()+1)*per, n)
	bands := func() func() {
		g := G.NewGraph()
		var params [3]*G.Node
		for i, name := range []string{"logEll", "logSig", "logNoise"} {
			params[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue(theta[i]))
		}
		d := G.NewMatrix(g, tensor.Float64, G.WithShape(r1-r0, n), G.WithName("D rows"),
			G.WithValue(tensor.New(tensor.WithShape(r1-r0, n), tensor.WithBacking(builders.SquaredDistances(x[r0:r1], x)))))
		eye := G.NewMatrix(g, tensor.Float64, G.WithShape(r1-r0, n), G.WithName("I rows"), G.WithValue(builders.IdentityRows(n, r0, r1)))
		yn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("y"), G.WithValue(tensor.New(tensor.WithBacking(y))))
		k := G.Must(on.FromRowBlocks(builders.KernelMatrix(d, eye, params), n, nb))
		alpha := G.Must(on.Gather(G.Must(on.Potrs(k, yn, 0)), -1))
		quad := G.Must(G.Sum(G.Must(G.HadamardProd(yn, alpha))))
		nll := G.Must(G.Add(G.Must(G.Mul(G.NewConstant(0.5), quad)), G.Must(G.Mul(G.NewConstant(0.5), G.Must(on.LogDet(k, 0))))))
		grads, err := G.Grad(nll, params[:]...)
		if err != nil {
			b.Fatal(err)
		}
		parts := make([]*G.Node, len(grads))
		for i, gn := range grads {
			parts[i] = G.Must(G.Reshape(gn, tensor.Shape{1}))
		}
		sum := G.Must(collective.AllReduceNode(G.Must(G.Concat(0, parts...)), world, collective.Sum, collective.WithName("gradient sum")))
		return runner(b, g, sum)
	}
	forward, step, bandStep := gridGraph(false), gridGraph(true), bands()
	b.Run(fmt.Sprintf("N=%d/P=%d/forward", n, world.Size()), func(b *testing.B) {
		timePair(b, grid, "GP NLL", "K made on the grid: graph (SquaredExponential, GaussianLogDensity WithGrid)", "direct dist calls", n, forward, direct)
	})
	b.Run(fmt.Sprintf("N=%d/P=%d/step", n, world.Size()), func(b *testing.B) {
		timePair(b, grid, "GP NLL and gradient", "K made on the grid: graph", "K from row bands (FromRowBlocks, AllReduce)", n, step, bandStep)
	})
}
