package sparse

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/mgla/mgla/collective"
)

// engine is a matrix on one pattern held by a solver library: hypre in the
// mpi build (one process or a row block per MPI rank), a pure-Go stand-in
// without it that offers products and dot products but no AMG.
type engine interface {
	space
	// load installs new values (same pattern) in the engine's matrix,
	// keeping any hierarchy already built.
	load(vals []float64) error
	// setup builds the AMG hierarchy (and the Krylov solver) for A, or for
	// Aᵀ (trans), from the loaded values.
	setup(trans bool) error
	// solve runs the configured method on A or Aᵀ from x = 0.
	solve(trans bool, b, x []float64) (Info, error)
	// vcycle is z = M⁻¹r, one cycle of the hierarchy of A or Aᵀ.
	vcycle(trans bool, r, z []float64) error
	// gather returns the global vector whose row blocks the ranks hold.
	gather(local []float64) ([]float64, error)
	// agree is true on every rank when ok is true on every rank; maxAll is
	// the largest x of the ranks. Both wait for the other ranks at most the
	// solver's timeout (WithTimeout): collective.ErrTimeout after it, and
	// the engine refuses every later call (usable).
	agree(ok bool) (bool, error)
	maxAll(x float64) (float64, error)
	// free drops the hierarchies (the matrix stays); close releases all.
	free()
	close()
	// usable returns why the engine cannot run now, or nil.
	usable() error
}

// Solver solves sparse systems on one Pattern and caches what it can between
// runs: the matrix values last loaded, the AMG hierarchy built for them (and
// one for Aᵀ when a gradient of a non-symmetric system needs it), and whether
// they are symmetric. Its graph ops (Solve, CG, BiCGStab, Preconditioner)
// take the values and the right-hand side as nodes; when the values reaching
// the op are the ones already loaded, the hierarchy is reused, and when they
// change the solver sets up again (or keeps the old hierarchy as a
// preconditioner, WithKeepHierarchy). Free drops the hierarchy; Close
// releases everything.
//
// On one process a Solver is safe for use by several goroutines (runs are
// serialised). In MPI mode (WithComm) every rank makes the same calls on
// its own Solver in the same order, which goroutines racing for a Solver,
// or for two Solvers, do not give: the ranks pair one goroutine's run with
// another's (wrong answers), or wait for each other at the start of two
// Solvers' runs met in different orders until a solver's timeout
// (collective.ErrTimeout; a solver that timed out is broken). Run the MPI-mode
// solvers of a process from one goroutine at a time, in the same order on
// every rank.
type Solver struct {
	pat *Pattern
	cfg config
	eng engine

	mu        sync.Mutex
	loaded    []float64 // values in the engine, nil before the first run
	ready     [2]bool   // a hierarchy exists for A, Aᵀ
	freed     bool      // Free dropped them since the last run's agreement
	stale     [2]bool   // the values changed since it was built
	sym       int8      // 0 unknown, 1 symmetric, −1 not, for the loaded values
	cycleAsym float64   // the V-cycle's asymmetry (vcycleAsymmetry), −1 unknown
	closed    bool
	info      [2]Info // last forward and adjoint (trans) run
	stats     Stats
	diagBad   int // first local row with a zero diagonal, −1 none, for the loaded values
}

// Stats counts a solver's work since it was made.
type Stats struct {
	Setups    int           // AMG hierarchies built (A and Aᵀ)
	Solves    int           // solves, V-cycle applications not counted
	SetupTime time.Duration // total time in setup
	SolveTime time.Duration // total time in solves
}

