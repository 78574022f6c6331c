package collective

import (
	"fmt"
	"hash"
	"hash/fnv"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Option configures a graph op.
type Option func(*nodeOptions)

type nodeOptions struct{ name string }

// WithName names the op in its errors (default: the kind, "AllReduce").
func WithName(name string) Option { return func(o *nodeOptions) { o.name = name } }

// spec is what a collective node does.
type spec struct {
	kind      Kind
	op        ReduceOp
	root, tag int
	dest, src []int // SendRecv (per local rank), Send (dest[0]), Recv (src[0])
	reverse   bool  // Scan over ranks Size-1 … r: the gradient of Scan-sum
}

func (s spec) String() string {
	switch s.kind {
	case AllReduce, ReduceScatter:
		return fmt.Sprintf("%v(%v)", s.kind, s.op)
	case Scan:
		if s.reverse {
			return fmt.Sprintf("ReverseScan(%v)", s.op)
		}
		return fmt.Sprintf("Scan(%v)", s.op)
	case Reduce:
		return fmt.Sprintf("Reduce(%v, root %d)", s.op, s.root)
	case Bcast, Gather, Scatter:
		return fmt.Sprintf("%v(root %d)", s.kind, s.root)
	case SendRecv:
		return fmt.Sprintf("SendRecv(dest %v, src %v, tag %d)", s.dest, s.src, s.tag)
	case Send:
		return fmt.Sprintf("Send(dest %d, tag %d)", s.dest[0], s.tag)
	case Recv:
		return fmt.Sprintf("Recv(src %d, tag %d)", s.src[0], s.tag)
	}
	return s.kind.String()
}

// collOp is the graph op of every collective.
type collOp struct {
	spec
	comm  Comm
	mesh  *sharding.Mesh // nil: a process communicator, host values
	name  string         // in errors
	seq   uint64         // build order among all collective nodes
	arity int            // 1, or 2 when chained to the previous collective
	// Recv only: the shape and dtype received.
	recvShape tensor.Shape
	recvDtype tensor.Dtype
	// The input node's shape and dtype, which the value that reaches Do
	// must have; unset for Recv and for DoDiff's adjoint, which takes the
	// gradient's value as it comes.
	inShape tensor.Shape
	inDtype tensor.Dtype

	// reused from run to run
	host       hostRun // a process communicator's
	outMesh    *sharding.Tensor
	sendFlat   *sharding.Tensor // the flat concatenations of stacked blocks,
	recvFlat   *sharding.Tensor // one shard per rank
	adjointRun *collOp          // DoDiff's adjoint (LispMachine)
	// differentiated: Grad built this node's gradient (SymDiff), which
	// the calls' checks compare across ranks (Call.Differentiated).
	differentiated bool
	// graph is the node's graph; ranAt its count of failed runs (package
	// failedruns) when this op's forward last succeeded: DoDiff runs only
	// when no op of the graph failed since.
	graph *gorgonia.ExprGraph
	ranAt uint64
	// node is the op's node, whose readers a mesh's run checks
	// (ops.CheckReaders).
	node *gorgonia.Node
}

var buildSeq atomic.Uint64

// newNode checks x against comm and s and adds the collective node. x is
// nil for Recv.
func newNode(g *gorgonia.ExprGraph, x *gorgonia.Node, comm Comm, s spec, recvShape tensor.Shape, recvDtype tensor.Dtype, opts []Option) (*gorgonia.Node, error) {
	var o nodeOptions
	for _, opt := range opts {
		if opt != nil { // an option chosen conditionally may be nil
			opt(&o)
		}
	}
	if o.name == "" {
		o.name = s.String()
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadCall, o.name, fmt.Sprintf(format, args...))
	}
	if comm == nil {
		return nil, bad("nil communicator")
	}
	if !reflect.TypeOf(comm).Comparable() {
		// The chain of a communicator's nodes and the reversed
		// communicators are keyed by it.
		return nil, bad("communicator of type %T cannot be compared with ==: pass a pointer to it", comm)
	}
	if x == nil && s.kind != Recv {
		return nil, bad("nil input node")
	}
	if x != nil {
		if _, err := sharding.GraphOf(x); err != nil {
			return nil, bad("%v", err)
		}
	}
	op := &collOp{spec: s, comm: comm, name: o.name, recvShape: recvShape, recvDtype: recvDtype}
	if mc, ok := comm.(MeshComm); ok {
		op.mesh = mc.Mesh() // nil for a process communicator of a GPU engine
	}
	if op.mesh != nil && (op.mesh.Size() != comm.Size() || len(comm.LocalRanks()) != comm.Size()) {
		return nil, bad("a mesh communicator of %d ranks on %v drives %d of them", comm.Size(), op.mesh, len(comm.LocalRanks()))
	}
	if n := len(comm.LocalRanks()); op.mesh == nil && n != 1 {
		return nil, bad("a %T drives %d ranks but has no mesh", comm, n)
	}
	size, local := comm.Size(), len(comm.LocalRanks())
	switch s.kind {
	case Send, Recv:
		if op.mesh != nil {
			return nil, bad("one process drives every rank of a mesh: use SendRecv on a mesh")
		}
	case AllReduce, ReduceScatter, Reduce, Scan:
		if s.op < Sum || s.op > Max {
			return nil, bad("unknown reduction %d", int(s.op))
		}
	}
	if (s.kind == Bcast || s.kind == Reduce || s.kind == Gather || s.kind == Scatter) && (s.root < 0 || s.root >= size) {
		return nil, bad("root %d outside [0, %d)", s.root, size)
	}
	peers := func(what string, ps []int, want int) error {
		if len(ps) != want {
			return bad("%d %s ranks for %d local ranks", len(ps), what, want)
		}
		for _, p := range ps {
			if p < 0 || p >= size {
				return bad("%s rank %d outside [0, %d)", what, p, size)
			}
		}
		return nil
	}
	switch s.kind {
	case SendRecv:
		if err := peers("destination", s.dest, local); err != nil {
			return nil, err
		}
		if err := peers("source", s.src, local); err != nil {
			return nil, err
		}
	case Send:
		if err := peers("destination", s.dest, 1); err != nil {
			return nil, err
		}
		if me := comm.LocalRanks()[0]; s.dest[0] == me {
			return nil, bad("sends to its own rank %d: a Send waits for its Recv, which this process could only run after it (use SendRecv)", me)
		}
	case Recv:
		if err := peers("source", s.src, 1); err != nil {
			return nil, err
		}
		if me := comm.LocalRanks()[0]; s.src[0] == me {
			return nil, bad("receives from its own rank %d: its Send would wait for this Recv, which this process could only run after it (use SendRecv)", me)
		}
	}
	if s.tag < 0 {
		return nil, bad("negative tag %d", s.tag)
	}
	var children gorgonia.Nodes
	if x != nil {
		if err := CheckDtype(x.Dtype()); err != nil {
			return nil, bad("%v", err)
		}
		if (s.op == Min || s.op == Max) && (x.Dtype() == tensor.Complex64 || x.Dtype() == tensor.Complex128) {
			return nil, bad("%v of complex values is not defined", s.op)
		}
		if p, ok := ops.PlacementOf(x); ok && (op.mesh == nil || !p.Mesh.Same(op.mesh)) {
			return nil, fmt.Errorf("%w: %w: %w: %s: %v is on %v, the communicator is %v", ErrBadCall, sharding.ErrBadInput, sharding.ErrMeshMismatch, o.name, x.Name(), p.Mesh, comm)
		}
		if _, _, err := op.shapes(x.Shape()); err != nil {
			return nil, err
		}
		if err := op.scalarDtype(x.Shape(), x.Dtype()); err != nil {
			return nil, err
		}
		op.inShape, op.inDtype = x.Shape().Clone(), x.Dtype()
		g = x.Graph()
		children = gorgonia.Nodes{x}
	} else {
		if g == nil {
			return nil, bad("nil graph")
		}
		if err := CheckDtype(recvDtype); err != nil {
			return nil, bad("%v", err)
		}
		if _, _, err := op.shapes(recvShape); err != nil {
			return nil, err
		}
		if err := op.scalarDtype(recvShape, recvDtype); err != nil {
			return nil, err
		}
	}
	op.seq = buildSeq.Add(1)
	op.graph = g
	if prev := lastCollective(g, comm); prev != nil {
		children = append(children, prev)
	} else if x == nil {
		// Recv has no data input: anchor it in g.
		children = append(children, gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithValue(0.0)))
	}
	op.arity = len(children)
	n, err := gorgonia.ApplyOp(op, children...)
	if err == nil {
		if o, ok := n.Op().(*collOp); ok && o.node == nil {
			o.node = n // Gorgonia hands back an existing node for an op of the same hash
		}
	}
	return n, err
}

