// Package mgla is multi-GPU dense linear algebra for Gorgonia: Potrs, Potri,
// Syevd, Cholesky, CholSolve, LogDet and GaussianLogDensity as graph ops that run sharded over a
// mesh of devices — NVIDIA GPUs through cuSolverMg (build tag mglacuda), or
// virtual CPU devices, the embedded default, which give the same answers
// through the same API.
//
// Each builder takes host nodes (or sharded nodes from package ops) and
// inserts shard → relayout → kernel → gather around the kernel: the matrix is
// placed on the mesh in the 1-D column block-cyclic layout of tile width T
// (WithTile), the kernel runs on the devices of the mesh (WithMesh, WithDispatch), and the
// result comes back to the host as an ordinary node. Inputs already sharded in
// the right layout are used as they are, so a matrix placed once can feed
// several ops (see package ops for the sharded-level API). Identical
// sub-graphs are merged by Gorgonia: Potrs(A, b) and LogDet(A) on the same A
// share one Cholesky factorisation, and their gradients reuse it.
//
// The ops read the lower triangle of A only (LAPACK's uplo = L). The
// gradient of A is symmetric: the Ā with dcost = ⟨Ā, dA⟩ for every symmetric
// dA (the convention of JAX and PyTorch), the exact derivative through an A
// built symmetric; an A that fills only its lower triangle would need
// 2·Ā_ij below the diagonal, so build A symmetric. Errors are Go
// errors: builders reject bad shapes, dtypes and options at graph build time;
// at run time a matrix that is not positive definite gives an error for which
// errors.Is(mgla.Cause(err), mgla.ErrNotPositiveDefinite) holds.
//
// Reading results: in a graph with gradients, Gorgonia's TapeMachine may reuse
// the memory of a value once nothing reads it, so copy results out with
// gorgonia.Read (as the Example does) rather than reading node.Value() after
// RunAll.
//
// With WithGrid the builders run across processes instead (see
// Distributor): the same graph on every process, the values every process
// holds, the work on a ScaLAPACK process grid through package dist/distops.
//
// The package owns the user-facing builders, their options (WithMesh,
// WithTile, WithDispatch, EigenvaluesOnly, WithGrid) and the errors a user tests
// (ErrBadInput, ErrNotPositiveDefinite, …, Cause), the collective builders
// included (AllReduce …, forwarding to package collective). It may import
// collective, ops, sharding, cyclic and the kernels packages; within the
// module only the examples and the commands import it.
package mgla

