//go:build mpi

package sparse

/*
#cgo pkg-config: ompi-c
#include "hypre_shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/mgla/mgla/collective"
)

// commHandle is the MPI communicator a solver's matrix lives on.
type commHandle struct {
	fortran C.MPI_Fint
	size    int
}

// commOrSelf is the WithComm communicator, or MPI_COMM_SELF (MPI
// initialised by collective/mpi) for a solver on one process.
func (c *config) commOrSelf() (*commHandle, error) {
	if c.comm != nil {
		return c.comm, nil
	}
	if err := initMPI(); err != nil {
		return nil, fmt.Errorf("%w: sparse: initialising MPI for hypre: %w", collective.ErrUnavailable, err)
	}
	return &commHandle{fortran: C.mh_self_fortran(), size: 1}, nil
}

func handleOf(fortran int) (*commHandle, error) {
	var size C.int
	if rc := C.mh_comm_size(C.MPI_Fint(fortran), &size); rc != 0 {
		return nil, fmt.Errorf("%w: sparse: MPI_Comm_size failed (%d)", collective.ErrEngine, int(rc))
	}
	return &commHandle{fortran: C.MPI_Fint(fortran), size: int(size)}, nil
}
