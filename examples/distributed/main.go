//go:build mpi

// Command distributed is the Gaussian-process training of examples/gp with
// its covariance K(θ) distributed over the processes of an MPI job: the
// graph is examples/gp's (builders.NewGPModel), built on every rank with
// the option
//
//	mgla.Options(mgla.WithGrid(distops.On(grid)), mgla.WithTile(block))
//
// so that mgla.Potrs (K⁻¹Y) and mgla.LogDet (log det K) run on a ScaLAPACK
// grid of all the processes, in block×block blocks, sharing one
// distributed Cholesky factor, and gorgonia.Grad's backward pass (the
// gradients of Potrs and LogDet) runs there too. Every rank holds the same
// values, so every rank computes the same steps; rank 0 prints them. The
// data and the Adam schedule are examples/gp's (builders.DefaultGPDemo),
// so the answer is the same on any number of processes; with -check rank 0
// also trains the single-process graph of examples/gp and compares.
//
//	go build -tags mpi -o /tmp/distributed ./examples/distributed
//	mpirun -n 4 /tmp/distributed -check
//
// It may import mgla, examples/builders, dist, dist/distops and
// collective/mpi.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
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
	p, q := grid.Shape()
	if root {
		fmt.Printf("GP on %d processes (%d×%d grid, %d×%d blocks): N=%d, %d paths, true %v\n", world.Size(), p, q, block, block, demo.Data.N, demo.Data.Paths, demo.Data.True)
	}
	onGrid := mgla.Options(mgla.WithGrid(distops.On(grid)), mgla.WithTile(block))
	model, err := builders.NewGPModel(data.X, data.Y, demo.Init, onGrid)
	if err != nil {
		return err
	}
	defer model.Close()
	learned, nll, err := model.Fit(demo.Init, builders.FitConfig{Iters: demo.Iters, LR: demo.LR, Every: every,
		Progress: func(it int, nll float64, p builders.GPParams) {
			if root {
				fmt.Printf("step %4d  NLL %.6f  %v\n", it, nll, p)
			}
		}})
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