import (
	"errors"
	"fmt"
	"math"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ErrNotPositiveDefinite is matched (through Cause) by the run-time error of a
// factorisation whose matrix is not positive definite; the error names the
// order of the failing leading minor.
var ErrNotPositiveDefinite = kernels.ErrNotPositiveDefinite

// ErrNonFinite is matched by the run-time error for NaN or Inf inputs, and
// for results and gradients beyond the dtype's range.
var ErrNonFinite = kernels.ErrNonFinite

// ErrWrongResult is matched by the run-time error of a factorization on a
// GPU mesh whose factor failed mgla's check on every attempt (cuSolverMg
// now and then returns a wrong factor on GPUs shared with other work; a
// wrong factor is computed again, and only a repeated failure is an error).
var ErrWrongResult = kernels.ErrWrongResult

// ErrComplexGradient is matched by the error for a gradient through a
// complex-valued op (complex dtypes are forward only): gorgonia.Grad's
// error when it builds the backward pass (through Cause), or the
// LispMachine's run.
var ErrComplexGradient = ops.ErrComplexGradient

// ErrRepeatedEigenvalues is matched by the run-time error of Syevd's
// eigenvector gradient at repeated eigenvalues (equal to rounding) when the
// cost uses their eigenvectors: the backward pass cannot compute it there
// (JAX and PyTorch give Inf or NaN), even for costs whose gradient exists,
// such as sum(V·diag(w)·Vᵀ) = sum(A). Costs of the eigenvalues alone, or
// that leave those eigenvectors unused, get their gradient.
var ErrRepeatedEigenvalues = ops.ErrRepeatedEigenvalues

// ErrMeshMismatch is returned when nodes or options name different meshes,
// and at run time for a sharded value bound with gorgonia.Let on another
// mesh than its node's; the error matches ErrBadInput too.
var ErrMeshMismatch = sharding.ErrMeshMismatch

// ErrBadInput is matched by every build-time error about shapes, dtypes,
// nodes and options, and by the ops' run-time errors about a value bound
// with gorgonia.Let that they cannot take (a right-hand side of another
// order, a grid value without WithGrid, a tensor type they do not read, a
// Go number, which Let binds to a node of any shape without a check), on a
// mesh or, with WithGrid, on a grid (dist.ErrBadInput matches it).
var ErrBadInput = sharding.ErrBadInput

// Cause returns the op's own error inside an error returned by a Gorgonia
// machine. Gorgonia's TapeMachine wraps op errors in a type with an Err()
// method but no Unwrap, so errors.Is cannot see through it; Cause digs through
// such wrappers (and pkg/errors causes) and returns err unchanged when there
// is none.
func Cause(err error) error {
	for err != nil {
		if inner := ops.UnwrapSymDiff(err); inner != nil && inner != err {
			err = inner
			continue
		}
		switch e := err.(type) {
		case interface{ Err() error }:
			if inner := e.Err(); inner != nil && inner != err {
				err = inner
				continue
			}
		case interface{ Cause() error }:
			if inner := e.Cause(); inner != nil && inner != err {
				err = inner
				continue
			}
		}
		return err
	}
	return err
}

// Option configures a builder.
type Option func(*config)

type config struct {
	grid       Distributor
	gridSet    bool // WithGrid was given (a nil Distributor is ErrBadInput)
	mesh       *sharding.Mesh
	tile       int
	tileSet    bool
	valuesOnly bool
	dispatch   ops.Dispatch
}

// kernelOpts are the ops-level options of c.
func (c *config) kernelOpts() []ops.KernelOption {
	return []ops.KernelOption{ops.WithDispatch(c.dispatch)}
}

// Options bundles several options into one. Nil options are skipped, here
// and by the builders, so that an option chosen conditionally may be nil.
func Options(opts ...Option) Option {
	return func(c *config) { c.apply(opts) }
}

// apply applies opts to c, skipping nil ones.
func (c *config) apply(opts []Option) {
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
}

// WithMesh runs the op on the devices of m. Default: the mesh of an input
// that is already sharded (the matrix's, else the right-hand side's), else
// every GPU when the CUDA backend is built and a GPU is present, otherwise a
// one-device CPU mesh.
func WithMesh(m *sharding.Mesh) Option { return func(c *config) { c.mesh = m } }

// WithTile sets the width T of the column tiles of the block-cyclic layout.
// Any T ≥ 1 works for any N; the default is DefaultTile.
func WithTile(t int) Option { return func(c *config) { c.tile, c.tileSet = t, true } }

// Distributor runs the builders' ops across processes instead of on a
// mesh: WithGrid(d) makes each builder, after checking its inputs, ask d
// for the node. The inputs are host nodes whose values every process holds
// (every process builds the same graph), and so are the outputs, but for
// the kernel matrix builders' K, a grid value made from host points and
// parameters (KernelMatrix). block is
// the size of the square blocks of the 2-D block-cyclic distribution (0: the
// distributor's default); vectors asks Syevd for eigenvectors (v is nil
// otherwise). Gradients flow as through the builders without it.
//
// With distops, a node may also hold a grid-resident value (a
// distops.Value: only this process's blocks of the matrix, from
// distops.Ops.FromRowBlocks and friends); the builders pass it to d as
// they do host nodes, and the op's matrix result is then a grid value
// too (GaussianLogDensity takes a grid K, whose K⁻¹y d's Gather brings
// back, and a host y). Gorgonia's own ops cannot read a grid value: a
// graph where one does is ErrBadInput of the run, naming the
// distributor's Gather, which brings it back first.
//
// mgla keeps MPI out of its own build: the distributor mgla has is
// distops.On(grid) in package dist/distops, on a ScaLAPACK process grid
// (build tag mpi; without it every method returns an error wrapping
// collective.ErrUnavailable).
//
// An operand may be a constant of no graph (gorgonia.NewConstant) beside a
// node of a graph: the distributor brings it into that graph
// (sharding.InGraph) once its own checks have passed.
//
// The builders return d's errors wrapped so that they match ErrBadInput as
// well as d's own sentinels (dist.ErrBadInput for distops), except an error
// matching ErrUnavailable (the engine is not built in), which they return
// as it is.
type Distributor interface {
	Cholesky(a *gorgonia.Node, block int) (*gorgonia.Node, error)
	CholSolve(l, b *gorgonia.Node, block int) (*gorgonia.Node, error)
	Potrs(a, b *gorgonia.Node, block int) (*gorgonia.Node, error)
	Potri(a *gorgonia.Node, block int) (*gorgonia.Node, error)
	LogDet(a *gorgonia.Node, block int) (*gorgonia.Node, error)
	Syevd(a *gorgonia.Node, block int, vectors bool) (w, v *gorgonia.Node, err error)
	// KernelMatrix is the n×n kernel matrix of family f of the points x
	// (SquaredExponential's operands) made on the grid: the builders
	// SquaredExponential, Matern32 and Matern52 call it.
	KernelMatrix(f sharding.KernelFamily, x, lengthScale, signalVar, noiseVar *gorgonia.Node, block int) (*gorgonia.Node, error)
	// Gather brings a grid value back as a host node, on every process for
	// root < 0, else on process root: GaussianLogDensity of a grid K
	// gathers K⁻¹y with it.
	Gather(x *gorgonia.Node, root int) (*gorgonia.Node, error)
}

// WithGrid runs the op across the processes of d, for example
//
//	mgla.Potrs(a, b, mgla.WithGrid(distops.On(grid)), mgla.WithTile(64))
//
// with WithTile setting the block size of the 2-D block-cyclic distribution
// (default: the distributor's, 64 for distops). It excludes WithMesh and
// sharded inputs (the grid takes host nodes, or distops' grid values);
// WithDispatch does not apply.
func WithGrid(d Distributor) Option { return func(c *config) { c.grid, c.gridSet = d, true } }

// Dispatch chooses between cuSolverMg across a GPU mesh and single-GPU
// cuSOLVER on the mesh's first device; see WithDispatch.
type Dispatch = ops.Dispatch

const (
	DispatchAuto   = ops.DispatchAuto   // the measured rule (default)
	DispatchMesh   = ops.DispatchMesh   // always cuSolverMg over the mesh
	DispatchSingle = ops.DispatchSingle // always one GPU (the matrix must fit)
)

// WithDispatch overrides the default choice, on GPU meshes of several
// devices, between cuSolverMg over every device and single-GPU cuSOLVER on
// the first one. By default (DispatchAuto) mgla picks the faster of the two
// from a rule measured on H200s (BENCHMARKS.md), and the mesh whenever the
// matrix does not fit on one GPU. CPU meshes ignore it.
func WithDispatch(d Dispatch) Option { return func(c *config) { c.dispatch = d } }

// EigenvaluesOnly makes Syevd compute eigenvalues only; its vector result is
// nil.
func EigenvaluesOnly() Option { return func(c *config) { c.valuesOnly = true } }

// DefaultTile is the tile width used without WithTile: 2048 on GPU meshes,
// 256 on CPU meshes (where it only sets the granularity of host copies).
// Measured on H200s (BENCHMARKS.md): at N = 32768 on 2 GPUs potrf takes
// 294/201/187/187 ms with T = 256/512/1024/2048 and potrs with one
// right-hand side 278/78/26/11 ms; Syevd caps its default at 1024, the
// largest tile cuSolverMg's syevd takes. A nil m is the default mesh, as
// in WithMesh.
func DefaultTile(m *sharding.Mesh, n int) int {
	if m == nil {
		d, err := sharding.DefaultMesh()
		if err != nil {
			return 256 // no mesh at all: CPU copies
		}
		m = d
	}
	if m.Kind() == sharding.GPU {
		return 2048
	}
	return 256
}

func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadInput}, args...)...)
}

