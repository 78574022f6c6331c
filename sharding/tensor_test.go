package sharding

import (
	"fmt"
	"math"
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

// gpuTestMeshes is set by the mglacuda tests: GPU meshes that every
// mesh-parameterized test of this package also runs on.
var gpuTestMeshes func(t *testing.T) []*Mesh

// testMeshes returns CPU meshes of 1, 2, 3 and 5 devices, and the GPU meshes
// of a mglacuda build.
func testMeshes(t *testing.T) []*Mesh {
	var out []*Mesh
	for _, n := range []int{1, 2, 3, 5} {
		m, err := CPUMesh(n)
		require.NoError(t, err)
		out = append(out, m)
	}
	if gpuTestMeshes != nil {
		out = append(out, gpuTestMeshes(t)...)
	}
	return out
}

func seededRNG(t *testing.T) (*rand.Rand, uint64) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 2)), seed
}

func TestPutRelayoutGatherRoundTrip(t *testing.T) {
	rng, seed := seededRNG(t)
	layouts := []Layout{Replicated(), RowBlocks(), ColBlocks(), Cyclic(1), Cyclic(3), Cyclic(64)}
	shapes := [][]int{{1, 1}, {5, 5}, {17, 17}, {33, 7}, {9}, {100, 100}}
	for _, mesh := range testMeshes(t) {
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
						require.Equal(t, host.Data(), back.Data(), "seed %d %v %v %v %v→%v", seed, mesh, dt, shape, from, to)
						moved.Free()
					}
					st.Free()
				}
			}
		}
	}
}

// A matrix larger than one staging band (64 MiB on GPUs) survives the trip.
func TestLargeRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	rng, seed := seededRNG(t)
	host := randomDense(rng, tensor.Float64, 3001, 3001) // 72 MB
	for _, mesh := range testMeshes(t) {
		for _, layout := range []Layout{Cyclic(512), RowBlocks(), Replicated()} {
			st, err := Put(host, mesh, layout)
			require.NoError(t, err)
			back, err := st.Gather()
			require.NoError(t, err)
			require.Equal(t, host.Data(), back.Data(), "seed %d %v %v", seed, mesh, layout)
			st.Free()
		}
	}
}

// ZeroStrictUpper, MirrorLower and AddScaled give the host reference's
// answer on every mesh and layout.
func TestTriangleAndArithmetic(t *testing.T) {
	rng, seed := seededRNG(t)
	for _, mesh := range testMeshes(t) {
		for _, dt := range Dtypes {
			for _, n := range []int{1, 7, 70} {
				for _, layout := range []Layout{Cyclic(1), Cyclic(8), Cyclic(32), RowBlocks(), Replicated()} {
					what := fmt.Sprintf("seed %d %v %v n=%d %v", seed, mesh, dt, n, layout)
					host := randomDense(rng, dt, n, n)
					other := randomDense(rng, dt, n, n)

					st, err := Put(host, mesh, layout)
					require.NoError(t, err)
					require.NoError(t, st.ZeroStrictUpper())
					got, err := st.Gather()
					require.NoError(t, err)
					require.Equal(t, lowerOf(host), got.Data(), what)

					require.NoError(t, st.Load(host))
					require.NoError(t, st.MirrorLower())
					got, err = st.Gather()
					require.NoError(t, err)
					require.Equal(t, hermitianFromLower(host), got.Data(), what)

					require.NoError(t, st.Load(host))
					src, err := Put(other, mesh, Cyclic(5))
					require.NoError(t, err)
					require.NoError(t, st.AddScaled(-0.5, src))
					got, err = st.Gather()
					require.NoError(t, err)
					require.Equal(t, axpyReference(-0.5, other, host), got.Data(), what)
					st.Free()
					src.Free()
				}
			}
		}
	}
}

// lowerOf, hermitianFromLower and axpyReference are the references, on the
// row-major host data.
func lowerOf(d *tensor.Dense) any {
	n := d.Shape()[0]
	return mapElems(d, func(i, j int, v complex128, get func(i, j int) complex128) complex128 {
		if i < j {
			return 0
		}
		return v
	}, n)
}

