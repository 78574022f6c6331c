package sparse

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
)

// Errors. Run-time errors from a Gorgonia machine are found with
// errors.Is(mgla.Cause(err), …). ErrBadMatrix, ErrBadInput and
// ErrZeroDiagonal also match mgla.ErrBadInput, and ErrNonFinite
// mgla.ErrNonFinite, as the other packages' errors do.
var (
	// ErrBadMatrix: a pattern or values that cannot form a valid square CSR
	// matrix (lengths, ranges, repeated columns, non-finite values).
	ErrBadMatrix error = &sentinel{"sparse: bad matrix", sharding.ErrBadInput}
	// ErrBadInput: nodes, shapes or options the ops cannot take.
	ErrBadInput error = &sentinel{"sparse: bad input", sharding.ErrBadInput}
	// ErrNonFinite: NaN or Inf in the values or the right-hand side.
	ErrNonFinite error = &sentinel{"sparse: NaN or Inf input", sharding.ErrNonFinite}
	// ErrZeroDiagonal: a zero (or absent) diagonal entry with BoomerAMG or
	// Jacobi, which divide by the diagonal.
	ErrZeroDiagonal error = &sentinel{"sparse: zero diagonal entry", sharding.ErrBadInput}
	// ErrNotConverged is wrapped by the error of a solve that stopped with
	// a Status other than Success (see WithStatusOnly).
	ErrNotConverged = errors.New("sparse: solve did not converge")
	// ErrHypre: hypre reported an error (the message carries its text).
	ErrHypre = errors.New("sparse: hypre error")
)

// sentinel is an error value of this package that errors.Is also matches
// to one of mgla's (also).
type sentinel struct {
	msg  string
	also error
}

func (e *sentinel) Error() string        { return e.msg }
func (e *sentinel) Is(target error) bool { return target == e.also }

// errNoHypre is returned by hypre solves in a build without the mpi tag.
var errNoHypre = fmt.Errorf("%w: sparse: hypre (BoomerAMG and its Krylov solvers) needs the mpi build tag: built without -tags mpi (Debian libhypre-dev, libopenmpi-dev)", collective.ErrUnavailable)

// Status is how a solve ended.
type Status int

const (
	// Success: the relative residual reached the tolerance, checked once
	// more on the true residual ‖b − A·x‖/‖b‖ after the method stopped (the
	// recurrences' residuals drift from it on nearly singular systems).
	Success Status = iota
	// NotConverged: the iteration limit was reached first, or (Go's CG and
	// BiCGStab) the recurrence reached the tolerance where the true
	// residual did not (a tolerance below what rounding allows on an
	// ill-conditioned system).
	NotConverged
	// Diverged: the residual became NaN or Inf, or (hypre's methods) grew
	// past the right-hand side by a large factor.
	Diverged
	// Failed: the solver broke down (or stopped short of the iteration
	// limit without reaching the tolerance), reported an error, or the
	// run ended before solving (Iterations 0): on bad input, or on a
	// collective error (a peer that timed out, a closed solver).
	Failed
	// NotRun: no run yet (a new Solver's Info and AdjointInfo).
	NotRun
)