// meshMismatch is a build-time ErrMeshMismatch, which is bad input too.
func meshMismatch(format string, args ...any) error {
	return fmt.Errorf("%w: %w: "+format, append([]any{ErrBadInput, ErrMeshMismatch}, args...)...)
}

// gridErr is an error of WithGrid's distributor as the builder name
// returns it: matching ErrBadInput too, unless it says that the engine is
// not built in (ErrUnavailable).
func gridErr(name string, err error) error {
	if err == nil || errors.Is(err, ErrBadInput) || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %s: WithGrid: %w", ErrBadInput, name, err)
}

// square checks a node holding an N×N matrix; with are the call's other
// operands, whose graph a constant a (of no graph) will join.
func square(name string, a *gorgonia.Node, with ...*gorgonia.Node) error {
	if a == nil {
		return badInput("%s: nil node", name)
	}
	if _, err := sharding.GraphOf(append([]*gorgonia.Node{a}, with...)...); err != nil {
		return badInput("%s: %v", name, err)
	}
	if a.Dims() != 2 {
		return badInput("%s: want an N×N matrix, %v has rank %d", name, a.Name(), a.Dims())
	}
	switch s := a.Shape(); {
	case s[0] != s[1]:
		return badInput("%s: want a square matrix, %v is %d×%d", name, a.Name(), s[0], s[1])
	case s[0] < 1:
		return badInput("%s: want an N×N matrix with N ≥ 1, %v is empty (%d×%d)", name, a.Name(), s[0], s[1])
	}
	if err := sharding.CheckDtype(a.Dtype()); err != nil {
		return badInput("%s: %v", name, err)
	}
	return nil
}

