package collective_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The integer dtypes on the CPU mesh engine and through the graph ops,
// against the exact reference of package collectivetest.

func intRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 16))
}

// meshComms are the communicators of CPU meshes of the given sizes.
func meshComms(t *testing.T, sizes ...int) []collective.Comm {
	t.Helper()
	var out []collective.Comm
	for _, n := range sizes {
		m, err := sharding.CPUMesh(n)
		if err != nil {
			t.Fatal(err)
		}
		c, err := collective.NewMesh(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// intCall is one Kind with one reduction (Sum for kinds without one).
type intCall struct {
	kind collective.Kind
	op   collective.ReduceOp
}

// intCalls lists every data-moving Kind of a mesh, the reducing ones with
// every reduction (all four are defined for integers).
func intCalls() []intCall {
	var out []intCall
	for _, k := range []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.AllToAll,
		collective.Bcast, collective.Reduce, collective.Gather, collective.Scatter, collective.Scan, collective.SendRecv} {
		switch k {
		case collective.AllReduce, collective.ReduceScatter, collective.Reduce, collective.Scan:
			for _, op := range []collective.ReduceOp{collective.Sum, collective.Prod, collective.Min, collective.Max} {
				out = append(out, intCall{k, op})
			}
		default:
			out = append(out, intCall{k, collective.Sum})
		}
	}
	return out
}

// randomPeers sets a SendRecv call's peers to a random permutation.
func randomPeers(rng *rand.Rand, c *collective.Call, size int) {
	c.Dest, c.Src = rng.Perm(size), make([]int, size)
	for r, d := range c.Dest {
		c.Src[d] = r
	}
}

// hostBuffers wraps typed slices as host buffers.
func hostBuffers(t *testing.T, data []any) []sharding.Buffer {
	t.Helper()
	out := make([]sharding.Buffer, len(data))
	for i, d := range data {
		b, err := sharding.NewHostBuffer(d)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// Every Kind and reduction of every integer dtype on CPU meshes of 1…5
// devices and on Self: the receive buffers (one element longer than needed,
// which must stay) hold the exact reference, the send buffers are unchanged.
func TestMeshIntegers(t *testing.T) {
	rng := intRand(t)
	for _, comm := range append(meshComms(t, 1, 2, 3, 4, 5), collective.Self()) {
		size := comm.Size()
		for _, dt := range sharding.IntDtypes {
			for _, ic := range intCalls() {
				for _, count := range []int{1, 7} {
					c := &collective.Call{Kind: ic.kind, Op: ic.op, Dtype: dt, Count: count, Root: rng.IntN(size)}
					if ic.kind == collective.SendRecv {
						randomPeers(rng, c, size)
					}
					name := fmt.Sprintf("%v/%v/%v/%v/count %d/root %d", comm, ic.kind, ic.op, dt, count, c.Root)
					checkIntCall(t, rng, comm, c, name)
				}
			}
		}
	}
}

// checkIntCall runs c on comm, whose local ranks are all ranks, with random
// data and checks it exactly.
func checkIntCall(t *testing.T, rng *rand.Rand, comm collective.Comm, c *collective.Call, name string) {
	t.Helper()
	size := comm.Size()
	send, recv, before := make([]any, size), make([]any, size), make([]any, size)
	for r := range size {
		send[r] = collectivetest.RandomInts(rng, c.Dtype, c.Op, c.SendLen(size)+1, size)
		recv[r] = collectivetest.RandomInts(rng, c.Dtype, collective.Sum, c.RecvLen(size)+1, 1)
		before[r] = collectivetest.Clone(send[r])
	}
	c.Send, c.Recv = hostBuffers(t, send), hostBuffers(t, recv)
	past := make([]any, size)
	for r := range size {
		past[r] = collectivetest.Clone(collectivetest.Slice(recv[r], c.RecvLen(size), c.RecvLen(size)+1))
	}
	if err := comm.Do(c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := collectivetest.ReferenceInts(c, size, send)
	for r := range size {
		if got := collectivetest.Slice(recv[r], 0, c.RecvLen(size)); !reflect.DeepEqual(got, want[r]) {
			t.Fatalf("%s: rank %d received %v, want %v", name, r, got, want[r])
		}
		if got := collectivetest.Slice(recv[r], c.RecvLen(size), c.RecvLen(size)+1); !reflect.DeepEqual(got, past[r]) {
			t.Fatalf("%s: rank %d: the element past the receive length changed to %v from %v", name, r, got, past[r])
		}
		if !reflect.DeepEqual(send[r], before[r]) {
			t.Fatalf("%s: rank %d's send buffer changed", name, r)
		}
	}
}

// graphCase builds one graph op on x.
type graphCase struct {
	name  string
	build func(x *G.Node, comm collective.Comm) (*G.Node, error)
	call  collective.Call // Kind, Op, Root, Src of the reference
}

func graphCases(rng *rand.Rand, size int, local []int) []graphCase {
	root := rng.IntN(size)
	peers := &collective.Call{}
	randomPeers(rng, peers, size)
	var out []graphCase
	for _, ic := range intCalls() {
		ic := ic
		c := collective.Call{Kind: ic.kind, Op: ic.op, Root: root, Src: peers.Src}
		build := map[collective.Kind]func(x *G.Node, comm collective.Comm) (*G.Node, error){
			collective.AllReduce:     func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.AllReduceNode(x, c, ic.op) },
			collective.AllGather:     func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.AllGatherNode(x, c) },
			collective.ReduceScatter: func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.ReduceScatterNode(x, c, ic.op) },
			collective.AllToAll:      func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.AllToAllNode(x, c) },
			collective.Bcast:         func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.BcastNode(x, c, root) },
			collective.Reduce:        func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.ReduceNode(x, c, ic.op, root) },
			collective.Gather:        func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.GatherNode(x, c, root) },
			collective.Scatter:       func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.ScatterNode(x, c, root) },
			collective.Scan:          func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.ScanNode(x, c, ic.op) },
			collective.SendRecv: func(x *G.Node, c collective.Comm) (*G.Node, error) {
				dest, src := make([]int, len(local)), make([]int, len(local))
				for i, r := range local {
					dest[i], src[i] = peers.Dest[r], peers.Src[r]
				}
				return collective.SendRecvNode(x, c, dest, src, 5)
			},
		}[ic.kind]
		out = append(out, graphCase{fmt.Sprintf("%v(%v)", ic.kind, ic.op), build, c})
	}
	out = append(out, graphCase{"Barrier", func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.BarrierNode(x, c) },
		collective.Call{Kind: collective.Barrier}})
	return out
}

