package sharding

import (
	"fmt"
	"math/cmplx"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// MulLower against a direct product with the host matrix, on every mesh,
// dtype and op, and MulHermitian and MulCholesky against the products they
// chain, for the column block-cyclic layouts (kernels on GPU meshes)
// and one that goes through the host, orders that are not multiples of the
// tile (on GPU meshes also 600: more local columns than one block row of
// lower_mv sums on 1 and 2 devices, the second block row starting inside a
// tile of 3); and its bad calls.
func TestMulLower(t *testing.T) {
	rng, seed := seededRNG(t)
	for _, mesh := range testMeshes(t) {
		for _, dt := range Dtypes {
			eps := 0x1p-52
			if dt == tensor.Float32 || dt == tensor.Complex64 {
				eps = 0x1p-23
			}
			orders := []int{1, 7, 130}
			if mesh.Kind() != CPU {
				orders = append(orders, 600)
			}
			for _, n := range orders {
				host := randomDense(rng, dt, n, n)
				x := make([]complex128, n)
				for i := range x {
					x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
					if dt == tensor.Float32 || dt == tensor.Float64 {
						x[i] = complex(real(x[i]), 0)
					}
				}
				// Given magnitudes on every other case, |x| otherwise.
				var xAbs []float64
				if n%2 == 1 {
					xAbs = make([]float64, n)
					for i := range xAbs {
						xAbs[i] = 1 + rng.Float64()
					}
				}
				// Each product allocating its results and into vectors that
				// hold garbage, both against the reference.
				yInto, yAbsInto := make([]complex128, n), make([]float64, n)
				fill := func() {
					for i := range yInto {
						yInto[i], yAbsInto[i] = complex(rng.NormFloat64(), 1), rng.NormFloat64()
					}
				}
				check := func(what string, y []complex128, yAbs []float64, want []complex128, wantAbs []float64, scale float64) {
					t.Helper()
					for i := range n {
						tol := scale * float64(n) * eps * wantAbs[i]
						require.LessOrEqual(t, cmplx.Abs(y[i]-want[i]), tol, "%s: y[%d]", what, i)
						require.InDelta(t, wantAbs[i], yAbs[i], tol+1e-300, "%s: yAbs[%d]", what, i)
					}
				}
				for _, layout := range []Layout{Cyclic(3), Cyclic(64), RowBlocks()} {
					st, err := Put(host, mesh, layout)
					require.NoError(t, err)
					for _, op := range []struct{ adjoint, strict bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
						what := fmt.Sprintf("seed %d %v %v n=%d %v adjoint=%v strict=%v", seed, mesh, dt, n, layout, op.adjoint, op.strict)
						want, wantAbs := lowerProduct(host, x, xAbs, op.adjoint, op.strict)
						y, yAbs, err := st.MulLower(x, xAbs, op.adjoint, op.strict)
						require.NoError(t, err, what)
						check(what, y, yAbs, want, wantAbs, 4)
						fill()
						require.NoError(t, st.MulLowerInto(yInto, yAbsInto, x, xAbs, op.adjoint, op.strict), what)
						check(what+" Into", yInto, yAbsInto, want, wantAbs, 4)
					}
					// The chains, against references composed of the above.
					what := fmt.Sprintf("seed %d %v %v n=%d %v", seed, mesh, dt, n, layout)
					lower, lowerAbs := lowerProduct(host, x, xAbs, false, false)
					upper, upperAbs := lowerProduct(host, x, xAbs, true, true)
					want, wantAbs := make([]complex128, n), make([]float64, n)
					for i := range n {
						want[i], wantAbs[i] = lower[i]+upper[i], lowerAbs[i]+upperAbs[i]
					}
					y, yAbs, err := st.MulHermitian(x, xAbs)
					require.NoError(t, err, what)
					check(what+" MulHermitian", y, yAbs, want, wantAbs, 4)
					fill()
					require.NoError(t, st.MulHermitianInto(yInto, yAbsInto, x, xAbs), what)
					check(what+" MulHermitianInto", yInto, yAbsInto, want, wantAbs, 4)

					w, wAbs := lowerProduct(host, x, xAbs, true, false)
					want, wantAbs = lowerProduct(host, w, wAbs, false, false)
					y, yAbs, err = st.MulCholesky(x, xAbs)
					require.NoError(t, err, what)
					check(what+" MulCholesky", y, yAbs, want, wantAbs, 8) // w's rounding carried through
					fill()
					require.NoError(t, st.MulCholeskyInto(yInto, yAbsInto, x, xAbs), what)
					check(what+" MulCholeskyInto", yInto, yAbsInto, want, wantAbs, 8)
					st.Free()
				}
			}
		}
	}
	// Magnitudes of zero (an exact x) still give y: the GPU kernel used to
	// add a row's share only where its magnitude sum was not zero.
	for _, mesh := range testMeshes(t) {
		const n = 8
		ones := make([]float64, n*n)
		for i := range ones {
			ones[i] = 1
		}
		st, err := Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(ones)), mesh, Cyclic(3))
		require.NoError(t, err)
		x := make([]complex128, n)
		for i := range x {
			x[i] = 1
		}
		y, yAbs, err := st.MulLower(x, make([]float64, n), false, false)
		require.NoError(t, err)
		for i := range n {
			require.Equal(t, complex(float64(i+1), 0), y[i], "%v: y[%d] with zero magnitudes", mesh, i)
			require.Zero(t, yAbs[i])
		}
		// A real matrix by a complex vector is an error on every mesh (the
		// GPUs hold x in the matrix's dtype and would drop its imaginary part).
		x[3] = complex(1, 1)
		_, _, err = st.MulLower(x, nil, false, false)
		require.ErrorContains(t, err, "by a complex vector (entry 3")
		st.Free()
	}
	m, err := CPUMesh(2)
	require.NoError(t, err)
	sq, err := New(m, tensor.Shape{4, 4}, tensor.Float64, Cyclic(2))
	require.NoError(t, err)
	_, _, err = sq.MulLower(make([]complex128, 3), nil, false, false)
	require.ErrorContains(t, err, "order 4 by a vector of 3")
	_, _, err = sq.MulLower(make([]complex128, 4), make([]float64, 3), false, false)
	require.ErrorContains(t, err, "3 magnitudes for a vector of 4")
	_, _, err = sq.MulHermitian(make([]complex128, 5), nil)
	require.ErrorContains(t, err, "MulHermitian of order 4 by a vector of 5")
	_, _, err = sq.MulCholesky(make([]complex128, 4), make([]float64, 1))
	require.ErrorContains(t, err, "MulCholesky: 1 magnitudes for a vector of 4")
	rect, err := New(m, tensor.Shape{4, 3}, tensor.Float64, Cyclic(2))
	require.NoError(t, err)
	_, _, err = rect.MulLower(make([]complex128, 4), nil, false, false)
	require.ErrorContains(t, err, "non-square")
	ints, err := New(m, tensor.Shape{4, 4}, tensor.Int32, Cyclic(2))
	require.NoError(t, err)
	_, _, err = ints.MulLower(make([]complex128, 4), nil, false, false)
	require.ErrorContains(t, err, "unsupported dtype int32")
	// Results of the wrong size or over the inputs: an error, and the
	// results as they were.
	x, xAbs := []complex128{1, 2, 3, 4}, []float64{1, 2, 3, 4}
	y, yAbs := []complex128{9, 9, 9, 9}, []float64{9, 9, 9, 9}
	for _, bad := range []struct {
		err  error
		want string
	}{
		{sq.MulLowerInto(y[:3], yAbs, x, xAbs, false, false), "MulLowerInto: results of 3 and 4 for order 4"},
		{sq.MulHermitianInto(y, yAbs[:1], x, nil), "MulHermitianInto: results of 4 and 1 for order 4"},
		{sq.MulCholeskyInto(x, yAbs, x, xAbs), "MulCholeskyInto: the results overlap"},
		{sq.MulLowerInto(y, yAbs, x, yAbs, false, false), "the results overlap"},
	} {
		require.ErrorContains(t, bad.err, bad.want)
	}
	require.Equal(t, []complex128{9, 9, 9, 9}, y)
	require.Equal(t, []float64{9, 9, 9, 9}, yAbs)
	require.Equal(t, []complex128{1, 2, 3, 4}, x)
}