// inOneGraph brings a constant operand (gorgonia.NewConstant: of no graph)
// into the other's graph, once square has checked that there is one.
func inOneGraph(a, b *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node) {
	g, _ := sharding.GraphOf(a, b)
	return sharding.InGraph(g, a), sharding.InGraph(g, b)
}

// rhs checks a right-hand side for an N×N matrix.
func rhs(name string, a, b *gorgonia.Node) error {
	if b == nil {
		return badInput("%s: nil right-hand side", name)
	}
	if b.Dims() < 1 || b.Dims() > 2 {
		return badInput("%s: the right-hand side must be N×K or a length-N vector, %v has rank %d", name, b.Name(), b.Dims())
	}
	if b.Shape()[0] != a.Shape()[0] {
		return badInput("%s: the matrix has %d rows, the right-hand side %v has %d", name, a.Shape()[0], b.Name(), b.Shape()[0])
	}
	if s := b.Shape(); s.TotalSize() < 1 {
		return badInput("%s: the right-hand side %v is empty (shape %v)", name, b.Name(), s)
	}
	if b.Dtype() != a.Dtype() {
		return badInput("%s: dtype mismatch: %v and %v", name, a.Dtype(), b.Dtype())
	}
	return nil
}

// configure resolves options against the matrix node a.
func configure(name string, a *gorgonia.Node, opts []Option, rhs ...*gorgonia.Node) (*config, error) {
	c := &config{}
	c.apply(opts)
	if c.gridSet && c.grid == nil {
		// A code path that forgot its grid would run on one process's
		// mesh, silently.
		return nil, badInput("%s: WithGrid(nil): no distributor (leave the option out to run on a mesh)", name)
	}
	if c.grid != nil {
		return c, c.checkGrid(name, a)
	}
	for _, n := range append([]*gorgonia.Node{a}, rhs...) {
		if ops.OnGrid(n) {
			return nil, badInput("%s: %v holds a grid value: pass WithGrid with its grid", name, n.Name())
		}
	}
	p, sharded := ops.PlacementOf(a)
	if !sharded && c.mesh == nil {
		// A host matrix goes to the mesh of a sharded right-hand side.
		for _, b := range rhs {
			if pb, ok := ops.PlacementOf(b); ok {
				c.mesh = pb.Mesh
				break
			}
		}
	}
	switch {
	case c.mesh != nil && sharded && !p.Mesh.Same(c.mesh):
		return nil, meshMismatch("%s: %v is on %v, WithMesh gives %v", name, a.Name(), p.Mesh, c.mesh)
	case c.mesh == nil && sharded:
		c.mesh = p.Mesh
	case c.mesh == nil:
		m, err := sharding.DefaultMesh()
		if err != nil {
			return nil, err
		}
		c.mesh = m
	}
	if err := c.mesh.Validate(); err != nil {
		return nil, badInput("%s: %v", name, err)
	}
	if c.dispatch < DispatchAuto || c.dispatch > DispatchSingle {
		return nil, badInput("%s: unknown dispatch %d", name, int(c.dispatch))
	}
	if c.tileSet && c.tile < 1 {
		return nil, badInput("%s: tile width must be at least 1, got %d", name, c.tile)
	}
	if !c.tileSet {
		c.tile = DefaultTile(c.mesh, a.Shape()[0])
		if name == "Syevd" {
			c.tile = min(c.tile, 1024)
		}
		if sharded && p.Layout.Kind == cyclic.ColCyclic {
			c.tile = p.Layout.Tile // keep the layout an input already has
		}
	}
	return c, nil
}

