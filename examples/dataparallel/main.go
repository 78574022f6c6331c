// Command dataparallel trains a linear regression data-parallel: every
// process holds its shard of the samples, computes the gradient of its part
// of the loss with gorgonia.Grad, and the gradients are summed across the
// processes with the AllReduce graph op, so every process takes the same
// full-batch step. Rank 0 prints the progress and the final parameters,
// which are those of a one-process run up to rounding.
//
// Run on 4 processes (Open MPI, build tag mpi):
//
//	go build -tags mpi -o dataparallel ./examples/dataparallel
//	mpirun -n 4 ./dataparallel
//
// Built without the tag (go run ./examples/dataparallel) it runs as one
// process on all the data (collective.Self) and says so.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

func main() {
	cfg := defaultConfig()
	flag.IntVar(&cfg.Samples, "samples", cfg.Samples, "samples in the whole data set")
	flag.IntVar(&cfg.Steps, "steps", cfg.Steps, "gradient steps")
	flag.Float64Var(&cfg.Rate, "rate", cfg.Rate, "learning rate")
	flag.Parse()

	var comm collective.Comm
	world, err := mpi.World()
	switch {
	case errors.Is(err, collective.ErrUnavailable):
		fmt.Println("built without -tags mpi: training as one process (build with -tags mpi and run under mpirun -n 4 for data parallelism)")
		comm = collective.Self()
	case err != nil:
		fmt.Fprintln(os.Stderr, "dataparallel:", err)
		os.Exit(1)
	default:
		comm = world
		defer mpi.Finalize()
	}
	rank := comm.LocalRanks()[0]
	if rank != 0 {
		cfg.Progress = nil
	}
	params, err := Train(comm, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dataparallel: rank %d: %v\n", rank, err)
		// Finalize before exiting (os.Exit skips the deferred call): a
		// process that ends without it makes mpirun abort the whole job,
		// where the other ranks would return their own errors.
		mpi.Finalize()
		os.Exit(1)
	}
	if rank == 0 {
		fmt.Printf("trained on %d processes: weights %.6f, bias %.6f (true %v, %v)\n",
			comm.Size(), params[:len(params)-1], params[len(params)-1], trueWeights, trueBias)
	}
}