func (s Status) String() string {
	switch s {
	case Success:
		return "Success"
	case NotConverged:
		return "NotConverged"
	case Diverged:
		return "Diverged"
	case Failed:
		return "Failed"
	case NotRun:
		return "NotRun"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Info is what a solve reports: its status, the iterations it ran (AMG
// cycles for BoomerAMG alone) and the final relative residual ‖b − Ax‖/‖b‖:
// as the method measures it for a hypre Success (within the tolerance),
// else the true one, computed from x (when finite). For an x in the
// subnormal range (a right-hand side near 1e-310) the x returned is the
// computed one rounded there, whose residual can exceed the tolerance.
type Info struct {
	Status     Status
	Iterations int
	Residual   float64
	Setup      bool // the AMG hierarchy was (re)built for this solve
}

func (i Info) String() string {
	s := fmt.Sprintf("%v after %d iterations, relative residual %.3g", i.Status, i.Iterations, i.Residual)
	if i.Setup {
		s += ", hierarchy built"
	}
	return s
}

// StatusError is the error of a solve that did not reach Success; it wraps
// ErrNotConverged and carries the Info.
type StatusError struct {
	Op   string
	Info Info
}

func (e *StatusError) Error() string { return fmt.Sprintf("sparse: %s: %v", e.Op, e.Info) }
func (e *StatusError) Unwrap() error { return ErrNotConverged }

// Method is the solver a Solve runs.
type Method int

const (
	// PCG is conjugate gradients preconditioned by one BoomerAMG V-cycle
	// (symmetric positive definite A). The default.
	PCG Method = iota
	// AMG is BoomerAMG alone, cycled to the tolerance.
	AMG
	// BiCGStab is BiCGStab preconditioned by BoomerAMG (non-symmetric A).
	BiCGStab
	// GMRES is restarted GMRES preconditioned by BoomerAMG (non-symmetric A).
	GMRES
)

var methodNames = [...]string{"PCG", "AMG", "BiCGStab", "GMRES"}

func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Preconditioning of the Go Krylov ops (CG, BiCGStab).
type Precond int

const (
	// NoPrecond: plain Krylov.
	NoPrecond Precond = iota
	// Jacobi: diagonal scaling (pure Go, every build).
	Jacobi
	// AMGPrecond: one BoomerAMG V-cycle from the solver's cached hierarchy
	// (mpi build).
	AMGPrecond
)

var precondNames = [...]string{"none", "Jacobi", "AMG"}

func (p Precond) String() string {
	if p >= 0 && int(p) < len(precondNames) {
		return precondNames[p]
	}
	return fmt.Sprintf("Precond(%d)", int(p))
}

// Symmetry tells the gradient whether A is symmetric (then A⁻ᵀ = A⁻¹ and the
// adjoint solve reuses the forward hierarchy).
type Symmetry int

const (
	// DetectSymmetry: test A·r against Aᵀ·r for a random r when the adjoint
	// is first needed for the current values. The default.
	DetectSymmetry Symmetry = iota
	// Symmetric: the caller promises A = Aᵀ.
	Symmetric
	// NonSymmetric: always solve with Aᵀ (its own cached hierarchy).
	NonSymmetric
)

// Coarsening, interpolation, smoother and cycle are hypre's numeric codes
// (HYPRE_BoomerAMGSetCoarsenType, …SetInterpType, …SetRelaxType,
// …SetCycleType); the constants below name the common ones, and any other
// code hypre knows can be given as Coarsening(n) and so on. Smoothers are
// those of every level (everyLevelSmoother): 0–8, 10–18, 30, 88 and 89;
// hypre's coarsest-level solvers (9, 19, 29, 98, 99, 199) are refused, since
// on every level they made hypre fail, or crash the process.
type (
	Coarsening    int
	Interpolation int
	Smoother      int
	Cycle         int
)

const (
	CLJP       Coarsening = 0
	RugeStuben Coarsening = 3 // classical Ruge–Stüben with a third pass
	Falgout    Coarsening = 6
	PMIS       Coarsening = 8
	HMIS       Coarsening = 10 // hypre's default
)

const (
	ClassicalInterp Interpolation = 0
	DirectInterp    Interpolation = 3
	StandardInterp  Interpolation = 8
	ExtPlusIInterp  Interpolation = 6 // hypre's default
	ExtPlusIMM      Interpolation = 14
)

const (
	JacobiSmoother       Smoother = 0
	GaussSeidel          Smoother = 3 // hybrid Gauss–Seidel forward (SOR-J)
	SymGaussSeidel       Smoother = 6 // hybrid symmetric Gauss–Seidel
	L1GaussSeidel        Smoother = 8 // ℓ1-scaled hybrid symmetric Gauss–Seidel
	L1GaussSeidelForward Smoother = 13
	L1Jacobi             Smoother = 18
	Chebyshev            Smoother = 16
)

const (
	VCycle Cycle = 1
	WCycle Cycle = 2
)

// config is the solver's settings.
type config struct {
	method       Method
	tol          float64
	maxIter      int
	coarsen      Coarsening
	interp       Interpolation
	smoother     Smoother
	strong       float64
	cycle        Cycle
	aggLevels    int
	restart      int
	set          map[string]float64
	statusOnly   bool
	keepOld      bool
	symmetry     Symmetry
	precond      Precond
	printLevel   int
	progress     func(Info)
	comm         *commHandle
	hasSmoothers bool
	timeout      time.Duration
}

// hash is a number (exact in a float64) for the options that every rank
// of an MPI-mode solver must share: all but the progress function, which
// may differ by rank (hypre's printing may not: its statistics are
// collective).
func (c *config) hash() float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%g|%d|%d|%d|%d|%g|%d|%d|%d|%t|%t|%d|%d|%d|%d", c.method, c.tol, c.maxIter, c.coarsen, c.interp,
		c.smoother, c.strong, c.cycle, c.aggLevels, c.restart, c.statusOnly, c.keepOld, c.symmetry, c.precond, c.printLevel, c.timeout)
	for _, name := range slices.Sorted(maps.Keys(c.set)) {
		fmt.Fprintf(h, "|%s=%g", name, c.set[name])
	}
	return float64(h.Sum64() >> 12)
}

func defaultConfig() config {
	return config{method: PCG, tol: 1e-8, maxIter: 500, coarsen: HMIS, interp: ExtPlusIInterp,
		smoother: L1GaussSeidel, strong: 0.25, cycle: VCycle, restart: 30, precond: defaultPrecond,
		timeout: collective.DefaultTimeout}
}

// Option configures a Solver.
type Option func(*config) error

// WithMethod picks the solver (PCG by default).
func WithMethod(m Method) Option {
	return func(c *config) error {
		if m < PCG || m > GMRES {
			return fmt.Errorf("%w: unknown method %d", ErrBadInput, int(m))
		}
		c.method = m
		return nil
	}
}

// WithTimeout bounds how long a rank of an MPI-mode solver (WithComm)
// waits for the other ranks in NewSolver's exchanges (the agreement on the
// options and its confirmation, the row blocks), a run's
// agreements and its maximum of b (collective.DefaultTimeout by default).
// NewSolver then returns collective.ErrTimeout, and the caller's
// communicator holds an abandoned collective request. A rank that comes
// to a run later than that, or misses the last one, gives
// collective.ErrTimeout on every rank, the late one too, and breaks the
// solver: its later runs return collective.ErrClosed (a run skipped in the
// middle is not told apart: see the package documentation).
// Every rank passes the same timeout (NewSolver checks it with the other
// options). hypre's calls and the reductions inside a solve are not timed
// (see the package documentation for what that leaves).
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithTimeout(%v): want a positive duration", ErrBadInput, d)
		}
		c.timeout = d
		return nil
	}
}

