package sharding

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/cyclic"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Layout is how a matrix is spread over a mesh (see package cyclic).
type Layout = cyclic.Layout

// Replicated is the layout in which every device holds the whole matrix
// (cyclic.Replicated).
func Replicated() Layout { return Layout{Kind: cyclic.Replicated} }

// RowBlocks is the layout in which device d holds a contiguous band of rows,
// the bands' heights differing by at most one, larger first
// (cyclic.RowBlocks, cyclic.BlockStart).
func RowBlocks() Layout { return Layout{Kind: cyclic.RowBlocks} }

// ColBlocks is the layout in which device d holds a contiguous band of
// columns, the bands' widths differing by at most one, larger first
// (cyclic.ColBlocks, cyclic.BlockStart).
func ColBlocks() Layout { return Layout{Kind: cyclic.ColBlocks} }

// Cyclic is the 1-D column block-cyclic layout of cuSolverMg with tile width
// t (cyclic.ColCyclic): column tile g (columns g·t … g·t+t−1, the last one
// possibly narrower) lives on device g mod the mesh size. t must be at least
// 1; a smaller one fails Layout.Validate, so New, Put and Relayout reject it.
func Cyclic(t int) Layout { return cyclic.Cyclic(t) }

// Buffer is the storage of one shard on one device.
type Buffer interface {
	Device() Device
	Len() int // elements
}

// Tensor is a matrix (or a vector, held as an n×1 matrix) sharded over a mesh.
// Each shard is column-major with its local row count as leading dimension.
type Tensor struct {
	mesh   *Mesh
	layout Layout
	shape  tensor.Shape
	dtype  tensor.Dtype
	shards []Buffer
}

var _ gorgonia.Value = (*Tensor)(nil)

// ErrFreed is returned by the methods (and HostShards) that would read or
// write the shards of a tensor after its Free.
var ErrFreed = errors.New("sharding: tensor was freed")

// usable reports why t's shards cannot be read or written: a nil or zero
// *Tensor (not made by New, Put, Relayout or Clone), or a freed one
// (ErrFreed).
func (t *Tensor) usable() error {
	switch {
	case t == nil:
		return errors.New("sharding: nil *Tensor")
	case t.mesh == nil:
		return errors.New("sharding: zero Tensor (make one with New or Put)")
	case t.shards == nil:
		return ErrFreed
	}
	return nil
}

// Usable reports why t's shards cannot be read or written: ErrFreed after
// Free (and for the clone of a freed tensor), or a nil or zero *Tensor; nil
// otherwise.
func (t *Tensor) Usable() error { return t.usable() }

// maxElementSize is the largest element of a storage dtype (complex128): a
// shape of more elements than math.MaxInt/maxElementSize cannot be held.
const maxElementSize = 16

func matrixShape(shape tensor.Shape) (rows, cols int, err error) {
	switch len(shape) {
	case 1:
		rows, cols = shape[0], 1
	case 2:
		rows, cols = shape[0], shape[1]
	default:
		return 0, 0, fmt.Errorf("sharding: want a matrix or a vector, got shape %v", shape)
	}
	if rows < 1 || cols < 1 {
		return 0, 0, fmt.Errorf("sharding: empty shape %v", shape)
	}
	if rows > math.MaxInt/maxElementSize/cols {
		return 0, 0, fmt.Errorf("sharding: shape %v has more elements than memory can hold", shape)
	}
	return rows, cols, nil
}

// CheckShape reports why a tensor of shape cannot be sharded: not a matrix
// or a vector, empty, or of more elements than memory can hold.
func CheckShape(shape tensor.Shape) error {
	_, _, err := matrixShape(shape)
	return err
}

// sameMatrix reports whether the shapes a and b hold their elements as the
// same rows×cols matrix, which is how shards lay them out: tensor.Shape.Eq
// takes (1, n) for (n), one row against one column.
func sameMatrix(a, b tensor.Shape) bool {
	ra, ca, errA := matrixShape(a)
	rb, cb, errB := matrixShape(b)
	return a.Eq(b) && errA == nil && errB == nil && ra == rb && ca == cb
}

// New allocates a zeroed sharded tensor.
func New(mesh *Mesh, shape tensor.Shape, dt tensor.Dtype, layout Layout) (*Tensor, error) {
	return newTensor(mesh, shape, dt, layout, true)
}

