package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// kernelKind names the dense kernels.
type kernelKind int

const (
	kCholesky   kernelKind = iota // (A) → L
	kCholSolve                    // (L, B) → (L·Lᴴ)⁻¹B
	kPotrs                        // (A, L, B) → A⁻¹B, L = Cholesky(A)
	kPotri                        // (A, L) → A⁻¹
	kLogDet                       // (A, L) → log det A (host scalar)
	kEigen                        // (A) → eigenvectors, carrying the eigenvalues
	kEigValues                    // (A, E) → eigenvalues (host vector); (A) values only
	kEigVectors                   // (A, E) → eigenvectors
	kLogDensity                   // (A, L, X, B) → log density of B's columns under N(0, A) (host scalar), X = Potrs(A, L, B)
)

var kernelNames = [...]string{"Cholesky", "CholSolve", "Potrs", "Potri", "LogDet", "Eigen", "EigenValues", "EigenVectors", "GaussianLogDensity"}

// kernelOp is one dense kernel on matrices in the column block-cyclic layout
// of one mesh. Its gradients live in linalg_grad.go.
type kernelOp struct {
	base
	kind  kernelKind
	dt    tensor.Dtype
	pl    Placement
	arity int
	out   *sharding.Tensor // reused across runs

	dispatch Dispatch // GPU meshes: cuSolverMg or single-GPU cuSOLVER

	// backward marks an op that a SymDiff made for its own computation (A⁻¹
	// for LogDet's gradient, say): its output is no output of the graph,
	// and consumers does not count it as one. It is left out of the hash,
	// so the node is the forward's where the graph already has it.
	backward bool

	// graph is the node's graph, whose failed runs (package failedruns)
	// this op's errors count: the LispMachine's backward pass of a run that
	// failed here then makes no calls across processes in the graph's
	// collectives, grid ops and sparse solves.
	graph *gorgonia.ExprGraph
}

// ErrNotCyclic is returned when a kernel gets a matrix that is not a sharded
// node in the column block-cyclic layout. It matches sharding.ErrBadInput,
// as every error of the kernels' builders does.
var ErrNotCyclic = fmt.Errorf("%w: ops: kernels need sharded nodes in the column block-cyclic layout", sharding.ErrBadInput)

// badKernel is a build-time error of kernel kind, matching
// sharding.ErrBadInput (mgla.ErrBadInput).
func badKernel(kind kernelKind, format string, args ...any) error {
	return fmt.Errorf("%w: ops: %s: "+format, append([]any{sharding.ErrBadInput, kernelNames[kind]}, args...)...)
}

