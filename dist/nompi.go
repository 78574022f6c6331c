//go:build !mpi

package dist

import (
	"fmt"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

var errUnavailable = fmt.Errorf("%w: dist: built without -tags mpi (needs Open MPI and ScaLAPACK: libscalapack-openmpi-dev)", collective.ErrUnavailable)

// Grid is a P×Q process grid; in this build (no mpi tag) none can be made.
type Grid struct{}

// NewGrid returns an error wrapping collective.ErrUnavailable: this build
// has no ScaLAPACK (build with -tags mpi).
func NewGrid(comm *mpi.Comm, p, q int) (*Grid, error) { return nil, errUnavailable }

// Close has nothing to free in a build without MPI.
func (g *Grid) Close() error { return nil }
