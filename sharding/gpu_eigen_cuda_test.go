//go:build mglacuda

package sharding

import (
	"fmt"
	"math"
	"testing"

	"github.com/mgla/mgla/kernels"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// EigenvectorTerms on one GPU gives kernels.SymmetricEigenvectorTerms's
// result bit for bit, in both real dtypes, at orders of one, a few and more
// than one launch's worth of columns, with eigenvalue gaps around the
// tolerance; with undefined pairs it reports the first in column order,
// also when pairs of zeros make the other close eigenvalues defined. Bad
// calls are errors.
func TestEigenvectorTermsOnGPU(t *testing.T) {
	rng, seed := seededRNG(t)
	mesh, err := GPUMesh(0)
	require.NoError(t, err)
	for _, n := range []int{1, 2, 67, 1100} {
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(i) + rng.Float64()/2
		}
		gap := kernels.EigenGapTolerance(w, false)
		m := make([]float64, n*n) // column-major
		for k := range m {
			m[k] = rng.NormFloat64()
		}
		type bad struct{ i, j int }
		cases := []struct {
			name  string
			w     []float64
			zeros []bad // pairs whose M entries are zero (defined at any gap)
			first *bad
		}{{name: "distinct", w: w}}
		if n >= 67 {
			repeated := append([]float64(nil), w...)
			repeated[40], repeated[60] = repeated[41], repeated[61]+gap/2
			repeated[10] = repeated[12]
			cases = append(cases, struct {
				name  string
				w     []float64
				zeros []bad
				first *bad
			}{"repeated", repeated, []bad{{10, 12}}, &bad{40, 41}})
		}
		for _, c := range cases {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				what := fmt.Sprintf("seed %d, n = %d, %s, %v", seed, n, c.name, dt)
				host := append([]float64(nil), m...)
				for _, z := range c.zeros {
					host[z.i+z.j*n], host[z.j+z.i*n] = 0, 0
				}
				if dt == tensor.Float32 {
					for k, v := range host {
						host[k] = float64(float32(v))
					}
				}
				// The device matrix, loaded row-major: Mᵀ of the column-major host.
				rowMajor := make([]float64, n*n)
				for i := range n {
					for j := range n {
						rowMajor[i*n+j] = host[i+j*n]
					}
				}
				d, err := Put(denseOfFloats(dt, n, rowMajor), mesh, Cyclic(n))
				require.NoError(t, err, what)
				gi, gj, gotOK, err := EigenvectorTerms(d, c.w, gap)
				require.NoError(t, err, what)
				got, err := d.Gather()
				require.NoError(t, err, what)
				d.Free()
				var wi, wj int
				var wantOK bool
				var want []float64
				if dt == tensor.Float32 {
					single := make([]float32, n*n)
					for k, v := range host {
						single[k] = float32(v)
					}
					wi, wj, wantOK = kernels.SymmetricEigenvectorTerms(n, single, n, c.w, gap)
					for _, v := range single {
						want = append(want, float64(v))
					}
				} else {
					wi, wj, wantOK = kernels.SymmetricEigenvectorTerms(n, host, n, c.w, gap)
					want = host
				}
				require.Equal(t, wantOK, gotOK, what)
				if c.first != nil {
					require.Equal(t, [2]int{c.first.i, c.first.j}, [2]int{gi, gj}, what)
				}
				require.Equal(t, [2]int{wi, wj}, [2]int{gi, gj}, what)
				if !wantOK {
					continue // both partly written, in their own orders
				}
				g := floatsOf(got.Data())
				for i := range n {
					for j := range n {
						if a, b := g[i*n+j], want[i+j*n]; math.Float64bits(a) != math.Float64bits(b) {
							t.Fatalf("%s: [%d,%d] = %v, want %v", what, i, j, a, b)
						}
					}
				}
			}
		}
	}
	// Bad calls.
	sq, err := New(mesh, tensor.Shape{3, 3}, tensor.Float64, Cyclic(3))
	require.NoError(t, err)
	_, _, _, err = EigenvectorTerms(sq, []float64{1, 2}, 0)
	require.Error(t, err, "2 eigenvalues for order 3")
	wide, err := New(mesh, tensor.Shape{3, 4}, tensor.Float64, Cyclic(4))
	require.NoError(t, err)
	_, _, _, err = EigenvectorTerms(wide, []float64{1, 2, 3}, 0)
	require.Error(t, err, "not square")
	cplx, err := New(mesh, tensor.Shape{3, 3}, tensor.Complex128, Cyclic(3))
	require.NoError(t, err)
	_, _, _, err = EigenvectorTerms(cplx, []float64{1, 2, 3}, 0)
	require.Error(t, err, "complex")
	rows, err := New(mesh, tensor.Shape{3, 3}, tensor.Float64, RowBlocks())
	require.NoError(t, err)
	_, _, _, err = EigenvectorTerms(rows, []float64{1, 2, 3}, 0)
	require.Error(t, err, "row blocks")
	if ngpu, _ := cu.NumDevices(); ngpu >= 2 {
		two, err := GPUMesh(0, 1)
		require.NoError(t, err)
		spread, err := New(two, tensor.Shape{3, 3}, tensor.Float64, Cyclic(1))
		require.NoError(t, err)
		_, _, _, err = EigenvectorTerms(spread, []float64{1, 2, 3}, 0)
		require.Error(t, err, "two GPUs")
	}
}

// denseOfFloats is the row-major n×n x as a host tensor of dt.
func denseOfFloats(dt tensor.Dtype, n int, x []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		y := make([]float32, len(x))
		for k, v := range x {
			y[k] = float32(v)
		}
		return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(y))
	}
	return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(append([]float64(nil), x...)))
}

// floatsOf widens a host tensor's float32 or float64 data.
func floatsOf(data any) []float64 {
	switch d := data.(type) {
	case []float32:
		out := make([]float64, len(d))
		for k, v := range d {
			out[k] = float64(v)
		}
		return out
	case []float64:
		return d
	}
	return nil
}
