//go:build !mpi

package sparse

import (
	"fmt"
	"slices"

	"github.com/mgla/mgla/collective"
)

// commHandle is the MPI communicator of a distributed solver (mpi build).
type commHandle struct{}

// defaultPrecond: without hypre the Go Krylov ops default to Jacobi.
const defaultPrecond = Jacobi

// goEngine is the pure-Go engine of the default build: products and dot
// products on a matrix held by this process; the AMG runs return an error
// wrapping collective.ErrUnavailable.
type goEngine struct{ localSpace }

func newEngine(p *Pattern, cfg *config) (engine, error) {
	if p.Rows() != p.n {
		return nil, fmt.Errorf("%w: sparse: %v is a row block: distributed matrices need MPI (built without -tags mpi)", collective.ErrUnavailable, p)
	}
	return &goEngine{localSpace{p: p}}, nil
}

func (e *goEngine) load(vals []float64) error { e.vals = slices.Clone(vals); return nil }

func (e *goEngine) setup(bool) error { return errNoHypre }

func (e *goEngine) solve(bool, []float64, []float64) (Info, error) {
	return Info{Status: Failed}, errNoHypre
}

func (e *goEngine) vcycle(bool, []float64, []float64) error { return errNoHypre }

func (e *goEngine) gather(local []float64) ([]float64, error) { return local, nil }

func (e *goEngine) agree(ok bool) (bool, error) { return ok, nil }

func (e *goEngine) maxAll(x float64) (float64, error) { return x, nil }

func (e *goEngine) free()  {}
func (e *goEngine) close() {}

func (e *goEngine) usable() error { return nil }

// HypreAvailable reports whether this build has hypre (the mpi build tag).
func HypreAvailable() bool { return false }