// checkGrid checks the options given with WithGrid and the matrix a.
func (c *config) checkGrid(name string, a *gorgonia.Node) error {
	switch {
	case c.mesh != nil:
		return badInput("%s: WithGrid and WithMesh exclude each other", name)
	case c.tileSet && c.tile < 1:
		return badInput("%s: block size (WithTile) must be at least 1, got %d", name, c.tile)
	}
	return hostOnly(name, a)
}

// onMesh checks that n, if it is sharded, is on the mesh the op runs on.
func (c *config) onMesh(name string, n *gorgonia.Node) error {
	if p, sharded := ops.PlacementOf(n); sharded && !p.Mesh.Same(c.mesh) {
		return meshMismatch("%s: %v is on %v, the op runs on %v", name, n.Name(), p.Mesh, c.mesh)
	}
	return nil
}

// hostOnly checks that n is a host node, as WithGrid needs.
func hostOnly(name string, n *gorgonia.Node) error {
	if _, sharded := ops.PlacementOf(n); sharded {
		return badInput("%s: WithGrid takes host nodes, %v is sharded", name, n.Name())
	}
	return nil
}

// block is the block size WithGrid's distributor gets: WithTile's, or 0
// for its default.
func (c *config) block() int {
	if c.tileSet {
		return c.tile
	}
	return 0
}

func (c *config) cyclic(n *gorgonia.Node) (*gorgonia.Node, error) {
	return ops.Shard(n, c.mesh, sharding.Cyclic(c.tile))
}

// factorWithRHS places a and the right-hand sides b on the mesh, after
// onMesh's checks of b, and factors a: the operands of the kernels on a
// factor and right-hand sides (Potrs, GaussianLogDensity).
func (c *config) factorWithRHS(name string, a, b *gorgonia.Node) (ac, l, bc *gorgonia.Node, err error) {
	if err := c.onMesh(name, b); err != nil {
		return nil, nil, nil, err
	}
	a, b = inOneGraph(a, b) // every check passed
	if ac, l, err = c.factor(a); err != nil {
		return nil, nil, nil, err
	}
	if bc, err = c.cyclic(b); err != nil {
		return nil, nil, nil, err
	}
	return ac, l, bc, nil
}