// NewSolver makes a solver for matrices on pattern p. In MPI mode (WithComm,
// mpi build) p is this rank's row block and the blocks of the ranks, in rank
// order, must tile the rows.
func NewSolver(p *Pattern, opts ...Option) (*Solver, error) {
	// In MPI mode a refusal on one rank is agreed on, with the options,
	// before any other collective: every rank returns an error.
	var refusal error
	if p == nil {
		refusal = fmt.Errorf("%w: nil pattern", ErrBadInput)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil && refusal == nil {
			refusal = err
		}
	}
	if cfg.keepOld && !cfg.hasSmoothers {
		// The default ℓ1 smoother keeps the row norms of the values it was
		// set up with; symmetric Gauss–Seidel reads the loaded values.
		// (Before the agreement, which compares the smoother each rank runs.)
		cfg.smoother = SymGaussSeidel
	}
	refusedElsewhere, differ, err := cfg.agreeOnOptions(refusal != nil)
	switch {
	case err != nil:
		return nil, err
	case refusal != nil:
		return nil, refusal
	case refusedElsewhere:
		return nil, fmt.Errorf("%w: sparse: NewSolver: another rank refused its options or pattern", ErrBadInput)
	case differ:
		return nil, fmt.Errorf("%w: sparse: NewSolver: the ranks' solver options differ (method, tolerance, iterations, AMG or print settings, WithStatusOnly, WithKeepHierarchy, symmetry, preconditioner or timeout)", collective.ErrMismatch)
	}
	eng, err := newEngine(p, &cfg)
	if err != nil {
		return nil, err
	}
	return &Solver{pat: p, cfg: cfg, eng: eng, diagBad: -1, cycleAsym: -1, info: [2]Info{{Status: NotRun}, {Status: NotRun}}}, nil
}

// Pattern is the solver's pattern.
func (s *Solver) Pattern() *Pattern { return s.pat }

// Info is what the last forward run (Solve, CG, BiCGStab) reported: Failed
// for a run that ended with an error before solving, NotRun before the first.
func (s *Solver) Info() Info { s.mu.Lock(); defer s.mu.Unlock(); return s.info[0] }

// AdjointInfo is what the last adjoint run (a gradient's solve with Aᵀ, or
// with A for symmetric systems) reported.
func (s *Solver) AdjointInfo() Info { s.mu.Lock(); defer s.mu.Unlock(); return s.info[1] }

// Stats returns the solver's counters.
func (s *Solver) Stats() Stats { s.mu.Lock(); defer s.mu.Unlock(); return s.stats }

// Free drops the cached hierarchies; the next run sets up again. The
// matrix values stay loaded. In MPI mode it may be called on some ranks
// only: the next run's agreement makes every rank set up again.
func (s *Solver) Free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.eng.free()
		s.freed = true
	}
	s.ready = [2]bool{}
}

// Close releases the solver's hypre objects; runs after Close fail. In MPI
// mode it is collective. After mpi.Finalize it releases only the solver's
// own memory (hypre's objects would free MPI communicators, which MPI
// forbids then), and a run is an error matching collective.ErrClosed.
func (s *Solver) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.eng.close()
		s.closed = true
	}
}

// runKind is what a run computes.
type runKind int

const (
	runSolve    runKind = iota // the configured hypre method
	runCG                      // Go CG with cfg.precond
	runBiCGStab                // Go BiCGStab with cfg.precond
	runPrecond                 // one V-cycle
)

var runNames = [...]string{"Solve", "CG", "BiCGStab", "Preconditioner"}

// SolveValues solves A·x = b (or Aᵀ·x = b) directly, outside a graph: the
// same run as the Solve op. vals and b are never modified.
func (s *Solver) SolveValues(vals, b []float64, trans bool) ([]float64, Info, error) {
	x, err := s.run(runSolve, trans, false, vals, b)
	return x, s.lastInfo(trans), err
}

func (s *Solver) lastInfo(trans bool) Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	if trans {
		return s.info[1]
	}
	return s.info[0]
}

// run is every op's computation: load the values if they changed, build the
// hierarchy if needed, run, record the Info, and turn a Status other than
// Success into an error unless WithStatusOnly. adjoint marks the gradient's
// solve with Aᵀ (A when symmetric).
func (s *Solver) run(kind runKind, adjoint, differentiated bool, vals, b []float64) ([]float64, error) {
	var report *Info
	x, err := s.runLocked(kind, adjoint, differentiated, vals, b, &report)
	if report != nil {
		// Without the lock: the callback may call Info and Stats.
		s.cfg.progress(*report)
	}
	return x, err
}