// WithTolerance is the relative residual to reach (1e-8 by default).
func WithTolerance(tol float64) Option {
	return func(c *config) error {
		if !(tol > 0 && tol < 1) {
			return fmt.Errorf("%w: tolerance %v outside (0, 1)", ErrBadInput, tol)
		}
		c.tol = tol
		return nil
	}
}

// WithMaxIterations caps the iterations (500 by default; at most
// MaxIterationsLimit).
func WithMaxIterations(n int) Option {
	return func(c *config) error {
		if n <= 0 || n > MaxIterationsLimit {
			return fmt.Errorf("%w: max iterations %d: want 1 to %d (hypre keeps a residual per iteration)", ErrBadInput, n, MaxIterationsLimit)
		}
		c.maxIter = n
		return nil
	}
}

// MaxIterationsLimit is the most iterations WithMaxIterations takes: hypre
// allocates a residual log of that length at setup, and sizes it in a C
// int (2³¹ − 1 iterations overflowed it and aborted the job).
const MaxIterationsLimit = 1 << 20

// MaxRestartLimit is the longest GMRES restart WithRestart takes: GMRES
// keeps restart + 1 vectors and a (restart + 1)² Hessenberg matrix.
const MaxRestartLimit = 1 << 12

// WithCoarsening sets BoomerAMG's coarsening (HMIS by default).
func WithCoarsening(k Coarsening) Option {
	return func(c *config) error {
		if err := hypreInt("coarsening", int(k)); err != nil {
			return err
		}
		c.coarsen = k
		return nil
	}
}

// WithInterpolation sets BoomerAMG's interpolation (extended+i by default).
func WithInterpolation(k Interpolation) Option {
	return func(c *config) error {
		if err := hypreInt("interpolation", int(k)); err != nil {
			return err
		}
		c.interp = k
		return nil
	}
}

// hypreIntLimit bounds WithHypre's integer settings: hypre sizes arrays by
// some (MaxLevels 2³¹ − 1 made it fill gigabytes and crash).
const hypreIntLimit = 1 << 20