// lastCollective is the collective node of comm built last in g (nil if
// none): every new one depends on it, so they run in build order.
func lastCollective(g *gorgonia.ExprGraph, comm Comm) *gorgonia.Node {
	var last *gorgonia.Node
	var seq uint64
	for _, n := range g.AllNodes() {
		if o, ok := n.Op().(*collOp); ok && o.comm == comm && o.seq > seq {
			last, seq = n, o.seq
		}
	}
	return last
}

// shapes returns the output shape and the Count of the engine call for an
// input (or, for Recv, received) shape: per rank for a process
// communicator, the global RowBlocks shape for a mesh.
func (o *collOp) shapes(in tensor.Shape) (tensor.Shape, int, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadCall, o.name, fmt.Sprintf(format, args...))
	}
	size := o.comm.Size()
	if len(in) == 0 && o.mesh == nil && o.keepsShape() {
		return tensor.Shape{}, 1, nil // a scalar: one element a rank
	}
	if len(in) < 1 || in.TotalSize() < 1 {
		if len(in) == 0 {
			return nil, 0, bad("needs a non-empty tensor of rank ≥ 1, got a scalar (scalars take part in the collectives that keep their shape, on process communicators: AllReduce, Bcast, Reduce, Scan, SendRecv, Send, Recv, Barrier; reshape it to (1) for the others)")
		}
		return nil, 0, bad("needs a non-empty tensor of rank ≥ 1, got shape %v", in)
	}
	block := in.Clone()
	if o.mesh != nil {
		if len(in) > 2 {
			return nil, 0, bad("values on a mesh are matrices or vectors, got shape %v", in)
		}
		if in[0]%size != 0 {
			return nil, 0, bad("the first axis (%d) of %v does not split into %d equal rank blocks", in[0], in, size)
		}
		block[0] /= size
	}
	elems := block.TotalSize()
	out, count := block.Clone(), elems
	switch o.kind {
	case AllGather, Gather:
		out[0] *= size
	case ReduceScatter, Scatter, AllToAll:
		if block[0]%size != 0 {
			return nil, 0, bad("the first axis of the rank block %v is not divisible by the communicator size %d", block, size)
		}
		count = elems / size
		if o.kind != AllToAll {
			out[0] /= size
		}
	}
	if o.mesh != nil {
		out[0] *= size
	}
	return out, count, nil
}

