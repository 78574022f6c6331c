package collective

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// opCase is one graph op of the table: how to build it and the engine call
// that the reference of mesh_test.go evaluates.
type opCase struct {
	name   string
	linear bool // has a gradient
	build  func(x *G.Node, comm Comm) (*G.Node, error)
	call   func(size int) *Call // Kind, Op, Root, Src for the reference
}

func opCases(rng *rand.Rand, size int) []opCase {
	root := rng.IntN(size)
	perm := rng.Perm(size) // rank r sends to perm[r]
	src := make([]int, size)
	for r, d := range perm {
		src[d] = r
	}
	cases := []opCase{
		{"AllReduce(sum)", true, func(x *G.Node, c Comm) (*G.Node, error) { return AllReduceNode(x, c, Sum) }, func(int) *Call { return &Call{Kind: AllReduce, Op: Sum} }},
		{"AllReduce(prod)", false, func(x *G.Node, c Comm) (*G.Node, error) { return AllReduceNode(x, c, Prod) }, func(int) *Call { return &Call{Kind: AllReduce, Op: Prod} }},
		{"AllReduce(max)", false, func(x *G.Node, c Comm) (*G.Node, error) { return AllReduceNode(x, c, Max) }, func(int) *Call { return &Call{Kind: AllReduce, Op: Max} }},
		{"AllGather", true, func(x *G.Node, c Comm) (*G.Node, error) { return AllGatherNode(x, c) }, func(int) *Call { return &Call{Kind: AllGather} }},
		{"ReduceScatter(sum)", true, func(x *G.Node, c Comm) (*G.Node, error) { return ReduceScatterNode(x, c, Sum) }, func(int) *Call { return &Call{Kind: ReduceScatter, Op: Sum} }},
		{"ReduceScatter(min)", false, func(x *G.Node, c Comm) (*G.Node, error) { return ReduceScatterNode(x, c, Min) }, func(int) *Call { return &Call{Kind: ReduceScatter, Op: Min} }},
		{"AllToAll", true, func(x *G.Node, c Comm) (*G.Node, error) { return AllToAllNode(x, c) }, func(int) *Call { return &Call{Kind: AllToAll} }},
		{"Bcast", true, func(x *G.Node, c Comm) (*G.Node, error) { return BcastNode(x, c, root) }, func(int) *Call { return &Call{Kind: Bcast, Root: root} }},
		{"Reduce(sum)", true, func(x *G.Node, c Comm) (*G.Node, error) { return ReduceNode(x, c, Sum, root) }, func(int) *Call { return &Call{Kind: Reduce, Op: Sum, Root: root} }},
		{"Gather", true, func(x *G.Node, c Comm) (*G.Node, error) { return GatherNode(x, c, root) }, func(int) *Call { return &Call{Kind: Gather, Root: root} }},
		{"Scatter", true, func(x *G.Node, c Comm) (*G.Node, error) { return ScatterNode(x, c, root) }, func(int) *Call { return &Call{Kind: Scatter, Root: root} }},
		{"Scan(sum)", true, func(x *G.Node, c Comm) (*G.Node, error) { return ScanNode(x, c, Sum) }, func(int) *Call { return &Call{Kind: Scan, Op: Sum} }},
		{"Scan(prod)", false, func(x *G.Node, c Comm) (*G.Node, error) { return ScanNode(x, c, Prod) }, func(int) *Call { return &Call{Kind: Scan, Op: Prod} }},
		{"SendRecv", true, func(x *G.Node, c Comm) (*G.Node, error) {
			if ranks := c.LocalRanks(); len(ranks) == 1 { // a process communicator
				return SendRecvNode(x, c, perm[ranks[0]:ranks[0]+1], src[ranks[0]:ranks[0]+1], 3)
			}
			return SendRecvNode(x, c, perm, src, 3)
		}, func(int) *Call { return &Call{Kind: SendRecv, Src: src} }},
		{"Barrier", true, func(x *G.Node, c Comm) (*G.Node, error) { return BarrierNode(x, c) }, func(int) *Call { return &Call{Kind: AllReduce, Op: Max} }},
	}
	return cases
}

// expectedBlocks: what every rank's output block holds (row-major), from
// the element formulas of mesh_test.go on the row-major rank blocks.
func expectedBlocks(oc opCase, size int, blocks [][]complex128) [][]complex128 {
	c := oc.call(size)
	if oc.name == "Barrier" {
		return blocks
	}
	c.Count = len(blocks[0])
	switch c.Kind {
	case ReduceScatter, AllToAll, Scatter:
		c.Count /= size
	}
	return reference(c, size, blocks)
}

