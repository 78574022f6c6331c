//go:build !mpi

package main

import "github.com/mgla/mgla/sparse"

// world is this process's rank, the number of processes and the solver
// option that distributes the Poisson matrix over them: one process
// without MPI.
func world() (rank, size int, distribute []sparse.Option, err error) { return 0, 1, nil, nil }

func finish() {}
