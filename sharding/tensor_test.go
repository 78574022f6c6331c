package sharding

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

func randomDense(rng *rand.Rand, dt tensor.Dtype, shape ...int) *tensor.Dense {
	n := tensor.Shape(shape).TotalSize()
	var data any
	switch dt {
	case tensor.Float32:
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		data = s
	case tensor.Float64:
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		data = s
	case tensor.Complex64:
		s := make([]complex64, n)
		for i := range s {
			s[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
		}
		data = s
	case tensor.Complex128:
		s := make([]complex128, n)
		for i := range s {
			s[i] = complex(rng.NormFloat64(), rng.NormFloat64())
		}
		data = s
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

func TestPutRelayoutGatherRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	layouts := []Layout{Replicated(), RowBlocks(), ColBlocks(), Cyclic(1), Cyclic(3), Cyclic(64)}
	shapes := [][]int{{1, 1}, {5, 5}, {17, 17}, {33, 7}, {9}, {100, 100}}
	for _, ndev := range []int{1, 2, 3, 5} {
		mesh, err := CPUMesh(ndev)
		require.NoError(t, err)
		for _, dt := range Dtypes {
			for _, shape := range shapes {
				host := randomDense(rng, dt, shape...)
				for _, from := range layouts {
					st, err := Put(host, mesh, from)
					require.NoError(t, err)
					for _, to := range layouts {
						moved, err := st.Relayout(to)
						require.NoError(t, err)
						back, err := moved.Gather()
						require.NoError(t, err)
						require.Equal(t, host.Data(), back.Data(), "seed %d ndev %d %v %v %v→%v", seed, ndev, dt, shape, from, to)
					}
				}
			}
		}
	}
}

func TestValueBehaviour(t *testing.T) {
	mesh, _ := CPUMesh(2)
	host := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}))
	st, err := Put(host, mesh, Cyclic(2))
	require.NoError(t, err)
	c, err := st.Clone()
	require.NoError(t, err)
	st.Zero()
	g, _ := st.Gather()
	require.Equal(t, make([]float64, 9), g.Data())
	g2, _ := c.(*Tensor).Gather()
	require.Equal(t, host.Data(), g2.Data())
	require.Equal(t, "Matrix float64", st.Type().String())
	require.True(t, st.Same(c.(*Tensor)))
}

func TestErrors(t *testing.T) {
	_, err := CPUMesh(0)
	require.Error(t, err)
	m2, _ := CPUMesh(2)
	m3, _ := CPUMesh(3)
	_, err = New(m2, tensor.Shape{3, 3}, tensor.Int, Cyclic(2))
	require.ErrorContains(t, err, "unsupported dtype")
	_, err = New(m2, tensor.Shape{3, 3}, tensor.Float64, Cyclic(0))
	require.ErrorContains(t, err, "tile width")
	_, err = New(m2, tensor.Shape{2, 3, 3}, tensor.Float64, Cyclic(2))
	require.Error(t, err)
	a, _ := New(m2, tensor.Shape{3, 3}, tensor.Float64, Cyclic(2))
	b, _ := New(m3, tensor.Shape{3, 3}, tensor.Float64, Cyclic(2))
	require.ErrorIs(t, a.RelayoutInto(b), ErrMeshMismatch)
	m, err := DefaultMesh()
	require.NoError(t, err)
	require.Equal(t, CPU, m.Kind())
}