// meshInput makes x (the stacked rank blocks, rows·size × cols) as a host
// node and places it on the mesh in RowBlocks, one block per rank; a
// process communicator takes the host node itself.
func meshInput(t *testing.T, g *G.ExprGraph, comm Comm, dt tensor.Dtype, vals []complex128, shape tensor.Shape) (host, placed *G.Node) {
	t.Helper()
	host = G.NewTensor(g, dt, len(shape), G.WithShape(shape...), G.WithName("x"), G.WithValue(newDense(t, dt, shape, vals)))
	mc, ok := comm.(MeshComm)
	if !ok {
		return host, host
	}
	placed, err := ops.Shard(host, mc.Mesh(), sharding.RowBlocks())
	if err != nil {
		t.Fatal(err)
	}
	return host, placed
}

// newDense is a host tensor of vals (row-major).
func newDense(t *testing.T, dt tensor.Dtype, shape tensor.Shape, vals []complex128) *tensor.Dense {
	t.Helper()
	d := tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	b := hostBuffer(t, dt, vals).(*sharding.HostBuffer).Data()
	switch s := d.Data().(type) {
	case []float32:
		copy(s, b.([]float32))
	case []float64:
		copy(s, b.([]float64))
	case []complex64:
		copy(s, b.([]complex64))
	case []complex128:
		copy(s, b.([]complex128))
	}
	return d
}

