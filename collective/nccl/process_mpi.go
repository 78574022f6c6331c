//go:build mglacuda && mpi

package nccl

import (
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

// NewProcessMPI returns the NCCL communicator of the processes of the MPI
// communicator c (the same ranks, in the same order), this process's rank on
// GPU gpu: rank 0's NCCL id is broadcast over c (CommBootstrap), and the
// data of later calls never touches MPI.
func NewProcessMPI(c *mpi.Comm, gpu int, opts ...Option) (collective.Comm, error) {
	return NewProcess(c.Rank(), c.Size(), gpu, CommBootstrap(c), opts...)
}
