package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// moveOp puts its input (host or sharded) on a placement: Shard when the input
// is a host node, Relayout when it is a sharded node.
type moveOp struct {
	base
	to  Placement
	out *sharding.Tensor
	// The input node's shape, in which a host value is placed
	// (sharding.InNodeShape: Gorgonia's Let takes a (1, n) value for an
	// (n) node and an (n) value for a (1, n) or (n, 1) node).
	inShape tensor.Shape
}

// Shard places a host (or sharded) matrix or vector node on mesh in layout.
func Shard(x *gorgonia.Node, mesh *sharding.Mesh, layout sharding.Layout) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("%w: ops: Shard of a nil node", sharding.ErrBadInput)
	}
	if err := mesh.Validate(); err != nil {
		return nil, fmt.Errorf("%w: ops: Shard: %w", sharding.ErrBadInput, err)
	}
	if err := layout.Validate(); err != nil {
		return nil, fmt.Errorf("%w: ops: Shard: %w", sharding.ErrBadInput, err)
	}
	if x.Dims() < 1 || x.Dims() > 2 {
		return nil, fmt.Errorf("%w: ops: Shard needs a matrix or a vector, %v has %d dimensions", sharding.ErrBadInput, x.Name(), x.Dims())
	}
	if err := sharding.CheckShape(x.Shape()); err != nil {
		return nil, fmt.Errorf("%w: ops: Shard of %v: %w", sharding.ErrBadInput, x.Name(), err)
	}
	// Integer dtypes move too (for the collectives); kernels reject them.
	if err := sharding.CheckStorageDtype(x.Dtype()); err != nil {
		return nil, fmt.Errorf("%w: ops: Shard: %w", sharding.ErrBadInput, err)
	}
	p, sharded := PlacementOf(x)
	if sharded && p.Mesh.Same(mesh) && p.Layout == layout {
		return x, nil
	}
	if sharded && !p.Mesh.Same(mesh) {
		return nil, fmt.Errorf("%w: %w: Shard moves %v within its mesh %v, not to %v (Gather it first)", sharding.ErrBadInput, sharding.ErrMeshMismatch, x.Name(), p.Mesh, mesh)
	}
	name := "Shard"
	if IsSharded(x) {
		name = "Relayout"
	}
	op := &moveOp{base: base{name: fmt.Sprintf("%s(%v)", name, layout)}, to: Placement{mesh, layout}, inShape: x.Shape().Clone()}
	return applyOp(op, x)
}

// Relayout moves a sharded node to another layout on its mesh.
func Relayout(x *gorgonia.Node, layout sharding.Layout) (*gorgonia.Node, error) {
	p, ok := PlacementOf(x)
	if !ok {
		return nil, fmt.Errorf("%w: ops: Relayout needs a sharded node; %v is a host node (use Shard)", sharding.ErrBadInput, x)
	}
	return Shard(x, p.Mesh, layout)
}