// runLocked is run under the solver's lock; it sets *report to the Info
// for WithProgress's callback, which run calls after the lock.
func (s *Solver) runLocked(kind runKind, adjoint, differentiated bool, vals, b []float64, report **Info) ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := runNames[kind]
	if adjoint {
		name += " (adjoint)"
	}
	// Until this run's solve reports, its Info says that it failed: a run
	// that ends on bad input, or on a peer that timed out, leaves no
	// Success of an earlier run behind. (A V-cycle, Preconditioner,
	// reports no Info.)
	side := 0
	if adjoint {
		side = 1
	}
	if kind != runPrecond {
		s.info[side] = Info{Status: Failed}
	}
	if s.closed {
		return nil, fmt.Errorf("%w: sparse: %s on a closed solver", ErrBadInput, name)
	}
	if err := s.eng.usable(); err != nil {
		return nil, fmt.Errorf("sparse: %s: %w", name, err)
	}
	if err := s.agreeOnRun(kind, adjoint, differentiated); err != nil {
		return nil, fmt.Errorf("sparse: %s: %w", name, err)
	}
	p := s.pat
	var badLength error // checked with the other inputs, on every rank alike
	if len(vals) != p.NNZ() || len(b) != p.Rows() {
		badLength = fmt.Errorf("%w: %s: %d values and a vector of %d for %v", ErrBadInput, name, len(vals), len(b), p)
	}
	if err := s.checkInputs(name, vals, b, kind, badLength); err != nil {
		return nil, err
	}
	trans := adjoint
	if adjoint {
		sym, err := s.symmetric()
		if err != nil {
			return nil, err
		}
		trans = !sym
		if trans && kind == runPrecond {
			return nil, fmt.Errorf("%w: sparse: the gradient of Preconditioner needs a symmetric A (the V-cycle of Aᵀ is not the transpose of A's)", ErrBadInput)
		}
	}
	x := make([]float64, p.Rows())
	var info Info
	var err error
	shift := 0 // b was scaled by 2^shift
	if kind != runPrecond {
		if b, shift, err = s.scaled(b); err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
	}
	start := time.Now()
	switch kind {
	case runSolve:
		// b = 0: x = 0 exactly. hypre returns early on it without resetting
		// its iteration count and residual, so an earlier unconverged solve's
		// were reported (a zero gradient's adjoint solve failed).
		var bb float64
		if bb, err = s.eng.dot(b, b); err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
		if bb == 0 {
			info = Info{Status: Success}
			break
		}
		if info.Setup, err = s.ensureSetup(trans); err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
		start = time.Now()
		info2, err2 := s.eng.solve(trans, b, x)
		info2.Setup = info.Setup
		info, err = info2, err2
	case runCG, runBiCGStab:
		var precond func(r, z []float64) error
		if precond, info.Setup, err = s.precond(trans); err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
		start = time.Now()
		method := krylovFunc(cg)
		if kind == runBiCGStab {
			method = bicgstab
		}
		setup := info.Setup
		info, err = method(s.eng, trans, precond, b, x, s.cfg.tol, s.cfg.maxIter)
		if err == nil && info.Status == Success {
			info, err = s.refine(method, trans, precond, b, x, info)
		}
		info.Setup = setup
	case runPrecond:
		if _, err = s.ensureSetup(trans); err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
		if adjoint {
			// The gradient Mᵀ·z̄ is computed as M·z̄: refused for smoothers
			// known to make M non-symmetric, and for any other setting
			// whose M measures non-symmetric.
			if k := s.relaxType(); oneDirectionalSmoother(k) {
				return nil, fmt.Errorf("%w: sparse: the gradient of Preconditioner needs a symmetric V-cycle, and smoother %d makes it not (it sweeps one way, or is not linear); use a symmetric smoother (L1GaussSeidel, SymGaussSeidel, JacobiSmoother, L1Jacobi, Chebyshev)", ErrBadInput, k)
			}
			asym, err := s.vcycleAsymmetry()
			if err != nil {
				return nil, fmt.Errorf("sparse: %s: %w", name, err)
			}
			if math.IsInf(asym, 1) {
				return nil, fmt.Errorf("%w: sparse: %s: hypre's V-cycle (smoother %d) gave NaN or Inf: its hierarchy cannot precondition this matrix", ErrHypre, name, s.relaxType())
			}
			if asym > cycleSymmetryTol {
				return nil, fmt.Errorf("%w: sparse: the gradient of Preconditioner needs a symmetric V-cycle, and this solver's (smoother %d) is not: ⟨g, Ŝh⟩ and ⟨Ŝg, h⟩ (Ŝ = D^½·M·D^½) differ by %.2g of their size; use a symmetric smoother (L1GaussSeidel, SymGaussSeidel, JacobiSmoother, L1Jacobi, Chebyshev)",
					ErrBadInput, s.relaxType(), asym)
			}
		}
		if err = s.eng.vcycle(trans, b, x); err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
		// Agreed, so that every rank returns the error (a smoother that
		// breaks down on a badly scaled matrix, Kaczmarz's say, gave NaN
		// silently).
		ok, err := s.eng.agree(checkFinite("z", x) == nil)
		if err != nil {
			return nil, fmt.Errorf("sparse: %s: %w", name, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: sparse: %s: hypre's V-cycle (smoother %d) gave NaN or Inf on some rank: its hierarchy cannot precondition this matrix", ErrHypre, name, s.relaxType())
		}
		return x, nil
	}
	if err == nil && info.Status != Success {
		info, err = s.trueResidual(trans, b, x, info)
	}
	s.stats.Solves++
	s.stats.SolveTime += time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("sparse: %s: %w", name, err)
	}
	s.info[side] = info
	if s.cfg.progress != nil {
		r := info
		*report = &r
	}
	if info.Status != Success && !s.cfg.statusOnly {
		return nil, &StatusError{Op: fmt.Sprintf("%s (%v)", name, s.methodName(kind)), Info: info}
	}
	if shift != 0 {
		for i := range x {
			x[i] = math.Ldexp(x[i], -shift)
		}
	}
	return x, nil
}

