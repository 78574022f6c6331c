package ops

import (
	"testing"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// layoutGraph: cost = Σ gather(relayout₁(shard(x)))² + 3·Σ gather(relayout₂(shard(x)))
// with the shard node consumed twice, so d cost/dx = 2x + 3.
func layoutGraph(t *testing.T, ndev int) (*G.ExprGraph, *G.Node, *G.Node, []float64) {
	mesh, err := sharding.CPUMesh(ndev)
	require.NoError(t, err)
	g := G.NewGraph()
	data := []float64{1, -2, 3, 4, 5, -6, 7, 8, 9, 10, 11, 12}
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 4), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(append([]float64(nil), data...)))))
	s, err := Shard(x, mesh, sharding.RowBlocks())
	require.NoError(t, err)
	a, err := Relayout(s, sharding.Cyclic(1))
	require.NoError(t, err)
	b, err := Relayout(s, sharding.ColBlocks())
	require.NoError(t, err)
	ga, err := Gather(a)
	require.NoError(t, err)
	gb, err := Gather(b)
	require.NoError(t, err)
	sq := G.Must(G.Sum(G.Must(G.Square(ga))))
	lin := G.Must(G.Mul(G.NewConstant(3.0), G.Must(G.Sum(gb))))
	cost := G.Must(G.Add(sq, lin))
	want := make([]float64, len(data))
	for i, v := range data {
		want[i] = 2*v + 3
	}
	return g, x, cost, want
}

func TestLayoutOpsGradients(t *testing.T) {
	for _, ndev := range []int{1, 2, 3, 5} {
		t.Run("tape", func(t *testing.T) {
			g, x, cost, want := layoutGraph(t, ndev)
			_, err := G.Grad(cost, x)
			require.NoError(t, err)
			m := G.NewTapeMachine(g)
			defer m.Close()
			for range 2 { // running twice gives the same gradient
				require.NoError(t, m.RunAll())
				gr, err := x.Grad()
				require.NoError(t, err)
				require.InDeltaSlice(t, want, gr.Data(), 1e-12)
				m.Reset()
			}
		})
		t.Run("lisp", func(t *testing.T) {
			g, x, _, want := layoutGraph(t, ndev)
			m := G.NewLispMachine(g)
			defer m.Close()
			require.NoError(t, m.RunAll())
			gr, err := x.Grad()
			require.NoError(t, err)
			require.InDeltaSlice(t, want, gr.Data(), 1e-12)
		})
	}
}

func TestShardValueStaysOnMesh(t *testing.T) {
	mesh, _ := sharding.CPUMesh(3)
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Complex64, G.WithShape(5, 5), G.WithName("x"), G.WithInit(G.Zeroes()))
	s, err := Shard(x, mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	same, err := Shard(s, mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	require.Equal(t, s, same, "no relayout when the layout already matches")
	m := G.NewTapeMachine(g)
	require.NoError(t, m.RunAll())
	v, ok := s.Value().(*sharding.Tensor)
	require.True(t, ok, "value is %T", s.Value())
	require.Equal(t, sharding.Cyclic(2), v.Layout())
	p, ok := PlacementOf(s)
	require.True(t, ok)
	require.True(t, p.Mesh.Same(mesh))
}

// TestShardBadShapes: Shard refuses at build time, with ErrBadInput and the
// graph unchanged, what no mesh can hold: empty shapes (they failed at run
// time with an error that was not ErrBadInput) and ranks other than 1 and 2.
func TestShardBadShapes(t *testing.T) {
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	for _, shape := range []tensor.Shape{{0, 3}, {3, 0}, {0}, {0, 0}, {2, 2, 2}} {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"))
		before := len(g.AllNodes())
		_, err := Shard(x, mesh, sharding.Cyclic(2))
		require.ErrorIs(t, err, sharding.ErrBadInput, "%v", shape)
		require.Len(t, g.AllNodes(), before, "%v", shape)
	}
}