// factor places a on the mesh and factors it; Gorgonia merges the nodes when
// several builders get the same a and options.
func (c *config) factor(a *gorgonia.Node) (ac, l *gorgonia.Node, err error) {
	if ac, err = c.cyclic(a); err != nil {
		return nil, nil, err
	}
	l, err = ops.Cholesky(ac, c.kernelOpts()...)
	return ac, l, err
}

// Potrs solves A·X = B for a symmetric (Hermitian) positive definite A: b is
// N×K or a length-N vector and X has b's shape. Gradients flow to A and B.
func Potrs(a, b *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	if err := square("Potrs", a, b); err != nil {
		return nil, err
	}
	if err := rhs("Potrs", a, b); err != nil {
		return nil, err
	}
	c, err := configure("Potrs", a, opts, b)
	if err != nil {
		return nil, err
	}
	if c.grid != nil {
		if err := hostOnly("Potrs", b); err != nil {
			return nil, err
		}
		// A constant operand is the distributor's to bring in, after its
		// own checks (distops does).
		n, err := c.grid.Potrs(a, b, c.block())
		return n, gridErr("Potrs", err)
	}
	ac, l, bc, err := c.factorWithRHS("Potrs", a, b)
	if err != nil {
		return nil, err
	}
	x, err := ops.Potrs(ac, l, bc, c.kernelOpts()...)
	if err != nil {
		return nil, err
	}
	return ops.Gather(x)
}

// Potri is the full inverse of a symmetric (Hermitian) positive definite A,
// both triangles filled and exactly symmetric.
func Potri(a *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	if err := square("Potri", a); err != nil {
		return nil, err
	}
	c, err := configure("Potri", a, opts)
	if err != nil {
		return nil, err
	}
	if c.grid != nil {
		n, err := c.grid.Potri(a, c.block())
		return n, gridErr("Potri", err)
	}
	ac, l, err := c.factor(a)
	if err != nil {
		return nil, err
	}
	inv, err := ops.Potri(ac, l, c.kernelOpts()...)
	if err != nil {
		return nil, err
	}
	return ops.Gather(inv)
}

// Cholesky is the lower triangular L with A = L·Lᴴ and a zero strict upper
// triangle.
func Cholesky(a *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	if err := square("Cholesky", a); err != nil {
		return nil, err
	}
	c, err := configure("Cholesky", a, opts)
	if err != nil {
		return nil, err
	}
	if c.grid != nil {
		n, err := c.grid.Cholesky(a, c.block())
		return n, gridErr("Cholesky", err)
	}
	_, l, err := c.factor(a)
	if err != nil {
		return nil, err
	}
	return ops.Gather(l)
}

// CholSolve is (L·Lᴴ)⁻¹B for a lower triangular L (for example from
// Cholesky); a zero on L's diagonal is a run-time ErrNotPositiveDefinite.
func CholSolve(l, b *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	if err := square("CholSolve", l, b); err != nil {
		return nil, err
	}
	if err := rhs("CholSolve", l, b); err != nil {
		return nil, err
	}
	c, err := configure("CholSolve", l, opts, b)
	if err != nil {
		return nil, err
	}
	if c.grid != nil {
		if err := hostOnly("CholSolve", b); err != nil {
			return nil, err
		}
		// A constant operand is the distributor's to bring in, after its
		// own checks (distops does).
		n, err := c.grid.CholSolve(l, b, c.block())
		return n, gridErr("CholSolve", err)
	}
	if err := c.onMesh("CholSolve", b); err != nil {
		return nil, err
	}
	l, b = inOneGraph(l, b) // every check passed
	lc, err := c.cyclic(l)
	if err != nil {
		return nil, err
	}
	bc, err := c.cyclic(b)
	if err != nil {
		return nil, err
	}
	x, err := ops.CholSolve(lc, bc, c.kernelOpts()...)
	if err != nil {
		return nil, err
	}
	return ops.Gather(x)
}