// scaled returns b times 2^shift, the power of two that brings its largest
// entry (over the ranks) to [½, 1) when that entry is beyond 2^±500, and
// shift; else b and 0. The methods' norms square b's entries, which then
// overflowed (b near 1e200: hypre's generic error, Diverged with a NaN
// residual in the Go runs) or underflowed; the solve is linear and the
// residuals relative, so x is the solution for b·2^shift times 2^-shift,
// exactly but for x's own range.
func (s *Solver) scaled(b []float64) ([]float64, int, error) {
	local := 0.0
	for _, v := range b {
		local = max(local, math.Abs(v))
	}
	top, err := s.eng.maxAll(local)
	if err != nil || top == 0 || (top < 0x1p500 && top > 0x1p-500) {
		return b, 0, err
	}
	_, e := math.Frexp(top)
	bs := make([]float64, len(b))
	for i, v := range b {
		bs[i] = math.Ldexp(v, -e)
	}
	return bs, -e, nil
}

func (s *Solver) methodName(kind runKind) string {
	switch kind {
	case runSolve:
		return s.cfg.method.String()
	case runCG, runBiCGStab:
		return "preconditioner " + s.cfg.precond.String()
	}
	return "V-cycle"
}

// checkInputs rejects inputs of the wrong length (badLength, found by the
// caller), non-finite values or right-hand sides and zero diagonals where
// the run divides by the diagonal, on every rank alike, and loads the
// values if they changed.
func (s *Solver) checkInputs(name string, vals, b []float64, kind runKind, badLength error) error {
	var errLocal error
	// Nothing loaded yet is a change, also for a pattern without entries
	// (slices.Equal of no values and nil is true).
	changed := s.loaded == nil || !slices.Equal(vals, s.loaded)
	diagBad := s.diagBad
	switch {
	case badLength != nil:
		errLocal = badLength
	case changed && checkFinite("values", vals) != nil:
		errLocal = fmt.Errorf("%w: %s: %w", ErrBadMatrix, name, checkFinite("values", vals))
	case checkFinite("b", b) != nil:
		errLocal = fmt.Errorf("sparse: %s: right-hand side: %w", name, checkFinite("b", b))
	default:
		if changed {
			diagBad = s.pat.zeroDiagonal(vals)
		}
		if diagBad >= 0 && s.needsDiagonal(kind) {
			errLocal = fmt.Errorf("%w: %s: row %d (the %s divides by the diagonal)", ErrZeroDiagonal, name, s.pat.firstRow+diagBad, s.diagUser(kind))
		}
	}
	// Every rank returns the same sentinel: the first kind of error (in
	// the order of the cases above) that any rank found.
	class, err := s.agreeClass(errorClass(errLocal))
	if err != nil {
		return err
	}
	if errLocal != nil && errorClass(errLocal) == class {
		return errLocal
	}
	if class != 0 {
		return classError(class, name)
	}
	// Loading and setting up are collective: when the values changed on
	// any rank, every rank loads (its own, possibly unchanged, values); when
	// Free dropped a rank's hierarchies, every rank drops its own and loads
	// (a rank that set up alone waited in hypre for ever).
	var local float64
	switch {
	case s.freed:
		local = 2
	case changed:
		local = 1
	}
	all, err := s.eng.maxAll(local)
	if err != nil {
		return err
	}
	if all == 0 {
		return nil
	}
	if all == 2 {
		s.eng.free()
		s.ready, s.freed = [2]bool{}, false
	}
	if !changed {
		diagBad = s.diagBad
	}
	loadErr := s.eng.load(vals)
	// The load's outcome is agreed too: a rank that failed alone used to
	// return while the others went on into the collective AMG setup.
	ok, err := s.eng.agree(loadErr == nil)
	if err != nil {
		return err
	}
	if loadErr != nil || !ok {
		s.loaded = nil
		if loadErr == nil {
			loadErr = fmt.Errorf("%w: loading failed on another rank", ErrBadInput)
		}
		return fmt.Errorf("sparse: %s: loading values: %w", name, loadErr)
	}
	s.loaded = append(s.loaded[:0], vals...)
	s.diagBad = diagBad
	s.sym = 0
	s.cycleAsym = -1
	s.stale = [2]bool{true, true}
	return nil
}