// newTensor allocates a sharded tensor on every device at once, zeroed or,
// for a caller that overwrites every element, not.
func newTensor(mesh *Mesh, shape tensor.Shape, dt tensor.Dtype, layout Layout, zero bool) (*Tensor, error) {
	if err := mesh.Validate(); err != nil {
		return nil, err
	}
	if err := mesh.CheckStorage(dt); err != nil {
		return nil, err
	}
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	rows, cols, err := matrixShape(shape)
	if err != nil {
		return nil, err
	}
	t := &Tensor{mesh: mesh, layout: layout, shape: shape.Clone(), dtype: dt, shards: make([]Buffer, mesh.Size())}
	err = perDevice(mesh.Size(), func(d int) (err error) {
		lr, lc := cyclic.LocalShape(layout, rows, cols, mesh.Size(), d)
		t.shards[d], err = mesh.mem.alloc(mesh.devices[d], dt, lr*lc, zero)
		return err
	})
	if err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

// Reuse returns prev when it matches mesh, shape, dtype and layout and has
// not been freed (so an op can write its output into last run's buffers),
// and a new tensor otherwise.
func Reuse(prev *Tensor, mesh *Mesh, shape tensor.Shape, dt tensor.Dtype, layout Layout) (*Tensor, error) {
	if prev != nil && prev.mesh == mesh && sameMatrix(prev.shape, shape) && prev.dtype == dt && prev.layout == layout && prev.shards != nil {
		return prev, nil
	}
	return New(mesh, shape, dt, layout)
}

// Put copies a host tensor onto mesh in the given layout.
func Put(host tensor.Tensor, mesh *Mesh, layout Layout) (*Tensor, error) {
	if d, ok := host.(*tensor.Dense); ok && d == nil {
		return nil, fmt.Errorf("sharding: Put of a nil *tensor.Dense")
	}
	d, ok := tensor.Materialize(host).(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("sharding: Put needs a *tensor.Dense, got %T", host)
	}
	// Load writes every element: no zeroing first.
	t, err := newTensor(mesh, d.Shape(), d.Dtype(), layout, false)
	if err != nil {
		return nil, err
	}
	if err := t.Load(d); err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

// Load overwrites t's shards with the row-major host tensor d of the same
// shape and dtype. A view (Slice) or a lazily transposed d (T without
// Transpose) is read as it appears, through a materialized copy.
func (t *Tensor) Load(d *tensor.Dense) error {
	if err := t.usable(); err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("sharding: Load of a nil *tensor.Dense")
	}
	if !d.Shape().Eq(t.shape) || d.Dtype() != t.dtype {
		return fmt.Errorf("sharding: cannot load %v %v into %v %v", d.Shape(), d.Dtype(), t.shape, t.dtype)
	}
	d, err := RowMajorDense(d)
	if err != nil {
		return err
	}
	return t.mesh.mem.put(t, d.Data())
}

// RowMajorDense returns d as a contiguous row-major tensor: d itself when
// it is one, else a copy in d's logical order (a view materialized; a
// strided tensor that is not a view, such as a Clone of one, copied
// element by element; a column-major tensor — tensor.AsFortran —
// reordered: its backing array read row-major is d with its axes reversed,
// which a transpose of every axis puts back in order).
func RowMajorDense(d *tensor.Dense) (*tensor.Dense, error) {
	if d == nil {
		return nil, fmt.Errorf("sharding: a nil *tensor.Dense")
	}
	if d.IsMaterializable() {
		m, ok := d.Materialize().(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("sharding: cannot materialize %v", d.Shape())
		}
		d = m
	}
	if d.RequiresIterator() && d.Shape().TotalSize() > 0 { // (tensor.Copy panics on an empty one)
		// Strides that are not the contiguous ones (Clone keeps a view's)
		// over a backing array longer than the tensor: tensor.Copy walks
		// the logical elements.
		out := tensor.New(tensor.Of(d.Dtype()), tensor.WithShape(d.Shape().Clone()...))
		if err := tensor.Copy(out, d); err != nil {
			return nil, fmt.Errorf("sharding: copying a strided %v: %w", d.Shape(), err)
		}
		return out, nil
	}
	if !d.DataOrder().IsColMajor() {
		return d, nil
	}
	shape := d.Shape()
	rev := make([]int, len(shape))
	for i, n := range shape {
		rev[len(shape)-1-i] = n
	}
	out := tensor.New(tensor.Of(d.Dtype()), tensor.WithShape(shape...))
	if shape.TotalSize() == 0 {
		return out, nil
	}
	backing := tensor.New(tensor.Of(d.Dtype()), tensor.WithShape(rev...), tensor.WithBacking(d.Data()))
	if len(shape) > 1 {
		if err := backing.T(); err != nil {
			return nil, err
		}
	}
	if err := tensor.Copy(out, tensor.Materialize(backing)); err != nil {
		return nil, err
	}
	return out, nil
}

// InNodeShape returns the host tensor d in the shape of the graph node it
// is bound to, where Gorgonia's Let bound it in another shape it takes as
// equal (tensor.Shape.Eq): a vector of n for an (n, 1) or (1, n) node, or
// one of those for an (n) node. The result is row-major (RowMajorDense)
// and shares d's data where d is contiguous row-major; d is not changed.
// Any other d (already in the node's shape, or of a shape Let refuses) is
// returned as it is.
func InNodeShape(d *tensor.Dense, node tensor.Shape) (*tensor.Dense, error) {
	have := d.Shape()
	if len(node) == 0 || len(have) == len(node) || !node.Eq(have) {
		return d, nil
	}
	r, err := RowMajorDense(d)
	if err != nil {
		return nil, err
	}
	if r == d {
		r = d.ShallowClone()
	}
	if err := r.Reshape(node.Clone()...); err != nil {
		return nil, fmt.Errorf("sharding: a %v value in its node's shape %v: %w", have, node, err)
	}
	return r, nil
}

// Gather copies the sharded tensor into a new row-major host tensor.
func (t *Tensor) Gather() (*tensor.Dense, error) {
	if err := t.usable(); err != nil {
		return nil, err
	}
	out := tensor.New(tensor.Of(t.dtype), tensor.WithShape(t.shape.Clone()...))
	if err := t.mesh.mem.gather(t, out.Data()); err != nil {
		return nil, err
	}
	return out, nil
}

// GatherInto copies the sharded tensor into the row-major host tensor d of
// the same shape and dtype (reusing d's memory: no allocation, no first-touch
// page faults). d must own its contiguous memory in row-major order: a view
// (Slice), a lazily transposed d (T without Transpose) or a column-major d
// (tensor.AsFortran) is refused; Gather into a new tensor instead.
func (t *Tensor) GatherInto(d *tensor.Dense) error {
	if err := t.usable(); err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("sharding: GatherInto a nil *tensor.Dense")
	}
	if d.IsMaterializable() {
		return fmt.Errorf("sharding: GatherInto a view or a lazily transposed tensor, which does not own contiguous memory: use Gather")
	}
	if !d.Shape().Eq(t.shape) || d.Dtype() != t.dtype {
		return fmt.Errorf("sharding: cannot gather %v %v into %v %v", t.shape, t.dtype, d.Shape(), d.Dtype())
	}
	if d.DataOrder().IsColMajor() {
		return fmt.Errorf("sharding: column-major host tensors are not supported")
	}
	return t.mesh.mem.gather(t, d.Data())
}

