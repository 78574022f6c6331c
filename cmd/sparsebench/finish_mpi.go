//go:build mpi

package main

import (
	"fmt"
	"os"

	"github.com/mgla/mgla/collective/mpi"
)

// finish ends MPI, which the hypre solves initialised through collective/mpi.
func finish() {
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "sparsebench: MPI_Finalize:", err)
	}
}