func newKernel(kind kernelKind, opts []KernelOption, ins ...*gorgonia.Node) (*kernelOp, error) {
	for i, n := range ins {
		if n == nil {
			return nil, badKernel(kind, "input %d is nil", i)
		}
		if n.Graph() != ins[0].Graph() {
			return nil, badKernel(kind, "inputs from different graphs")
		}
	}
	a := ins[0]
	p, ok := PlacementOf(a)
	if !ok || p.Layout.Kind != cyclic.ColCyclic {
		return nil, fmt.Errorf("%w: %s got %v", ErrNotCyclic, kernelNames[kind], a)
	}
	if err := sharding.CheckDtype(a.Dtype()); err != nil {
		return nil, badKernel(kind, "%v", err)
	}
	s := a.Shape()
	if len(s) != 2 || s[0] != s[1] {
		return nil, badKernel(kind, "needs a square matrix, got shape %v", s)
	}
	for i, n := range ins[1:] {
		q, ok := PlacementOf(n)
		if !ok || q.Layout.Kind != cyclic.ColCyclic {
			return nil, fmt.Errorf("%w: %s got %v", ErrNotCyclic, kernelNames[kind], n)
		}
		if !q.Mesh.Same(p.Mesh) {
			return nil, fmt.Errorf("%w: %w: %s: %v and %v", sharding.ErrBadInput, sharding.ErrMeshMismatch, kernelNames[kind], p.Mesh, q.Mesh)
		}
		if n.Dtype() != a.Dtype() {
			return nil, badKernel(kind, "dtype mismatch %v and %v", a.Dtype(), n.Dtype())
		}
		if n.Shape()[0] != s[0] {
			return nil, badKernel(kind, "%v has %d rows, the matrix has %d", n, n.Shape()[0], s[0])
		}
		rhs := (kind == kCholSolve || kind == kPotrs) && i+1 == len(ins)-1 || kind == kLogDensity && i+1 >= 2
		if !rhs && !n.Shape().Eq(s) {
			// A factor, an inverse or an Eigen node of A: A's shape.
			return nil, badKernel(kind, "%v has shape %v, want the matrix's %v", n, n.Shape(), s)
		}
	}
	o := &kernelOp{base: base{name: kernelNames[kind]}, kind: kind, dt: a.Dtype(), pl: p, arity: len(ins), graph: a.Graph()}
	for _, opt := range opts {
		opt(o)
	}
	if kind == kCholSolve || kind == kPotrs {
		b := ins[len(ins)-1]
		o.pl, _ = PlacementOf(b)
		if b.Dims() > 2 {
			return nil, badKernel(kind, "right-hand side has rank %d", b.Dims())
		}
	}
	if kind == kLogDensity {
		if x, b := ins[2], ins[3]; !x.Shape().Eq(b.Shape()) || b.Dims() > 2 {
			return nil, badKernel(kind, "the solution %v has shape %v, the right-hand side %v %v", x, x.Shape(), b, b.Shape())
		}
	}
	return o, nil
}

func apply(kind kernelKind, opts []KernelOption, ins ...*gorgonia.Node) (*gorgonia.Node, error) {
	o, err := newKernel(kind, opts, ins...)
	if err != nil {
		return nil, err
	}
	return applyOp(o, ins...)
}

// Cholesky factors a sharded Hermitian positive definite matrix: L lower
// triangular with A = L·Lᴴ (only A's lower triangle is read).
func Cholesky(a *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	return apply(kCholesky, opts, a)
}

// CholSolve solves (L·Lᴴ)X = B for a lower factor L; B and X share placement.
func CholSolve(l, b *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	return apply(kCholSolve, opts, l, b)
}

// Potrs solves A·X = B given A and its factor L = Cholesky(A). The value
// comes from L; the gradient flows to A directly (no refactorisation).
func Potrs(a, l, b *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	return apply(kPotrs, opts, a, l, b)
}

// Potri is the full inverse of A (both triangles), given L = Cholesky(A).
func Potri(a, l *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	return apply(kPotri, opts, a, l)
}

// LogDet is log det A (a host scalar of the real dtype), given L = Cholesky(A).
func LogDet(a, l *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	return apply(kLogDet, opts, a, l)
}

// GaussianLogDensity is the log density of the k columns of B (N×K, or a length-N
// vector: k = 1) as independent draws from the zero-mean normal N(0, A),
// given L = Cholesky(A): −½·tr(BᵀA⁻¹B) − (k/2)·log det A − (N·k/2)·log 2π
// for real dtypes, and for complex ones that of the circularly-symmetric
// complex normal, −tr(BᴴA⁻¹B) − k·log det A − N·k·log π. A host scalar of
// the real dtype. It solves for X = A⁻¹B with a Potrs node on L (merged with
// the graph's own Potrs(a, l, b), if any), and its backward pass makes A's
// gradient in one computation, ḡ·(½·X·Xᵀ − (k/2)·A⁻¹), where Potrs and
// LogDet each make an N×N gradient for Gorgonia to add.
func GaussianLogDensity(a, l, b *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	x, err := Potrs(a, l, b, opts...)
	if err != nil {
		return nil, err
	}
	return apply(kLogDensity, opts, a, l, x, b)
}

// Eigen decomposes a sharded Hermitian matrix; the node's value holds the
// eigenvectors and carries the eigenvalues for EigenValues.
func Eigen(a *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	return apply(kEigen, opts, a)
}