// Relayout returns a new tensor with the same values in layout to.
func (t *Tensor) Relayout(to Layout) (*Tensor, error) {
	if err := t.usable(); err != nil {
		return nil, err
	}
	out, err := newTensor(t.mesh, t.shape, t.dtype, to, false) // the plan writes every element
	if err != nil {
		return nil, err
	}
	if err := t.RelayoutInto(out); err != nil {
		out.Free()
		return nil, err
	}
	return out, nil
}

// RelayoutInto copies t's values into dst, which must have the same mesh,
// shape and dtype and may have another layout.
func (t *Tensor) RelayoutInto(dst *Tensor) error {
	if err := t.usable(); err != nil {
		return err
	}
	if err := dst.usable(); err != nil {
		return fmt.Errorf("%w (the destination of RelayoutInto)", err)
	}
	if !t.mesh.Same(dst.mesh) {
		return fmt.Errorf("%w: %v and %v", ErrMeshMismatch, t.mesh, dst.mesh)
	}
	if !sameMatrix(t.shape, dst.shape) || t.dtype != dst.dtype {
		return fmt.Errorf("sharding: relayout of %v %v into %v %v", t.shape, t.dtype, dst.shape, dst.dtype)
	}
	p, err := cyclic.NewPlan(t.Rows(), t.Cols(), t.mesh.Size(), t.layout, dst.layout)
	if err != nil {
		return err
	}
	return t.mesh.mem.execute(p, t.dtype, t.shards, dst.shards)
}

