package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CrossKernel is the m×n kernel between the m points xs and the n points
// of the kernel matrix k (a node that KernelMatrix made, or another
// KernelSource: a grid distributor's kernel matrix), of k's family,
// length scale and signal variance, without its noise:
//
//	C_ij = σ²·v(‖xsᵢ − xⱼ‖²/ℓ²),
//
// a host node (sharding.CrossKernel) for a Gaussian process's predictions:
// the posterior mean C·K⁻¹y and variance σ² − diag(C·K⁻¹·Cᵀ) at the points xs.
// xs is a host node of k's dtype, m×d rows of k's dimension d, or a
// length-m vector when d is 1. C is computed from xs and k's points and
// parameters, and gradients flow to all four; k is an input that C does not
// read (so that k has a consumer), which the machine still runs first: a
// run where k fails fails before C.
func CrossKernel(k, xs *gorgonia.Node) (*gorgonia.Node, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: ops: CrossKernel: "+format, append([]any{sharding.ErrBadInput}, args...)...)
	}
	if k == nil || xs == nil {
		return nil, bad("nil node")
	}
	var family sharding.KernelFamily
	var km KernelShape
	src, ok := k.Op().(KernelSource)
	if ok {
		family, km, ok = src.KernelMatrixOf()
	}
	if !ok {
		return nil, bad("%v is not a kernel matrix (made by ops.KernelMatrix: mgla.SquaredExponential, Matern32 or Matern52)", nodeName(k))
	}
	g, err := sharding.GraphOf(k, xs)
	if err != nil {
		return nil, bad("%v", err)
	}
	if xs.Dtype() != km.Dtype {
		return nil, bad("the points %v are %v, the kernel matrix %v", nodeName(xs), xs.Dtype(), km.Dtype)
	}
	if IsSharded(xs) || OnGrid(xs) {
		return nil, bad("the points %v must be a host node", nodeName(xs))
	}
	var m int
	switch s := xs.Shape(); {
	case xs.Dims() == 1 && s[0] >= 1 && km.D == 1:
		m = s[0]
	case xs.Dims() == 2 && s[0] >= 1 && s[1] == km.D:
		m = s[0]
	default:
		return nil, bad("the points %v must be an m×%d matrix (or a length-m vector for points of dimension 1), not empty, got shape %v", nodeName(xs), km.D, xs.Shape())
	}
	ins := []*gorgonia.Node{sharding.InGraph(g, xs)}               // a constant joins K's graph
	for in := k.Graph().From(k.ID()); in.Next() && len(ins) < 4; { // x, ℓ, σ²; not σₙ²
		ins = append(ins, in.Node().(*gorgonia.Node))
	}
	ins = append(ins, k) // read by no run: so that K is no root of a graph whose cost reads only C
	o := &crossKernelOp{
		base: base{name: "Cross" + kernelMatrixNames[family]}, family: family, dt: km.Dtype,
		m: m, n: km.N, d: km.D, xsShape: xs.Shape().Clone(), xShape: km.XShape.Clone(), ellShape: km.EllShape, graph: g,
	}
	return gorgonia.ApplyOp(o, ins...)
}

// KernelSource is the op of a kernel matrix node that CrossKernel takes:
// its inputs are the points x, ℓ, σ² and, when given, σₙ², in that order
// (KernelOperands'). KernelMatrixOf reports the family and the operands'
// shape, and whether the op is a kernel matrix at all.
type KernelSource interface {
	KernelMatrixOf() (f sharding.KernelFamily, s KernelShape, ok bool)
}

// KernelMatrixOf makes KernelMatrix's op a KernelSource.
func (o *kernelMatrixOp) KernelMatrixOf() (sharding.KernelFamily, KernelShape, bool) {
	return o.family, KernelShape{N: o.n, D: o.d, Dtype: o.dt, XShape: o.xShape, EllShape: o.ellShape}, true
}

// crossKernelOp is CrossKernel's op: inputs xs, x, ℓ, σ² and K; ℓ a
// length-d vector when ellShape is set (ARD). C is computed from the first
// four; K is an input only so that it has a consumer: the LispMachine
// refuses a graph with a second non-scalar root, which K would be when the
// cost reads C alone.
type crossKernelOp struct {
	base
	family   sharding.KernelFamily
	dt       tensor.Dtype
	m, n, d  int
	xsShape  tensor.Shape
	xShape   tensor.Shape
	ellShape tensor.Shape
	graph    *gorgonia.ExprGraph // whose failed runs count (failedruns)
}

