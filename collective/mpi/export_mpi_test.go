//go:build mpi

package mpi

// ThreadLevel is the thread level MPI provided (for the tests' log).
func ThreadLevel() string { return engine.provided }
