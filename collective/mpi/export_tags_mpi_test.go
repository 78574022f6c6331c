//go:build mpi

package mpi

// TagUB is MPI_TAG_UB as World read it, for the test of the tag limit.
func TagUB() int { return engine.tagUB }