func denseValues(t *testing.T, v G.Value) []complex128 {
	t.Helper()
	d, err := hostDense(v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sharding.NewHostBuffer(denseSlice(d))
	if err != nil {
		t.Fatal(err)
	}
	return bufferValues(b)
}

type commCase struct {
	name string
	comm Comm
}

func testComms(t *testing.T, sizes ...int) []commCase {
	var out []commCase
	for _, n := range sizes {
		out = append(out, commCase{fmt.Sprintf("mesh%d", n), cpuMeshComm(t, n)})
		if n == 1 {
			out = append(out, commCase{"self", Self()})
		}
	}
	return out
}

// TestGraphOpsForward runs every op through a TapeMachine on CPU meshes of
// 1…5 devices (and a one-rank process communicator), every dtype, vectors
// and matrices of odd sizes, against the reference.
func TestGraphOpsForward(t *testing.T) {
	rng := newRand(t)
	for _, cc := range testComms(t, 1, 2, 3, 4, 5) {
		size := cc.comm.Size()
		for _, oc := range opCases(rng, size) {
			for _, dt := range sharding.Dtypes {
				if (oc.name == "AllReduce(max)" || oc.name == "ReduceScatter(min)") && (dt == tensor.Complex64 || dt == tensor.Complex128) {
					continue
				}
				for _, cols := range []int{0, 1, 3} { // 0: a vector
					rows := size * (1 + rng.IntN(2)) // per rank, divisible by size
					block := tensor.Shape{rows}
					if cols > 0 {
						block = tensor.Shape{rows, cols}
					}
					name := fmt.Sprintf("%s/%s/%v/%v", cc.name, oc.name, dt, block)
					checkForward(t, rng, cc.comm, oc, dt, block, name)
				}
			}
		}
	}
}

func stackedShape(comm Comm, block tensor.Shape) tensor.Shape {
	s := block.Clone()
	if _, ok := comm.(MeshComm); ok {
		s[0] *= comm.Size()
	}
	return s
}

// checkForward runs the op three times: on its input, on new values bound
// to the input node (new memory), and on the bound value changed in place;
// the later runs reuse the op's call, buffers and output.
func checkForward(t *testing.T, rng *rand.Rand, comm Comm, oc opCase, dt tensor.Dtype, block tensor.Shape, name string) {
	t.Helper()
	size := comm.Size()
	var blocks [][]complex128
	var all []complex128
	draw := func() {
		blocks, all = make([][]complex128, size), nil
		for r := range blocks {
			blocks[r] = randomValues(rng, dt, block.TotalSize())
			all = append(all, blocks[r]...)
		}
	}
	draw()
	g := G.NewGraph()
	host, x := meshInput(t, g, comm, dt, all, stackedShape(comm, block))
	y, err := oc.build(x, comm)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	yh, err := ops.Gather(y)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	for run := range 3 {
		switch run {
		case 1: // a new input value
			draw()
			if err := G.Let(host, newDense(t, dt, host.Shape(), all)); err != nil {
				t.Fatal(err)
			}
		case 2: // the bound value changed in place
			draw()
			if err := tensor.Copy(host.Value().(*tensor.Dense), newDense(t, dt, host.Shape(), all)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.RunAll(); err != nil {
			t.Fatalf("%s: run %d: %v", name, run, err)
		}
		got := denseValues(t, yh.Value())
		var want []complex128
		for _, b := range expectedBlocks(oc, size, blocks) {
			want = append(want, b...)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d (shape %v)", name, len(got), len(want), yh.Shape())
		}
		tol := tolerance(dt)
		for i := range want {
			if cmplx.Abs(got[i]-want[i]) > tol*(1+cmplx.Abs(want[i])) {
				t.Fatalf("%s: run %d: element %d = %v, want %v", name, run, i, got[i], want[i])
			}
		}
		for i, v := range denseValues(t, x.Value()) { // the op's own input
			if cmplx.Abs(v-all[i]) > tol*(1+cmplx.Abs(all[i])) {
				t.Fatalf("%s: input element %d changed to %v from %v", name, i, v, all[i])
			}
		}
		m.Reset()
	}
}

// gradCheck builds cost = Σ W∘Gather(op(x)) for a random W and compares
// the gradient of x from Grad + TapeMachine or from the LispMachine with
// central finite differences of the cost.
func gradCheck(t *testing.T, rng *rand.Rand, comm Comm, oc opCase, dt tensor.Dtype, block tensor.Shape, lisp bool, name string) {
	t.Helper()
	size := comm.Size()
	shape := stackedShape(comm, block)
	xv := randomValues(rng, dt, shape.TotalSize())
	var wv []complex128
	build := func(vals []complex128) (*G.ExprGraph, *G.Node, *G.Node) {
		g := G.NewGraph()
		host, x := meshInput(t, g, comm, dt, vals, shape)
		y, err := oc.build(x, comm)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// y feeds two consumers on purpose: Gorgonia sums their gradients.
		y2, err := AllReduceNode(y, comm, Sum)
		if err != nil {
			t.Fatal(err)
		}
		yh, err := ops.Gather(y)
		if err != nil {
			t.Fatal(err)
		}
		y2h, err := ops.Gather(y2)
		if err != nil {
			t.Fatal(err)
		}
		if wv == nil {
			wv = randomValues(rng, dt, 2*yh.Shape().TotalSize())
		}
		w1 := G.NewTensor(g, dt, yh.Dims(), G.WithShape(yh.Shape()...), G.WithName("w1"), G.WithValue(denseOf(t, dt, yh.Shape(), wv[:yh.Shape().TotalSize()])))
		w2 := G.NewTensor(g, dt, yh.Dims(), G.WithShape(yh.Shape()...), G.WithName("w2"), G.WithValue(denseOf(t, dt, yh.Shape(), wv[yh.Shape().TotalSize():])))
		cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(yh, w1)))), G.Must(G.Sum(G.Must(G.HadamardProd(y2h, w2))))))
		return g, host, cost
	}
	costOf := func(vals []complex128) float64 {
		g, _, cost := build(vals)
		m := G.NewTapeMachine(g)
		defer m.Close()
		if err := m.RunAll(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return real(denseScalar(cost.Value()))
	}
	g, host, cost := build(xv)
	var m G.VM
	if lisp {
		m = G.NewLispMachine(g)
	} else {
		if _, err := G.Grad(cost, host); err != nil {
			t.Fatalf("%s: Grad: %v", name, err)
		}
		m = G.NewTapeMachine(g)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	gv, err := host.Grad()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	grad := denseValues(t, gv)
	h, tol := 1e-6, 1e-7
	if dt == tensor.Float32 {
		h, tol = 1e-2, 2e-3
	}
	for i := range xv {
		p, q := append([]complex128(nil), xv...), append([]complex128(nil), xv...)
		p[i] += complex(h, 0)
		q[i] -= complex(h, 0)
		fd := (costOf(p) - costOf(q)) / (2 * h)
		if math.Abs(real(grad[i])-fd) > tol*(1+math.Abs(fd)) {
			t.Fatalf("%s: d cost / d x[%d] = %v, finite differences %v", name, i, real(grad[i]), fd)
		}
	}
	_ = size
}

func denseOf(t *testing.T, dt tensor.Dtype, shape tensor.Shape, vals []complex128) *tensor.Dense {
	d := tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	switch s := denseSlice(d).(type) {
	case []float32:
		copy(s, hostBuffer(t, dt, vals).(*sharding.HostBuffer).Data().([]float32))
	case []float64:
		copy(s, hostBuffer(t, dt, vals).(*sharding.HostBuffer).Data().([]float64))
	}
	return d
}

func denseScalar(v G.Value) complex128 {
	switch x := v.(type) {
	case *G.F64:
		return complex(float64(*x), 0)
	case *G.F32:
		return complex(float64(*x), 0)
	case *tensor.Dense:
		switch s := denseSlice(x).(type) {
		case []float64:
			return complex(s[0], 0)
		case []float32:
			return complex(float64(s[0]), 0)
		}
	}
	panic(fmt.Sprintf("not a real scalar: %T", v))
}

// TestGraphOpsGradients checks the gradient of every linear op against
// finite differences on meshes of 1…4 devices and a one-rank process
// communicator, float64 tightly and float32 loosely, TapeMachine and
// LispMachine.
func TestGraphOpsGradients(t *testing.T) {
	rng := newRand(t)
	for _, cc := range testComms(t, 1, 2, 3, 4) {
		size := cc.comm.Size()
		for _, oc := range opCases(rng, size) {
			if !oc.linear {
				continue
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				for _, lisp := range []bool{false, true} {
					block := tensor.Shape{size, 1 + rng.IntN(2)}
					if dt == tensor.Float32 {
						block = tensor.Shape{size}
					}
					name := fmt.Sprintf("%s/%s/%v/%v/lisp=%v", cc.name, oc.name, dt, block, lisp)
					gradCheck(t, rng, cc.comm, oc, dt, block, lisp, name)
				}
			}
		}
	}
}

// TestReversedCommClosesWithItsParent: the reversed copy of a communicator
// that Scan's gradient runs on is made once and closed with its parent, so
// that a program making a communicator per job keeps none of them open; a
// communicator of one rank (Self) is its own reverse, and none is kept.
func TestReversedCommClosesWithItsParent(t *testing.T) {
	rng := newRand(t)
	for _, cc := range testComms(t, 1, 3) {
		size := cc.comm.Size()
		var scan opCase
		for _, oc := range opCases(rng, size) {
			if oc.name == "Scan(sum)" {
				scan = oc
			}
		}
		gradCheck(t, rng, cc.comm, scan, tensor.Float64, tensor.Shape{size, 2}, false, cc.name)
		rev, ok := reversedComms.Load(cc.comm)
		if size == 1 {
			if ok {
				t.Errorf("%s: a reversed communicator was kept for one rank", cc.name)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: Scan's gradient left no reversed communicator", cc.name)
		}
		if err := cc.comm.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := reversedComms.Load(cc.comm); ok {
			t.Errorf("%s: the reversed communicator is still cached after Close", cc.name)
		}
		if err := rev.(Comm).Do(&Call{Kind: Barrier}); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Barrier on the reversed communicator after its parent's Close: %v, want ErrClosed", cc.name, err)
		}
	}
}

// TestCloseHooks: Run runs what Add added, in order and once; Add after Run
// runs at once.
func TestCloseHooks(t *testing.T) {
	var h CloseHooks
	var got []int
	h.Add(func() { got = append(got, 1) })
	h.Add(func() { got = append(got, 2) })
	h.Run()
	h.Run()
	h.Add(func() { got = append(got, 3) })
	if want := []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}

// TestGraphOpsNonLinearGradient: prod/min/max reductions and Send have no
// gradient; Grad says so.
func TestGraphOpsNonLinearGradient(t *testing.T) {
	rng := newRand(t)
	for _, cc := range testComms(t, 1, 3) {
		for _, oc := range opCases(rng, cc.comm.Size()) {
			if oc.linear {
				continue
			}
			g := G.NewGraph()
			shape := stackedShape(cc.comm, tensor.Shape{cc.comm.Size()})
			host, x := meshInput(t, g, cc.comm, tensor.Float64, randomValues(rng, tensor.Float64, shape.TotalSize()), shape)
			y, err := oc.build(x, cc.comm)
			if err != nil {
				t.Fatal(err)
			}
			yh, _ := ops.Gather(y)
			cost := G.Must(G.Sum(yh))
			if _, err := G.Grad(cost, host); !errorsIsDeep(err, ErrBadCall) {
				t.Errorf("%s/%s: Grad err = %v, want ErrBadCall", cc.name, oc.name, err)
			}
		}
	}
}

// errorsIsDeep digs through Gorgonia's wrappers like mgla.Cause.
func errorsIsDeep(err, target error) bool {
	for err != nil {
		if errors.Is(err, target) {
			return true
		}
		if inner := ops.UnwrapSymDiff(err); inner != nil && inner != err {
			err = inner
			continue
		}
		switch e := err.(type) {
		case interface{ Err() error }:
			err = e.Err()
		case interface{ Cause() error }:
			err = e.Cause()
		default:
			return false
		}
	}
	return false
}

// TestGraphOpsBuildErrors: what does not fit the communicator fails when
// the node is built, with ErrBadCall (or ErrMeshMismatch).
func TestGraphOpsBuildErrors(t *testing.T) {
	m3, _ := sharding.CPUMesh(3)
	m2, _ := sharding.CPUMesh(2)
	mesh, _ := NewMesh(m3)
	self := Self()
	g := G.NewGraph()
	vec := func(n int, dt tensor.Dtype) *G.Node { return G.NewVector(g, dt, G.WithShape(n)) }
	mat := func(r, c int) *G.Node { return G.NewMatrix(g, tensor.Float64, G.WithShape(r, c)) }
	other, err := ops.Shard(vec(6, tensor.Float64), m2, sharding.RowBlocks())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		build func() (*G.Node, error)
		want  error
	}{
		{"first axis not in rank blocks", func() (*G.Node, error) { return AllReduceNode(vec(7, tensor.Float64), mesh, Sum) }, ErrBadCall},
		{"reduce-scatter of 2 rows on 3 ranks", func() (*G.Node, error) { return ReduceScatterNode(mat(6, 2), mesh, Sum) }, ErrBadCall},
		{"scatter on self of any rows", func() (*G.Node, error) { return ScatterNode(mat(5, 2), self, 0) }, nil},
		{"all-to-all of 1 row per rank", func() (*G.Node, error) { return AllToAllNode(vec(3, tensor.Float64), mesh) }, ErrBadCall},
		{"3-D on a mesh", func() (*G.Node, error) {
			return AllGatherNode(G.NewTensor(g, tensor.Float64, 3, G.WithShape(3, 2, 2)), mesh)
		}, ErrBadCall},
		{"3-D on self", func() (*G.Node, error) {
			return AllGatherNode(G.NewTensor(g, tensor.Float64, 3, G.WithShape(3, 2, 2)), self)
		}, nil},
		{"root out of range", func() (*G.Node, error) { return BcastNode(vec(3, tensor.Float64), mesh, 3) }, ErrBadCall},
		{"negative root", func() (*G.Node, error) { return ReduceNode(vec(3, tensor.Float64), mesh, Sum, -1) }, ErrBadCall},
		{"max of complex", func() (*G.Node, error) { return AllReduceNode(vec(3, tensor.Complex128), mesh, Max) }, ErrBadCall},
		{"unknown reduction", func() (*G.Node, error) { return ScanNode(vec(3, tensor.Float64), mesh, ReduceOp(9)) }, ErrBadCall},
		{"integers", func() (*G.Node, error) { return AllReduceNode(vec(3, tensor.Int), mesh, Sum) }, nil},
		{"nil option", func() (*G.Node, error) { return AllReduceNode(vec(3, tensor.Float64), mesh, Sum, nil, WithName("s")) }, nil},
		{"booleans", func() (*G.Node, error) { return AllReduceNode(vec(3, tensor.Bool), mesh, Sum) }, ErrBadCall},
		{"send on a mesh", func() (*G.Node, error) { return SendNode(vec(3, tensor.Float64), mesh, 1, 0) }, ErrBadCall},
		{"recv on a mesh", func() (*G.Node, error) { return RecvNode(g, mesh, tensor.Shape{3}, tensor.Float64, 1, 0) }, ErrBadCall},
		{"peers per local rank", func() (*G.Node, error) {
			return SendRecvNode(vec(3, tensor.Float64), mesh, []int{1, 0}, []int{1, 0}, 0)
		}, ErrBadCall},
		{"peer out of range", func() (*G.Node, error) {
			return SendRecvNode(vec(3, tensor.Float64), mesh, []int{1, 2, 3}, []int{2, 0, 1}, 0)
		}, ErrBadCall},
		{"negative tag", func() (*G.Node, error) { return SendRecvNode(vec(3, tensor.Float64), self, []int{0}, []int{0}, -1) }, ErrBadCall},
		// Open MPI's MPI_ANY_SOURCE and MPI_ANY_TAG are −1: no wildcards.
		{"recv from any source", func() (*G.Node, error) { return RecvNode(g, self, tensor.Shape{3}, tensor.Float64, -1, 0) }, ErrBadCall},
		{"recv with any tag", func() (*G.Node, error) { return RecvNode(g, self, tensor.Shape{3}, tensor.Float64, 0, -1) }, ErrBadCall},
		{"value on another mesh", func() (*G.Node, error) { return AllReduceNode(other, mesh, Sum) }, sharding.ErrMeshMismatch},
		{"sharded value on a process communicator", func() (*G.Node, error) { return AllReduceNode(other, self, Sum) }, sharding.ErrMeshMismatch},
		{"nil communicator", func() (*G.Node, error) { return AllReduceNode(vec(3, tensor.Float64), nil, Sum) }, ErrBadCall},
		{"recv into a nil graph", func() (*G.Node, error) { return RecvNode(nil, self, tensor.Shape{3}, tensor.Float64, 0, 0) }, ErrBadCall},
		{"scalar all-reduce on self", func() (*G.Node, error) { return AllReduceNode(G.NewScalar(g, tensor.Float64), self, Sum) }, nil},
		{"scalar all-gather", func() (*G.Node, error) { return AllGatherNode(G.NewScalar(g, tensor.Float64), self) }, ErrBadCall},
		{"scalar on a mesh", func() (*G.Node, error) { return AllReduceNode(G.NewScalar(g, tensor.Float64), mesh, Sum) }, ErrBadCall},
		{"communicator not comparable, twice", func() (*G.Node, error) {
			// (the second build compared it with the first and panicked)
			c := taggedComm{self, []string{"job"}}
			if _, err := AllReduceNode(vec(3, tensor.Float64), c, Sum); !errors.Is(err, ErrBadCall) {
				return nil, fmt.Errorf("first build: %v", err)
			}
			return AllReduceNode(vec(3, tensor.Float64), c, Sum)
		}, ErrBadCall},
	} {
		_, err := tc.build()
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// taggedComm is a communicator that == cannot compare (a slice field).
type taggedComm struct {
	Comm
	tags []string
}

// TestBuildErrorsSayWhat: the build errors that a mistake in the call
// (rather than in the values) makes say what the mistake is.
func TestBuildErrorsSayWhat(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"))
	mesh := cpuMeshComm(t, 3)
	self := Self()
	for _, tc := range []struct {
		name  string
		build func() (*G.Node, error)
		says  string
	}{
		{"nil input", func() (*G.Node, error) { return AllReduceNode(nil, mesh, Sum) }, "nil input node"},
		{"nil input of Send", func() (*G.Node, error) { return SendNode(nil, self, 0, 0) }, "nil input node"},
		// A constant has no graph to join (it failed in Gorgonia: "No Graph Supplied").
		{"a constant", func() (*G.Node, error) {
			return AllReduceNode(G.NewConstant(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))), self, Sum)
		}, "constant of no graph"},
		{"send to itself", func() (*G.Node, error) { return SendNode(x, self, 0, 0) }, "sends to its own rank 0"},
		{"recv from itself", func() (*G.Node, error) { return RecvNode(g, self, tensor.Shape{3}, tensor.Float64, 0, 0) }, "receives from its own rank 0"},
	} {
		_, err := tc.build()
		if !errors.Is(err, ErrBadCall) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err = %v, want ErrBadCall saying %q", tc.name, err, tc.says)
		}
	}
	if err := self.Do(&Call{Kind: Send, Dest: []int{0}, Dtype: tensor.Float64, Count: 1}); !errors.Is(err, ErrBadCall) || !strings.Contains(err.Error(), "self communicator") {
		t.Errorf("Send on Self: %v, want ErrBadCall about the self communicator", err)
	}
}

