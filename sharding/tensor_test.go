package sharding

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
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
	default: // IntDtypes: random bits over the whole range
		s := reflect.MakeSlice(reflect.SliceOf(dt.Type), n, n)
		for i := range n {
			if v := s.Index(i); v.CanInt() {
				v.SetInt(int64(rng.Uint64()))
			} else {
				v.SetUint(rng.Uint64())
			}
		}
		data = s.Interface()
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
		for _, dt := range append(append([]tensor.Dtype(nil), Dtypes...), IntDtypes...) {
			if err := mesh.CheckStorage(dt); err != nil {
				// GPU meshes: no 1- and 2-byte integers, a clear error.
				_, perr := Put(randomDense(rng, dt, 3, 3), mesh, Cyclic(2))
				require.ErrorContains(t, perr, "unsupported dtype "+dt.String(), "%v", mesh)
				continue
			}
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

// Sharded tensors hold the integer dtypes for storage and movement (Put,
// relayouts and Gather: TestPutRelayoutGatherRoundTrip); Zero, Clone and
// host buffers keep every bit; the routines that compute reject them with an
// error and leave them unchanged.
func TestIntStorage(t *testing.T) {
	rng, _ := seededRNG(t)
	for _, mesh := range testMeshes(t) {
		for _, dt := range IntDtypes {
			if mesh.CheckStorage(dt) != nil {
				continue // TestPutRelayoutGatherRoundTrip checks the error
			}
			square := randomDense(rng, dt, 5, 5)
			st, err := Put(square, mesh, Cyclic(2))
			require.NoError(t, err)
			for name, fn := range map[string]func() error{
				"AddScaled":       func() error { return st.AddScaled(2, st) },
				"ZeroStrictUpper": st.ZeroStrictUpper,
				"MirrorLower":     st.MirrorLower,
				"SetIdentity":     st.SetIdentity,
				"CheckFinite":     func() error { return st.CheckFinite(false) },
				"CheckDiagonal":   st.CheckDiagonal,
				"Diagonal":        func() error { _, err := st.Diagonal(); return err },
			} {
				require.ErrorContains(t, fn(), "unsupported dtype "+dt.String(), "%v %s", mesh, name)
				back, err := st.Gather()
				require.NoError(t, err)
				require.Equal(t, square.Data(), back.Data(), "%v %v: a rejected %s changed the tensor", mesh, dt, name)
			}
			c, err := st.Clone()
			require.NoError(t, err)
			st.Zero()
			back, err := st.Gather()
			require.NoError(t, err)
			require.Equal(t, reflect.MakeSlice(reflect.SliceOf(dt.Type), 25, 25).Interface(), back.Data(), "%v %v Zero", mesh, dt)
			back, err = c.(*Tensor).Gather()
			require.NoError(t, err)
			require.Equal(t, square.Data(), back.Data(), "%v %v Clone", mesh, dt)
		}
	}
	// Host buffers of every integer type, their views and bytes.
	for _, dt := range IntDtypes {
		data := randomDense(rng, dt, 6).Data()
		b, err := NewHostBuffer(data)
		require.NoError(t, err)
		require.Equal(t, 6, b.Len())
		require.Equal(t, dt, b.Dtype())
		require.Len(t, b.Bytes(), 6*int(dt.Size()))
		v, err := View(b, 2, 3)
		require.NoError(t, err)
		require.Equal(t, reflect.ValueOf(data).Slice(2, 5).Interface(), v.(*HostBuffer).Data())
	}
	var zero HostBuffer
	require.Equal(t, 0, zero.Len())
	require.Equal(t, tensor.Dtype{}, zero.Dtype())
	require.Empty(t, zero.Bytes())
	_, err := NewHostBuffer([]bool{true})
	require.ErrorContains(t, err, "host buffer needs")
	_, err = NewHostBuffer(3.0)
	require.ErrorContains(t, err, "host buffer needs")
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
	_, err = New(m2, tensor.Shape{3, 3}, tensor.Bool, Cyclic(2))
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
					err = st.CheckFinite(false)
					require.ErrorIs(t, err, ErrNonFinite, what)
					require.Contains(t, err.Error(), "NaN or Inf in rows", what) // not only the sentinel's words
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

// setElem sets element k of a dense tensor of any dtype to re + im·i (the
// imaginary part is dropped for real dtypes).
func setElem(d *tensor.Dense, k int, re, im float64) {
	switch s := d.Data().(type) {
	case []float32:
		s[k] = float32(re)
	case []float64:
		s[k] = re
	case []complex64:
		s[k] = complex(float32(re), float32(im))
	case []complex128:
		s[k] = complex(re, im)
	}
}

// CheckDiagonal finds the first zero or non-finite element of the diagonal,
// with its order, and nothing off the diagonal.
func TestCheckDiagonal(t *testing.T) {
	const n = 37
	type bad struct {
		k      int
		re, im float64
	}
	nan, inf := math.NaN(), math.Inf(-1)
	cases := []struct {
		name  string
		set   []bad // elements (k, k), or off the diagonal with k < 0: (−k, 0)
		order int   // the NotPositiveDefiniteError's order, 0 when none
		nonFi bool
	}{
		{name: "good"},
		{name: "zero", set: []bad{{k: 20}}, order: 21},
		{name: "zero first", set: []bad{{k: 0}}, order: 1},
		{name: "zero last", set: []bad{{k: n - 1}}, order: n},
		{name: "nan", set: []bad{{k: 9, re: nan}}, nonFi: true},
		{name: "inf", set: []bad{{k: 33, re: inf}}, nonFi: true},
		{name: "first of two", set: []bad{{k: 30, re: nan}, {k: 5}}, order: 6},
		{name: "off the diagonal", set: []bad{{k: -3, re: nan}, {k: -4}}},
		{name: "imaginary only", set: []bad{{k: 12, im: 2}}, order: 13}, // real dtypes drop im
	}
	for _, mesh := range testMeshes(t) {
		for _, dt := range Dtypes {
			for _, layout := range []Layout{Cyclic(4), Cyclic(1), RowBlocks(), ColBlocks(), Replicated()} {
				for _, c := range cases {
					host := randomDense(rand.New(rand.NewPCG(3, 4)), dt, n, n)
					for i := range n {
						setElem(host, i*n+i, 1+float64(i), 0)
					}
					for _, b := range c.set {
						if b.k < 0 {
							setElem(host, -b.k*n, b.re, b.im)
						} else {
							setElem(host, b.k*n+b.k, b.re, b.im)
						}
					}
					st, err := Put(host, mesh, layout)
					require.NoError(t, err)
					what := fmt.Sprintf("%v %v %v %s", mesh, dt, layout, c.name)
					err = st.CheckDiagonal()
					order := c.order
					if c.name == "imaginary only" && (dt == tensor.Complex64 || dt == tensor.Complex128) {
						order = 0
					}
					var npd *kernels.NotPositiveDefiniteError
					switch {
					case order > 0:
						require.ErrorAs(t, err, &npd, what)
						require.Equal(t, order, npd.Order, what)
					case c.nonFi:
						require.ErrorIs(t, err, ErrNonFinite, what)
						require.Contains(t, err.Error(), fmt.Sprintf("(%d, %d)", c.set[0].k, c.set[0].k), what)
					default:
						require.NoError(t, err, what)
					}
					st.Free()
				}
			}
		}
	}
	v, err := New(testMeshes(t)[0], tensor.Shape{3, 4}, tensor.Float64, Cyclic(2))
	require.NoError(t, err)
	require.Error(t, v.CheckDiagonal(), "non-square")
}

// The column map of a whole-column layout agrees with LocalShape: each
// device's local columns are 0, 1, … in global order, every one used once.
func TestColumnMap(t *testing.T) {
	for _, l := range []Layout{Cyclic(1), Cyclic(3), Cyclic(64), ColBlocks()} {
		for _, ndev := range []int{1, 2, 3, 5} {
			for _, cols := range []int{1, 7, 64, 200} {
				m := columnMap(l, 9, cols, ndev)
				next := make([]uint64, ndev)
				for j, e := range m {
					d, lc := e>>40, e&(1<<40-1)
					require.Less(t, int(d), ndev)
					require.Equal(t, next[d], lc, "%v ndev=%d cols=%d column %d", l, ndev, cols, j)
					next[d]++
				}
				for d := range ndev {
					_, lcols := cyclic.LocalShape(l, 9, cols, ndev, d)
					require.Equal(t, uint64(lcols), next[d], "%v ndev=%d cols=%d device %d", l, ndev, cols, d)
				}
			}
		}
	}
}

// SetIdentity overwrites every element, in every layout and dtype.
func TestSetIdentity(t *testing.T) {
	rng, seed := seededRNG(t)
	for _, mesh := range testMeshes(t) {
		for _, dt := range Dtypes {
			for _, layout := range []Layout{Cyclic(1), Cyclic(4), RowBlocks(), ColBlocks(), Replicated()} {
				const n = 23
				st, err := Put(randomDense(rng, dt, n, n), mesh, layout)
				require.NoError(t, err)
				require.NoError(t, st.SetIdentity())
				back, err := st.Gather()
				require.NoError(t, err)
				want := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
				for i := range n {
					setElem(want, i*n+i, 1, 0)
				}
				require.Equal(t, want.Data(), back.Data(), "seed %d %v %v %v", seed, mesh, dt, layout)
				if layout.Kind == cyclic.Replicated {
					// Row blocks come from each device's own replica.
					rb, err := st.Relayout(RowBlocks())
					require.NoError(t, err)
					back, err = rb.Gather()
					require.NoError(t, err)
					require.Equal(t, want.Data(), back.Data(), "seed %d %v %v replicas", seed, mesh, dt)
					rb.Free()
				}
				st.Free()
			}
		}
	}
	v, err := New(testMeshes(t)[0], tensor.Shape{3, 4}, tensor.Float64, Cyclic(2))
	require.NoError(t, err)
	require.Error(t, v.SetIdentity(), "non-square")
}

// TestExecutePlanOnViews splits each device's shard, a column-major
// (k·q)×c matrix, into its k row blocks laid end to end in a flat buffer of
// the same device, and stacks them back, with ExecutePlan on views (the
// restack of the collective graph ops), on every test mesh (GPU meshes in a
// mglacuda build): the flat buffer must hold the blocks in order, and the
// round trip must be exact.
func TestExecutePlanOnViews(t *testing.T) {
	for _, mesh := range testMeshes(t) {
		for _, c := range []struct{ k, q, cols int }{{1, 3, 2}, {3, 2, 3}, {4, 5, 1}, {2, 7, 4}} {
			rows := c.k * c.q
			shape := tensor.Shape{mesh.Size() * rows, c.cols}
			host := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float64, shape.TotalSize())))
			for i := range host.Data().([]float64) {
				host.Data().([]float64)[i] = float64(i) + 0.5
			}
			stacked, err := Put(host, mesh, RowBlocks())
			require.NoError(t, err)
			flat, err := New(mesh, tensor.Shape{mesh.Size() * rows * c.cols}, tensor.Float64, RowBlocks())
			require.NoError(t, err)
			back, err := New(mesh, shape, tensor.Float64, RowBlocks())
			require.NoError(t, err)
			split, err := cyclic.SplitRowsPlan(c.q, c.cols, c.k)
			require.NoError(t, err)
			stack, err := cyclic.StackRowsPlan(c.q, c.cols, c.k)
			require.NoError(t, err)
			for d := range mesh.Size() {
				blocks, whole, again := make([]Buffer, c.k), make([]Buffer, c.k), make([]Buffer, c.k)
				for r := range c.k {
					blocks[r], err = View(flat.Shard(d), r*c.q*c.cols, c.q*c.cols)
					require.NoError(t, err)
					whole[r], again[r] = stacked.Shard(d), back.Shard(d)
				}
				require.NoError(t, ExecutePlan(split, tensor.Float64, whole, blocks))
				require.NoError(t, ExecutePlan(stack, tensor.Float64, blocks, again))
			}
			// Flat: rank d's blocks, each q×cols column-major, of rows
			// d·rows + r·q … of the host matrix.
			fh, err := flat.Gather()
			require.NoError(t, err)
			f := fh.Data().([]float64)
			h := host.Data().([]float64)
			for d := range mesh.Size() {
				for r := range c.k {
					for j := range c.cols {
						for i := range c.q {
							got := f[d*rows*c.cols+r*c.q*c.cols+j*c.q+i]
							want := h[(d*rows+r*c.q+i)*c.cols+j]
							require.Equal(t, want, got, "%v %+v: device %d block %d (%d,%d)", mesh, c, d, r, i, j)
						}
					}
				}
			}
			bh, err := back.Gather()
			require.NoError(t, err)
			require.Equal(t, h, bh.Data().([]float64), "%v %+v: round trip", mesh, c)
			for _, x := range []*Tensor{stacked, flat, back} {
				x.Free()
			}
		}
	}
	if _, err := View(&HostBuffer{data: make([]float64, 4)}, 2, 3); err == nil {
		t.Fatal("a view past the end: no error")
	}
}