// keepsShape reports whether o's output has its input's shape on a
// process communicator (the kinds a scalar takes part in).
func (o *collOp) keepsShape() bool {
	switch o.kind {
	case AllReduce, Bcast, Reduce, Scan, SendRecv, Send, Recv, Barrier:
		return true
	}
	return false
}

func (o *collOp) Arity() int           { return o.arity }
func (o *collOp) ReturnsPtr() bool     { return false }
func (o *collOp) CallsExtern() bool    { return false }
func (o *collOp) OverwritesInput() int { return -1 }
func (o *collOp) String() string       { return o.name }

func (o *collOp) Type() hm.Type {
	// Not 'b': Gorgonia's inference names the result so.
	a, b := hm.TypeVariable('p'), hm.TypeVariable('q')
	if o.kind == Recv {
		if len(o.recvShape) == 0 {
			return hm.NewFnType(b, o.recvDtype)
		}
		return hm.NewFnType(b, gorgonia.TensorType{Dims: len(o.recvShape), Of: o.recvDtype})
	}
	if o.arity == 2 {
		return hm.NewFnType(a, b, a)
	}
	return hm.NewFnType(a, a)
}

func (o *collOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	if o.kind == Recv {
		return o.recvShape.Clone(), nil
	}
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("collective: %s: expected a tensor.Shape, got %T", o.name, in[0])
	}
	out, _, err := o.shapes(s)
	return out, err
}

