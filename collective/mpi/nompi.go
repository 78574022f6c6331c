//go:build !mpi

package mpi

import (
	"fmt"

	"github.com/mgla/mgla/collective"
)

// errUnavailable is what every entry point returns in a build without MPI.
var errUnavailable = fmt.Errorf("%w: mpi: built without -tags mpi (needs Open MPI: libopenmpi-dev)", collective.ErrUnavailable)

// Comm is a communicator over MPI processes; in this build (no mpi tag) none
// can be made.
type Comm struct{}

var _ collective.Comm = (*Comm)(nil)

// World returns an error wrapping collective.ErrUnavailable: this build has
// no MPI (build with -tags mpi).
func World(opts ...Option) (*Comm, error) { return nil, errUnavailable }

// Finalize has nothing to finalize in a build without MPI.
func Finalize() error { return nil }

// Finalized is false in a build without MPI.
func Finalized() bool { return false }

func (c *Comm) Rank() int                 { return 0 }
func (c *Comm) Size() int                 { return 0 }
func (c *Comm) LocalRanks() []int         { return nil }
func (c *Comm) Fortran() int              { return 0 }
func (c *Comm) Do(*collective.Call) error { return errUnavailable }
func (c *Comm) Split(color, key func(rank int) int) ([]collective.Comm, error) {
	return nil, errUnavailable
}
func (c *Comm) Close() error { return nil }

// SingleCopy is false in a build without MPI.
func SingleCopy() bool { return false }
