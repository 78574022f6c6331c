//go:build mpi

// Command distributed is the Gaussian-process training of examples/gp
// with its covariance K(θ) spread over the processes of an MPI job on a
// ScaLAPACK grid of all of them (block×block blocks), no process holding
// all of it. Potrs (K⁻¹Y) and LogDet (log det K) run on that grid value,
// sharing one distributed Cholesky factor; K⁻¹Y comes back to every rank,
// the NLL is every rank's, and gorgonia.Grad's backward pass runs on the
// grid too: the gradient of K stays there. Every rank takes the same Adam
// steps; rank 0 prints them.
//
// Two ways to make K (-kernel):
//
//   - grid (the default): examples/gp's own model (builders.NewGPModel)
//     with mgla.WithGrid: mgla.SquaredExponential makes K on the grid,
//     each rank computing its own blocks from the points, and
//     GaussianLogDensity is the NLL; the parameters' gradient comes back
//     to every rank whole.
//   - bands: each rank builds only its band of rows of K with Gorgonia's
//     ops (the rows of its share of the training points against all of
//     them, builders.KernelMatrix on that band: the natural output of
//     data loading) and puts it on the grid (distops.Ops.FromRowBlocks);
//     each rank gets its band's rows of K's gradient, from which its part
//     of the parameters' gradient, and an AllReduce node sums the parts.
//
// The data and the schedule are examples/gp's (builders.DefaultGPDemo), so
// the answer is the same on any number of processes; with -check rank 0
// also trains the single-process graph of examples/gp and fails if the two
// differ by more than 1e-6 (relative).
//
//	go build -tags mpi -o /tmp/distributed ./examples/distributed
//	mpirun -n 4 /tmp/distributed -check
//	mpirun -n 4 /tmp/distributed -check -kernel bands
//
// It may import mgla, examples/builders, dist, dist/distops, collective
// and collective/mpi.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	"github.com/mgla/mgla/examples/builders"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func main() {
	def := builders.DefaultGPDemo()
	var (
		iters  = flag.Int("iters", def.Iters, "Adam steps")
		n      = flag.Int("n", def.Data.N, "training points")
		block  = flag.Int("block", 32, "block size of the 2-D block-cyclic layout (0: dist.DefaultBlock)")
		check  = flag.Bool("check", false, "rank 0 also trains the single-process graph of examples/gp and compares")
		every  = flag.Int("every", 50, "print progress every this many steps")
		kernel = flag.String("kernel", "grid", "how K is made: grid (mgla.SquaredExponential on the grid) or bands (each rank's rows, FromRowBlocks)")
	)
	flag.Parse()
	demo := def
	demo.Iters, demo.Data.N = *iters, *n
	code := 0
	if err := run(demo, *kernel, *block, *every, *check); err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		code = 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		code = 1
	}
	os.Exit(code)
}

// checkTol is the largest relative difference -check accepts between the
// parameters learned on the grid and on one process.
const checkTol = 1e-6

func run(demo builders.GPDemo, kernel string, block, every int, check bool) error {
	world, err := mpi.World()
	if err != nil {
		return err
	}
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		return err
	}
	defer grid.Close()
	root := world.Rank() == 0
	learned, nll, err := train(world, grid, demo, kernel, block, every, func(it int, nll float64, p builders.GPParams) {
		if root {
			fmt.Printf("step %4d  NLL %.6f  %v\n", it, nll, p)
		}
	})
	if err != nil || !root {
		return err
	}
	fmt.Printf("learned %v (NLL %.6f), largest relative error against the truth %.2f%%\n", learned, nll, 100*learned.MaxRelErr(demo.Data.True))
	if check {
		single, err := demo.Run(nil, 0)
		if err != nil {
			return err
		}
		diff := learned.MaxRelErr(single.Learned)
		fmt.Printf("one process (examples/gp graph): %v (NLL %.6f); largest relative difference %.2g\n",
			single.Learned, single.NLL, diff)
		if !(diff <= checkTol) {
			return fmt.Errorf("-check: the grid and one process differ by %.2g (relative), more than %g", diff, checkTol)
		}
	}
	return nil
}

