package ops

import (
	"fmt"
	"hash"
	"math"
	"strings"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KernelMatrix is the n×n stationary kernel matrix of family f (the
// squared exponential or a Matérn kernel: sharding.KernelFamily) of the n
// points x (a host node: n×d rows, or a length-n vector of points of
// dimension 1), made on the mesh in layout (whole columns):
//
//	K_ij = σ²·v(‖xᵢ − xⱼ‖²/ℓ²) + σₙ²·[i = j],   v(s) = exp(−s/2) for the squared exponential,
//
// for the scalar nodes lengthScale (ℓ), signalVar (σ²) and noiseVar (σₙ²;
// nil for none) of x's dtype, float32 or float64; lengthScale may be a
// length-d vector, a length scale per dimension (ARD:
// sharding.KernelParams' LengthScales). Each device computes its
// own columns (sharding.SetKernelMatrix), so only x, the columns'
// indices and the parameters reach the mesh. K is a sharded node: an operand of the dense kernels that
// never visits the host. A length scale that is not positive, a negative
// variance, NaN or Inf are run-time errors (ErrBadInput, ErrNonFinite). Two
// parameters that are the same node are ErrBadInput: Gorgonia merges
// unnamed input nodes of one type and shape into one, so name them.
//
// Gradients flow to x and to the three parameters: the backward op reads
// K's gradient on the mesh, sums each device's columns there
// (sharding.KernelMatrixGrad) and brings back O(n·d) numbers per
// device, which the host adds into x̄ (n×d) and the parameters' gradients.
func KernelMatrix(f sharding.KernelFamily, x, lengthScale, signalVar, noiseVar *gorgonia.Node, mesh *sharding.Mesh, layout sharding.Layout) (*gorgonia.Node, error) {
	name, ok := kernelMatrixNames[f]
	if !ok {
		return nil, fmt.Errorf("%w: ops: KernelMatrix: unknown family %v", sharding.ErrBadInput, f)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: ops: %s: "+format, append([]any{sharding.ErrBadInput, name}, args...)...)
	}
	if err := mesh.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	if k := layout.Kind; k != cyclic.ColCyclic && k != cyclic.ColBlocks {
		return nil, bad("want a layout of whole columns (block-cyclic or column blocks), got %v", layout)
	} else if err := layout.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	ks, ins, err := KernelOperands(name, x, lengthScale, signalVar, noiseVar)
	if err != nil {
		return nil, err
	}
	o := &kernelMatrixOp{
		base: base{name: name}, family: f, pl: Placement{mesh, layout}, dt: ks.Dtype,
		n: ks.N, d: ks.D, xShape: ks.XShape, ellShape: ks.EllShape, arity: len(ins), graph: ins[0].Graph(),
	}
	return applyOp(o, ins...)
}

// KernelShape is what the operands of a kernel matrix builder make of it:
// N points of dimension D of dtype Dtype in a node of shape XShape, and
// ARD's length-D EllShape (nil for one length scale).
type KernelShape struct {
	N, D     int
	Dtype    tensor.Dtype
	XShape   tensor.Shape
	EllShape tensor.Shape
}

// KernelOperands checks the operands of the kernel matrix builder name
// (KernelMatrix's, which package dist/distops shares): host points x of
// float32 or float64, n×d or a length-n vector, not empty; scalar nodes of
// x's dtype but for a length scale that may be a length-d vector; no
// parameter the same node as another. It returns their shape and the
// inputs (x, ℓ, σ² and σₙ² unless nil) in one graph (constants join it),
// or an ErrBadInput naming the operand; nothing joins a graph then.
func KernelOperands(name string, x, lengthScale, signalVar, noiseVar *gorgonia.Node) (KernelShape, []*gorgonia.Node, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: ops: %s: "+format, append([]any{sharding.ErrBadInput, name}, args...)...)
	}
	if x == nil || lengthScale == nil || signalVar == nil {
		return KernelShape{}, nil, bad("nil node (only noiseVar may be nil)")
	}
	ins := []*gorgonia.Node{x, lengthScale, signalVar}
	if noiseVar != nil {
		ins = append(ins, noiseVar)
	}
	g, err := sharding.GraphOf(ins...)
	if err != nil {
		return KernelShape{}, nil, bad("%v", err)
	}
	dt := x.Dtype()
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return KernelShape{}, nil, bad("the points %v are %v: want float32 or float64", nodeName(x), dt)
	}
	if IsSharded(x) || OnGrid(x) {
		return KernelShape{}, nil, bad("the points %v must be a host node", nodeName(x))
	}
	var n, d int
	switch s := x.Shape(); {
	case x.Dims() == 1 && s[0] >= 1:
		n, d = s[0], 1
	case x.Dims() == 2 && s[0] >= 1 && s[1] >= 1:
		n, d = s[0], s[1]
	default:
		return KernelShape{}, nil, bad("the points %v must be an n×d matrix or a length-n vector, not empty, got shape %v", nodeName(x), x.Shape())
	}
	var ellShape tensor.Shape // ARD's length-d vector, nil for one length scale
	for i, p := range ins[1:] {
		switch {
		case i == 0 && p.Dims() == 1 && p.Shape()[0] == d:
			ellShape = p.Shape().Clone()
		case i == 0 && !p.IsScalar():
			return KernelShape{}, nil, bad("the length scale %v must be a scalar or a vector of the points' %d dimensions, got shape %v", nodeName(p), d, p.Shape())
		case !p.IsScalar():
			return KernelShape{}, nil, bad("%s %v must be a scalar, got shape %v", kernelParamNames[i], nodeName(p), p.Shape())
		}
		if p.Dtype() != dt {
			return KernelShape{}, nil, bad("%s %v is %v, the points %v", kernelParamNames[i], nodeName(p), p.Dtype(), dt)
		}
		for j, q := range ins[1 : i+1] {
			switch {
			case q != p:
			case unnamedInput(p):
				return KernelShape{}, nil, bad("%s and %s are one unnamed node: Gorgonia merges input nodes of one type and shape that have no names, whatever their values; name them (gorgonia.WithName)", kernelParamNames[j], kernelParamNames[i])
			default:
				return KernelShape{}, nil, bad("%s and %s are the same node %v: to tie two parameters on purpose, pass one of them through an op of its own", kernelParamNames[j], kernelParamNames[i], nodeName(p))
			}
		}
	}
	for i, in := range ins {
		ins[i] = sharding.InGraph(g, in)
	}
	return KernelShape{N: n, D: d, Dtype: dt, XShape: x.Shape().Clone(), EllShape: ellShape}, ins, nil
}

