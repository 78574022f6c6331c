// Package sparse is sparse linear solves as Gorgonia graph ops, with
// algebraic multigrid from hypre (BoomerAMG) and gradients.
//
// A matrix is a Pattern — square, compressed sparse rows, fixed — and a
// float64 vector of values on it, which is an ordinary graph node (values can
// be parameters, gradients flow to them). NewCSR builds one from CSR arrays,
// FromTriplets from coordinate triplets; float32 values are accepted and
// converted to float64 (hypre computes in float64). Validation: rowPtr starts
// at 0 and never decreases, indices lie in range, columns within a row may
// come unsorted (they are sorted), a column repeated within a row is an error
// in NewCSR and summed in FromTriplets, NaN and Inf are errors. Constructors
// copy their inputs and never modify them.
//
// A Solver (NewSolver) is bound to one pattern and its options, and offers
// the ops:
//
//   - Solve(values, b): x = A⁻¹b by BoomerAMG alone, PCG+AMG (default),
//     BiCGStab+AMG or GMRES+AMG (WithMethod), with the tolerance, iteration
//     limit and the common AMG settings as options, any other BoomerAMG
//     setting by name (WithHypre);
//   - Preconditioner(values, r): z = M⁻¹r, one V-cycle;
//   - CG(values, b), BiCGStab(values, b): the package's Go Krylov methods,
//     preconditioned by that V-cycle, by Jacobi, or not at all (WithPrecond).
//
// Status. Every run records an Info (Status, iterations, final relative
// residual; Solver.Info, Solver.AdjointInfo). A run that does not reach
// Success is an error wrapping ErrNotConverged (a *StatusError carrying the
// Info), unless WithStatusOnly: then the last iterate is returned and the
// caller reads the Status. Every solve starts from x = 0, so equal inputs
// give equal outputs (but with WithKeepHierarchy, whose hierarchy comes from
// the values the solver saw first: the same values and b then give answers
// that agree to the tolerance).
//
// Caching. The solver keeps the values it last loaded and the hierarchy it
// built for them. A run whose values equal the loaded ones (compared entry by
// entry, O(nnz)) reuses the hierarchy; new values are loaded into the same
// hypre matrix and the hierarchy is built again before the next AMG run, or
// kept as a preconditioner for the new matrix with WithKeepHierarchy. Free
// drops the hierarchy, Close releases everything; Stats counts setups and
// their time.
//
// Gradients. For x = A⁻¹b and a cost with gradient x̄: b̄ = A⁻ᵀx̄, solved by
// the same method with the cached hierarchy when A is symmetric (WithSymmetry,
// or detected by comparing A·r with Aᵀ·r for a random r), or with a hierarchy
// of Aᵀ built once per set of values otherwise; Ā = −b̄xᵀ restricted to A's
// pattern, which is the gradient of the values vector. Both Gorgonia
// machines work (SymDiff for the TapeMachine, DoDiff for the LispMachine).
// Second derivatives are not offered. Preconditioner's gradient flows to r
// only.
//
// Builds. hypre needs MPI, so everything that calls it is behind the mpi
// build tag (Debian libhypre-dev and libopenmpi-dev; MPI is initialised by
// package collective/mpi). The default build keeps the pure-Go parts — the
// matrix type, validation, CG and BiCGStab with Jacobi or no preconditioner,
// their gradients — and the AMG runs return an error wrapping
// collective.ErrUnavailable that says to build with -tags mpi.
//
// MPI. With WithComm (mpi build) each rank holds a block of consecutive rows
// (NewRowBlock, RowBlockFromTriplets; columns are global), the blocks in rank
// order tile the rows, right-hand sides and solutions are the rank's block,
// and the values vector holds the rank's entries. Every rank builds the same
// graph and runs it together (SPMD); the answer equals one process's to
// the tolerance where both converge. BoomerAMG's hybrid smoothers (the
// default ℓ1 Gauss–Seidel among them) treat the couplings between ranks
// differently from those within one, so the iteration is not the same: on a
// badly scaled matrix (D·A·D with D over 1e±4) one process converged where
// 2 and 4 ranks did not, and SymGaussSeidel converged on both. Bad
// input found on one rank fails the run on every rank with the same
// sentinel (ErrBadInput, ErrBadMatrix, ErrNonFinite or ErrZeroDiagonal: the
// first kind any rank found), and new values on
// any rank make every rank load and set up again. Gradients come back by
// blocks too: each rank gets the gradient of its own values and its own
// block of b. A parameter shared by all ranks (a scalar coefficient every
// block's values depend on) gets a partial gradient on each rank, which the
// caller sums over the ranks (an all-reduce from package collective).
// Before each run the ranks agree on what it is (Solve, CG, BiCGStab or
// Preconditioner, a forward run or a gradient's, and whether the graph
// built its gradient: Grad on some ranks only), and NewSolver on the
// options: a difference is ErrMismatch (collective) on every rank, and an
// option refused on one rank ErrBadInput on every rank — but for WithComm
// itself: a rank whose communicator handle is refused cannot take part,
// and the others' NewSolver gives collective.ErrTimeout (as for a rank that
// does not call it, or comes later than the timeout; the caller's
// communicator then holds an abandoned collective request, which MPI cannot
// take back: make no more collective calls on it). NewSolver's exchanges
// (that agreement and its confirmation, the row blocks), a
// run's agreements (on the run, on bad input, on loading new values) and
// its maximum of b wait within the solver's timeout (WithTimeout;
// collective.DefaultTimeout by default): a rank that comes to a run later
// than that, or misses the last one, gives collective.ErrTimeout on every
// rank, the late one too, and the solver refuses its later runs
// (collective.ErrClosed; Close it and make a new one). A rank that skips a
// run in the middle is not told apart: its next run pairs with the others'
// run it skipped, its row block of one run's values with theirs of
// another (each rank holds only its own block, so no rank can tell), until
// the last run times out; keep the ranks' runs in step (when one rank
// cannot run, skip on every rank, agreed with an all-reduce). So do runs that
// reach the ranks in different orders (MPI-mode solvers run from several
// goroutines of a process at once: see Solver). Not timed: hypre's own
// MPI calls, and the reductions inside a solve (dot products, norms,
// gathers). A rank that dies in a solve leaves the others waiting, as in
// any MPI program; so can a rank held up past the timeout within a run,
// before the last timed exchange ahead of an untimed call: the others time
// out, and it finishes that exchange against their abandoned requests and
// goes on alone. NewSolver has the same window: a rank held up for about
// the timeout between its two agreements (microseconds of work apart) can
// leave another in the communicator's duplication, which MPI cannot time
// without blocking every later communicator of the process when abandoned.
//
// The package may import collective (its errors), sharding (its reading of
// host tensors), internal/failedruns and, in the mpi build, collective/mpi;
// nothing in mgla imports it.
package sparse
