//go:build !mglacuda || !mpi

package nccl

import (
	"fmt"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

// errNoMPI is NewProcessMPI's error in a build without both the mglacuda and
// the mpi build tags.
var errNoMPI = fmt.Errorf("%w: collective/nccl: NewProcessMPI needs the mglacuda and mpi build tags (go build -tags 'mglacuda mpi'), libnccl.so.2 and Open MPI",
	collective.ErrUnavailable)

// NewProcessMPI returns the NCCL communicator of the processes of the MPI
// communicator c (the same ranks, in the same order), this process's rank on
// GPU gpu: rank 0's NCCL id is broadcast over c (CommBootstrap), and the
// data of later calls never touches MPI.
//
// It needs both the mglacuda and the mpi build tags; without either, it
// returns collective.ErrUnavailable saying so.
func NewProcessMPI(c *mpi.Comm, gpu int, opts ...Option) (collective.Comm, error) {
	return nil, errNoMPI
}