// unnamedInput reports whether n is an input node made without
// gorgonia.WithName (Gorgonia names it after its nil op).
func unnamedInput(n *gorgonia.Node) bool {
	return n.Op() == nil && strings.HasPrefix(n.Name(), "%!")
}

// nodeName is n's name for an error message: "(unnamed)" for an unnamed
// input, whose Gorgonia name is a formatting error.
func nodeName(n *gorgonia.Node) string {
	if unnamedInput(n) {
		return "(unnamed)"
	}
	return n.Name()
}

var kernelParamNames = [...]string{"the length scale", "the signal variance", "the noise variance"}

// kernelMatrixNames are the ops' names of the kernel families.
var kernelMatrixNames = map[sharding.KernelFamily]string{
	sharding.SquaredExp: "SquaredExponential", sharding.Matern32: "Matern32", sharding.Matern52: "Matern52",
}

// kernelMatrixOp is KernelMatrix's op: inputs x, ℓ, σ² and, when arity is 4,
// σₙ²; ℓ a length-d vector when ellShape is set (ARD).
type kernelMatrixOp struct {
	base
	family   sharding.KernelFamily
	pl       Placement
	dt       tensor.Dtype
	n, d     int
	xShape   tensor.Shape
	ellShape tensor.Shape
	arity    int
	graph    *gorgonia.ExprGraph // whose failed runs count (failedruns)
	out      *sharding.Tensor
}

func (o *kernelMatrixOp) Placement() (Placement, bool) { return o.pl, true }
func (o *kernelMatrixOp) Arity() int                   { return o.arity }

func (o *kernelMatrixOp) Type() hm.Type {
	ts := []hm.Type{typeOf(o.xShape, o.dt), typeOf(o.ellShape, o.dt)}
	for range o.arity - 2 {
		ts = append(ts, o.dt)
	}
	return hm.NewFnType(append(ts, matType(o.dt))...)
}