// A collective node that Gorgonia hands no input value (nil, or a typed nil
// tensor) fails with ErrBadCall naming it instead of dereferencing it.
func TestDoWithoutInputValue(t *testing.T) {
	o := &collOp{spec: spec{kind: AllReduce}, name: "sum of x"}
	for _, v := range []G.Value{nil, (*tensor.Dense)(nil)} {
		if _, err := o.Do(v); !errors.Is(err, ErrBadCall) || !strings.Contains(err.Error(), "sum of x") {
			t.Errorf("Do(%#v): %v, want ErrBadCall naming the node", v, err)
		}
	}
}

// TestHostRunBoundValues: a process communicator's op takes a value of its
// input node's shape and dtype (new memory each run, as gorgonia.Let binds
// it; (1, n) and (n, 1) for an (n) node, as Let allows; column-major
// tensors in their logical order), and refuses one of another shape or
// dtype (a Go number, which Let binds to any node unchecked, or Do called
// directly) with ErrBadCall and sharding.ErrBadInput: it used to run the
// collective on it, a scalar value for a matrix node.
func TestHostRunBoundValues(t *testing.T) {
	rng := newRand(t)
	comm := Self()
	for _, oc := range opCases(rng, 1) {
		for _, shape := range []tensor.Shape{{3}, {2, 3}, {2, 3, 2}} {
			n := shape.TotalSize()
			g := G.NewGraph()
			x := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"), G.WithInit(G.Zeroes()))
			y, err := oc.build(x, comm)
			if err != nil {
				t.Fatalf("%s: %v", oc.name, err)
			}
			op := y.Op().(*collOp)
			check := func(what string, in G.Value, logical []float64) {
				t.Helper()
				out, err := op.Do(in)
				if err != nil {
					t.Fatalf("%s %v: %s: %v", oc.name, shape, what, err)
				}
				if !out.Shape().Eq(shape) || out.Dtype() != tensor.Float64 {
					t.Fatalf("%s %v: %s: output %v %v", oc.name, shape, what, out.Dtype(), out.Shape())
				}
				want := expectedBlocks(oc, 1, [][]complex128{realsToComplex(logical)})[0]
				for i, v := range denseValues(t, out) {
					if cmplx.Abs(v-want[i]) > 1e-12*(1+cmplx.Abs(want[i])) {
						t.Fatalf("%s %v: %s: element %d = %v, want %v", oc.name, shape, what, i, v, want[i])
					}
				}
			}
			for run := range 2 { // new memory each run
				vals := randomReals(rng, n)
				check(fmt.Sprintf("run %d", run), tensor.New(tensor.WithShape(shape...), tensor.WithBacking(vals)), vals)
			}
			if len(shape) == 1 {
				for _, eq := range []tensor.Shape{{1, n}, {n, 1}} {
					vals := randomReals(rng, n)
					check(fmt.Sprintf("a %v value", eq), tensor.New(tensor.WithShape(eq...), tensor.WithBacking(vals)), vals)
				}
			} else {
				// Column-major (tensor.AsFortran), read in its logical order.
				logical := randomReals(rng, n)
				backing := make([]float64, n)
				for i := range n {
					// the column-major position of row-major index i
					rem, pos, stride := i, 0, 1
					idx := make([]int, len(shape))
					for d := len(shape) - 1; d >= 0; d-- {
						idx[d] = rem % shape[d]
						rem /= shape[d]
					}
					for d := range shape {
						pos += idx[d] * stride
						stride *= shape[d]
					}
					backing[pos] = logical[i]
				}
				check("column-major", tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing), tensor.AsFortran(nil)), logical)
			}
			for _, bad := range []G.Value{
				G.NewF64(3), G.NewF32(3), G.NewI(3),
				tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(4)),
				tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(n, 2)),
				tensor.New(tensor.Of(tensor.Complex128), tensor.WithShape(shape...)),
				tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(1, 0)),
			} {
				if _, err := op.Do(bad); !errors.Is(err, ErrBadCall) || !errors.Is(err, sharding.ErrBadInput) || !strings.Contains(err.Error(), "input node of shape") {
					t.Errorf("%s %v: a %v %v value: %v, want ErrBadCall and ErrBadInput naming the node's shape", oc.name, shape, bad.Dtype(), bad.Shape(), err)
				}
			}
			vals := randomReals(rng, n)
			check("after the refusals", tensor.New(tensor.WithShape(shape...), tensor.WithBacking(vals)), vals)
		}
	}
}