func TestOverlap(t *testing.T) {
	a := make([]float64, 10)
	for _, c := range []struct {
		x, y []float64
		want bool
	}{
		{a[0:5], a[5:10], false},
		{a[0:6], a[5:10], true},
		{a[5:10], a[0:6], true},
		{a[2:3], a[0:10], true},
		{a[0:0], a[0:10], false},
		{a[0:5], make([]float64, 5), false},
	} {
		require.Equal(t, c.want, overlap(c.x, c.y), "%v %v", c.x, c.y)
	}
}

// lowerProduct is the reference: the product with the lower triangle of
// the row-major host matrix, diagonal taken as real, in complex128 with
// the matrix's elements rounded as stored and x rounded to the dtype.
func lowerProduct(host *tensor.Dense, x []complex128, xAbs []float64, adjoint, strict bool) ([]complex128, []float64) {
	n := host.Shape()[0]
	at := func(i, j int) complex128 {
		v, _ := host.At(i, j)
		switch v := v.(type) {
		case float32:
			return complex(float64(v), 0)
		case float64:
			return complex(v, 0)
		case complex64:
			return complex128(v)
		}
		return v.(complex128)
	}
	round := func(c complex128) complex128 {
		switch host.Dtype() {
		case tensor.Float32:
			return complex(float64(float32(real(c))), 0)
		case tensor.Complex64:
			return complex128(complex64(c))
		}
		return c
	}
	y, abs := make([]complex128, n), make([]float64, n)
	for i := range n {
		for j := range n {
			if j > i || strict && j == i {
				continue
			}
			v := at(i, j)
			if i == j {
				v = complex(real(v), 0)
			}
			if adjoint {
				y[j] += cmplx.Conj(v) * round(x[i])
				abs[j] += cmplx.Abs(v) * magnitude(xAbs, x, i)
			} else {
				y[i] += v * round(x[j])
				abs[i] += cmplx.Abs(v) * magnitude(xAbs, x, j)
			}
		}
	}
	return y, abs
}

// magnitude is xAbs[i], or |x[i]| when xAbs is nil.
func magnitude(xAbs []float64, x []complex128, i int) float64 {
	if xAbs == nil {
		return cmplx.Abs(x[i])
	}
	return xAbs[i]
}