// hypreInt refuses a code that hypre's C int cannot hold (it was cut to one
// silently: another code).
func hypreInt(what string, n int) error {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return fmt.Errorf("%w: %s %d beyond hypre's C int", ErrBadInput, what, n)
	}
	return nil
}

// WithSmoother sets BoomerAMG's smoother on every level but the coarsest
// (ℓ1 hybrid symmetric Gauss–Seidel by default, which keeps the V-cycle
// symmetric for PCG and for Preconditioner's gradient). A one-directional
// smoother (GaussSeidel, L1GaussSeidelForward, hypre's 1–5 and 10–15) makes
// the V-cycle non-symmetric: AMG alone, GMRES and BiCGStab take it, PCG may
// not converge, and Preconditioner's gradient is ErrBadInput.
func WithSmoother(k Smoother) Option {
	return func(c *config) error {
		if !everyLevelSmoother(float64(k)) {
			return fmt.Errorf("%w: smoother %d: %s", ErrBadInput, int(k), smootherCodes)
		}
		c.smoother = k
		c.hasSmoothers = true
		return nil
	}
}

// everyLevelSmoother reports whether k is one of BoomerAMG's relaxation
// codes for every level (HYPRE_BoomerAMGSetRelaxType sets them on all but
// the coarsest).
func everyLevelSmoother(k float64) bool {
	return k >= 0 && k <= 18 && k != 9 || k == 30 || k == 88 || k == 89
}

// smootherCodes says which smoothers the package takes.
const smootherCodes = "want one of BoomerAMG's smoothers for every level (0–8, 10–18, 30, 88, 89); the coarsest-level solvers 9, 19, 29, 98, 99 and 199 made hypre fail or crash on the other levels"

// WithStrongThreshold sets BoomerAMG's strength threshold (0.25 by default;
// 0.5 is usual for 3-D problems).
func WithStrongThreshold(t float64) Option {
	return func(c *config) error {
		if !(t >= 0 && t < 1) {
			return fmt.Errorf("%w: strength threshold %v outside [0, 1)", ErrBadInput, t)
		}
		c.strong = t
		return nil
	}
}

// WithCycle sets the AMG cycle (V by default).
func WithCycle(k Cycle) Option {
	return func(c *config) error {
		if k != VCycle && k != WCycle {
			return fmt.Errorf("%w: cycle %d (1 = V, 2 = W)", ErrBadInput, int(k))
		}
		c.cycle = k
		return nil
	}
}

// WithAggressiveLevels coarsens the first n levels aggressively (cheaper
// hierarchies for 3-D problems; 0 by default).
func WithAggressiveLevels(n int) Option {
	return func(c *config) error {
		if n < 0 || n > math.MaxInt32 {
			return fmt.Errorf("%w: aggressive levels %d", ErrBadInput, n)
		}
		c.aggLevels = n
		return nil
	}
}

// WithRestart sets GMRES's restart length (30 by default; at most
// MaxRestartLimit).
func WithRestart(n int) Option {
	return func(c *config) error {
		if n <= 0 || n > MaxRestartLimit {
			return fmt.Errorf("%w: restart %d: want 1 to %d", ErrBadInput, n, MaxRestartLimit)
		}
		c.restart = n
		return nil
	}
}

// WithHypre passes any other BoomerAMG setting by name: "MaxLevels" calls
// HYPRE_BoomerAMGSetMaxLevels(solver, value). The names are those of the
// HYPRE_BoomerAMGSet… functions without the prefix; HypreSettings lists
// them. Integer settings take the value rounded, up to ±hypreIntLimit;
// "RelaxType" takes the codes WithSmoother does.
func WithHypre(name string, value float64) Option {
	return func(c *config) error {
		if _, ok := hypreSettings[name]; !ok {
			return fmt.Errorf("%w: no BoomerAMG setting %q (known: %s)", ErrBadInput, name, strings.Join(HypreSettings(), ", "))
		}
		if math.IsNaN(value) || math.IsInf(value, 0) {
			return fmt.Errorf("%w: BoomerAMG setting %s = %v", ErrBadInput, name, value)
		}
		if real := hypreSettings[name]; !real && math.Abs(math.Round(value)) > hypreIntLimit {
			return fmt.Errorf("%w: BoomerAMG setting %s = %v: integer settings go up to ±%d", ErrBadInput, name, value, hypreIntLimit)
		}
		if name == "RelaxType" && !everyLevelSmoother(math.Round(value)) {
			return fmt.Errorf("%w: BoomerAMG setting RelaxType = %v: %s", ErrBadInput, value, smootherCodes)
		}
		if c.set == nil {
			c.set = map[string]float64{}
		}
		c.set[name] = value
		return nil
	}
}