func (o *moveOp) Placement() (Placement, bool) { return o.to, true }
func (o *moveOp) Arity() int                   { return 1 }
func (o *moveOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (o *moveOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (o *moveOp) WriteHash(h hash.Hash) {
	fmt.Fprint(h, "move")
	writePlacement(h, o.to)
}
func (o *moveOp) Hashcode() uint32 { return hashOf(o) }

func (o *moveOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	if err := CheckReaders(o.node); err != nil {
		return nil, err
	}
	v := unwrapEigen(vals[0]) // an Eigen node's value moves as its vectors
	if x, ok := v.(tensor.Tensor); ok {
		if _, sharded := v.(*sharding.Tensor); !sharded {
			d, ok := tensor.Materialize(x).(*tensor.Dense)
			if !ok {
				return nil, fmt.Errorf("%w: ops: %v: unsupported host tensor %T", sharding.ErrBadInput, o, x)
			}
			d, err := sharding.InNodeShape(d, o.inShape)
			if err != nil {
				return nil, fmt.Errorf("ops: %v: %w", o, err)
			}
			v = d
		}
	}
	switch x := v.(type) {
	case *sharding.Tensor:
		if !x.Mesh().Same(o.to.Mesh) { // bound with Let: the builder checked the node's mesh
			return nil, fmt.Errorf("%w: %w: ops: %v: value on %v", sharding.ErrBadInput, sharding.ErrMeshMismatch, o, x.Mesh())
		}
	case *tensor.Dense:
	case GridResident: // distops' grid value, bound with Let
		return nil, fmt.Errorf("%w: ops: %v: a grid value (%T) reaches an op built without WithGrid: build the op with the grid's WithGrid", sharding.ErrBadInput, o, v)
	case gorgonia.Scalar: // gorgonia.Let binds a Go number to any node, unchecked
		return nil, fmt.Errorf("%w: ops: %v: a %v number (%v) for a node of shape %v: bind a tensor of the node's shape", sharding.ErrBadInput, o, v.Dtype(), v, o.inShape)
	default:
		return nil, fmt.Errorf("%w: ops: %v: unsupported value %T", sharding.ErrBadInput, o, v)
	}
	out, err := sharding.Reuse(o.out, o.to.Mesh, v.Shape(), v.Dtype(), o.to.Layout)
	if err != nil {
		return nil, err
	}
	if x, ok := v.(*sharding.Tensor); ok {
		err = x.RelayoutInto(out)
	} else {
		err = out.Load(v.(*tensor.Dense))
	}
	if err != nil {
		return nil, err
	}
	o.out = out
	return out, nil
}

func (o *moveOp) DiffWRT(int) []bool { return []bool{true} }

// SymDiff: the gradient of Shard is Gather; of Relayout, the inverse Relayout.
func (o *moveOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	var g *gorgonia.Node
	var err error
	if p, ok := PlacementOf(in[0]); ok {
		g, err = Shard(grad, p.Mesh, p.Layout)
		if err == nil {
			g, err = gradFor(in[0], g)
		}
	} else {
		g, err = Gather(grad)
	}
	return gorgonia.Nodes{g}, err
}

func (o *moveOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	return passGradient(in[0], out)
}

// passGradient adds out's gradient to in's: the DoDiff of the ops that move
// a value without changing it (Shard, Relayout, Gather).
func passGradient(in, out *gorgonia.Node) error {
	og, err := gradOf(out)
	if err != nil {
		return err
	}
	ig, err := gradOf(in)
	if err != nil {
		return err
	}
	return accumulate(ig, og)
}

// gatherOp brings a sharded value back to the host.
type gatherOp struct {
	base
	out *tensor.Dense // reused across runs, like Gorgonia's preallocated values
}

// Gather brings a sharded node back to the host as a row-major *tensor.Dense.
// A host node is returned unchanged.
func Gather(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("%w: ops: Gather of a nil node", sharding.ErrBadInput)
	}
	if !IsSharded(x) {
		return x, nil
	}
	return gorgonia.ApplyOp(&gatherOp{base: base{name: "Gather"}}, x)
}

func (o *gatherOp) Arity() int { return 1 }
func (o *gatherOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (o *gatherOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (o *gatherOp) WriteHash(h hash.Hash)                                    { fmt.Fprint(h, "gather") }
func (o *gatherOp) Hashcode() uint32                                         { return hashOf(o) }

func (o *gatherOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	switch x := unwrapEigen(vals[0]).(type) {
	case *sharding.Tensor:
		if o.out == nil || !o.out.Shape().Eq(x.Shape()) || o.out.Dtype() != x.Dtype() {
			d, err := x.Gather()
			o.out = d
			return d, err
		}
		return o.out, x.GatherInto(o.out)
	case tensor.Tensor:
		return x.Clone().(*tensor.Dense), nil // a host gradient reaching Gather
	}
	return nil, fmt.Errorf("ops: Gather: unsupported value %T", vals[0])
}

func (o *gatherOp) DiffWRT(int) []bool { return []bool{true} }

// SymDiff: the gradient of Gather is Shard back onto the input's placement.
func (o *gatherOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	p, _ := PlacementOf(in[0])
	g, err := Shard(grad, p.Mesh, p.Layout)
	if err != nil {
		return nil, err
	}
	g, err = gradFor(in[0], g)
	return gorgonia.Nodes{g}, err
}

func (o *gatherOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	return passGradient(in[0], out)
}

// accumulate adds src into the gradient accumulator dst in place; either may
// be a sharded tensor or a host tensor.
func accumulate(dst, src gorgonia.Value) error {
	switch d := dst.(type) {
	case *sharding.Tensor:
		s, err := asSharded(src, Placement{d.Mesh(), d.Layout()})
		if err != nil {
			return err
		}
		return d.AddScaled(1, s)
	case tensor.Tensor:
		s, err := toHost(src)
		if err != nil {
			return err
		}
		_, err = tensor.Add(d, s, tensor.UseUnsafe())
		return err
	case *gorgonia.F64:
		if x, ok := src.Data().(float64); ok {
			*d += gorgonia.F64(x)
			return nil
		}
	case *gorgonia.F32:
		if x, ok := src.Data().(float32); ok {
			*d += gorgonia.F32(x)
			return nil
		}
	}
	return fmt.Errorf("ops: cannot accumulate a gradient of %T into %T", src, dst)
}

// GridResident is implemented by the ops and values of a grid distributor
// (package distops) whose node holds a value on a grid, which only that
// distributor's ops read: the builders refuse one without mgla.WithGrid,
// and Shard a value bound with Let.
type GridResident interface{ GridResident() bool }

// OnGrid reports whether node n holds a grid value (GridResident).
func OnGrid(n *gorgonia.Node) bool {
	if g, ok := n.Op().(GridResident); ok {
		return g.GridResident()
	}
	g, ok := n.Value().(GridResident)
	return n.Op() == nil && ok && g.GridResident()
}