// Free releases device memory now (GPU meshes); host shards are left to the
// garbage collector. Afterwards the tensor holds no shards: the methods that
// would read or write them return ErrFreed (Zero does nothing, Shard returns
// nil) and Reuse does not hand it back. Freeing again does nothing.
func (t *Tensor) Free() {
	if t == nil {
		return
	}
	for _, b := range t.shards {
		if b != nil {
			t.mesh.mem.free(b)
		}
	}
	t.shards = nil
}

// Mesh is the mesh the tensor lives on.
func (t *Tensor) Mesh() *Mesh { return t.mesh }

// Layout is the tensor's layout.
func (t *Tensor) Layout() Layout { return t.layout }

// Rows and Cols are the global matrix dimensions (a vector has one column).
func (t *Tensor) Rows() int { r, _, _ := matrixShape(t.shape); return r }
func (t *Tensor) Cols() int { _, c, _ := matrixShape(t.shape); return c }

// LocalShape is the shape of device d's shard (0×0 for a device not in
// the mesh).
func (t *Tensor) LocalShape(d int) (rows, cols int) {
	if d < 0 || d >= t.mesh.Size() {
		return 0, 0
	}
	return cyclic.LocalShape(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), d)
}

// Shard is device d's buffer (nil once the tensor is freed, and for a
// device not in the mesh).
func (t *Tensor) Shard(d int) Buffer {
	if t.usable() != nil || d < 0 || d >= len(t.shards) {
		return nil
	}
	return t.shards[d]
}

// Shape, Size, Dtype and Data make *Tensor a gorgonia.Value. Data returns the
// shard buffers, a []Buffer (nil once the tensor is freed).
func (t *Tensor) Shape() tensor.Shape { return t.shape.Clone() }
func (t *Tensor) Size() int           { return t.shape.TotalSize() }
func (t *Tensor) Dtype() tensor.Dtype { return t.dtype }
func (t *Tensor) Data() interface{} {
	if t.shards == nil {
		return nil
	}
	return t.shards
}

// Uintptr, MemSize and Pointer identify the value (they do not point at
// element memory, which is spread over devices).
func (t *Tensor) Uintptr() uintptr        { return uintptr(unsafe.Pointer(t)) }
func (t *Tensor) MemSize() uintptr        { return uintptr(t.Size()) * uintptr(t.dtype.Size()) }
func (t *Tensor) Pointer() unsafe.Pointer { return unsafe.Pointer(t) }

// Type is a Gorgonia tensor type, so that graph nodes holding sharded values
// type-check like host matrices.
func (t *Tensor) Type() hm.Type { return gorgonia.TensorType{Dims: len(t.shape), Of: t.dtype} }

// Clone returns a deep copy on the same mesh and layout (of a freed tensor,
// a freed tensor).
func (t *Tensor) Clone() (interface{}, error) {
	if err := t.usable(); errors.Is(err, ErrFreed) {
		// A freed tensor's clone is a freed tensor: Gorgonia's LispMachine
		// clones an input's value for its gradient and panics, on its own
		// goroutine, on an error; the ops that read the value report
		// ErrFreed instead.
		return &Tensor{mesh: t.mesh, layout: t.layout, shape: t.shape.Clone(), dtype: t.dtype}, nil
	} else if err != nil {
		return nil, err
	}
	out, err := t.Relayout(t.layout)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return out, nil
}

// CopyTo copies t into dest, a *Tensor of the same mesh, shape and dtype in
// any layout (gorgonia.CopierTo): gorgonia.Read clones a node's value on a
// machine's first run and copies it into that clone on every later run.
//
// A freed dest gets new shards first: gorgonia.Read's clone of a value
// that was freed is a freed tensor (Clone), and a later run's value, bound
// with gorgonia.Let, must still reach it.
func (t *Tensor) CopyTo(dest interface{}) error {
	d, ok := dest.(*Tensor)
	if !ok || d == nil {
		return fmt.Errorf("sharding: cannot copy a sharded tensor into a %T", dest)
	}
	if errors.Is(d.usable(), ErrFreed) && t.usable() == nil && t.mesh.Same(d.mesh) && sameMatrix(t.shape, d.shape) && t.dtype == d.dtype {
		fresh, err := newTensor(d.mesh, d.shape, d.dtype, d.layout, false)
		if err != nil {
			return err
		}
		d.shards = fresh.shards
	}
	return t.RelayoutInto(d)
}

