//go:build mpi

package collective_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// keepCase is one graph op of TestMPIGraphOpsKeepInputs on a process
// communicator: how to build it on x, and whether it has a gradient.
type keepCase struct {
	name   string
	linear bool
	pair   bool // Send and Recv: needs 2 ranks
	build  func(x *G.Node, comm collective.Comm) (*G.Node, error)
}

// keepCases are every graph op kind, every reduction of AllReduce, with
// roots and peers that depend on the size only (the same on every rank).
func keepCases(size, me int) []keepCase {
	next, prev := (me+1)%size, (me+size-1)%size
	reduce := func(op collective.ReduceOp) func(x *G.Node, c collective.Comm) (*G.Node, error) {
		return func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.AllReduceNode(x, c, op) }
	}
	return []keepCase{
		{"AllReduce(sum)", true, false, reduce(collective.Sum)},
		{"AllReduce(prod)", false, false, reduce(collective.Prod)},
		{"AllReduce(min)", false, false, reduce(collective.Min)},
		{"AllReduce(max)", false, false, reduce(collective.Max)},
		{"AllGather", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.AllGatherNode(x, c) }},
		{"ReduceScatter(sum)", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			return collective.ReduceScatterNode(x, c, collective.Sum)
		}},
		{"ReduceScatter(max)", false, false, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			return collective.ReduceScatterNode(x, c, collective.Max)
		}},
		{"AllToAll", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.AllToAllNode(x, c) }},
		{"Bcast", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.BcastNode(x, c, size-1) }},
		{"Reduce(sum)", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			return collective.ReduceNode(x, c, collective.Sum, size-1)
		}},
		{"Reduce(min)", false, false, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			return collective.ReduceNode(x, c, collective.Min, 0)
		}},
		{"Gather", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.GatherNode(x, c, 0) }},
		{"Scatter", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.ScatterNode(x, c, size-1) }},
		{"Scan(sum)", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.ScanNode(x, c, collective.Sum) }},
		{"Scan(prod)", false, false, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			return collective.ScanNode(x, c, collective.Prod)
		}},
		{"SendRecv", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			return collective.SendRecvNode(x, c, []int{next}, []int{prev}, 7)
		}},
		{"Barrier", true, false, func(x *G.Node, c collective.Comm) (*G.Node, error) { return collective.BarrierNode(x, c) }},
		// A ring of Send and Recv (even ranks send first, odd ones receive
		// first); the node checked is the Send, whose input is x.
		{"Send+Recv", false, true, func(x *G.Node, c collective.Comm) (*G.Node, error) {
			var sent *G.Node
			send := func() (err error) { sent, err = collective.SendNode(x, c, next, 9); return err }
			recv := func() error {
				_, err := collective.RecvNode(x.Graph(), c, x.Shape(), x.Dtype(), prev, 9)
				return err
			}
			first, second := send, recv
			if me%2 == 1 {
				first, second = recv, send
			}
			if err := first(); err != nil {
				return nil, err
			}
			return sent, second()
		}},
	}
}

// rawBytes is a copy of the memory of a host tensor value.
func rawBytes(t *testing.T, v G.Value) []byte {
	t.Helper()
	d, ok := v.(*tensor.Dense)
	if !ok {
		t.Fatalf("a %T, want a host *tensor.Dense", v)
	}
	return bytes.Clone(d.Header.Raw)
}

// overlaps reports whether the memory of two host tensors overlaps.
func overlaps(a, b G.Value) bool {
	da, ok1 := a.(*tensor.Dense)
	db, ok2 := b.(*tensor.Dense)
	if !ok1 || !ok2 || da.MemSize() == 0 || db.MemSize() == 0 {
		return false
	}
	return da.Uintptr() < db.Uintptr()+db.MemSize() && db.Uintptr() < da.Uintptr()+da.MemSize()
}

// TestMPIGraphOpsKeepInputs pins README.md:366 ("They return new values,
// never overwrite their inputs") and collective/doc.go:46 ("They return
// new values and never overwrite their inputs") on a process communicator
// (MPI): every graph op kind (AllReduce sum, prod, min and max, AllGather,
// ReduceScatter, AllToAll, Bcast, Reduce, Gather, Scatter, Scan, SendRecv,
// Send and Recv, Barrier), float64 and float32, vectors and matrices,
//
//   - forward on a TapeMachine, three runs (the second on the same bound
//     tensor, where the node reuses its buffer over the input; the third on
//     a new tensor bound with gorgonia.Let);
//   - backward, gorgonia.Grad of Σ w∘y + TapeMachine, two runs (the linear
//     ops);
//   - on the LispMachine, a fresh machine per run, two runs (the second on
//     a new tensor bound with gorgonia.Let): forward and backward of Σ w∘y
//     for the linear ops, forward only (ExecuteFwdOnly) for the others;
//
// leaves every bound tensor (x, the weights w) bitwise as it was bound,
// leaves the output gradient fed to the op's gradient (y's gradient, which
// is w exactly) bitwise w, and returns an output whose memory is not the
// input's. Every rank's data differs, so with 2 ranks or more an op that
// wrote its result (or the reduction's) into its input changes it; with
// one rank most results equal their input and only the aliasing check
// bites.
func TestMPIGraphOpsKeepInputs(t *testing.T) {
	comm := newComm(t)
	size, me := comm.Size(), comm.Rank()
	for _, kc := range keepCases(size, me) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, block := range []tensor.Shape{{2 * size}, {2 * size, 3}} {
				modes := []string{"forward", "lisp"}
				if kc.linear {
					modes = append(modes, "grad")
				}
				for _, mode := range modes {
					name := fmt.Sprintf("%s/%v/%v/%s", kc.name, dt, block, mode)
					t.Run(name, func(t *testing.T) {
						if kc.pair && size < 2 {
							t.Skip("Send and Recv need 2 ranks")
						}
						checkKeepsInputs(t, comm, kc, dt, block, mode)
					})
				}
			}
		}
	}
}

