// Package distops is the Gorgonia face of package dist: the graph ops
// Cholesky, CholSolve, Potrs, Potri, LogDet and Syevd computed on a
// dist.Grid through ScaLAPACK, for float32, float64, complex64 and
// complex128, with gradients (real dtypes, as on one process) computed on
// the grid by dist's gradient functions.
//
// On(grid) is the mgla.Distributor of the grid, so that the root builders
// run there:
//
//	x, err := mgla.Potrs(a, b, mgla.WithGrid(distops.On(grid)), mgla.WithTile(32))
//
// The value model: every rank builds the same graph on the same values (as a
// data-parallel program does), so every input node holds the whole matrix
// on every rank; an op distributes it locally (each rank keeps its own
// blocks of its copy, no data moves), runs collectively on the grid and
// brings its output back to every rank. Nodes follow package ops: Potrs,
// LogDet and Cholesky on the same A share one factorisation, a Factor node
// whose value keeps L on the grid (Potrs(A, B) is a node reading A, the
// factor and B; only Cholesky brings L back), and Syevd is two nodes, the
// values and the vectors, reading one decomposition node. The gradients
// with respect to A come back to every rank as N×N matrices.
//
// Without the mpi build tag On still exists and every method returns an
// error wrapping collective.ErrUnavailable.
//
// It owns the graph ops; it may import dist and kernels (the error types).
// The root package mgla does not import it: a program passes On(grid) to
// mgla.WithGrid, which keeps MPI out of the root package's build.
package distops

import (
	"github.com/mgla/mgla/dist"
)

// Ops builds the graph ops on one grid; it implements mgla.Distributor.
type Ops struct {
	grid *dist.Grid
}

// On is the builder of graph ops on grid g, for mgla.WithGrid.
func On(g *dist.Grid) *Ops { return &Ops{grid: g} }
