package ops

import (
	"math"
	"testing"

	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestCheckFinite: a finite value passes as a new value (not the input's
// memory), a NaN or an Inf is ErrNonFinite naming the element, the
// gradient is the identity on both machines, and what the op cannot check
// is refused at build time.
func TestCheckFinite(t *testing.T) {
	for _, c := range []struct {
		name string
		v    gorgonia.Value
		bad  bool
	}{
		{"F64", gorgonia.NewF64(2), false},
		{"F64 Inf", gorgonia.NewF64(math.Inf(-1)), true},
		{"F32 NaN", gorgonia.NewF32(float32(math.NaN())), true},
		{"matrix", tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4})), false},
		{"matrix Inf", tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, math.Inf(1), 4})), true},
		{"float32 vector NaN", tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, float32(math.NaN()), 3})), true},
	} {
		o := &finiteOp{base: base{name: "CheckFinite(x)"}, what: "x"}
		out, err := o.Do(c.v)
		if c.bad {
			require.ErrorIs(t, err, kernels.ErrNonFinite, c.name)
			require.ErrorContains(t, err, "x: ", c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.v.Data(), out.Data(), c.name)
		if d, ok := c.v.(*tensor.Dense); ok {
			require.NotSame(t, &d.Float64s()[0], &out.(*tensor.Dense).Float64s()[0], "%s: the input's memory", c.name)
		}
	}

	for _, lisp := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3}))))
		y, err := CheckFinite(x, "x")
		require.NoError(t, err)
		cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
		require.NoError(t, runBackward(t, g, cost, lisp, x))
		gx, err := x.Grad()
		require.NoError(t, err)
		require.Equal(t, []float64{2, 4, 6}, gx.Data(), "lisp %v", lisp)
	}

	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	g := gorgonia.NewGraph()
	c := gorgonia.NewVector(g, tensor.Complex128, gorgonia.WithShape(2), gorgonia.WithName("c"))
	v := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("v"))
	s, err := Shard(v, mesh, sharding.Cyclic(1))
	require.NoError(t, err)
	for _, n := range []*gorgonia.Node{nil, c, s} {
		_, err := CheckFinite(n, "x")
		require.ErrorIs(t, err, sharding.ErrBadInput)
	}
}

// TestKernelFailureCounts: a kernel that fails (A not positive definite)
// counts a failed run of its graph (package failedruns), which stops the
// LispMachine backward steps of the graph's collectives, grid ops and
// sparse solves after it; a run that succeeds counts nothing.
func TestKernelFailureCounts(t *testing.T) {
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	for _, c := range []struct {
		a    []float64
		fail bool
	}{{[]float64{4, 1, 1, 3}, false}, {[]float64{1, 2, 2, 1}, true}} {
		g := gorgonia.NewGraph()
		a := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("A"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(c.a))))
		s, err := Shard(a, mesh, sharding.Cyclic(1))
		require.NoError(t, err)
		l, err := Cholesky(s)
		require.NoError(t, err)
		_, err = Gather(l)
		require.NoError(t, err)
		before := failedruns.Now(g)
		m := gorgonia.NewTapeMachine(g)
		err = m.RunAll()
		m.Close()
		require.Equal(t, c.fail, err != nil, "%v", err)
		want := before
		if c.fail {
			want++
		}
		require.Equal(t, want, failedruns.Now(g))
	}
}