// checkKeepsInputs runs kc in one mode of TestMPIGraphOpsKeepInputs.
func checkKeepsInputs(t *testing.T, comm collective.Comm, kc keepCase, dt tensor.Dtype, block tensor.Shape, mode string) {
	me := comm.LocalRanks()[0]
	n := block.TotalSize()
	values := func(what string, run int) *tensor.Dense {
		rng := rngFor(fmt.Sprintf("%s/%s/%d/%d", t.Name(), what, run, me))
		return collectivetest.Dense(dt, block, collective.RandomValues(rng, dt, n))
	}
	var x, y, w *G.Node
	build := func() *G.ExprGraph {
		g := G.NewGraph()
		x = G.NewTensor(g, dt, len(block), G.WithShape(block...), G.WithName("x"), G.WithValue(values("x", 0)))
		var err error
		if y, err = kc.build(x, comm); err != nil {
			t.Fatal(err)
		}
		if mode == "forward" || !kc.linear {
			return g
		}
		// dL/dy = w·1 = w exactly: the output gradient the op's gradient
		// is fed.
		wv := collectivetest.Dense(dt, y.Shape(), collective.RandomValues(rngFor(fmt.Sprintf("%s/w/%d", t.Name(), me)), dt, y.Shape().TotalSize()))
		w = G.NewTensor(g, dt, y.Dims(), G.WithShape(y.Shape()...), G.WithName("w"), G.WithValue(wv))
		cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, w))))
		if mode == "grad" {
			if _, err := G.Grad(cost, x); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	type bound struct {
		name string
		node *G.Node
		was  []byte
	}
	var binds []bound
	snapshot := func() {
		binds = binds[:0]
		for _, b := range []struct {
			name string
			node *G.Node
		}{{"x", x}, {"w", w}} {
			if b.node != nil {
				binds = append(binds, bound{b.name, b.node, rawBytes(t, b.node.Value())})
			}
		}
	}
	check := func(run int) {
		t.Helper()
		for _, b := range binds {
			if got := rawBytes(t, b.node.Value()); !bytes.Equal(got, b.was) {
				t.Errorf("run %d: rank %d: the bound %s changed: %s", run, me, b.name,
					firstChange(b.node.Value(), tensorOfBytes(t, b.node.Value(), b.was)))
			}
		}
		if overlaps(y.Value(), x.Value()) {
			t.Errorf("run %d: rank %d: the output's memory is the input's", run, me)
		}
		if w != nil {
			gy, err := y.Grad()
			if err != nil {
				t.Fatalf("run %d: y's gradient: %v", run, err)
			}
			if got, want := rawBytes(t, gy), rawBytes(t, w.Value()); !bytes.Equal(got, want) {
				t.Errorf("run %d: rank %d: the output gradient fed to the op's gradient (w) changed: %s", run, me,
					firstChange(gy, w.Value()))
			}
		}
	}
	switch mode {
	case "forward", "grad":
		g := build()
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		runs := 2
		if mode == "forward" {
			runs = 3
		}
		for run := range runs {
			if run == 2 {
				if err := G.Let(x, values("x", run)); err != nil {
					t.Fatal(err)
				}
			}
			snapshot()
			if err := vm.RunAll(); err != nil {
				t.Fatalf("run %d: %v", run, mgla.Cause(err))
			}
			check(run)
			vm.Reset()
		}
	case "lisp":
		g := build()
		for run := range 2 {
			if run == 1 {
				if err := G.Let(x, values("x", run)); err != nil {
					t.Fatal(err)
				}
			}
			var opts []G.VMOpt
			if !kc.linear {
				opts = append(opts, G.ExecuteFwdOnly())
			}
			vm := G.NewLispMachine(g, opts...)
			snapshot()
			err := vm.RunAll()
			vm.Close()
			if err != nil {
				t.Fatalf("run %d: %v", run, mgla.Cause(err))
			}
			check(run)
		}
	}
}

// firstChange says where the values of now first differ from those of was,
// and in how many elements.
func firstChange(now, was G.Value) string {
	a, b := collectivetest.Values(now), collectivetest.Values(was)
	if len(a) != len(b) {
		return fmt.Sprintf("%d elements, were %d", len(a), len(b))
	}
	first, count := -1, 0
	for i := range a {
		if a[i] != b[i] {
			count++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return "the same values, other bits"
	}
	return fmt.Sprintf("element %d is %v, was %v (%d of %d elements differ)", first, a[first], b[first], count, len(a))
}

// tensorOfBytes is a tensor like v holding raw (for the failure message).
func tensorOfBytes(t *testing.T, v G.Value, raw []byte) *tensor.Dense {
	t.Helper()
	d := v.(*tensor.Dense).Clone().(*tensor.Dense)
	copy(d.Header.Raw, raw)
	return d
}