// randomReals is n standard normal values.
func randomReals(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// TestHostInputGradient: a host node fed to mesh collectives (which place it
// on the mesh themselves) gets a host gradient, also when it feeds several
// ops — two collectives, or a collective and Gorgonia's own arithmetic — so
// that Gorgonia can add the parts; the TapeMachine and the LispMachine agree
// with the hand-computed values.
func TestHostInputGradient(t *testing.T) {
	comm := cpuMeshComm(t, 4)
	const rows, cols = 8, 3
	xs := make([]float64, rows*cols)
	for i := range xs {
		xs[i] = float64(i%7) - 3
	}
	sumOf := func(n *G.Node) *G.Node {
		if ops.IsSharded(n) {
			n = G.Must(ops.Gather(n))
		}
		return G.Must(G.Sum(n))
	}
	cases := []struct {
		name string
		cost func(x *G.Node) (*G.Node, error)
		want func(x float64) float64
	}{
		// Every rank gets the sum of the 4 blocks: each element counts 4 times.
		{"AllReduce alone", func(x *G.Node) (*G.Node, error) {
			y, err := AllReduceNode(x, comm, Sum)
			return sumOf(y), err
		}, func(float64) float64 { return 4 }},
		{"AllReduce and AllGather", func(x *G.Node) (*G.Node, error) {
			y1, err := AllReduceNode(x, comm, Sum)
			if err != nil {
				return nil, err
			}
			y2, err := AllGatherNode(x, comm)
			if err != nil {
				return nil, err
			}
			return G.Add(sumOf(y1), sumOf(y2))
		}, func(float64) float64 { return 8 }},
		{"AllReduce and Square", func(x *G.Node) (*G.Node, error) {
			y, err := AllReduceNode(x, comm, Sum)
			if err != nil {
				return nil, err
			}
			return G.Add(sumOf(y), sumOf(G.Must(G.Square(x))))
		}, func(x float64) float64 { return 4 + 2*x }},
	}
	for _, tc := range cases {
		for _, lisp := range []bool{false, true} {
			name := fmt.Sprintf("%s/lisp=%v", tc.name, lisp)
			g := G.NewGraph()
			x := G.NewMatrix(g, tensor.Float64, G.WithShape(rows, cols), G.WithName("x"),
				G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(slices.Clone(xs)))))
			cost, err := tc.cost(x)
			if err != nil {
				t.Fatal(name, err)
			}
			var vm G.VM
			if lisp {
				vm = G.NewLispMachine(g)
			} else {
				if _, err := G.Grad(cost, x); err != nil {
					t.Fatal(name, err)
				}
				vm = G.NewTapeMachine(g)
			}
			err = vm.RunAll()
			vm.Close()
			if err != nil {
				t.Fatal(name, err)
			}
			gv, err := x.Grad()
			if err != nil {
				t.Fatal(name, err)
			}
			d, ok := gv.(*tensor.Dense)
			if !ok {
				t.Fatalf("%s: the gradient of a host node is a %T", name, gv)
			}
			for i, got := range d.Data().([]float64) {
				if w := tc.want(xs[i]); got != w {
					t.Fatalf("%s: element %d = %v, want %v", name, i, got, w)
				}
			}
		}
	}
}