func (o *collOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "collective|%v|%p|%d|%d", o.spec, o.comm, o.seq, o.arity)
}

func (o *collOp) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// Placement makes the node of a mesh collective a sharded node for package
// ops (ops.Gather brings it to the host).
func (o *collOp) Placement() (ops.Placement, bool) {
	if o.mesh == nil {
		return ops.Placement{}, false
	}
	return ops.Placement{Mesh: o.mesh, Layout: sharding.RowBlocks()}, true
}

// Do runs the collective on the input value (host tensor for a process
// communicator; sharded tensor, or host tensor to place, for a mesh).
func (o *collOp) Do(vals ...gorgonia.Value) (v gorgonia.Value, err error) {
	defer func() { failedruns.Record(o.graph, err, &o.ranAt) }()
	if err := ops.CheckReaders(o.node); err != nil {
		return nil, err
	}
	if o.kind == Recv {
		return o.run(nil, o.recvShape, o.recvDtype)
	}
	if len(vals) == 0 || isNilValue(vals[0]) {
		// Gorgonia handed the node no value for its input: say so and
		// which node, rather than dereference it.
		return nil, fmt.Errorf("%w: %s: its input has no value (%d values given)", ErrBadCall, o.name, len(vals))
	}
	x, err := o.bound(vals[0])
	if err != nil {
		return nil, err
	}
	return o.run(x, x.Shape(), x.Dtype())
}

// bound is the input value x in the input node's shape. gorgonia.Let
// checks the shape and dtype of the tensors it binds, up to the vector
// shapes that tensor.Shape's Eq takes for equal ((1, n) for (n)), but binds
// a Go number to any node: such a value, of another shape or dtype than the
// node's, is refused with ErrBadCall and sharding.ErrBadInput (mgla's).
func (o *collOp) bound(x gorgonia.Value) (gorgonia.Value, error) {
	if o.inDtype == (tensor.Dtype{}) {
		return x, nil
	}
	if !x.Shape().Eq(o.inShape) || x.Dtype() != o.inDtype {
		return nil, fmt.Errorf("%w: %w: %s: a value of shape %v and dtype %v (%T) for an input node of shape %v and dtype %v: bind a tensor of the node's shape and dtype",
			ErrBadCall, sharding.ErrBadInput, o.name, x.Shape(), x.Dtype(), x, o.inShape, o.inDtype)
	}
	if d, ok := x.(*tensor.Dense); ok {
		d, err := sharding.InNodeShape(d, o.inShape)
		if err != nil {
			return nil, fmt.Errorf("%w: %w: %s: %v", ErrBadCall, sharding.ErrBadInput, o.name, err)
		}
		return d, nil
	}
	return x, nil
}

func (o *collOp) run(x gorgonia.Value, shape tensor.Shape, dt tensor.Dtype) (gorgonia.Value, error) {
	if o.mesh == nil {
		return o.runHost(x, shape, dt)
	}
	outShape, count, err := o.shapes(shape)
	if err != nil {
		return nil, err
	}
	call := &Call{Kind: o.kind, Op: o.op, Root: o.root, Dest: o.dest, Src: o.src, Tag: o.tag, Dtype: dt, Count: count, Shape: shape.Clone(), Name: o.name,
		Differentiated: o.differentiated}
	return o.runMesh(call, x, outShape)
}

