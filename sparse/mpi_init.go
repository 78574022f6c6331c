//go:build mpi

package sparse

import "github.com/mgla/mgla/collective/mpi"

// initMPI makes sure MPI is initialised (by collective/mpi, which owns
// MPI_Init and MPI_Finalize) before hypre runs on one process.
func initMPI() error {
	_, err := mpi.World()
	return err
}