func realsToComplex(xs []float64) []complex128 {
	out := make([]complex128, len(xs))
	for i, x := range xs {
		out[i] = complex(x, 0)
	}
	return out
}

// failingReverse is a communicator whose split-off communicators (the
// reversed copy Scan's gradient runs on) fail every call with an error that
// names one of their ranks, as a timeout does.
type failingReverse struct{ MeshComm }

func (c failingReverse) Split(color, key func(rank int) int) ([]Comm, error) {
	cs, err := c.MeshComm.Split(color, key)
	for i := range cs {
		cs[i] = failingDo{cs[i]}
	}
	return cs, err
}

type failingDo struct{ Comm }

func (failingDo) Do(*Call) error { return fmt.Errorf("%w: no word from rank 0", ErrTimeout) }

// TestReverseScanErrorSaysRanksAreReversed: an error of the reverse scan
// (Scan's gradient) names a rank of the reversed communicator, whose ranks
// are numbered backwards; the error says so (a review read "no word from
// rank 1" on rank 1 itself).
func TestReverseScanErrorSaysRanksAreReversed(t *testing.T) {
	mesh := cpuMeshComm(t, 3)
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(6), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
	s, err := ScanNode(x, failingReverse{mesh}, Sum)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(G.Must(G.Sum(G.Must(ops.Gather(s)))), x); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	err = vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "no word from rank 0") || !strings.Contains(err.Error(), "numbers the ranks backwards: its rank r is rank 2−r") {
		t.Fatalf("got %v, want the reverse scan's error and a note that its ranks are reversed", err)
	}
}

