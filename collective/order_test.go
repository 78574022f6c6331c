package collective

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// recordingComm records the names of the calls it runs.
type recordingComm struct {
	MeshComm
	mu    sync.Mutex
	calls []string
}

func (c *recordingComm) Do(call *Call) error {
	c.mu.Lock()
	c.calls = append(c.calls, call.Name)
	c.mu.Unlock()
	return c.MeshComm.Do(call)
}

// orderGraph builds independent collectives on separate inputs, in the
// order of names, whose results are consumed in the reverse order, so that
// nothing but the hidden chain orders them.
//
// depth[i] extra element-wise nodes sit before collective i: graphs built by
// different ranks may differ in such non-collective nodes (logging, a
// rank-dependent preprocessing) and their node IDs then differ, which
// changes Gorgonia's topological order; the collectives' order must not
// change.
func orderGraph(t *testing.T, comm *recordingComm, names []string, depth []int) (*G.ExprGraph, *G.Node) {
	t.Helper()
	g := G.NewGraph()
	size := comm.Size()
	var outs []*G.Node
	inputs := make([]*G.Node, len(names))
	for i := len(names) - 1; i >= 0; i-- { // inputs made in reverse order
		inputs[i] = G.NewVector(g, tensor.Float64, G.WithShape(size*2), G.WithName(fmt.Sprintf("x%d", i)),
			G.WithValue(tensor.New(tensor.WithShape(size*2), tensor.WithBacking(make([]float64, size*2)))))
	}
	for i, name := range names {
		x := inputs[i]
		for range depth[i] {
			x = G.Must(G.Add(x, x))
		}
		xs, err := ops.Shard(x, comm.Mesh(), sharding.RowBlocks())
		if err != nil {
			t.Fatal(err)
		}
		var y *G.Node
		if i%2 == 0 {
			y, err = AllReduceNode(xs, comm, Sum, WithName(name))
		} else {
			y, err = AllGatherNode(xs, comm, WithName(name))
		}
		if err != nil {
			t.Fatal(err)
		}
		yh, err := ops.Gather(y)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, G.Must(G.Sum(yh)))
	}
	cost := outs[len(outs)-1]
	for i := len(outs) - 2; i >= 0; i-- {
		cost = G.Must(G.Add(cost, outs[i]))
	}
	return g, cost
}

// TestCollectiveOrder: the collectives of one communicator run in build
// order, forward and backward, on both machines, whatever the data
// dependencies; two graphs built alike run them alike.
func TestCollectiveOrder(t *testing.T) {
	m, _ := sharding.CPUMesh(3)
	base, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"c0", "c1", "c2", "c3", "c4", "c5"}
	rng := newRand(t)
	var previous []string
	for trial := range 12 {
		lisp := trial%3 == 1
		depth := make([]int, len(names))
		for i := range depth {
			depth[i] = rng.IntN(6)
		}
		comm := &recordingComm{MeshComm: base}
		g, cost := orderGraph(t, comm, names, depth)
		var vm G.VM
		if lisp {
			vm = G.NewLispMachine(g)
		} else {
			var wrt G.Nodes
			for _, n := range g.AllNodes() {
				if n.Op() == nil && n.Dims() == 1 {
					wrt = append(wrt, n)
				}
			}
			if _, err := G.Grad(cost, wrt...); err != nil {
				t.Fatal(err)
			}
			vm = G.NewTapeMachine(g)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		if !slices.Equal(comm.calls[:len(names)], names) {
			t.Fatalf("lisp=%v depth %v: forward collectives ran as %v, built as %v", lisp, depth, comm.calls[:len(names)], names)
		}
		// Backward: the gradient collectives, built by Grad from the last
		// node to the first (TapeMachine) or run by the LispMachine in
		// reverse order: both the reverse of the forward order.
		back := comm.calls[len(names):]
		if len(back) != len(names) {
			t.Fatalf("lisp=%v: %d backward collectives, want %d: %v", lisp, len(back), len(names), back)
		}
		for i, name := range back {
			if want := "grad " + names[len(names)-1-i]; name != want {
				t.Fatalf("lisp=%v: backward collectives ran as %v", lisp, back)
			}
		}
		if !lisp {
			if previous != nil && !slices.Equal(previous, comm.calls) {
				t.Fatalf("two graphs built alike ran %v and %v", previous, comm.calls)
			}
			previous = comm.calls
		}
	}
}
