//go:build mpi

// Command distributed is the Gaussian-process training of examples/gp with
// its covariance K(θ) distributed over the processes of an MPI job: every
// step builds the local blocks of K in ScaLAPACK's 2-D block-cyclic layout,
// solves K·X = Y and takes log det K with package dist, and gets the
// gradient of the negative log marginal likelihood
//
//	NLL(θ) = ½·tr(Yᵀ·K⁻¹·Y) + (R/2)·log det K + (N·R/2)·log 2π
//
// from dist.PotrsGrad and dist.LogDetGrad: Ā = −½·X·Xᵀ + (R/2)·K⁻¹, then
// ∂NLL/∂θₖ = Σ Ā∘∂K/∂θₖ summed over the grid. The data and the Adam schedule
// are examples/gp's (builders.DefaultGPDemo), so the answer is the same on
// any number of processes; rank 0 prints it and, with -check, compares it
// with the single-process graph of examples/gp.
//
//	go build -tags mpi -o /tmp/distributed ./examples/distributed
//	mpirun -n 4 /tmp/distributed -check
//
// It may import mgla, examples/builders, dist and collective/mpi.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/examples/builders"
)

func main() {
	def := builders.DefaultGPDemo()
	var (
		iters = flag.Int("iters", def.Iters, "Adam steps")
		n     = flag.Int("n", def.Data.N, "training points")
		block = flag.Int("block", 32, "block size of the 2-D block-cyclic layout")
		check = flag.Bool("check", false, "rank 0 also trains the single-process graph of examples/gp and compares")
		every = flag.Int("every", 50, "print progress every this many steps")
	)
	flag.Parse()
	demo := def
	demo.Iters, demo.Data.N = *iters, *n
	code := 0
	if err := run(demo, *block, *every, *check); err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		code = 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		code = 1
	}
	os.Exit(code)
}

func run(demo builders.GPDemo, block, every int, check bool) error {
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
	data, err := builders.SynthesizeGP(demo.Data) // the same on every rank (seeded)
	if err != nil {
		return err
	}
	nPts, paths := demo.Data.N, demo.Data.Paths
	y, err := dist.FromReplicated(grid, nPts, paths, block, transpose(data.Y.Data().([]float64), nPts, paths))
	if err != nil {
		return err
	}
	model := &gpModel{grid: grid, x: data.X, y: y, paths: paths, block: block}
	p, q := grid.Shape()
	if root {
		fmt.Printf("GP on %d processes (%d×%d grid, %d×%d blocks): N=%d, %d paths, true %v\n", world.Size(), p, q, block, block, nPts, paths, demo.Data.True)
	}
	learned, nll, err := builders.FitLoop(demo.Init, builders.FitConfig{Iters: demo.Iters, LR: demo.LR, Every: every,
		Progress: func(it int, nll float64, p builders.GPParams) {
			if root {
				fmt.Printf("step %4d  NLL %.6f  %v\n", it, nll, p)
			}
		}}, model.eval)
	if err != nil {
		return err
	}
	if !root {
		return nil
	}
	fmt.Printf("learned %v (NLL %.6f), largest relative error against the truth %.2f%%\n", learned, nll, 100*learned.MaxRelErr(demo.Data.True))
	if check {
		single, err := demo.Run(nil, 0)
		if err != nil {
			return err
		}
		fmt.Printf("one process (examples/gp graph): %v (NLL %.6f); largest relative difference %.2g\n",
			single.Learned, single.NLL, learned.MaxRelErr(single.Learned))
	}
	return nil
}

// gpModel evaluates the NLL and its gradient on the grid.
type gpModel struct {
	grid         *dist.Grid
	x            []float64
	y            *dist.Matrix[float64]
	paths, block int
}

func (m *gpModel) eval(theta [3]float64) (float64, [3]float64, error) {
	var grad [3]float64
	n := len(m.x)
	ell2, signal, noise := math.Exp(2*theta[0]), math.Exp(theta[1]), math.Exp(theta[2])
	sq := func(r, c int) float64 { d := m.x[r] - m.x[c]; return d * d }
	rbf := func(r, c int) float64 { return signal * math.Exp(-sq(r, c)/(2*ell2)) }
	k, err := dist.NewMatrix[float64](m.grid, n, n, m.block)
	if err != nil {
		return 0, grad, err
	}
	k.Fill(func(r, c int) float64 {
		if r == c {
			return rbf(r, c) + noise
		}
		return rbf(r, c)
	})
	l, err := dist.Cholesky(k)
	if err != nil {
		return 0, grad, err
	}
	x, err := dist.CholSolve(l, m.y)
	if err != nil {
		return 0, grad, err
	}
	logDet, err := dist.LogDet(k)
	if err != nil {
		return 0, grad, err
	}
	fit, err := dist.Dot(x, m.y) // tr(Yᵀ·K⁻¹·Y)
	if err != nil {
		return 0, grad, err
	}
	r := float64(m.paths)
	nll := fit/2 + r/2*logDet + float64(n)*r/2*math.Log(2*math.Pi)

	// Ā = −½·X·Xᵀ + (R/2)·K⁻¹.
	half := x.Clone()
	for i, v := range m.y.Local {
		half.Local[i] = v / 2
	}
	abar, _, err := dist.PotrsGrad(l, x, half)
	if err != nil {
		return 0, grad, err
	}
	kinv, err := dist.LogDetGrad(k, r/2)
	if err != nil {
		return 0, grad, err
	}
	for i := range abar.Local {
		abar.Local[i] += kinv.Local[i]
	}
	dK := [3]func(r, c int) float64{
		func(r, c int) float64 { return rbf(r, c) * sq(r, c) / ell2 }, // ∂K/∂log ℓ
		rbf, // ∂K/∂log σ²
		func(r, c int) float64 { // ∂K/∂log σₙ²
			if r == c {
				return noise
			}
			return 0
		},
	}
	for i, d := range dK {
		if grad[i], err = abar.Sum(func(r, c int, v float64) float64 { return v * d(r, c) }); err != nil {
			return 0, grad, err
		}
	}
	return nll, grad, nil
}

// transpose turns the row-major r×c tensor data into column-major.
func transpose(rowMajor []float64, r, c int) []float64 {
	out := make([]float64, r*c)
	for i := range r {
		for j := range c {
			out[i+j*r] = rowMajor[i*c+j]
		}
	}
	return out
}
