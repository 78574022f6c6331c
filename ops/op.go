package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"reflect"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Placement is where a sharded node's value lives: its mesh and layout.
type Placement struct {
	Mesh   *sharding.Mesh
	Layout sharding.Layout
}

func (p Placement) String() string { return fmt.Sprintf("%v %v", p.Mesh, p.Layout) }

// placed is implemented by ops whose output may be a sharded tensor.
type placed interface {
	Placement() (Placement, bool)
}

// PlacementOf returns the placement of a node that holds a sharded value, and
// false for host nodes.
func PlacementOf(n *gorgonia.Node) (Placement, bool) {
	if n == nil {
		return Placement{}, false
	}
	if n.Op() == nil {
		if t, ok := n.Value().(*sharding.Tensor); ok {
			return Placement{t.Mesh(), t.Layout()}, true
		}
		return Placement{}, false
	}
	p, ok := n.Op().(placed)
	if !ok {
		return Placement{}, false
	}
	return p.Placement()
}

// Input makes an input node of g that holds the sharded tensor t: a matrix
// placed on a mesh once (sharding.Put) feeds the ops of any number of graphs
// without returning to the host. Rebind it with gorgonia.Let to a tensor of
// the same mesh and layout. Like Gorgonia's own node constructors it
// panics on a nil graph or tensor, a programming error, and on a name that
// an input of g of t's dtype and shape already has (Gorgonia would hand back
// that node and drop t); a freed
// tensor is an error of the ops that read it (sharding.ErrFreed). Give
// the node to Gorgonia's own ops through Gather: given a sharded value
// they panic or return no value and no error (Exp, Neg), and no op of this
// package runs before them to refuse.
func Input(g *gorgonia.ExprGraph, t *sharding.Tensor, name string) *gorgonia.Node {
	if g == nil || t == nil {
		panic(fmt.Sprintf("ops.Input(%q): nil graph or tensor", name))
	}
	for _, n := range g.ByName(name) {
		// Gorgonia merges input nodes of one name, type and shape.
		if n.Op() == nil && n.Dtype() == t.Dtype() && n.Shape().Eq(t.Shape()) {
			panic(fmt.Sprintf("ops.Input(%q): the graph already has an input of that name, dtype and shape", name))
		}
	}
	return gorgonia.NewTensor(g, t.Dtype(), len(t.Shape()), gorgonia.WithShape(t.Shape()...),
		gorgonia.WithName(name), gorgonia.WithValue(t))
}

// IsSharded reports whether n's value is a sharded tensor.
func IsSharded(n *gorgonia.Node) bool { _, ok := PlacementOf(n); return ok }

// base implements the bookkeeping methods every op shares.
type base struct {
	name string
	node *gorgonia.Node // the op's node (applyOp), for CheckReaders
}

func (b *base) bindNode(n *gorgonia.Node) {
	if b.node == nil {
		b.node = n
	}
}

// applyOp is gorgonia.ApplyOp that tells the op its node (the node's own
// op: Gorgonia hands back an existing node for an op of the same hash).
func applyOp(op gorgonia.Op, in ...*gorgonia.Node) (*gorgonia.Node, error) {
	n, err := gorgonia.ApplyOp(op, in...)
	if err == nil {
		if b, ok := n.Op().(interface{ bindNode(*gorgonia.Node) }); ok {
			b.bindNode(n)
		}
	}
	return n, err
}

// CheckReaders is the error of a run of the op of node n, a node that holds a
// sharded value, when n feeds one of Gorgonia's own ops: they read only host
// tensors and, given a *sharding.Tensor, panic on the machine's goroutine
// (Sum, Mean, Mul, Transpose: an unchecked .(tensor.Tensor)) or return no
// value and no error (Exp, Neg, Square: elemUnaryOp.do), which ends the
// program. Failing here, before they run, makes it RunAll's error.
// gorgonia.Read (a statement) only copies the value and is allowed. Every
// op with a sharded output calls it first in Do, with its node (this
// package's and collective's).
//
// It sees the readers in n's graph as built: a machine on a subgraph
// (SubgraphRoots) that leaves a Gorgonia reader out, or one compiled before
// the reader was added, is refused too; and Gorgonia's Clone of a graph
// shares its ops, which keep the node of the graph they were built in.
//
// A node holding a grid value (OnGrid: a grid distributor's, package
// dist/distops) is refused alike, naming the distributor's Gather; its ops
// call it too.
func CheckReaders(n *gorgonia.Node) error {
	if n == nil || n.Graph() == nil {
		return nil
	}
	sharded, grid := IsSharded(n), OnGrid(n)
	if !sharded && !grid {
		return nil
	}
	g := n.Graph()
	for it := g.To(n.ID()); it.Next(); {
		to := it.Node().(*gorgonia.Node)
		if !hostOnly(to.Op()) {
			continue
		}
		if grid {
			return fmt.Errorf("%w: ops: %v holds a grid value and feeds %v, one of Gorgonia's ops, which read host tensors only: give that op the grid's Gather of it (distops.Ops.Gather)", sharding.ErrBadInput, n.Name(), to.Name())
		}
		return fmt.Errorf("%w: ops: %v is a sharded node and feeds %v, one of Gorgonia's ops, which read host tensors only: give that op ops.Gather(%v)", sharding.ErrBadInput, n.Name(), to.Name(), n.Name())
	}
	return nil
}