// refineRounds bounds refine's corrections: each must lower the true
// residual, which rounding stops short of a tolerance the conditioning does
// not allow.
const refineRounds = 8

// refine goes on with a Go Krylov solve whose recurrence reached the
// tolerance where its true residual r = b − op(A)·x did not (the
// recurrence drifts on ill-conditioned or badly scaled systems): it solves
// op(A)·dx = r to the tolerance relative to b and adds dx to x, within
// the iterations left, as long as each round lowers the true residual (a
// round that does not is taken back). The Info then says Success or
// NotConverged, with the true residual.
func (s *Solver) refine(method krylovFunc, trans bool, precond func(r, z []float64) error, b, x []float64, info Info) (Info, error) {
	r := make([]float64, len(b))
	dx := make([]float64, len(b))
	last := math.Inf(1)
	for round := 0; ; round++ {
		res, err := s.residual(trans, b, x, r)
		if err != nil {
			return info, err
		}
		left := s.cfg.maxIter - info.Iterations
		switch {
		case res <= s.cfg.tol*(1+1e-6):
			info.Status, info.Residual = Success, res
			return info, nil
		case round > 0 && !(res < last):
			// The last correction did not help: take it back (x was the
			// better one, its residual last).
			for i := range x {
				x[i] -= dx[i]
			}
			info.Status, info.Residual = NotConverged, last
			return info, nil
		case round == refineRounds || left <= 0 || math.IsNaN(res):
			info.Status, info.Residual = NotConverged, res
			return info, nil
		}
		last = res
		sub, err := method(s.eng, trans, precond, r, dx, s.cfg.tol/res, left)
		if err != nil {
			return info, err
		}
		info.Iterations += sub.Iterations
		for i := range x {
			x[i] += dx[i]
		}
	}
}

// residual writes the residual b − op(A)·x into r and returns its relative
// norm ‖r‖/‖b‖ (0 for b = 0).
func (s *Solver) residual(trans bool, b, x, r []float64) (float64, error) {
	if err := s.eng.matvec(trans, x, r); err != nil {
		return 0, err
	}
	for i := range r {
		r[i] = b[i] - r[i]
	}
	rr, err := norm(s.eng, r)
	if err != nil {
		return 0, err
	}
	bn, err := norm(s.eng, b)
	if err != nil || bn == 0 {
		return 0, err
	}
	return rr / bn, nil
}

