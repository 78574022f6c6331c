//go:build mpi

package main

import (
	"fmt"
	"os"

	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/sparse"
)

// world is this process's rank, the number of processes and the solver
// option that distributes the Poisson matrix over them (by row blocks, when
// started by mpirun on several processes).
func world() (rank, size int, distribute []sparse.Option, err error) {
	w, err := mpi.World()
	if err != nil {
		return 0, 0, nil, err
	}
	if w.Size() > 1 {
		distribute = []sparse.Option{sparse.WithComm(w.Fortran())}
	}
	return w.Rank(), w.Size(), distribute, nil
}

// finish ends MPI, which the hypre solves initialised through collective/mpi.
func finish() {
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "poisson: MPI_Finalize:", err)
	}
}