// TestGraphOf: the graph of a builder call's operands, constants (of no
// graph) beside them, and the errors: operands of different graphs, and
// constants with no operand of a graph; InGraph brings a constant into the
// graph and leaves the other nodes as they are.
func TestGraphOf(t *testing.T) {
	g, g2 := gorgonia.NewGraph(), gorgonia.NewGraph()
	a := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("a"))
	b := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 1), gorgonia.WithName("b"))
	other := gorgonia.NewMatrix(g2, tensor.Float64, gorgonia.WithShape(2, 1), gorgonia.WithName("other"))
	c := gorgonia.NewConstant(tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{1, 2})))
	for _, tc := range []struct {
		name  string
		nodes []*gorgonia.Node
		want  *gorgonia.ExprGraph
		err   string
	}{
		{"one graph", []*gorgonia.Node{a, b}, g, ""},
		{"a constant beside a node", []*gorgonia.Node{a, c}, g, ""},
		{"a constant first", []*gorgonia.Node{c, a}, g, ""},
		{"nil skipped", []*gorgonia.Node{nil, b}, g, ""},
		{"nothing", []*gorgonia.Node{nil}, nil, ""},
		{"different graphs", []*gorgonia.Node{a, other}, nil, "different graphs"},
		{"constants only", []*gorgonia.Node{c}, nil, "no operand of a graph"},
		{"a constant and nil", []*gorgonia.Node{nil, c}, nil, "no operand of a graph"},
	} {
		got, err := GraphOf(tc.nodes...)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Same(t, tc.want, got, tc.name)
	}
	require.Same(t, a, InGraph(g, a))
	require.Nil(t, InGraph(g, nil))
	in := InGraph(g, c)
	require.Same(t, g, in.Graph())
	require.Nil(t, c.Graph(), "the constant itself is not changed")
	require.Equal(t, c.Value().Data(), in.Value().Data())
}