// trueResidual puts the true relative residual ‖b − op(A)·x‖/‖b‖ of a
// solve that did not succeed (where it is finite) in place of the one its
// method carried: hypre's BiCGStab and GMRES reported 3e-10 where it was
// 2e80. (A Success is checked by the method itself, hypre's PCG, or by
// refine, Go's.)
func (s *Solver) trueResidual(trans bool, b, x []float64, info Info) (Info, error) {
	res, err := s.residual(trans, b, x, make([]float64, len(b)))
	if err == nil && !math.IsNaN(res) && !math.IsInf(res, 0) {
		info.Residual = res
	}
	return info, err
}

// agreeOnRun fails on every rank, with an error wrapping
// collective.ErrMismatch, when the ranks are in different runs of the
// solver: another kind (Solve, CG, BiCGStab, Preconditioner), a gradient's
// solve against a forward one, or a forward run whose gradient some ranks'
// graphs built (SymDiff: differentiated) and others not. Such runs used to
// pair their agreements and reductions and wait in hypre for ever. (The
// LispMachine, which differentiates at run time, is not told apart.)
func (s *Solver) agreeOnRun(kind runKind, adjoint, differentiated bool) error {
	id := float64(int(kind)*4 + btoi(adjoint)*2 + btoi(differentiated))
	// The run's exchanges wait for the other ranks by the solver's timeout
	// (engine.maxAll and agree).
	hi, err := s.eng.maxAll(id)
	if err != nil {
		return err
	}
	lo, err := s.eng.maxAll(-id)
	if err != nil {
		return err
	}
	if hi != -lo {
		return fmt.Errorf("%w: sparse: the ranks run different operations of the solver, from %s to %s (every rank runs the same graph, with the same gradients)", collective.ErrMismatch, runText(-lo), runText(hi))
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runText is agreeOnRun's number id in words.
func runText(id float64) string {
	n := int(id)
	text := runNames[n/4]
	if n&2 != 0 {
		text += " (a gradient's solve)"
	}
	if n&1 != 0 {
		text += " with its gradient built"
	}
	return text
}

// agreeClass is the smallest non-zero class any rank passes (0 when all
// pass 0): one agreement when every rank is fine, one a class otherwise
// (every rank stops at the same one).
func (s *Solver) agreeClass(local int) (int, error) {
	ok, err := s.eng.agree(local == 0)
	if err != nil || ok {
		return 0, err
	}
	for k := 1; ; k++ {
		if ok, err := s.eng.agree(local != k); err != nil || !ok {
			return k, err
		}
	}
}

// errorClass numbers checkInputs' kinds of error, in the order it checks
// them (0: none).
func errorClass(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrBadMatrix):
		return 2
	case errors.Is(err, ErrNonFinite):
		return 3
	case errors.Is(err, ErrZeroDiagonal):
		return 4
	}
	return 1 // lengths: ErrBadInput
}

// classError is the error of a rank whose inputs passed where another
// rank's failed with an error of the class: it matches the sentinels that
// rank's own error matches (non-finite values are ErrBadMatrix and
// ErrNonFinite), so that every rank takes the same branch on them.
func classError(class int, name string) error {
	switch class {
	case 2:
		return fmt.Errorf("%w: %s: %w: values on another rank", ErrBadMatrix, name, ErrNonFinite)
	case 3:
		return fmt.Errorf("%w: %s: a right-hand side on another rank", ErrNonFinite, name)
	case 4:
		return fmt.Errorf("%w: %s: on another rank", ErrZeroDiagonal, name)
	}
	return fmt.Errorf("%w: %s: bad input on another rank", ErrBadInput, name)
}

// needsDiagonal: BoomerAMG (its interpolation and smoothers) and Jacobi
// divide by the diagonal; only the unpreconditioned Go Krylov runs do not.
func (s *Solver) needsDiagonal(kind runKind) bool {
	return !((kind == runCG || kind == runBiCGStab) && s.cfg.precond == NoPrecond)
}

