// Package dist is mgla's dense linear algebra across processes: a P×Q grid
// of MPI processes (Grid, its BLACS context), matrices in ScaLAPACK's 2-D
// block-cyclic distribution over it (Matrix: a descriptor and each process's
// column-major local array, LLD = max(1, local rows)), getting data in and
// out (from a matrix every rank holds, from one rank, from row blocks each
// rank holds, in any split, and back: through ScaLAPACK's p?gemr2d —
// bands that are not its block split moved into it first, point to point,
// so that no rank holds the whole matrix — or a collective of the whole
// matrix, by a measured rule; the whole matrix column-major, or row-major
// as Gorgonia's tensors hold it through the RowMajor variants, which copy
// the local tiles straight from and into it),
// and the factorizations on it:
// Cholesky, Potrs, CholSolve, Potri, LogDet and Syevd through ScaLAPACK's
// p?potrf, p?potrs, p?potri, p?syevd and p?heevd, for float32, float64,
// complex64 and complex128; the inverse and LogDet's gradient also from a
// Cholesky factor already on the grid (InverseFromFactor,
// LogDetGradFromFactor), with no second factorization; and a Gaussian
// process's kernel matrix made block by block on the grid from points
// every rank holds, with its gradient (KernelMatrix, KernelMatrixGrad).
//
// Every call is collective: all ranks of the grid call it with the same
// shapes, and every rank returns the same error (wrapping ErrMismatch for
// disagreeing ranks, kernels.ErrNotPositiveDefinite with the global order
// of the failing minor, kernels.ErrNonFinite for NaN or Inf input (in
// the lower triangle only of the inputs of which only that triangle is
// read: the Hermitian A, the factor L), ErrBadInput for bad shapes or grids), agreed by an AllReduce, so nobody
// hangs.
//
// Threads: ScaLAPACK calls MPI from the calling goroutine, so dist needs
// MPI_THREAD_MULTIPLE (what collective/mpi asks for and Open MPI provides
// here). BLACS and ScaLAPACK keep process-wide state and are not
// thread-safe, so the calls of a process's goroutines take turns, whatever
// the Grid: each call holds the process from its first agreement to its
// end. Two grids may be used from two goroutines at once (graphs of
// package distops too), on one communicator or two: where the ranks'
// goroutines take their turns in different orders, the calls fail in
// their timed agreements (ErrTimeout, ErrMismatch, then ErrClosed on the
// broken grid) instead of pairing in ScaLAPACK, so for results run them in
// the same order on every rank, as for any MPI program. One grid is for one
// goroutine at a time: two goroutines' calls on it pair by their order of
// arrival on each rank, as calls on one MPI communicator do, and alike
// calls that arrive in different orders mix their operands.
//
// The engine code needs the mpi build tag (Open MPI and Debian's
// libscalapack-openmpi-dev); without it NewGrid returns an error wrapping
// collective.ErrUnavailable. go doc and pkg.go.dev read the build without
// tags, which has only Grid, NewGrid and Close: the rest of the API is
// documented in the mpi-tagged files (grid_mpi.go, matrix_mpi.go,
// moves_mpi.go, rowblock_mpi.go, ops_mpi.go, grad_mpi.go and
// kernel_mpi.go).
//
// The package owns the process grid, the distributed matrix and the
// ScaLAPACK calls. It may import cyclic (the layout), collective and
// collective/mpi (the communicator), sharding (host buffers for the
// collectives) and kernels (the error sentinels).
package dist

import (
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
)

// Scalar is an element type ScaLAPACK computes with.
type Scalar interface {
	float32 | float64 | complex64 | complex128
}

var (
	// ErrBadInput is matched by errors about shapes, block sizes and grids.
	// Such an error matches mgla's ErrBadInput (sharding.ErrBadInput) too,
	// so that a graph built with mgla's WithGrid refuses a value bound with
	// gorgonia.Let as the mesh ops do.
	ErrBadInput error = badInput{}
	// ErrMismatch is matched when ranks call with different shapes or types.
	ErrMismatch = collective.ErrMismatch
	// ErrNotPositiveDefinite is matched when a factorization finds a
	// leading minor that is not positive definite.
	ErrNotPositiveDefinite = kernels.ErrNotPositiveDefinite
	// ErrNonFinite is matched when an input holds NaN or Inf.
	ErrNonFinite = kernels.ErrNonFinite
	// ErrEngine is matched when ScaLAPACK reports an illegal argument or
	// fails to converge.
	ErrEngine = collective.ErrEngine
	// ErrComplexGradient is matched when a gradient of a complex matrix is
	// asked for: as on one process (ops.ErrComplexGradient), gradients are
	// real only.
	ErrComplexGradient = kernels.ErrComplexGradient
	// ErrRepeatedEigenvalues is matched when SyevdGrad meets eigenvalues
	// equal to rounding whose eigenvectors the cost uses (as on one
	// process, ops).
	ErrRepeatedEigenvalues = kernels.ErrRepeatedEigenvalues
)

// DefaultBlock is the block size (rows and columns) when none is given.
const DefaultBlock = 64

// badInput is ErrBadInput: its own sentinel, which also matches
// sharding.ErrBadInput.
type badInput struct{}

func (badInput) Error() string        { return "dist: bad input" }
func (badInput) Is(target error) bool { return target == sharding.ErrBadInput }