// cpuMeshComm is the communicator of a CPU mesh of n devices, closed when
// the test ends.
func cpuMeshComm(t *testing.T, n int) MeshComm {
	t.Helper()
	m, err := sharding.CPUMesh(n)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFreedInput: a collective on a freed sharded input is
// sharding.ErrFreed, as every op reading a freed tensor is (AllReduce and
// AllGather said "nil send buffer"), on both machines.
func TestFreedInput(t *testing.T) {
	comm := cpuMeshComm(t, 2)
	mesh := comm.Mesh()
	for _, lisp := range []bool{false, true} {
		for _, kind := range []string{"AllReduce", "AllGather", "Barrier"} {
			a, err := sharding.Put(tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{1, 2, 3, 4})), mesh, sharding.RowBlocks())
			if err != nil {
				t.Fatal(err)
			}
			a.Free()
			g := G.NewGraph()
			in := ops.Input(g, a, "A")
			var out *G.Node
			switch kind {
			case "AllReduce":
				out, err = AllReduceNode(in, comm, Sum)
			case "AllGather":
				out, err = AllGatherNode(in, comm)
			case "Barrier":
				out, err = BarrierNode(in, comm)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ops.Gather(out); err != nil {
				t.Fatal(err)
			}
			var m G.VM = G.NewTapeMachine(g)
			if lisp {
				m = G.NewLispMachine(g, G.ExecuteFwdOnly()) // see ops.TestInputNilAndFreed
			}
			err = m.RunAll()
			m.Close()
			for e, ok := err.(interface{ Err() error }); ok; e, ok = err.(interface{ Err() error }) {
				err = e.Err()
			}
			if !errors.Is(err, sharding.ErrFreed) {
				t.Errorf("%s, LispMachine %v: %v, want sharding.ErrFreed", kind, lisp, err)
			}
		}
	}
}