func (s *Solver) diagUser(kind runKind) string {
	if (kind == runCG || kind == runBiCGStab) && s.cfg.precond == Jacobi {
		return "Jacobi preconditioner"
	}
	return "BoomerAMG setup"
}

// ensureSetup builds the hierarchy of A (or Aᵀ) when there is none, or when
// the values changed since it was built, unless WithKeepHierarchy keeps A's.
// It reports whether it built one.
func (s *Solver) ensureSetup(trans bool) (bool, error) {
	t := 0
	if trans {
		t = 1
	}
	if s.ready[t] && (!s.stale[t] || (s.cfg.keepOld && !trans)) {
		return false, nil
	}
	start := time.Now()
	if err := s.eng.setup(trans); err != nil {
		s.ready[t] = false
		return false, err
	}
	s.stats.Setups++
	s.stats.SetupTime += time.Since(start)
	s.ready[t], s.stale[t] = true, false
	s.cycleAsym = -1
	return true, nil
}

// precond is the Go Krylov methods' preconditioner for A (or Aᵀ).
func (s *Solver) precond(trans bool) (func(r, z []float64) error, bool, error) {
	switch s.cfg.precond {
	case Jacobi:
		diag := make([]float64, s.pat.Rows())
		for i, k := range s.pat.diag {
			diag[i] = s.loaded[k]
		}
		return func(r, z []float64) error {
			for i, d := range diag {
				z[i] = r[i] / d
			}
			return nil
		}, false, nil
	case AMGPrecond:
		built, err := s.ensureSetup(trans)
		if err != nil {
			return nil, false, err
		}
		return func(r, z []float64) error { return s.eng.vcycle(trans, r, z) }, built, nil
	}
	return nil, false, nil
}

// symmetryTol is the relative difference ‖Ar − Aᵀr‖/‖Ar‖ below which the
// loaded matrix counts as symmetric.
const symmetryTol = 1e-12

// symmetric reports whether the loaded A is symmetric: the user's word
// (WithSymmetry) or a test of A·r against Aᵀ·r for a random r, cached for
// the loaded values.
func (s *Solver) symmetric() (bool, error) {
	switch s.cfg.symmetry {
	case Symmetric:
		return true, nil
	case NonSymmetric:
		return false, nil
	}
	if s.sym != 0 {
		return s.sym > 0, nil
	}
	// The test runs on D^-½·A·D^-½ (D the diagonal's magnitudes, 1 where
	// it is zero): unscaled, one huge row made ‖A·r‖ large enough to hide
	// a plainly asymmetric entry elsewhere, and the adjoint solve then used
	// A for Aᵀ.
	rng := rand.New(rand.NewPCG(0x5eed, uint64(s.pat.firstRow)))
	scale := make([]float64, s.pat.Rows())
	for i := range scale {
		scale[i] = 1
		if k := s.pat.diag[i]; k >= 0 && s.loaded[k] != 0 {
			scale[i] = 1 / math.Sqrt(math.Abs(s.loaded[k]))
		}
	}
	r := make([]float64, len(scale))
	for i := range r {
		r[i] = rng.NormFloat64() * scale[i]
	}
	ar := make([]float64, len(r))
	atr := make([]float64, len(r))
	if err := s.eng.matvec(false, r, ar); err != nil {
		return false, err
	}
	if err := s.eng.matvec(true, r, atr); err != nil {
		return false, err
	}
	for i := range ar {
		ar[i] *= scale[i]
		atr[i] *= scale[i]
	}
	ref, err := s.eng.dot(ar, ar)
	if err != nil {
		return false, err
	}
	for i := range atr {
		atr[i] -= ar[i]
	}
	diff, err := s.eng.dot(atr, atr)
	if err != nil {
		return false, err
	}
	sym := diff <= symmetryTol*symmetryTol*ref
	s.sym = -1
	if sym {
		s.sym = 1
	}
	return sym, nil
}

