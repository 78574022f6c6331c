// Package distops is the Gorgonia face of package dist: the graph ops
// Cholesky, CholSolve, Potrs, Potri, LogDet and Syevd computed on a
// dist.Grid through ScaLAPACK, a Gaussian process's KernelMatrix made on
// it, the grid-resident graph value (Value) and
// the ops that move data onto the grid and back (FromRowBlocks,
// Distribute, Gather), for float32, float64, complex64 and
// complex128, with gradients (real dtypes, as on one process) computed on
// the grid by dist's gradient functions.
//
// On(grid) is the mgla.Distributor of the grid, so that the root builders
// run there:
//
//	x, err := mgla.Potrs(a, b, mgla.WithGrid(distops.On(grid)), mgla.WithTile(32))
//
// Two value models.
//
// Replicated: every rank builds the same graph on the same values (as a
// data-parallel program does), so every input node holds the whole matrix
// on every rank; an op distributes it locally (each rank keeps its own
// blocks of its copy, no data moves), runs collectively on the grid and
// brings its output back to every rank. The gradients with respect to A
// come back to every rank as N×N matrices.
//
// Grid-resident: a Value is a graph value whose data is only this
// process's blocks of a dist.Matrix (Shape, Dtype: the global matrix'),
// for a matrix that outgrows one host. Ops.FromRowBlocks makes one from
// each rank's band of rows (the natural output of data loading; its
// gradient is the band's rows of the grid gradient), Ops.Distribute from a
// matrix every rank holds (its gradient: the grid gradient gathered to
// every rank, since every rank's copy is the whole input), and Input from
// a Value built with package dist; Ops.Gather brings one back to every
// rank or to one (its gradient: distributed again). When any input of an
// op is a grid value the op runs on grid values: its host inputs are
// distributed first, and its matrix outputs are grid values (X, L, A⁻¹,
// the eigenvectors), while the eigenvalues and log det stay small host
// values on every rank. Its gradients stay on the grid too (dist's PBLAS
// gradient functions): no rank keeps an N×N gradient. The moves between a
// band and the grid (FromRowBlocks, and RowBlock for the band's gradient)
// go through the whole matrix on every rank for a moment below 4
// processes, where that is faster than p?gemr2d, for matrices up to 512
// MiB (dist's move rule); a larger one, or on 4 processes or more, moves by
// p?gemr2d, each rank holding its blocks and its band only.
//
// Gorgonia's own ops read host tensors only: an op here whose grid output
// feeds one of them (gorgonia.Sum of K, gorgonia.Mul of a matrix and a
// grid Potrs) refuses to run, ErrBadInput naming Gather, on every rank
// (ops.CheckReaders; it panicked in Gorgonia before), or ErrMismatch on
// every rank where only some ranks' graphs have that reader. A grid Input
// node, which has no op of this package, is not checked.
//
// Gradients of grid values in gorgonia.Grad: Gorgonia sums the gradients
// of a node with several consumers (A in Potrs(A, y) and LogDet(A)) with
// its own Add, which takes host tensors only, and a Value cannot be one
// (package ops explains why). So an op sends the gradient of a grid input
// made by another op as a token, a scalar zero node whose input is the
// grid gradient; Gorgonia adds the tokens, and the op that made the input
// finds the grid gradients behind them and sums them on the grid (a local
// addition). A grid input node (Input) goes through one GridInput node,
// so gorgonia.Grad with respect to it is the grid gradient itself; with
// respect to a grid node that an op made (FromRowBlocks' output, say) it
// would be a token, so take gradients with respect to the band, the host
// matrix or an Input node. The
// LispMachine (every op here has DoDiff) accumulates in place and needs no
// tokens.
//
// KernelMatrix makes a Gaussian process's kernel matrix on the grid from
// points that every rank holds: each rank computes its own blocks, and
// the gradients reach the points and the parameters on every rank (each
// rank's share of them summed by one AllReduce). The root builders
// mgla.SquaredExponential, Matern32 and Matern52 call it under WithGrid.
//
// Nodes follow package ops: Potrs, Potri, LogDet and Cholesky on the same
// A share one factorisation, a Factor node whose value keeps L on the grid
// (Potrs(A, B) is a node reading A, the factor and B; Potri computes A⁻¹
// from L by p?potri, and LogDet's gradient ḡ·A⁻¹ too; only Cholesky brings
// L back, or makes it a grid value), and Syevd is two nodes, the values
// and the vectors, reading one decomposition node. Host values go to the
// grid and back row-major as Gorgonia holds them (dist's ...RowMajor moves:
// no transposed copy of the whole matrix).
//
// Ranks in step: every rank builds the same graph, so that the grid calls
// of its ops pair up. Each op with a gradient first meets the other ranks
// (dist.Grid.Meet) in a barrier whose checks compare the op's name and
// whether Grad built its gradient (as a collective's Call.Differentiated): an op that some
// ranks reach and others do not, or whose gradient only some ranks' costs
// need (add 0·Σx where a rank's cost leaves an output x out), is
// ErrMismatch on every rank there, and the dist calls name their op too.
// The LispMachine, which differentiates at run time, is not told apart.
//
// Without the mpi build tag On still exists and every method returns an
// error wrapping collective.ErrUnavailable; Value and Input exist too, so
// that their documentation shows, but no grid value can be made. go doc
// reads that build, where the methods of Ops say only that they need the
// tag: their documentation (arguments, block 0 for dist.DefaultBlock,
// Gather's root, Syevd's vectors, the gradients) is in the mpi-tagged files
// ops_mpi.go, moves_mpi.go and kernel_mpi.go.
//
// It owns the graph ops and the grid value; it may import dist, kernels (the
// error types), sharding (host tensors in row-major order), ops (the
// kernel matrix builders' operand checks, ops.KernelOperands) and
// internal/failedruns.
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
