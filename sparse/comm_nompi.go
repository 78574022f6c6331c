//go:build !mpi

package sparse

import (
	"fmt"

	"github.com/mgla/mgla/collective"
)

// errNoComm is WithComm's error in a build without the mpi tag.
var errNoComm = fmt.Errorf("%w: sparse: WithComm: distributed solvers need MPI: built without -tags mpi (Debian libhypre-dev, libopenmpi-dev)", collective.ErrUnavailable)

// WithComm distributes the solver's matrix by rows over the ranks of an MPI
// communicator, given by its Fortran handle: collective/mpi's
// Comm.Fortran() (for example of mpi.World()). Each rank passes its own row
// block (NewRowBlock, BlockRows) and the blocks in rank order tile the rows.
// Every rank must make the same calls in the same order (SPMD). hypre calls
// MPI from whichever goroutine runs the op, so MPI must provide
// MPI_THREAD_MULTIPLE (collective/mpi asks for it; Debian's Open MPI gives
// it). Runs must reach the ranks in the same order: run a process's
// MPI-mode solvers from one goroutine at a time (see Solver).
//
// In a build without the mpi tag there is no MPI: NewSolver given this
// option returns an error wrapping collective.ErrUnavailable.
func WithComm(fortran int) Option {
	return func(*config) error { return errNoComm }
}

// agreeOnOptions: without MPI there are no other ranks.
func (c *config) agreeOnOptions(bool) (refusedElsewhere, differ bool, err error) {
	return false, false, nil
}