// hostOnly reports whether op is one of Gorgonia's own ops other than Read.
func hostOnly(op gorgonia.Op) bool {
	if op == nil {
		return false
	}
	t := reflect.TypeOf(op)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "gorgonia.org/gorgonia" && t.Name() != "readOp"
}

func (b base) ReturnsPtr() bool     { return false }
func (b base) CallsExtern() bool    { return false }
func (b base) OverwritesInput() int { return -1 }
func (b base) String() string       { return b.name }

func hashOf(o interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

func writePlacement(h hash.Hash, p Placement) {
	fmt.Fprintf(h, "|mesh%d|%v", p.Mesh.Key(), p.Layout)
}

func matType(dt tensor.Dtype) gorgonia.TensorType { return gorgonia.TensorType{Dims: 2, Of: dt} }

// realOf is the real dtype of the same precision.
func realOf(dt tensor.Dtype) tensor.Dtype {
	switch dt {
	case tensor.Complex64, tensor.Float32:
		return tensor.Float32
	}
	return tensor.Float64
}

func isComplex(dt tensor.Dtype) bool { return dt == tensor.Complex64 || dt == tensor.Complex128 }

func shapeOf(d gorgonia.DimSizer) (tensor.Shape, error) {
	s, ok := d.(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ops: expected a tensor.Shape, got %T", d)
	}
	return s.Clone(), nil
}

// asSharded returns v as a sharded tensor on placement p, moving host values
// and other layouts there. It never modifies v; moved reports whether a new
// tensor was made.
func asSharded(v gorgonia.Value, p Placement) (t *sharding.Tensor, err error) {
	switch x := v.(type) {
	case *sharding.Tensor:
		if !x.Mesh().Same(p.Mesh) {
			// A value bound with gorgonia.Let: the builders checked the meshes.
			return nil, fmt.Errorf("%w: %w: value on %v, op on %v", sharding.ErrBadInput, sharding.ErrMeshMismatch, x.Mesh(), p.Mesh)
		}
		if x.Layout() == p.Layout {
			return x, nil
		}
		return x.Relayout(p.Layout)
	case tensor.Tensor:
		return sharding.Put(x, p.Mesh, p.Layout)
	case gorgonia.Scalar:
		return nil, fmt.Errorf("%w: ops: expected a matrix, got the scalar %v", sharding.ErrBadInput, v)
	}
	return nil, fmt.Errorf("%w: ops: unsupported value %T", sharding.ErrBadInput, v)
}

// toHost returns v as a host tensor (gathering sharded values).
func toHost(v gorgonia.Value) (*tensor.Dense, error) {
	switch x := v.(type) {
	case *sharding.Tensor:
		return x.Gather()
	case *tensor.Dense:
		return sharding.RowMajorDense(x)
	case tensor.Tensor:
		d, ok := tensor.Materialize(x).(*tensor.Dense)
		if ok {
			return d, nil
		}
	}
	return nil, fmt.Errorf("ops: unsupported value %T", v)
}

// consumers is the number of gradients that n can get from the inputs of
// other nodes it feeds: one per edge, so that an op taking n twice counts
// twice (Gorgonia sums one gradient per input), counting only the edges
// that can carry a gradient back (carriesGradient). A factor that Potrs
// reads but does not differentiate, or a backward op's operand, adds none:
// a matrix placed on a mesh once and read by Cholesky, Potrs and their
// backward ops keeps its one gradient on the mesh.
func consumers(n *gorgonia.Node) int {
	memo := map[int64]bool{}
	count := 0
	forEachConsumerEdge(n, func(to *gorgonia.Node, j int) {
		if carriesGradient(to, j, memo) {
			count++
		}
	})
	return count
}

// forEachConsumerEdge calls fn for every input j of every node to that n
// feeds, repeats included.
func forEachConsumerEdge(n *gorgonia.Node, fn func(to *gorgonia.Node, j int)) {
	g := n.Graph()
	for it := g.To(n.ID()); it.Next(); { // distinct consumers
		to := it.Node().(*gorgonia.Node)
		j := 0
		for in := g.From(to.ID()); in.Next(); j++ { // their inputs, in order, repeats included
			if in.Node().ID() == n.ID() {
				fn(to, j)
			}
		}
	}
}

// carriesGradient reports whether input j of node to can pass a gradient
// back: to's op differentiates it (an op that is no SDOp counts, to be
// safe) and to can get a gradient itself (receivesGradient). memo holds the
// answers of receivesGradient so far.
func carriesGradient(to *gorgonia.Node, j int, memo map[int64]bool) bool {
	if sd, ok := to.Op().(gorgonia.SDOp); ok {
		if d := sd.DiffWRT(to.Graph().From(to.ID()).Len()); j >= len(d) || !d[j] {
			return false
		}
	}
	return receivesGradient(to, memo)
}

// receivesGradient reports whether a gradient may reach n: n is a scalar
// (it may be the cost of gorgonia.Grad, which takes only scalars), a root
// (an output that gorgonia.Backpropagate may be given, of any shape; not
// one that a SymDiff made for itself and has not used yet) or feeds an
// edge that carries one. It errs towards true, which only costs a
// Gather (gradFor); a false for a node that gets a gradient would hand
// Gorgonia's Add a sharded value. The one such case left: Backpropagate
// given as an output a matrix that other nodes read without
// differentiating it (a factor that only Potrs reads).
func receivesGradient(n *gorgonia.Node, memo map[int64]bool) bool {
	if n.IsScalar() {
		return true
	}
	if n.Graph().To(n.ID()).Len() == 0 {
		k, made := n.Op().(*kernelOp)
		return !made || !k.backward
	}
	if r, seen := memo[n.ID()]; seen {
		return r
	}
	memo[n.ID()] = false // the graph is acyclic: no edge leads back to n
	r := false
	forEachConsumerEdge(n, func(to *gorgonia.Node, j int) {
		r = r || carriesGradient(to, j, memo)
	})
	memo[n.ID()] = r
	return r
}

// gradFor adapts a gradient node computed for input in: a sharded gradient
// is gathered when in is a host node (its gradient is a host value, as
// Gorgonia's other ops and its Add expect) and when in is a sharded node with
// several consumers (so that Gorgonia's Add can sum it; see the package doc).
func gradFor(in, grad *gorgonia.Node) (*gorgonia.Node, error) {
	if grad == nil || !IsSharded(grad) || IsSharded(in) && consumers(in) < 2 {
		return grad, nil
	}
	return Gather(grad)
}

// typeOf is the Gorgonia type of a node with the given shape and dtype.
func typeOf(shape tensor.Shape, dt tensor.Dtype) hm.Type {
	if len(shape) == 0 || shape.IsScalar() {
		return dt
	}
	return gorgonia.TensorType{Dims: len(shape), Of: dt}
}

// gradOf returns the gradient accumulator value of a node during
// LispMachine's backward pass.
func gradOf(n *gorgonia.Node) (gorgonia.Value, error) {
	g, err := n.Grad()
	if err != nil {
		return nil, fmt.Errorf("ops: no gradient for %v: %w", n, err)
	}
	return g, nil
}

// GradFor is gradFor for ops of other packages (package collective): the
// gradient node an op's SymDiff returns for input in, gathered to the host
// when in is a host node or a sharded node with several consumers (see the
// package doc).
func GradFor(in, grad *gorgonia.Node) (*gorgonia.Node, error) { return gradFor(in, grad) }

// Accumulate adds src into the gradient accumulator dst in place (an op's
// DoDiff for LispMachine); either may be sharded or a host tensor.
func Accumulate(dst, src gorgonia.Value) error { return accumulate(dst, src) }

// GradValue is the gradient accumulator of n during LispMachine's backward
// pass.
func GradValue(n *gorgonia.Node) (gorgonia.Value, error) { return gradOf(n) }