func hermitianFromLower(d *tensor.Dense) any {
	n := d.Shape()[0]
	return mapElems(d, func(i, j int, v complex128, get func(i, j int) complex128) complex128 {
		switch {
		case i < j:
			w := get(j, i)
			return complex(real(w), -imag(w))
		case i == j:
			return complex(real(v), 0)
		}
		return v
	}, n)
}

func axpyReference(alpha float64, x, y *tensor.Dense) any {
	n := y.Shape()[0]
	return mapElems(y, func(i, j int, v complex128, _ func(i, j int) complex128) complex128 {
		return v + complex(alpha, 0)*at(x, i, j, n)
	}, n)
}

func at(d *tensor.Dense, i, j, n int) complex128 {
	switch s := d.Data().(type) {
	case []float32:
		return complex(float64(s[i*n+j]), 0)
	case []float64:
		return complex(s[i*n+j], 0)
	case []complex64:
		return complex128(s[i*n+j])
	case []complex128:
		return s[i*n+j]
	}
	panic("dtype")
}

// mapElems builds a new row-major slice of d's type from f(i, j, d(i,j)),
// rounding to the element type exactly as the device arithmetic does.
func mapElems(d *tensor.Dense, f func(i, j int, v complex128, get func(i, j int) complex128) complex128, n int) any {
	get := func(i, j int) complex128 { return at(d, i, j, n) }
	switch d.Data().(type) {
	case []float32:
		out := make([]float32, n*n)
		for i := range n {
			for j := range n {
				out[i*n+j] = float32(real(f(i, j, get(i, j), get)))
			}
		}
		return out
	case []float64:
		out := make([]float64, n*n)
		for i := range n {
			for j := range n {
				out[i*n+j] = real(f(i, j, get(i, j), get))
			}
		}
		return out
	case []complex64:
		out := make([]complex64, n*n)
		for i := range n {
			for j := range n {
				out[i*n+j] = complex64(f(i, j, get(i, j), get))
			}
		}
		return out
	default:
		out := make([]complex128, n*n)
		for i := range n {
			for j := range n {
				out[i*n+j] = f(i, j, get(i, j), get)
			}
		}
		return out
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
	if gpuTestMeshes == nil {
		require.Equal(t, CPU, m.Kind())
	} else {
		require.Equal(t, GPU, m.Kind(), "the default mesh of a GPU machine")
	}
}

// CheckFinite finds NaN and Inf, in the lower triangle only when asked.
func TestCheckFinite(t *testing.T) {
	const n = 37
	for _, mesh := range testMeshes(t) {
		for _, dt := range Dtypes {
			for _, layout := range []Layout{Cyclic(4), RowBlocks(), Replicated()} {
				for _, c := range []struct {
					i, j       int
					lowerFound bool
				}{{30, 2, true}, {2, 30, false}, {17, 17, true}} {
					host := randomDense(rand.New(rand.NewPCG(1, 2)), dt, n, n)
					poison(host, c.i*n+c.j)
					st, err := Put(host, mesh, layout)
					require.NoError(t, err)
					what := fmt.Sprintf("%v %v %v (%d,%d)", mesh, dt, layout, c.i, c.j)
					require.ErrorIs(t, st.CheckFinite(false), ErrNonFinite, what)
					if c.lowerFound {
						require.ErrorIs(t, st.CheckFinite(true), ErrNonFinite, what)
					} else {
						require.NoError(t, st.CheckFinite(true), what)
					}
					st.Free()
				}
			}
		}
	}
}

func poison(d *tensor.Dense, k int) {
	switch s := d.Data().(type) {
	case []float32:
		s[k] = float32(math.Inf(1))
	case []float64:
		s[k] = math.NaN()
	case []complex64:
		s[k] = complex(0, float32(math.NaN()))
	case []complex128:
		s[k] = complex(math.Inf(-1), 0)
	}
}