// EigenValues are the ascending eigenvalues (host vector of the real dtype).
// With e = Eigen(a) they are read from e; with e == nil only values are
// computed.
func EigenValues(a, e *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	if e == nil {
		return apply(kEigValues, opts, a)
	}
	if err := checkEigenOf(a, e); err != nil {
		return nil, err
	}
	return apply(kEigValues, opts, a, e)
}

// EigenVectors are the eigenvectors of e = Eigen(a), in the columns.
func EigenVectors(a, e *gorgonia.Node, opts ...KernelOption) (*gorgonia.Node, error) {
	if err := checkEigenOf(a, e); err != nil {
		return nil, err
	}
	return apply(kEigVectors, opts, a, e)
}

// checkEigenOf checks that e is the node Eigen(a).
func checkEigenOf(a, e *gorgonia.Node) error {
	if a == nil || e == nil {
		return fmt.Errorf("%w: ops: EigenValues/EigenVectors need A and Eigen(A), got %v and %v", sharding.ErrBadInput, a, e)
	}
	if o, ok := e.Op().(*kernelOp); ok && o.kind == kEigen && e.Graph() == a.Graph() {
		for children := e.Graph().From(e.ID()); children.Next(); {
			if children.Node().ID() == a.ID() {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: ops: %v is not Eigen(%v)", sharding.ErrBadInput, e, a)
}

func (o *kernelOp) Placement() (Placement, bool) {
	switch o.kind {
	case kLogDet, kEigValues, kLogDensity:
		return Placement{}, false
	}
	return o.pl, true
}

func (o *kernelOp) Arity() int { return o.arity }

func (o *kernelOp) Type() hm.Type {
	m := matType(o.dt)
	b := hm.TypeVariable('b')
	switch o.kind {
	case kCholSolve:
		return hm.NewFnType(m, b, b)
	case kPotrs:
		return hm.NewFnType(m, m, b, b)
	case kLogDet:
		return hm.NewFnType(m, m, realOf(o.dt))
	case kLogDensity:
		x := hm.TypeVariable('x') // not 'b', Gorgonia's for a result
		return hm.NewFnType(m, m, x, x, realOf(o.dt))
	case kEigValues:
		v := gorgonia.TensorType{Dims: 1, Of: realOf(o.dt)}
		if o.arity == 1 {
			return hm.NewFnType(m, v)
		}
		return hm.NewFnType(m, m, v)
	}
	ts := make([]hm.Type, o.arity+1)
	for i := range ts {
		ts[i] = m
	}
	return hm.NewFnType(ts...)
}

func (o *kernelOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(in[0])
	if err != nil {
		return nil, err
	}
	switch o.kind {
	case kCholSolve, kPotrs:
		return shapeOf(in[len(in)-1])
	case kLogDet, kLogDensity:
		return tensor.ScalarShape(), nil
	case kEigValues:
		return tensor.Shape{s[0]}, nil
	}
	return s, nil
}

func (o *kernelOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|%v|%d|%v", o.name, o.dt, o.arity, o.dispatch)
	writePlacement(h, o.pl)
}
func (o *kernelOp) Hashcode() uint32 { return hashOf(o) }

// rhsInput is the index of kind's right-hand side input, 0 for none.
func rhsInput(kind kernelKind) int {
	switch kind {
	case kCholSolve:
		return 1
	case kPotrs:
		return 2
	case kLogDensity:
		return 3
	}
	return 0
}

// Do runs the kernel. Inputs are never modified.
func (o *kernelOp) Do(vals ...gorgonia.Value) (v gorgonia.Value, err error) {
	defer func() {
		if err != nil {
			failedruns.Failed(o.graph)
		}
	}()
	if err := CheckReaders(o.node); err != nil {
		return nil, err
	}
	ins := make([]*sharding.Tensor, len(vals))
	for i, v := range vals {
		t, err := asSharded(unwrapEigen(v), Placement{o.pl.Mesh, inputLayout(v, o.pl)})
		if err != nil {
			return nil, fmt.Errorf("%v: %w", o, err)
		}
		ins[i] = t
	}
	// A right-hand side of another order (a value that Let bound in an
	// equivalent shape, which Shard puts back in its node's) would be read
	// past its end.
	if j := rhsInput(o.kind); j > 0 && ins[j].Rows() != ins[0].Rows() {
		return nil, fmt.Errorf("%w: %v: a right-hand side of shape %v for a matrix of order %d (bind a value of the node's shape)", sharding.ErrBadInput, o, ins[j].Shape(), ins[0].Rows())
	}
	if o.kind == kLogDensity && !ins[2].Shape().Eq(ins[3].Shape()) {
		return nil, fmt.Errorf("%w: %v: a solution of shape %v for a right-hand side of shape %v", sharding.ErrBadInput, o, ins[2].Shape(), ins[3].Shape())
	}
	s := solverFor(o.pl.Mesh, o.dispatch)
	switch o.kind {
	case kCholesky:
		return o.output(ins[0].Shape(), func(out *sharding.Tensor) error { return s.potrf(ins[0], out) })
	case kCholSolve:
		// A factor from outside mgla: the solvers do not check it (Potrs'
		// factor, and the backward passes', are mgla's own and hold no NaN
		// or Inf); on host meshes the error names the element.
		check := func() error { return ins[0].CheckFinite(true) }
		if o.pl.Mesh.Kind() != sharding.GPU {
			check = func() error { return withHost(ins[0], func(h hostKernels) error { return h.checkFactor(ins[0]) }) }
		}
		if err := check(); err != nil {
			return nil, fmt.Errorf("%v: factor: %w", o, err)
		}
		return o.output(ins[1].Shape(), func(out *sharding.Tensor) error { return s.potrs(ins[0], ins[1], out) })
	case kPotrs:
		return o.output(ins[2].Shape(), func(out *sharding.Tensor) error { return s.potrs(ins[1], ins[2], out) })
	case kPotri:
		return o.output(ins[0].Shape(), func(out *sharding.Tensor) error { return s.potri(ins[1], out) })
	case kLogDet:
		return logDet(ins[1])
	case kLogDensity:
		return logDensity(ins[1], ins[2], ins[3])
	case kEigen:
		w := make([]float64, ins[0].Rows())
		v, err := o.output(ins[0].Shape(), func(out *sharding.Tensor) error { return s.syevd(ins[0], w, out) })
		if err != nil {
			return nil, err
		}
		return &eigenValue{Tensor: v.(*sharding.Tensor), w: w}, nil
	case kEigValues:
		var w []float64
		if e, ok := vals[len(vals)-1].(*eigenValue); ok && o.arity == 2 {
			w = e.w
		} else {
			w = make([]float64, ins[0].Rows())
			if err := s.syevd(ins[0], w, nil); err != nil {
				return nil, fmt.Errorf("%v: %w", o, err)
			}
		}
		return realVector(w, realOf(o.dt)), nil
	case kEigVectors:
		return ins[1], nil
	}
	return nil, fmt.Errorf("ops: unknown kernel %d", o.kind)
}

// output runs fill into this op's (reused) output tensor.
func (o *kernelOp) output(shape tensor.Shape, fill func(*sharding.Tensor) error) (gorgonia.Value, error) {
	out, err := sharding.Reuse(o.out, o.pl.Mesh, shape, o.dt, o.pl.Layout)
	if err != nil {
		return nil, err
	}
	o.out = out
	if err := fill(out); err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	return out, nil
}

// inputLayout keeps a sharded input's own cyclic layout (right-hand sides may
// use their own tile) and places host values like the op's output.
func inputLayout(v gorgonia.Value, p Placement) sharding.Layout {
	if t, ok := unwrapEigen(v).(*sharding.Tensor); ok && t.Layout().Kind == cyclic.ColCyclic {
		return t.Layout()
	}
	return p.Layout
}

// eigenValue is the value of an Eigen node: the eigenvectors, carrying the
// eigenvalues.
type eigenValue struct {
	*sharding.Tensor
	w []float64
}

func unwrapEigen(v gorgonia.Value) gorgonia.Value {
	if e, ok := v.(*eigenValue); ok {
		return e.Tensor
	}
	return v
}

func realVector(w []float64, dt tensor.Dtype) *tensor.Dense {
	if dt == tensor.Float32 {
		f := make([]float32, len(w))
		for i, x := range w {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(append([]float64(nil), w...)))
}

// logDet is 2·Σ log Re(L_ii) from the factor's diagonal, a host scalar of
// the real dtype.
func logDet(l *sharding.Tensor) (gorgonia.Value, error) {
	v, err := logDetOf(l)
	if err != nil {
		return nil, err
	}
	return realScalar(v, l.Dtype()), nil
}

// realScalar is v as a host scalar of dt's real dtype.
func realScalar(v float64, dt tensor.Dtype) gorgonia.Value {
	if realOf(dt) == tensor.Float32 {
		return gorgonia.NewF32(float32(v))
	}
	return gorgonia.NewF64(v)
}

func logDetOf(l *sharding.Tensor) (float64, error) {
	d, err := l.Diagonal()
	if err != nil {
		return 0, err
	}
	var sum float64
	switch x := d.(type) {
	case []float32:
		for _, v := range x {
			sum += logOf(float64(v))
		}
	case []float64:
		for _, v := range x {
			sum += logOf(v)
		}
	case []complex64:
		for _, v := range x {
			sum += logOf(float64(real(v)))
		}
	case []complex128:
		for _, v := range x {
			sum += logOf(real(v))
		}
	}
	return 2 * sum, nil
}

// logDensity is GaussianLogDensity's value from the factor l of A, the solution x
// of A·X = B and b: −½·Σ B∘X − (k/2)·log det A − (n·k/2)·log 2π, and for
// complex dtypes −Σ Re(conj(B)∘X) − k·log det A − n·k·log π, summed in
// float64; beyond the real dtype's range it is ErrNonFinite.
func logDensity(l, x, b *sharding.Tensor) (gorgonia.Value, error) {
	ld, err := logDetOf(l)
	if err != nil {
		return nil, err
	}
	xh, err := x.Gather()
	if err != nil {
		return nil, err
	}
	bh, err := b.Gather()
	if err != nil {
		return nil, err
	}
	var quad float64
	switch xs := xh.Data().(type) {
	case []float32:
		quad = realDot(xs, bh.Data().([]float32))
	case []float64:
		quad = realDot(xs, bh.Data().([]float64))
	case []complex64:
		quad = complexDot(xs, bh.Data().([]complex64))
	case []complex128:
		quad = complexDot(xs, bh.Data().([]complex128))
	default:
		return nil, sharding.CheckDtype(x.Dtype())
	}
	n, k := float64(b.Rows()), float64(b.Cols())
	v := -quad/2 - k*ld/2 - n*k*math.Log(2*math.Pi)/2
	if isComplex(b.Dtype()) {
		v = -quad - k*ld - n*k*math.Log(math.Pi)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) || realOf(b.Dtype()) == tensor.Float32 && math.Abs(v) > math.MaxFloat32 {
		return nil, fmt.Errorf("%w: the log density %g is beyond %v's range", kernels.ErrNonFinite, v, realOf(b.Dtype()))
	}
	return realScalar(v, b.Dtype()), nil
}

// realDot is Σ x_i·b_i in float64.
func realDot[T float32 | float64](x, b []T) float64 {
	var s float64
	for i, v := range x {
		s += float64(v) * float64(b[i])
	}
	return s
}

// complexDot is Σ Re(conj(b_i)·x_i) in float64.
func complexDot[T complex64 | complex128](x, b []T) float64 {
	var s float64
	for i, v := range x {
		xv, bv := complex128(v), complex128(b[i])
		s += real(bv)*real(xv) + imag(bv)*imag(xv)
	}
	return s
}