// cycleSymmetryTol is the relative asymmetry of the V-cycle
// (vcycleAsymmetry) above which Preconditioner's gradient is refused: a
// symmetric smoother's is at rounding level (1e-16), a one-directional
// one's a few percent.
const cycleSymmetryTol = 1e-8

// vcycleAsymmetry is |⟨g, Ŝh⟩ − ⟨Ŝg, h⟩| / (‖g‖‖Ŝh‖ + ‖Ŝg‖‖h‖) for
// Ŝ = D^½·M·D^½, M the V-cycle of A's hierarchy, D the diagonal's
// magnitudes (1 where zero) and two pseudo-random g and h: Ŝ is symmetric
// exactly when M is, and well scaled where M is not (M ≈ A⁻¹; a penalty
// row's 1e30 on the diagonal made the unscaled measure of a plainly
// asymmetric M 1e-17). Computed once per hierarchy and values; the same on
// every rank (the dot products are sums over the ranks). Whether M is
// symmetric depends on hypre's settings (a forward Gauss–Seidel smoother
// makes it not), so it is measured rather than read from the options.
func (s *Solver) vcycleAsymmetry() (float64, error) {
	if s.cycleAsym >= 0 {
		return s.cycleAsym, nil
	}
	rows := s.pat.Rows()
	rng := rand.New(rand.NewPCG(0xc1c1e, uint64(s.pat.firstRow)))
	root := make([]float64, rows) // D^½
	g, h := make([]float64, rows), make([]float64, rows)
	u, v := make([]float64, rows), make([]float64, rows)
	for i := range rows {
		root[i] = 1
		if k := s.pat.diag[i]; k >= 0 && s.loaded[k] != 0 {
			root[i] = math.Sqrt(math.Abs(s.loaded[k]))
		}
		g[i], h[i] = rng.NormFloat64(), rng.NormFloat64()
		u[i], v[i] = g[i]*root[i], h[i]*root[i]
	}
	sg, sh := make([]float64, rows), make([]float64, rows)
	if err := s.eng.vcycle(false, u, sg); err != nil {
		return 0, err
	}
	if err := s.eng.vcycle(false, v, sh); err != nil {
		return 0, err
	}
	for i, r := range root {
		sg[i] *= r
		sh[i] *= r
	}
	var d [6]float64
	for k, p := range [6][2][]float64{{g, sh}, {sg, h}, {g, g}, {sh, sh}, {sg, sg}, {h, h}} {
		var err error
		if d[k], err = s.eng.dot(p[0], p[1]); err != nil {
			return 0, err
		}
	}
	size := math.Sqrt(d[2]*d[3]) + math.Sqrt(d[4]*d[5])
	s.cycleAsym = 0
	switch {
	case math.IsNaN(size) || math.IsInf(size, 0):
		s.cycleAsym = math.Inf(1) // a V-cycle that gave NaN or Inf: refused
	case size > 0:
		s.cycleAsym = math.Abs(d[0]-d[1]) / size
	}
	return s.cycleAsym, nil
}

// oneDirectionalSmoother reports whether BoomerAMG's relaxation k makes
// the V-cycle non-symmetric whatever the matrix: the Gauss–Seidel sweeps
// in one direction (1–5, 10–14) and the CG smoother (15, not linear). The
// measure (vcycleAsymmetry) alone missed them on nearly singular matrices,
// where M's amplified near-null mode hides the rest.
func oneDirectionalSmoother(k int) bool { return k >= 1 && k <= 5 || k >= 10 && k <= 15 }

// relaxType is the smoother hypre runs: WithHypre's RelaxType, else
// WithSmoother's.
func (s *Solver) relaxType() int {
	if v, ok := s.cfg.set["RelaxType"]; ok {
		return int(math.Round(v))
	}
	return int(s.cfg.smoother)
}

// outer is the values' gradient −u·vᵀ on the pattern, u on this rank's rows
// and v gathered from every rank.
func (s *Solver) outer(u, v []float64) ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: sparse: gradient on a closed solver", ErrBadInput)
	}
	vg, err := s.eng.gather(v)
	if err != nil {
		return nil, err
	}
	out := make([]float64, s.pat.NNZ())
	s.pat.patternOuter(u, vg, out)
	return out, nil
}
