package ops

import (
	"testing"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A sharded tensor bound to an input node feeds kernels directly, in two
// graphs, and stays unchanged.
func TestInputNode(t *testing.T) {
	mesh, err := sharding.CPUMesh(3)
	require.NoError(t, err)
	const n = 9
	data := make([]float64, n*n)
	for i := range n {
		data[i*n+i] = float64(i + 1)
	}
	a, err := sharding.Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(data)), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	for range 2 {
		g := gorgonia.NewGraph()
		an := Input(g, a, "A")
		p, ok := PlacementOf(an)
		require.True(t, ok)
		require.Equal(t, sharding.Cyclic(2), p.Layout)
		l, err := Cholesky(an)
		require.NoError(t, err)
		ld, err := LogDet(an, l)
		require.NoError(t, err)
		m := gorgonia.NewTapeMachine(g)
		require.NoError(t, m.RunAll())
		m.Close()
		want := 0.0
		for i := range n {
			want += logOf(float64(i + 1))
		}
		require.InDelta(t, want, ld.Value().Data().(float64), 1e-12)
	}
	back, err := a.Gather()
	require.NoError(t, err)
	require.Equal(t, data, back.Data())
}

// Input panics with a message on a nil tensor or graph, like Gorgonia's
// own constructors; a freed tensor builds, and the op reading it returns
// sharding.ErrFreed, on both machines (the LispMachine clones an input's
// value for its gradient, and panicked on its own goroutine when that
// clone was an error).
func TestInputNilAndFreed(t *testing.T) {
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	require.PanicsWithValue(t, `ops.Input("A"): nil graph or tensor`, func() { Input(gorgonia.NewGraph(), nil, "A") })
	a, err := sharding.Put(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{4, 0, 0, 9})), mesh, sharding.Cyclic(1))
	require.NoError(t, err)
	require.PanicsWithValue(t, `ops.Input("A"): nil graph or tensor`, func() { Input(nil, a, "A") })
	a.Free()
	for _, lisp := range []bool{false, true} {
		g := gorgonia.NewGraph()
		l, err := Cholesky(Input(g, a, "A"))
		require.NoError(t, err)
		ln, err := Gather(l)
		require.NoError(t, err)
		gorgonia.Must(gorgonia.Sum(ln))
		var m gorgonia.VM = gorgonia.NewTapeMachine(g)
		if lisp {
			// Forward only: after an error Gorgonia's LispMachine goes on
			// with the backward pass on its own goroutine, racing with
			// RunAll's return (a data race of Gorgonia's own under -race).
			m = gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly())
		}
		err = m.RunAll()
		m.Close()
		require.Error(t, err, "lisp %v", lisp)
		for e, ok := err.(interface{ Err() error }); ok; e, ok = err.(interface{ Err() error }) {
			err = e.Err() // TapeMachine's wrapper has no Unwrap (mgla.Cause)
		}
		require.ErrorIs(t, err, sharding.ErrFreed, "lisp %v: %v", lisp, err)
		require.Nil(t, l.Value(), "lisp %v", lisp)
	}
}

// TestInputNameTaken: a second Input of a name the graph holds panics,
// where Gorgonia merged it into the first node and dropped its tensor (the
// ops then read the first matrix, or a host node of that name).
func TestInputNameTaken(t *testing.T) {
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	a, err := sharding.Put(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{4, 0, 0, 9})), mesh, sharding.Cyclic(1))
	require.NoError(t, err)
	g := gorgonia.NewGraph()
	Input(g, a, "A")
	gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("H"))
	for _, name := range []string{"A", "H"} {
		require.PanicsWithValue(t, `ops.Input("`+name+`"): the graph already has an input of that name, dtype and shape`, func() { Input(g, a, name) })
	}
	// Nodes Gorgonia keeps apart: the same name with another shape, an
	// unnamed input beside unnamed op results, another name.
	b, err := sharding.Put(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(make([]float64, 9))), mesh, sharding.Cyclic(1))
	require.NoError(t, err)
	gorgonia.Must(gorgonia.Square(gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 4), gorgonia.WithInit(gorgonia.Zeroes()))))
	require.NotPanics(t, func() { Input(g, b, "A") })
	require.NotPanics(t, func() { Input(g, a, "") })
	require.NotPanics(t, func() { Input(g, a, "B") })
}

// TestReadShardedEveryRun: gorgonia.Read of a sharded node (and of an Eigen
// node) copies its value out on every run, not only the first (the copy
// after the first needs sharding.Tensor's CopyTo).
func TestReadShardedEveryRun(t *testing.T) {
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	g := gorgonia.NewGraph()
	a := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("A"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{4, 2, 2, 5}))))
	ac, err := Shard(a, mesh, sharding.Cyclic(1))
	require.NoError(t, err)
	l, err := Cholesky(ac)
	require.NoError(t, err)
	e, err := Eigen(ac)
	require.NoError(t, err)
	var lv, ev gorgonia.Value
	gorgonia.Read(l, &lv)
	gorgonia.Read(e, &ev)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	for run, c := range []struct{ a, l []float64 }{
		{[]float64{4, 2, 2, 5}, []float64{2, 0, 1, 2}},
		{[]float64{9, 3, 3, 5}, []float64{3, 0, 1, 2}},
		{[]float64{16, 4, 4, 5}, []float64{4, 0, 1, 2}},
	} {
		require.NoError(t, gorgonia.Let(a, tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(c.a))))
		require.NoError(t, m.RunAll(), "run %d", run)
		got, err := lv.(*sharding.Tensor).Gather()
		require.NoError(t, err)
		require.InDeltaSlice(t, c.l, got.Data(), 1e-15, "run %d", run)
		require.NotNil(t, ev, "run %d", run)
		m.Reset()
	}
}

// TestReadFreedThenLet: gorgonia.Read of a freed input reads a freed
// tensor (Clone of a freed tensor), and a later run with a live value bound
// by Let copies into it: the Read's target gets new shards (it failed on
// every later run, copying into the freed clone).
func TestReadFreedThenLet(t *testing.T) {
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	put := func() *sharding.Tensor {
		a, err := sharding.Put(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{4, 1, 1, 3})), mesh, sharding.Cyclic(1))
		require.NoError(t, err)
		return a
	}
	a := put()
	a.Free()
	g := gorgonia.NewGraph()
	in := Input(g, a, "A")
	var v gorgonia.Value
	gorgonia.Read(in, &v)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	_, err = v.(*sharding.Tensor).Gather()
	require.ErrorIs(t, err, sharding.ErrFreed)
	require.NoError(t, gorgonia.Let(in, put()))
	m.Reset()
	require.NoError(t, m.RunAll())
	back, err := v.(*sharding.Tensor).Gather()
	require.NoError(t, err)
	require.Equal(t, []float64{4, 1, 1, 3}, back.Data())
}