// WithStatusOnly makes a solve that does not reach Success return its last
// iterate without an error; the caller reads Info().Status (jaxamg's info).
// By default such a solve is an error wrapping ErrNotConverged.
func WithStatusOnly() Option {
	return func(c *config) error { c.statusOnly = true; return nil }
}

// WithKeepHierarchy keeps the AMG hierarchy when the values change: the old
// hierarchy preconditions the new matrix (the finest level's smoother sees
// the new values) instead of a new setup. Call Free to force a new setup.
// Use it with a Krylov method: BoomerAMG alone, cycled on a hierarchy that
// no longer matches A, may diverge. The hierarchy of Aᵀ (gradients of
// non-symmetric systems) is always rebuilt. With it the default smoother is
// SymGaussSeidel, which reads the current values in every sweep: the ℓ1
// smoothers (the default L1GaussSeidel, L1GaussSeidelForward, L1Jacobi) and
// Chebyshev keep what they computed from the values at setup, so that after
// a change, a doubled diagonal say, PCG preconditioned by them can stop on a
// preconditioner that is no longer positive definite (Status Failed).
func WithKeepHierarchy() Option {
	return func(c *config) error { c.keepOld = true; return nil }
}

// WithSymmetry says whether A is symmetric, for the gradient's adjoint solve
// (detected by default).
func WithSymmetry(s Symmetry) Option {
	return func(c *config) error {
		if s < DetectSymmetry || s > NonSymmetric {
			return fmt.Errorf("%w: symmetry %d", ErrBadInput, int(s))
		}
		c.symmetry = s
		return nil
	}
}

// WithPrecond picks the preconditioner of the Go Krylov ops CG and BiCGStab
// (AMG by default in the mpi build, Jacobi otherwise).
func WithPrecond(p Precond) Option {
	return func(c *config) error {
		if p < NoPrecond || p > AMGPrecond {
			return fmt.Errorf("%w: preconditioner %d", ErrBadInput, int(p))
		}
		c.precond = p
		return nil
	}
}

// WithProgress calls f after every solve with its Info (from rank 0's view
// in MPI mode, on every rank). f runs outside the solver's lock: it may call
// the solver's Info, AdjointInfo and Stats.
func WithProgress(f func(Info)) Option {
	return func(c *config) error { c.progress = f; return nil }
}

// WithPrintLevel sets hypre's own printing (0, silent, by default; 1 prints
// the setup statistics, 2 the convergence history, 3 both). In MPI mode it
// must be the same on every rank (hypre gathers the statistics from all).
func WithPrintLevel(n int) Option {
	return func(c *config) error {
		if n < 0 || n > 3 {
			return fmt.Errorf("%w: print level %d: want 0 to 3", ErrBadInput, n)
		}
		c.printLevel = n
		return nil
	}
}

// HypreSettings lists the BoomerAMG settings WithHypre accepts.
func HypreSettings() []string {
	names := make([]string, 0, len(hypreSettings))
	for k := range hypreSettings {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// hypreSettings names the HYPRE_BoomerAMGSet… functions WithHypre reaches;
// true marks those that take a float.
var hypreSettings = map[string]bool{
	"MaxLevels": false, "MaxCoarseSize": false, "MinCoarseSize": false, "CoarsenType": false,
	"InterpType": false, "RelaxType": false, "CycleType": false, "NumSweeps": false,
	"AggNumLevels": false, "AggInterpType": false, "PMaxElmts": false, "MeasureType": false,
	"RelaxOrder": false, "SmoothType": false, "SmoothNumLevels": false,
	"SmoothNumSweeps": false, "Variant": false, "Overlap": false, "DomainType": false,
	"NumPaths": false, "InterpVecVariant": false,
	"StrongThreshold": true, "MaxRowSum": true, "TruncFactor": true, "RelaxWt": true,
	"OuterWt": true, "SchwarzRlxWeight": true, "ChebyOrder": false, "ChebyFraction": true,
	"CoarsenCutFactor": false, "IsTriangular": false, "GSMG": false, "NumFunctions": false,
	"NonGalerkinTol": true, "KeepTranspose": false, "RAP2": false, "ADropTol": true,
}