// train fits demo's GP on grid, K made as kernel says (grid or bands),
// and returns the learned parameters and NLL, the same on every rank;
// progress (rank 0 prints) gets every every-th step.
func train(world *mpi.Comm, grid *dist.Grid, demo builders.GPDemo, kernel string, block, every int, progress func(int, float64, builders.GPParams)) (builders.GPParams, float64, error) {
	if kernel != "grid" && kernel != "bands" {
		return builders.GPParams{}, 0, fmt.Errorf("-kernel %q: want grid or bands", kernel)
	}
	data, err := builders.SynthesizeGP(demo.Data) // the same on every rank (seeded)
	if err != nil {
		return builders.GPParams{}, 0, err
	}
	n := demo.Data.N
	// A data loader's split: sizes differing by one, the first ranks
	// larger (FromRowBlocks takes any split without holding K whole).
	size, rank := world.Size(), world.Rank()
	if kernel == "bands" && n < size { // every rank decides alike
		return builders.GPParams{}, 0, fmt.Errorf("%d training points on %d processes: with -kernel bands every rank needs a row of K", n, size)
	}
	start := func(r int) int { return r*(n/size) + min(r, n%size) }
	r0, r1 := start(rank), start(rank+1)
	p, q := grid.Shape()
	if block == 0 {
		block = dist.DefaultBlock // as FromRowBlocks takes 0
	}
	made := "made on the grid by mgla.SquaredExponential"
	if kernel == "bands" {
		made = fmt.Sprintf("from bands of %d to %d rows", n/size, (n+size-1)/size)
	}
	if rank == 0 && every > 0 {
		fmt.Printf("GP on %d processes (%d×%d grid, %d×%d blocks, K %s): N=%d, %d paths, true %v\n",
			size, p, q, block, block, made, n, demo.Data.Paths, demo.Data.True)
	}
	var eval func(theta [3]float64) (float64, [3]float64, error)
	if kernel == "grid" {
		model, err := builders.NewGPModel(data.X, data.Y, demo.Init, mgla.WithGrid(distops.On(grid)), mgla.WithTile(block))
		if err != nil {
			return builders.GPParams{}, 0, err
		}
		defer model.Close()
		eval = model.Eval
	} else {
		model, err := newBandModel(data, demo.Init, world, grid, block, r0, r1)
		if err != nil {
			return builders.GPParams{}, 0, err
		}
		defer model.vm.Close()
		eval = model.eval
	}
	return builders.FitLoop(demo.Init, builders.FitConfig{Iters: demo.Iters, LR: demo.LR, Every: every, Progress: progress}, eval)
}

// bandModel is the NLL of builders.GPModel with K on the grid, built from
// this rank's rows [r0, r1) of it, and the parameters' gradient summed
// over the ranks.
type bandModel struct {
	params [3]*G.Node
	vm     G.VM
	nll    G.Value
	grad   G.Value // the three derivatives, summed over the ranks
}

func newBandModel(data *builders.GPData, init builders.GPParams, world *mpi.Comm, grid *dist.Grid, block, r0, r1 int) (m *bandModel, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("building the graph: %v", r)
		}
	}()
	n, paths := len(data.X), 1
	if data.Y.Dims() == 2 {
		paths = data.Y.Shape()[1]
	}
	g := G.NewGraph()
	m = &bandModel{}
	for i, name := range []string{"logLengthScale", "logSignalVar", "logNoiseVar"} {
		m.params[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue(init.Log()[i]))
	}
	rows := tensor.New(tensor.WithShape(r1-r0, n), tensor.WithBacking(builders.SquaredDistances(data.X[r0:r1], data.X)))
	d := G.NewMatrix(g, tensor.Float64, G.WithShape(r1-r0, n), G.WithName("D rows"), G.WithValue(rows))
	eye := G.NewMatrix(g, tensor.Float64, G.WithShape(r1-r0, n), G.WithName("I rows"), G.WithValue(builders.IdentityRows(n, r0, r1)))
	y := G.NodeFromAny(g, data.Y.Clone().(*tensor.Dense), G.WithName("Y"))

	on := distops.On(grid)
	k := G.Must(on.FromRowBlocks(builders.KernelMatrix(d, eye, m.params), n, block))
	alpha := G.Must(on.Gather(G.Must(on.Potrs(k, y, 0)), -1)) // K⁻¹Y on every rank
	logDet := G.Must(on.LogDet(k, 0))                         // from the same factor
	quad := G.Must(G.Sum(G.Must(G.HadamardProd(y, alpha))))
	nll := G.Must(G.Add(G.Must(G.Mul(G.NewConstant(0.5), quad)), G.Must(G.Mul(G.NewConstant(0.5*float64(paths)), logDet))))
	nll = G.Must(G.Add(nll, G.NewConstant(0.5*float64(n*paths)*math.Log(2*math.Pi))))
	// Each rank's gradient is its band's part: sum the parts.
	grads, err := G.Grad(nll, m.params[:]...)
	if err != nil {
		return nil, err
	}
	parts := make([]*G.Node, len(grads))
	for i, gn := range grads {
		parts[i] = G.Must(G.Reshape(gn, tensor.Shape{1}))
	}
	sum := G.Must(collective.AllReduceNode(G.Must(G.Concat(0, parts...)), world, collective.Sum, collective.WithName("gradient sum")))
	G.Read(nll, &m.nll)
	G.Read(sum, &m.grad)
	m.vm = G.NewTapeMachine(g)
	return m, nil
}

// eval is the NLL and its gradient at θ = (log ℓ, log σ², log σₙ²).
func (m *bandModel) eval(theta [3]float64) (float64, [3]float64, error) {
	var grad [3]float64
	if err := builders.RunAt(m.vm, m.params, theta); err != nil {
		return 0, grad, err
	}
	copy(grad[:], m.grad.Data().([]float64))
	return m.nll.Data().(float64), grad, nil
}