// LogDet is log det A for a symmetric (Hermitian) positive definite A, from
// its Cholesky factor: a scalar of the real dtype.
func LogDet(a *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	if err := square("LogDet", a); err != nil {
		return nil, err
	}
	c, err := configure("LogDet", a, opts)
	if err != nil {
		return nil, err
	}
	if c.grid != nil {
		n, err := c.grid.LogDet(a, c.block())
		return n, gridErr("LogDet", err)
	}
	ac, l, err := c.factor(a)
	if err != nil {
		return nil, err
	}
	return ops.LogDet(ac, l, c.kernelOpts()...)
}

// GaussianLogDensity is the log density of the columns of y as independent
// draws from the zero-mean normal N(0, K), for a symmetric (Hermitian)
// positive definite K (N×N) and y N×k or a length-N vector (k = 1):
//
//	−½·tr(yᵀK⁻¹y) − (k/2)·log det K − (N·k/2)·log 2π
//
// for real dtypes: a Gaussian process's log marginal likelihood, the
// objective of its training. For complex dtypes it is the density of the
// circularly-symmetric complex normal, −tr(yᴴK⁻¹y) − k·log det K −
// N·k·log π. The result is a host scalar of the real dtype.
//
// Gradients flow to K and y (real dtypes): K̄ = ḡ·(½·α·αᵀ − (k/2)·K⁻¹) and
// ȳ = −ḡ·α with α = K⁻¹y, from the forward pass's factor. K's gradient is
// one N×N computation on the mesh, where the same cost written with Potrs and
// LogDet makes two that Gorgonia adds on the host (a GPU mesh downloads one
// N×N gradient instead of two). Its factor and solve are Cholesky and Potrs
// nodes that Gorgonia merges with the graph's own on the same K and y.
//
// With WithGrid it is built from the distributor's Potrs and LogDet (real
// dtypes: a complex one is ErrBadInput there; write the cost with Potrs
// and LogDet), its sum in the dtype: in float32 a partial sum beyond the
// range is ErrNonFinite. K may be a grid value (SquaredExponential's K
// with WithGrid, say), whose K⁻¹y the distributor's Gather brings back;
// y is a host node.
func GaussianLogDensity(k, y *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	const name = "GaussianLogDensity"
	if err := square(name, k, y); err != nil {
		return nil, err
	}
	if err := rhs(name, k, y); err != nil {
		return nil, err
	}
	c, err := configure(name, k, opts, y)
	if err != nil {
		return nil, err
	}
	if c.grid != nil {
		if err := hostOnly(name, y); err != nil {
			return nil, err
		}
		n, err := gridLogDensity(c, k, y)
		return n, gridErr(name, err)
	}
	kc, l, yc, err := c.factorWithRHS(name, k, y)
	if err != nil {
		return nil, err
	}
	return ops.GaussianLogDensity(kc, l, yc, c.kernelOpts()...)
}