func (o *crossKernelOp) Arity() int { return 5 }

func (o *crossKernelOp) Type() hm.Type {
	return hm.NewFnType(typeOf(o.xsShape, o.dt), typeOf(o.xShape, o.dt), typeOf(o.ellShape, o.dt), o.dt, matType(o.dt), matType(o.dt))
}

func (o *crossKernelOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{o.m, o.n}, nil
}

func (o *crossKernelOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|%v|%v|%v|%v", o.name, o.dt, o.xsShape, o.xShape, o.ellShape)
}
func (o *crossKernelOp) Hashcode() uint32 { return hashOf(o) }

// Do computes C on the host. Inputs are never modified.
func (o *crossKernelOp) Do(vals ...gorgonia.Value) (v gorgonia.Value, err error) {
	defer func() {
		if err != nil {
			failedruns.Failed(o.graph)
		}
	}()
	xs, x, p, err := o.inputs(vals)
	if err != nil {
		return nil, err
	}
	c, err := sharding.CrossKernel(xs, o.m, x, o.n, o.d, p)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	t, err := hostVector(o.String(), c, o.dt)
	if err != nil {
		return nil, err
	}
	if err := t.Reshape(o.m, o.n); err != nil {
		return nil, fmt.Errorf("ops: %v: %w", o, err)
	}
	return t, nil
}

// inputs reads the points of a run (row-major, in float64) and the
// parameters.
func (o *crossKernelOp) inputs(vals []gorgonia.Value) (xs, x []float64, p sharding.KernelParams, err error) {
	if len(vals) < 4 {
		return nil, nil, p, fmt.Errorf("ops: %v: %d inputs, want 4", o, len(vals))
	}
	if xs, err = readPoints(o, vals[0], o.m*o.d, o.xsShape); err != nil {
		return nil, nil, p, err
	}
	if x, err = readPoints(o, vals[1], o.n*o.d, o.xShape); err != nil {
		return nil, nil, p, err
	}
	p, err = readKernelParams(o, o.family, vals[2:4], o.ellShape)
	return xs, x, p, err
}

// DiffWRT: both sets of points and both parameters, not K.
func (o *crossKernelOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range min(n, 4) {
		d[i] = true
	}
	return d
}

// SymDiff: one backward op computes every input's gradient into a host
// vector (x̄s and x̄ row-major, then ℓ̄ and σ̄²), which pick ops cut up.
func (o *crossKernelOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	return kernelSymDiff(o, in, grad)
}

// DoDiff adds the gradients to the inputs' (LispMachine).
func (o *crossKernelOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	return kernelDoDiff(o, in, out)
}

func (o *crossKernelOp) gradPieces() []gradPiece {
	md, nd, nell := o.m*o.d, o.n*o.d, max(1, o.ellShape.TotalSize())
	return []gradPiece{{"xs", 0, o.xsShape}, {"x", md, o.xShape}, {"ℓ", md + nd, o.ellShape}, {"σ²", md + nd + nell, nil}}
}

func (o *crossKernelOp) dtype() tensor.Dtype { return o.dt }

// gradients computes the backward vector of kernelGradOp from the forward's
// inputs and C̄ (the last value, a host matrix).
func (o *crossKernelOp) gradients(vals []gorgonia.Value) (*tensor.Dense, error) {
	xs, x, p, err := o.inputs(vals)
	if err != nil {
		return nil, err
	}
	cbar, err := readPoints(o, vals[len(vals)-1], o.m*o.n, tensor.Shape{o.m, o.n})
	if err != nil {
		return nil, err
	}
	xsbar, xbar, pbar, err := sharding.CrossKernelGrad(cbar, xs, o.m, x, o.n, o.d, p)
	if err != nil {
		return nil, err
	}
	all := sharding.KernelGradVector(append(xsbar, xbar...), pbar) // pbar.NoiseVar is 0: C has no noise
	return hostVector("the gradient of "+o.String(), all[:len(all)-1], o.dt)
}