// blockCall is the engine call that the reference evaluates for a rank
// block of elems elements (row-major).
func blockCall(gc graphCase, dt tensor.Dtype, size, elems int) *collective.Call {
	c := gc.call
	c.Dtype, c.Count = dt, elems
	switch c.Kind {
	case collective.ReduceScatter, collective.AllToAll, collective.Scatter:
		c.Count /= size
	}
	return &c
}

// Every graph op forward on integer values through a TapeMachine, on CPU
// meshes of 1, 3 and 4 devices (values placed with ops.Shard and brought
// back with ops.Gather) and on Self (host values), vectors and matrices:
// exactly the reference, twice (the second run reuses the buffers), the
// input unchanged.
func TestGraphIntegers(t *testing.T) {
	rng := intRand(t)
	for _, comm := range append(meshComms(t, 1, 3, 4), collective.Self()) {
		for _, dt := range sharding.IntDtypes {
			for _, gc := range graphCases(rng, comm.Size(), comm.LocalRanks()) {
				for _, cols := range []int{0, 3} { // 0: a vector
					checkGraphInts(t, rng, comm, gc, dt, cols)
				}
			}
		}
	}
}

// checkGraphInts runs gc on random integer rank blocks of dt (vectors for
// cols 0, else matrices) drawn from rng, which must draw the same on every
// rank of a process communicator: on a mesh the blocks are stacked, placed
// with ops.Shard and brought back with ops.Gather; a process communicator
// takes its rank's block. The result must be exactly the reference, twice
// (the second run reuses the buffers), the input unchanged.
func checkGraphInts(t *testing.T, rng *rand.Rand, comm collective.Comm, gc graphCase, dt tensor.Dtype, cols int) {
	t.Helper()
	size := comm.Size()
	mc, isMesh := comm.(collective.MeshComm)
	block := tensor.Shape{size * (1 + rng.IntN(2))}
	if cols > 0 {
		block = append(block, cols)
	}
	name := fmt.Sprintf("%v/%s/%v/%v", comm, gc.name, dt, block)
	elems := block.TotalSize()
	op := gc.call.Op
	switch gc.call.Kind {
	case collective.AllReduce, collective.ReduceScatter, collective.Reduce, collective.Scan:
	default:
		op = collective.Sum
	}
	blocks := make([]any, size) // row-major rank blocks
	for r := range blocks {
		blocks[r] = collectivetest.RandomInts(rng, dt, op, elems, size)
	}
	var want []any // the expected result blocks
	if gc.call.Kind == collective.Barrier {
		want = blocks
	} else {
		want = collectivetest.ReferenceInts(blockCall(gc, dt, size, elems), size, blocks)
	}
	shape := block.Clone()
	if isMesh {
		shape[0] *= size
	} else {
		me := comm.LocalRanks()[0]
		blocks, want = blocks[me:me+1], want[me:me+1]
	}
	stack := func(parts []any) any {
		v := reflect.MakeSlice(reflect.SliceOf(dt.Type), 0, 0)
		for _, p := range parts {
			v = reflect.AppendSlice(v, reflect.ValueOf(p))
		}
		return v.Interface()
	}
	input, wantAll := stack(blocks), stack(want)
	g := G.NewGraph()
	x := G.NewTensor(g, dt, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(collectivetest.Clone(input)))))
	in := x
	if isMesh {
		var err error
		if in, err = ops.Shard(x, mc.Mesh(), sharding.RowBlocks()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	y, err := gc.build(in, comm)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	yh, err := ops.Gather(y)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	for run := range 2 {
		if err := m.RunAll(); err != nil {
			t.Fatalf("%s: run %d: %v", name, run, err)
		}
		if got := yh.Value().Data(); !reflect.DeepEqual(got, wantAll) {
			t.Fatalf("%s: run %d: got %v, want %v", name, run, got, wantAll)
		}
		if got := x.Value().Data(); !reflect.DeepEqual(got, input) {
			t.Fatalf("%s: the input changed", name)
		}
		m.Reset()
	}
}

// Differentiating through a collective of integers fails with an error
// wrapping ErrBadCall (seen through mgla.Cause), symbolically
// (Backpropagate, what Grad runs) and with the LispMachine, on a mesh and on
// Self; it does not panic or give zeros. (On a mesh the LispMachine meets
// ops.Gather's gradient first, which rejects integers with its own error.)
func TestGraphIntegerGradient(t *testing.T) {
	for _, comm := range append(meshComms(t, 3), collective.Self()) {
		for _, dt := range []tensor.Dtype{tensor.Int64, tensor.Int32, tensor.Uint8} {
			for _, lisp := range []bool{false, true} {
				name := fmt.Sprintf("%v/%v/lisp=%v", comm, dt, lisp)
				g := G.NewGraph()
				n := 3 * comm.Size()
				x := G.NewVector(g, dt, G.WithShape(n), G.WithName("x"),
					G.WithValue(tensor.New(tensor.WithShape(n), tensor.Of(dt))))
				in, err := x, error(nil)
				if mc, ok := comm.(collective.MeshComm); ok {
					if in, err = ops.Shard(x, mc.Mesh(), sharding.RowBlocks()); err != nil {
						t.Fatal(err)
					}
				}
				y, err := collective.AllReduceNode(in, comm, collective.Sum)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				yh, err := ops.Gather(y)
				if err != nil {
					t.Fatal(err)
				}
				cost, err := G.Sum(yh)
				if err != nil {
					t.Fatal(err)
				}
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s: panic %v", name, p)
						}
					}()
					if lisp {
						vm := G.NewLispMachine(g)
						defer vm.Close()
						err = vm.RunAll()
					} else {
						// G.Grad gives up on integer costs before any op
						// is asked (Gorgonia v0.9.18 returns no gradients
						// and a nil error); Backpropagate asks the ops.
						one := G.NewScalar(g, dt, G.WithName("one"), G.WithValue(oneOf(dt)))
						_, err = G.Backpropagate(G.Nodes{cost}, G.Nodes{one}, G.Nodes{x})
					}
				}()
				_, isMesh := comm.(collective.MeshComm)
				if lisp && isMesh {
					// The LispMachine differentiates ops.Gather first, which
					// refuses to add integer gradients before the collective
					// is asked.
					if err == nil || !strings.Contains(err.Error(), "unsupported dtype "+dt.String()) {
						t.Fatalf("%s: LispMachine: %v, want an unsupported dtype error", name, err)
					}
				} else if !errors.Is(mgla.Cause(err), collective.ErrBadCall) {
					t.Fatalf("%s: Grad: %v, want an error wrapping ErrBadCall", name, err)
				}
				t.Logf("%s: %v", name, err)
			}
		}
	}
}

// oneOf is the scalar 1 of an integer dtype.
func oneOf(dt tensor.Dtype) any { return reflect.ValueOf(1).Convert(dt.Type).Interface() }