// gridLogDensity is GaussianLogDensity from WithGrid's Potrs and LogDet, for
// a real dtype, a host y and a host or grid K.
func gridLogDensity(c *config, k, y *gorgonia.Node) (*gorgonia.Node, error) {
	dt := k.Dtype()
	switch {
	case ops.OnGrid(y):
		return nil, badInput("GaussianLogDensity: WithGrid takes a host y, not a grid value: write the cost with Potrs and LogDet")
	case dt != tensor.Float64 && dt != tensor.Float32:
		return nil, badInput("GaussianLogDensity: WithGrid takes float32 and float64 (got %v): write the cost with Potrs and LogDet", dt)
	}
	// One node for a constant K (or y) that both calls take (each would
	// bring in its own copy, the second none: it has no other operand).
	k, y = inOneGraph(k, y)
	x, err := c.grid.Potrs(k, y, c.block())
	if err != nil {
		return nil, err
	}
	if ops.OnGrid(x) { // a grid K's K⁻¹y, back on every process
		if x, err = c.grid.Gather(x, -1); err != nil {
			return nil, err
		}
	}
	ld, err := c.grid.LogDet(k, c.block())
	if err != nil {
		return nil, err
	}
	n, cols := float64(k.Shape()[0]), 1.0
	if y.Dims() == 2 {
		cols = float64(y.Shape()[1])
	}
	scalar := func(v float64) *gorgonia.Node {
		if dt == tensor.Float32 {
			return gorgonia.NewConstant(float32(v))
		}
		return gorgonia.NewConstant(v)
	}
	// −½·Σ y∘x − (k/2)·log det K − (N·k/2)·log 2π, halved before the sum
	// (in the dtype, Gorgonia's ops: a sum of twice the value could
	// overflow where the value fits), and checked as the mesh op's is (a
	// float32 partial sum of terms of both signs beyond the range is
	// ErrNonFinite too, where the mesh op, which sums in float64, is not).
	half, err := gorgonia.Mul(scalar(-0.5), y)
	if err != nil {
		return nil, err
	}
	prod, err := gorgonia.HadamardProd(half, x)
	if err != nil {
		return nil, err
	}
	fit, err := gorgonia.Sum(prod)
	if err != nil {
		return nil, err
	}
	penalty, err := gorgonia.Mul(scalar(cols/2), ld)
	if err != nil {
		return nil, err
	}
	v, err := gorgonia.Sub(fit, penalty)
	if err != nil {
		return nil, err
	}
	if v, err = gorgonia.Sub(v, scalar(n*cols*math.Log(2*math.Pi)/2)); err != nil {
		return nil, err
	}
	return ops.CheckFinite(v, "the log density, or a partial sum of it in the dtype, beyond the dtype's range")
}

// Syevd is the eigen-decomposition of a symmetric (Hermitian) A: w holds the N
// eigenvalues in ascending order (float32 for float32 and complex64 input,
// float64 otherwise) and v the orthonormal eigenvectors in its columns. With
// EigenvaluesOnly, v is nil and no vectors are computed. The gradient
// through v at repeated eigenvalues is ErrRepeatedEigenvalues where the
// cost uses their eigenvectors.
func Syevd(a *gorgonia.Node, opts ...Option) (w, v *gorgonia.Node, err error) {
	if err := square("Syevd", a); err != nil {
		return nil, nil, err
	}
	c, err := configure("Syevd", a, opts)
	if err != nil {
		return nil, nil, err
	}
	if c.grid != nil {
		w, v, err := c.grid.Syevd(a, c.block(), !c.valuesOnly)
		return w, v, gridErr("Syevd", err)
	}
	// A tile wider than the matrix is one tile of its width.
	if c.mesh.Kind() == sharding.GPU && min(c.tile, a.Shape()[0]) > 1024 {
		return nil, nil, badInput("Syevd: cuSolverMg's eigensolver needs tile ≤ 1024, got %d", c.tile)
	}
	ac, err := c.cyclic(a)
	if err != nil {
		return nil, nil, err
	}
	if c.valuesOnly {
		w, err = ops.EigenValues(ac, nil, c.kernelOpts()...)
		return w, nil, err
	}
	e, err := ops.Eigen(ac, c.kernelOpts()...)
	if err != nil {
		return nil, nil, err
	}
	if w, err = ops.EigenValues(ac, e, c.kernelOpts()...); err != nil {
		return nil, nil, err
	}
	vs, err := ops.EigenVectors(ac, e, c.kernelOpts()...)
	if err != nil {
		return nil, nil, err
	}
	v, err = ops.Gather(vs)
	return w, v, err
}