// Zero sets every element to zero. It cannot return an error
// (gorgonia.Zeroer), so on a freed (or nil or zero) tensor it does nothing.
func (t *Tensor) Zero() {
	if t.usable() != nil {
		return
	}
	for _, b := range t.shards {
		t.mesh.mem.zero(b)
	}
}

// ZeroValue zeroes t and returns it (gorgonia.ZeroValuer).
func (t *Tensor) ZeroValue() gorgonia.Value { t.Zero(); return t }

func (t *Tensor) String() string {
	return fmt.Sprintf("sharded %v %v on %v (%v)", t.shape, t.dtype, t.mesh, t.layout)
}

// Format prints the description; with %+v or %#v it also gathers and prints
// the values.
func (t *Tensor) Format(s fmt.State, c rune) {
	fmt.Fprint(s, t.String())
	if (s.Flag('+') || s.Flag('#')) && t.shards != nil {
		if d, err := t.Gather(); err == nil {
			fmt.Fprintf(s, "\n%v", d)
		}
	}
}

// Same reports whether two sharded tensors share mesh, shape, dtype and layout.
func (t *Tensor) Same(o *Tensor) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t.mesh.Same(o.mesh) && sameMatrix(t.shape, o.shape) && t.dtype == o.dtype && t.layout == o.layout
}

// columnMap says where each column of a layout that keeps whole columns on
// one device (ColCyclic, ColBlocks) lives: entry j is its device << 40 | its
// local column. It is the table that GPU transfers of whole host rows use.
func columnMap(l Layout, rows, cols, ndev int) []uint64 {
	m := make([]uint64, cols)
	for _, p := range cyclic.Pieces(l, rows, cols, ndev) {
		for k := range p.Cols {
			m[p.Col+k] = uint64(p.Dev)<<40 | uint64(p.LocalCol+k)
		}
	}
	return m
}

// GraphOf is the graph of one builder call's operands: that of those that
// belong to one (nil operands are skipped, for the caller to report). It is
// an error when they belong to different graphs, or when there are
// constants (gorgonia.NewConstant makes a node of no graph) and no operand
// of a graph to bring them into (InGraph).
func GraphOf(nodes ...*gorgonia.Node) (*gorgonia.ExprGraph, error) {
	var first, constant *gorgonia.Node
	for _, n := range nodes {
		switch {
		case n == nil:
		case n.Graph() == nil:
			if constant == nil {
				constant = n
			}
		case first == nil:
			first = n
		case n.Graph() != first.Graph():
			return nil, fmt.Errorf("%v and %v are nodes of different graphs", first.Name(), n.Name())
		}
	}
	if first == nil && constant != nil {
		return nil, fmt.Errorf("a %v constant of no graph (gorgonia.NewConstant) and no operand of a graph to add it to: add it to one with g.AddNode, or make it a node with gorgonia.NewTensor and WithValue", constant.Shape())
	}
	if first == nil {
		return nil, nil
	}
	return first.Graph(), nil
}

// InGraph returns n, or for a constant of no graph (gorgonia.NewConstant) a
// node of g holding the constant's value, so that fixed data (a right-hand
// side, a matrix) can be passed as a constant. The node is an input of its
// own, named "constant #k", not the constant added with g.AddNode: Gorgonia
// takes two constants for one where their printed values agree, and prints
// a tensor of more than eight elements elided (two right-hand sides that
// differ inside became one, and a float32 constant a float64 one). The
// TapeMachine computes no gradient for it unless asked (Grad); the
// LispMachine's, which it computes for every input, is a by-product of the
// op's own backward pass. Builders call InGraph once every check has
// passed, so that a refused call leaves g as it was.
func InGraph(g *gorgonia.ExprGraph, n *gorgonia.Node) *gorgonia.Node {
	if n == nil || n.Graph() != nil || g == nil {
		return n
	}
	name := fmt.Sprintf("constant #%d", constants.Add(1))
	return gorgonia.NodeFromAny(g, n.Value(), gorgonia.WithName(name))
}

// constants numbers the constants InGraph brings into graphs.
var constants atomic.Int64