// hostRun is what runHost keeps from run to run: the engine call and its
// buffers, the node's output, and the shape, dtype and input memory they
// were made for.
type hostRun struct {
	shape    tensor.Shape
	dtype    tensor.Dtype
	call     Call
	out      *tensor.Dense
	outBytes []byte
	in       uintptr // the input's memory that sendRecv[0] wraps
	inBytes  []byte
	sendRecv [2]sharding.Buffer // call.Send and call.Recv point into it
}

// runHost runs the collective of a process communicator on the host input
// x. The call, its buffers and the output are made on the first run and
// again only when the input's shape, dtype or memory changes: the graph
// fixes the first two, and the TapeMachine hands the node the same input
// value from run to run unless the program binds another (gorgonia.Let).
func (o *collOp) runHost(x gorgonia.Value, shape tensor.Shape, dt tensor.Dtype) (gorgonia.Value, error) {
	var xd *tensor.Dense
	if x != nil {
		var err error
		if xd, err = hostDense(x); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadCall, o.name, err)
		}
	}
	h := &o.host
	if h.out == nil || !h.shape.Eq(shape) || h.dtype != dt {
		outShape, count, err := o.shapes(shape)
		if err != nil {
			return nil, err
		}
		out := tensor.New(tensor.Of(dt), tensor.WithShape(outShape...))
		outBuf, err := sharding.NewHostBuffer(denseSlice(out))
		if err != nil {
			return nil, err
		}
		*h = hostRun{shape: shape.Clone(), dtype: dt, out: out, outBytes: outBuf.Bytes(),
			call: Call{Kind: o.kind, Op: o.op, Root: o.root, Dest: o.dest, Src: o.src, Tag: o.tag, Dtype: dt, Count: count, Shape: shape.Clone(), Name: o.name}}
		h.sendRecv[1] = outBuf
		if o.kind != Send && o.kind != Barrier {
			h.call.Recv = h.sendRecv[1:2]
		}
	}
	if xd != nil && (h.sendRecv[0] == nil || h.in != xd.Uintptr()) {
		xBuf, err := sharding.NewHostBuffer(denseSlice(xd))
		if err != nil {
			return nil, err
		}
		h.in, h.inBytes, h.sendRecv[0] = xd.Uintptr(), xBuf.Bytes(), xBuf
		if o.kind != Barrier {
			h.call.Send = h.sendRecv[0:1]
		}
	}
	if o.kind == Send || o.kind == Barrier {
		// The node's value is a copy of its input (outputs never alias
		// inputs).
		copy(h.outBytes, h.inBytes)
	}
	h.call.Differentiated = o.differentiated // Grad may come after a first run
	if err := o.do(&h.call); err != nil {
		return nil, err
	}
	if len(shape) == 0 {
		return scalarValue(h.out.Data())
	}
	return h.out, nil
}

// scalarValue is x as the Gorgonia scalar value of its type: the value of
// a scalar node (scalarDtype lists the types that have one).
func scalarValue(x any) (gorgonia.Value, error) {
	switch v := x.(type) {
	case float64:
		return gorgonia.NewF64(v), nil
	case float32:
		return gorgonia.NewF32(v), nil
	case int:
		return gorgonia.NewI(v), nil
	case int64:
		return gorgonia.NewI64(v), nil
	case int32:
		return gorgonia.NewI32(v), nil
	case uint8:
		return gorgonia.NewU8(v), nil
	}
	return nil, fmt.Errorf("%w: no Gorgonia scalar of type %T", ErrBadCall, x)
}

// scalarDtype checks that a scalar node (shape ()) of dtype dt has a
// Gorgonia scalar value (one that scalarValue makes); other shapes pass.
func (o *collOp) scalarDtype(shape tensor.Shape, dt tensor.Dtype) error {
	if len(shape) != 0 {
		return nil
	}
	if _, err := scalarValue(reflect.Zero(dt.Type).Interface()); err != nil {
		return fmt.Errorf("%w: %s: Gorgonia has no scalar of %v: reshape it to (1)", ErrBadCall, o.name, dt)
	}
	return nil
}

