//go:build mpi

package mpi

// ThreadLevel is the thread level MPI provided (for the tests' log).
func ThreadLevel() string { return engine.provided }

// MCAInt reads an integer MCA parameter as MPI uses it.
var MCAInt = mcaInt

// LibnbcReduce is the environment variable World sets for MPI_Ireduce.
const LibnbcReduce = libnbcReduce
