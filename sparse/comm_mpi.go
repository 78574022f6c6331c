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
	fortran    C.MPI_Fint
	size, rank int
}

// WithComm distributes the solver's matrix by rows over the ranks of an MPI
// communicator, given by its Fortran handle: collective/mpi's
// Comm.Fortran() (for example of mpi.World()). Each rank passes its own row
// block (NewRowBlock, BlockRows) and the blocks in rank order tile the rows.
// Every rank must make the same calls in the same order (SPMD), with the
// same options (NewSolver checks: ErrMismatch on every rank otherwise). NewSolver
// duplicates the communicator (MPI_Comm_dup, freed by Close), so the caller
// may close its own afterwards. hypre calls
// MPI from whichever goroutine runs the op, so MPI must provide
// MPI_THREAD_MULTIPLE (collective/mpi asks for it; Debian's Open MPI gives
// it). Runs must reach the ranks in the same order: run a process's
// MPI-mode solvers from one goroutine at a time (see Solver).
func WithComm(fortran int) Option {
	return func(c *config) error {
		if err := initMPI(); err != nil {
			return fmt.Errorf("%w: sparse: initialising MPI: %w", collective.ErrUnavailable, err)
		}
		h, err := handleOf(fortran)
		if err != nil {
			return fmt.Errorf("%w: WithComm(%d): %w", ErrBadInput, fortran, err)
		}
		c.comm = h
		return nil
	}
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
	return &commHandle{fortran: C.mh_self_fortran(), size: 1, rank: 0}, nil
}

func handleOf(fortran int) (*commHandle, error) {
	var size, rank C.int
	if rc := C.mh_comm_size(C.MPI_Fint(fortran), &size, &rank); rc != 0 {
		return nil, fmt.Errorf("%w: sparse: MPI_Comm_size failed (%d)", collective.ErrEngine, int(rc))
	}
	return &commHandle{fortran: C.MPI_Fint(fortran), size: int(size), rank: int(rank)}, nil
}

// agreeOnOptions is NewSolver's first collective in MPI mode (WithComm):
// one reduction on the communicator that tells whether another rank
// refused its options or pattern (refused says whether this one did) and
// whether the ranks' options differ (config.hash). It waits at most the
// solver's timeout: a rank that does not call NewSolver, comes later than
// that, or whose WithComm was refused (it has no communicator to join
// with) is collective.ErrTimeout on the others. MPI cannot take back a
// collective call, so after a timeout the caller's communicator holds an
// abandoned request (abandonedComm). When the ranks agree, a second timed
// reduction follows before the communicator's (blocking) duplication: a
// rank that came late completes the first against the others' abandoned
// requests, and the second is then its timeout instead of a wait for ever
// in the duplication. (A rank held up for about the timeout between the
// two can still complete the second where another timed out: the package
// documentation says so.) Without WithComm there is nothing to agree on.
func (c *config) agreeOnOptions(refused bool) (refusedElsewhere, differ bool, err error) {
	if c.comm == nil || c.comm.size == 1 {
		return false, false, nil
	}
	h := c.hash()
	v := []float64{0, h, -h}
	if refused {
		v[0] = 1
	}
	if err := c.timedMax(v, "the agreement on the options"); err != nil {
		return false, false, err
	}
	refusedElsewhere, differ = v[0] != 0 && !refused, v[1] != -v[2]
	if refused || refusedElsewhere || differ {
		return refusedElsewhere, differ, nil
	}
	return false, false, c.timedMax([]float64{0}, "the confirmation of that agreement")
}

// timedMax replaces v by its maximum over the ranks of the WithComm
// communicator, waiting at most the solver's timeout.
func (c *config) timedMax(v []float64, what string) error {
	buf := make([]C.char, errLen)
	switch rc := C.mh_comm_max(c.comm.fortran, (*C.double)(&v[0]), C.int(len(v)), C.longlong(c.timeout.Nanoseconds()), &buf[0], errLen); rc {
	case 0:
		return nil
	case C.MH_TIMEOUT:
		return fmt.Errorf("%w: sparse: NewSolver: a rank did not join %s within %v (it did not call NewSolver, came later, or its WithComm was refused); %s",
			collective.ErrTimeout, what, c.timeout, abandonedComm)
	default:
		return fmt.Errorf("%w: sparse: NewSolver: %s (%d)", collective.ErrEngine, C.GoString(&buf[0]), int(rc))
	}
}

// abandonedComm ends the message of a NewSolver that timed out.
const abandonedComm = "the communicator holds an abandoned collective request: make no more collective calls on it"

// bcast is rank 0's v on every rank.
func (h *commHandle) bcast(v uint64) (uint64, error) {
	x := C.ulonglong(v)
	if rc := C.mh_bcast_u64(h.fortran, &x); rc != 0 {
		return 0, fmt.Errorf("%w: sparse: MPI_Bcast failed (%d)", collective.ErrEngine, int(rc))
	}
	return uint64(x), nil
}