func (o *kernelMatrixOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{o.n, o.n}, nil
}

func (o *kernelMatrixOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|%v|%v|%v|%d", o.name, o.dt, o.xShape, o.ellShape, o.arity)
	writePlacement(h, o.pl)
}
func (o *kernelMatrixOp) Hashcode() uint32 { return hashOf(o) }

// Do makes K on the mesh, in the output of the op's last run when it has
// one. Inputs are never modified; bad values change nothing.
func (o *kernelMatrixOp) Do(vals ...gorgonia.Value) (v gorgonia.Value, err error) {
	defer func() {
		if err != nil {
			failedruns.Failed(o.graph)
		}
	}()
	if err := CheckReaders(o.node); err != nil {
		return nil, err
	}
	x, p, err := o.inputs(vals)
	if err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	out, err := sharding.Reuse(o.out, o.pl.Mesh, tensor.Shape{o.n, o.n}, o.dt, o.pl.Layout)
	if err != nil {
		return nil, err
	}
	o.out = out
	if err := out.SetKernelMatrix(x, o.d, p); err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	return out, nil
}

// inputs reads the points (row-major, in float64) and the parameters of a
// run of an op with the inputs of kernelMatrixOp.
func (o *kernelMatrixOp) inputs(vals []gorgonia.Value) (x []float64, p sharding.KernelParams, err error) {
	if len(vals) < o.arity {
		return nil, p, fmt.Errorf("ops: %v: %d inputs, want %d", o, len(vals), o.arity)
	}
	if x, err = readPoints(o, vals[0], o.n*o.d, o.xShape); err != nil {
		return nil, p, err
	}
	p, err = readKernelParams(o, o.family, vals[1:o.arity], o.ellShape)
	return x, p, err
}

// readPoints reads the host value v of op o, size points' coordinates of
// a node of shape, as float64 (row-major).
func readPoints(o fmt.Stringer, v gorgonia.Value, size int, shape tensor.Shape) ([]float64, error) {
	return readHost(o, "the points", v, size, shape)
}

// readHost reads the host value v of op o, what of size real numbers of a
// node of shape, as float64 (row-major).
func readHost(o fmt.Stringer, what string, v gorgonia.Value, size int, shape tensor.Shape) ([]float64, error) {
	if _, sharded := v.(*sharding.Tensor); sharded {
		return nil, fmt.Errorf("%w: ops: %v: %s are a %T, want a host tensor", sharding.ErrBadInput, o, what, v)
	}
	h, err := toHost(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %s: %w", sharding.ErrBadInput, o, what, err)
	}
	if h.Shape().TotalSize() != size {
		return nil, fmt.Errorf("%w: ops: %v: %s of shape %v for a node of shape %v", sharding.ErrBadInput, o, what, h.Shape(), shape)
	}
	switch data := h.Data().(type) {
	case []float64:
		return gConvertSlice[float64](data, len(data))
	case []float32:
		return gConvertSlice[float64](data, len(data))
	}
	return nil, fmt.Errorf("%w: ops: %v: %s of dtype %v", sharding.ErrBadInput, o, what, h.Dtype())
}

// readKernelParams reads the values of ℓ, σ² and, when given, σₙ² of op o
// into the parameters of family f: scalars, but for ℓ a vector of shape
// ellShape when that is set (p.LengthScales: ARD).
func readKernelParams(o fmt.Stringer, f sharding.KernelFamily, vals []gorgonia.Value, ellShape tensor.Shape) (p sharding.KernelParams, err error) {
	p.Family = f
	params := []*float64{&p.LengthScale, &p.SignalVar, &p.NoiseVar}
	for i, v := range vals {
		if i == 0 && len(ellShape) > 0 {
			if p.LengthScales, err = readHost(o, "the length scales", v, ellShape.TotalSize(), ellShape); err != nil {
				return p, err
			}
			continue
		}
		if *params[i], err = gScalarOf(v); err != nil {
			return p, fmt.Errorf("%w: ops: %v: %s: %w", sharding.ErrBadInput, o, kernelParamNames[i], err)
		}
	}
	return p, nil
}