// denseSlice is the typed backing slice of a host tensor of a supported
// dtype (also for scalars, whose Data is the element).
func denseSlice(d *tensor.Dense) any {
	if v := d.Data(); reflect.TypeOf(v).Kind() == reflect.Slice {
		return v
	}
	one := reflect.NewAt(reflect.ArrayOf(1, d.Dtype().Type), unsafe.Pointer(unsafe.SliceData(d.Header.Raw)))
	return one.Elem().Slice(0, 1).Interface()
}

// hostDense returns a host value as a contiguous row-major *tensor.Dense
// (a scalar as one of shape ()).
func hostDense(v gorgonia.Value) (*tensor.Dense, error) {
	switch x := v.(type) {
	case *sharding.Tensor:
		return x.Gather()
	case *tensor.Dense:
		return sharding.RowMajorDense(x)
	case gorgonia.Scalar:
		return tensor.New(tensor.FromScalar(x.Data())), nil
	}
	return nil, fmt.Errorf("unsupported value %T (want a host tensor)", v)
}

// runMesh runs call on a mesh: x (sharded, or a host tensor to place) in
// RowBlocks, one equal block per rank; the output likewise.
func (o *collOp) runMesh(call *Call, x gorgonia.Value, outShape tensor.Shape) (gorgonia.Value, error) {
	var xt *sharding.Tensor
	switch v := x.(type) {
	case *sharding.Tensor:
		if err := v.Usable(); err != nil {
			return nil, fmt.Errorf("%s: %w", o.name, err) // ErrFreed: its shards are gone
		}
		if !v.Mesh().Same(o.mesh) {
			// A value bound with gorgonia.Let: the builder checked the node's mesh.
			return nil, fmt.Errorf("%w: %w: %s: value on %v, communicator on %v", sharding.ErrBadInput, sharding.ErrMeshMismatch, o.name, v.Mesh(), o.mesh)
		}
		xt = v
		if v.Layout() != sharding.RowBlocks() {
			t, err := v.Relayout(sharding.RowBlocks())
			if err != nil {
				return nil, err
			}
			xt = t
		}
	case tensor.Tensor: // a host gradient summed by Gorgonia
		t, err := sharding.Put(v, o.mesh, sharding.RowBlocks())
		if err != nil {
			return nil, err
		}
		xt = t
	default:
		return nil, fmt.Errorf("%w: %s: unsupported value %T", ErrBadCall, o.name, x)
	}
	out, err := sharding.Reuse(o.outMesh, o.mesh, outShape, call.Dtype, sharding.RowBlocks())
	if err != nil {
		return nil, err
	}
	o.outMesh = out
	size := o.comm.Size()
	ranks := o.comm.LocalRanks()
	cols := xt.Cols()
	rows := xt.Rows() / size // one rank's block
	if o.kind == Barrier {
		if err := xt.RelayoutInto(out); err != nil {
			return nil, err
		}
		return out, o.do(call)
	}
	call.Send, call.Recv = make([]sharding.Buffer, len(ranks)), make([]sharding.Buffer, len(ranks))
	for i, r := range ranks {
		call.Send[i], call.Recv[i] = xt.Shard(r), out.Shard(r)
	}
	// Blocks of several rows and columns are stacked in a column-major
	// shard; the engine exchanges their flat concatenation.
	// With one rank the flat concatenation is the stacked block itself.
	stackedSend := size > 1 && cols > 1 && (o.kind == ReduceScatter || o.kind == Scatter || o.kind == AllToAll)
	stackedRecv := size > 1 && cols > 1 && (o.kind == AllGather || o.kind == Gather || o.kind == AllToAll)
	if stackedSend {
		if o.sendFlat, err = flatShards(o.sendFlat, o.mesh, call.Dtype, rows*cols); err != nil {
			return nil, err
		}
		flat := make([]sharding.Buffer, len(ranks))
		for i, r := range ranks {
			flat[i] = o.sendFlat.Shard(r)
			if err := restack(false, rows/size, cols, size, call.Dtype, call.Send[i], flat[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", o.name, err)
			}
		}
		call.Send = flat
	}
	final := call.Recv
	if stackedRecv {
		if o.recvFlat, err = flatShards(o.recvFlat, o.mesh, call.Dtype, call.RecvLen(size)); err != nil {
			return nil, err
		}
		call.Recv = make([]sharding.Buffer, len(ranks))
		for i, r := range ranks {
			call.Recv[i] = o.recvFlat.Shard(r)
		}
	}
	if err := o.do(call); err != nil {
		return nil, err
	}
	if stackedRecv {
		q := rows
		if o.kind == AllToAll {
			q = rows / size
		}
		for i := range ranks {
			if err := restack(true, q, cols, size, call.Dtype, call.Recv[i], final[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", o.name, err)
			}
		}
	}
	return out, nil
}

// flatShards returns a tensor on mesh with one shard of elems elements per
// device (prev when it fits): the flat buffers the engine exchanges.
func flatShards(prev *sharding.Tensor, mesh *sharding.Mesh, dt tensor.Dtype, elems int) (*sharding.Tensor, error) {
	return sharding.Reuse(prev, mesh, tensor.Shape{mesh.Size() * elems}, dt, sharding.RowBlocks())
}

// restack moves size blocks of q×cols between a column-major (size·q)×cols
// buffer (stacked) and their flat concatenation: toStacked picks the
// direction. The plan's "devices" are the blocks: views of the flat buffer.
// Host and device buffers alike (sharding.ExecutePlan).
func restack(toStacked bool, q, cols, size int, dt tensor.Dtype, src, dst sharding.Buffer) error {
	var p *cyclic.Plan
	var err error
	if toStacked {
		p, err = cyclic.StackRowsPlan(q, cols, size)
	} else {
		p, err = cyclic.SplitRowsPlan(q, cols, size)
	}
	if err != nil {
		return err
	}
	flat, stacked := src, dst
	if !toStacked {
		flat, stacked = dst, src
	}
	blocks, whole := make([]sharding.Buffer, size), make([]sharding.Buffer, size)
	for r := range size {
		if blocks[r], err = sharding.View(flat, r*q*cols, q*cols); err != nil {
			return err
		}
		whole[r] = stacked
	}
	if toStacked {
		return sharding.ExecutePlan(p, dt, blocks, whole)
	}
	return sharding.ExecutePlan(p, dt, whole, blocks)
}

// do runs call on the communicator, or for a reverse Scan on its reversed
// copy (rank r there is rank Size-1-r here).
func (o *collOp) do(call *Call) error {
	if !o.reverse {
		return o.comm.Do(call)
	}
	rev, err := reversed(o.comm)
	if err != nil {
		return fmt.Errorf("%s: %w", o.name, err)
	}
	size := o.comm.Size()
	pos := map[int]int{}
	for i, r := range o.comm.LocalRanks() {
		pos[r] = i
	}
	rc := *call
	rc.Send, rc.Recv = make([]sharding.Buffer, len(call.Send)), make([]sharding.Buffer, len(call.Recv))
	for i, k := range rev.LocalRanks() {
		j := pos[size-1-k]
		rc.Send[i], rc.Recv[i] = call.Send[j], call.Recv[j]
	}
	if err := rev.Do(&rc); err != nil {
		// Its errors name the reversed communicator's ranks.
		return fmt.Errorf("%w (in the reverse scan's communicator, which numbers the ranks backwards: its rank r is rank %d−r)", err, size-1)
	}
	return nil
}

// reversedComms caches, per communicator, the Split that numbers its ranks
// backwards (the reverse scan of Scan's gradient), until the communicator
// is closed (CloseNotifier). A communicator of one rank is its own reverse:
// nothing is split or kept for it (Self, made anew by every call, used to
// leave one per value).
var reversedComms sync.Map

func reversed(c Comm) (Comm, error) {
	if c.Size() == 1 {
		return c, nil
	}
	if r, ok := reversedComms.Load(c); ok {
		return r.(Comm), nil
	}
	size := c.Size()
	subs, err := c.Split(func(int) int { return 0 }, func(r int) int { return size - 1 - r })
	if err != nil {
		return nil, err
	}
	if len(subs) != 1 {
		return nil, fmt.Errorf("%w: Split of every rank gave %d communicators", ErrEngine, len(subs))
	}
	r, loaded := reversedComms.LoadOrStore(c, subs[0])
	switch n, ok := c.(CloseNotifier); {
	case loaded:
		_ = subs[0].Close() // another goroutine's Split came first
	case ok:
		n.OnClose(func() {
			reversedComms.Delete(c)
			_ = subs[0].Close()
		})
	}
	return r.(Comm), nil
}

// DiffWRT: the data input; not the chain to the previous collective.
func (o *collOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	d[0] = o.kind != Recv
	return d
}

// adjoint is the collective whose value is the gradient of o's input (of
// dtype dt) given the gradient of its output (the transpose of o, a linear
// map). Integer values have no gradient.
func (o *collOp) adjoint(dt tensor.Dtype) (spec, error) {
	s := o.spec
	a := spec{kind: s.kind, op: Sum, root: s.root, tag: s.tag}
	if sharding.CheckDtype(dt) != nil {
		return a, fmt.Errorf("%w: %s: %v values have no gradient (only float and complex collectives are differentiable)", ErrBadCall, o.name, dt)
	}
	if (s.kind == AllReduce || s.kind == ReduceScatter || s.kind == Reduce || s.kind == Scan) && s.op != Sum {
		return a, fmt.Errorf("%w: %s: %v is not linear, only sum reductions have gradients", ErrBadCall, o.name, s.op)
	}
	switch s.kind {
	case AllReduce, AllToAll, Barrier:
	case AllGather:
		a.kind = ReduceScatter
	case ReduceScatter:
		a.kind = AllGather
	case Bcast:
		a.kind = Reduce
	case Reduce:
		a.kind = Bcast
	case Gather:
		a.kind = Scatter
	case Scatter:
		a.kind = Gather
	case Scan:
		a.reverse = !s.reverse
	case SendRecv:
		a.dest, a.src = s.src, s.dest
	default:
		return a, fmt.Errorf("%w: %s: %v has no gradient (use SendRecv, whose gradient is the reverse SendRecv)", ErrBadCall, o.name, s.kind)
	}
	return a, nil
}

func (o *collOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	a, err := o.adjoint(in[0].Dtype())
	if err != nil {
		return nil, err
	}
	g, err := newNode(grad.Graph(), grad, o.comm, a, nil, tensor.Dtype{}, []Option{WithName("grad " + o.name)})
	if err != nil {
		return nil, err
	}
	if g, err = ops.GradFor(in[0], g); err != nil {
		return nil, err
	}
	o.differentiated = true
	grads := make(gorgonia.Nodes, len(in))
	grads[0] = g
	return grads, nil
}

func (o *collOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	// The backward pass of a failed run, which Gorgonia's LispMachine goes
	// on with after RunAll returned its error, stops here: its calls would
	// pair with the next graph's on the other ranks.
	if err := failedruns.Check(o.graph, o.ranAt, o); err != nil {
		return err
	}
	if o.adjointRun == nil {
		a, err := o.adjoint(in[0].Dtype())
		if err != nil {
			return err
		}
		o.adjointRun = &collOp{spec: a, comm: o.comm, mesh: o.mesh, name: "grad " + o.name, arity: 1, graph: o.graph}
	}
	og, err := ops.GradValue(out)
	if err != nil {
		return err
	}
	g, err := o.adjointRun.Do(og)
	if err != nil {
		return err
	}
	ig, err := ops.GradValue(in[0])
	if err != nil {
		return err
	}
	return ops.Accumulate(ig, g)
}

// isNilValue reports whether v is nil or a nil pointer in an interface (a
// typed nil such as a (*tensor.Dense)(nil)).
func isNilValue(v gorgonia.Value) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}