// TestBackwardAfterFailedRun: an op's LispMachine backward step after a
// failure of an op of its graph (which ended the run whose backward pass
// Gorgonia goes on with after RunAll returned) is refused before any call;
// a failure in another graph on the same communicator (another goroutine's)
// is not its business; the next forward clears it.
func TestBackwardAfterFailedRun(t *testing.T) {
	comm := cpuMeshComm(t, 2)
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3, 4}))))
	y, err := AllReduceNode(x, comm, Sum)
	if err != nil {
		t.Fatal(err)
	}
	G.Must(G.Sum(G.Must(ops.Gather(y))))
	run := func() error {
		m := G.NewLispMachine(g)
		defer m.Close()
		return m.RunAll()
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	o := y.Op().(*collOp)
	failedruns.Failed(G.NewGraph()) // another graph's failure
	if err := o.DoDiff(G.ExecutionContext{}, G.Nodes{x}, y); err != nil {
		t.Fatalf("backward step after another graph's failure: %v", err)
	}
	// A failure of another op of the graph after the forward.
	failedruns.Failed(g)
	if err := o.DoDiff(G.ExecutionContext{}, G.Nodes{x}, y); !errors.Is(err, failedruns.ErrFailedRun) {
		t.Fatalf("backward step after a failed run: %v, want ErrFailedRun", err)
	}
	if err := run(); err != nil {
		t.Fatalf("a new run after the failure: %v", err)
	}
}