// DiffWRT: the points and every parameter.
func (o *kernelMatrixOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff: one backward op computes every input's gradient into a host
// vector (x̄ row-major, then ℓ̄, σ̄², σ̄ₙ²), which pick ops cut up.
func (o *kernelMatrixOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	return kernelSymDiff(o, in, grad)
}

// DoDiff adds the gradients to the inputs' (LispMachine).
func (o *kernelMatrixOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	return kernelDoDiff(o, in, out)
}

func (o *kernelMatrixOp) gradPieces() []gradPiece {
	nd, nell := o.n*o.d, max(1, o.ellShape.TotalSize())
	pieces := []gradPiece{{"x", 0, o.xShape}, {"ℓ", nd, o.ellShape}, {"σ²", nd + nell, nil}}
	if o.arity == 4 {
		pieces = append(pieces, gradPiece{"σₙ²", nd + nell + 1, nil})
	}
	return pieces
}

func (o *kernelMatrixOp) dtype() tensor.Dtype { return o.dt }

// kernelForward is a kernel op whose inputs' gradients one backward op
// (kernelGradOp) computes into a host vector.
type kernelForward interface {
	gorgonia.Op
	// gradients computes that vector from the forward's inputs and its
	// output's gradient (the last value).
	gradients(vals []gorgonia.Value) (*tensor.Dense, error)
	// gradPieces are the inputs' gradients in the vector, in input order.
	gradPieces() []gradPiece
	dtype() tensor.Dtype
}

// gradPiece is one input's gradient in a kernelForward's gradient vector:
// from its element from, of shape (nil: a scalar).
type gradPiece struct {
	name  string
	from  int
	shape tensor.Shape
}

// kernelSymDiff is a kernelForward's SymDiff: its backward op, and a pick op
// per input that has a gradient piece (the first ones; no gradient for the
// others).
func kernelSymDiff(fwd kernelForward, in gorgonia.Nodes, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	pieces := fwd.gradPieces()
	if len(in) != fwd.Arity() || len(in) < len(pieces) {
		return nil, fmt.Errorf("ops: %v: %d inputs, want %d", fwd, len(in), fwd.Arity())
	}
	all, err := gorgonia.ApplyOp(&kernelGradOp{base: base{name: fwd.String() + "Grad"}, fwd: fwd}, append(append(gorgonia.Nodes{}, in...), grad)...)
	if err != nil {
		return nil, err
	}
	res := make(gorgonia.Nodes, len(in))
	for i, pc := range pieces {
		op := &pickOp{base: base{name: fwd.String() + "Grad." + pc.name}, dt: fwd.dtype(), from: pc.from, shape: pc.shape}
		if res[i], err = gorgonia.ApplyOp(op, all); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// kernelDoDiff is a kernelForward's DoDiff: it adds the gradients to the
// inputs' (LispMachine).
func kernelDoDiff(fwd kernelForward, in gorgonia.Nodes, out *gorgonia.Node) error {
	og, err := gradOf(out)
	if err != nil {
		return err
	}
	if isZeroGrad(og) {
		return nil
	}
	vals := make([]gorgonia.Value, len(in)+1)
	for i, n := range in {
		vals[i] = n.Value()
	}
	vals[len(in)] = og
	all, err := fwd.gradients(vals)
	if err != nil {
		return fmt.Errorf("ops: gradient of %v: %w", fwd, err)
	}
	for i, pc := range fwd.gradPieces() {
		v := pickScalar(all, pc.from)
		if pc.shape != nil {
			v = pickHost(all, pc.from, pc.shape)
		}
		if err := accumulateInto(in[i], v); err != nil {
			return err
		}
	}
	return nil
}

// gradients computes the backward vector of kernelGradOp from the forward's
// inputs and K̄ (the last value, sharded or on the host).
func (o *kernelMatrixOp) gradients(vals []gorgonia.Value) (*tensor.Dense, error) {
	x, p, err := o.inputs(vals)
	if err != nil {
		return nil, err
	}
	kbar, err := asSharded(vals[len(vals)-1], o.pl)
	if err != nil {
		return nil, err
	}
	if kbar != vals[len(vals)-1] {
		defer kbar.Free()
	}
	xbar, pbar, err := sharding.KernelMatrixGrad(kbar, x, o.d, p)
	if err != nil {
		return nil, err
	}
	all := sharding.KernelGradVector(xbar, pbar)
	return hostVector("the gradient of "+o.String(), all[:len(all)+o.arity-4], o.dt)
}

// hostVector is all, what computed in float64, as a host vector of dtype
// dt; a value beyond float32 is ErrNonFinite.
func hostVector(what string, all []float64, dt tensor.Dtype) (*tensor.Dense, error) {
	if dt == tensor.Float64 {
		return tensor.New(tensor.WithShape(len(all)), tensor.WithBacking(all)), nil
	}
	for _, v := range all {
		if math.Abs(v) > math.MaxFloat32 {
			return nil, fmt.Errorf("%w: %s: %v is beyond float32", sharding.ErrNonFinite, what, v)
		}
	}
	f, err := gConvertSlice[float32](all, len(all))
	if err != nil {
		return nil, err
	}
	return tensor.New(tensor.WithShape(len(f)), tensor.WithBacking(f)), nil
}

// kernelGradOp is a kernel op's backward op: from the forward's inputs and
// its output's gradient, the host vector of every input's gradient.
type kernelGradOp struct {
	base
	fwd kernelForward
}

func (o *kernelGradOp) Arity() int { return o.fwd.Arity() + 1 }

func (o *kernelGradOp) Type() hm.Type {
	ts := make([]hm.Type, 0, o.Arity()+1)
	for i := range o.Arity() {
		ts = append(ts, hm.TypeVariable(rune('x'+i)))
	}
	return hm.NewFnType(append(ts, gorgonia.TensorType{Dims: 1, Of: o.fwd.dtype()})...)
}

func (o *kernelGradOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	pieces := o.fwd.gradPieces()
	last := pieces[len(pieces)-1]
	return tensor.Shape{last.from + max(1, last.shape.TotalSize())}, nil
}

func (o *kernelGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|", o.name)
	o.fwd.WriteHash(h)
}
func (o *kernelGradOp) Hashcode() uint32 { return hashOf(o) }

func (o *kernelGradOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	all, err := o.fwd.gradients(vals)
	if err != nil {
		return nil, fmt.Errorf("ops: %v: %w", o, err)
	}
	return all, nil
}

// DiffWRT: second-order gradients are not supported (see gradOp).
func (o *kernelGradOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (o *kernelGradOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("ops: %v: second-order gradients are not supported", o)
}

// pickOp takes the elements from on of a host vector: as a host tensor of
// shape when shape is set, else the one element as a scalar.
type pickOp struct {
	base
	dt    tensor.Dtype
	from  int
	shape tensor.Shape
}

func (o *pickOp) Arity() int { return 1 }
func (o *pickOp) Type() hm.Type {
	if o.shape == nil {
		return hm.NewFnType(hm.TypeVariable('x'), o.dt)
	}
	return hm.NewFnType(hm.TypeVariable('x'), typeOf(o.shape, o.dt))
}
func (o *pickOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	if o.shape == nil {
		return tensor.ScalarShape(), nil
	}
	return o.shape.Clone(), nil
}
func (o *pickOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s|%v|%d|%v", o.name, o.dt, o.from, o.shape) }
func (o *pickOp) Hashcode() uint32      { return hashOf(o) }

func (o *pickOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	all, ok := vals[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("ops: %v: input %T", o, vals[0])
	}
	if o.shape == nil {
		return pickScalar(all, o.from), nil
	}
	return pickHost(all, o.from, o.shape), nil
}

func (o *pickOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (o *pickOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("ops: %v: second-order gradients are not supported", o)
}

// pickHost copies the elements of all from on into a new host tensor of
// shape.
func pickHost(all *tensor.Dense, from int, shape tensor.Shape) *tensor.Dense {
	size := shape.TotalSize()
	switch data := all.Data().(type) {
	case []float32:
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]float32(nil), data[from:from+size]...)))
	default:
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]float64(nil), data.([]float64)[from:from+size]...)))
	}
}

// pickScalar is element i of all as a Gorgonia scalar.
func pickScalar(all *tensor.Dense, i int) gorgonia.Value {
	switch data := all.Data().(type) {
	case []float32:
		return gorgonia.NewF32(data[i])
	default:
		return gorgonia.NewF64(data.([]float64)[i])
	}
}
