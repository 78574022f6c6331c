package sparse

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var testSeed = uint64(time.Now().UnixNano())

func testRNG(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	t.Logf("seed %d (stream %d)", testSeed, stream)
	return rand.New(rand.NewPCG(testSeed, stream))
}

// triplets of a matrix, for building it whole or by row blocks.
type triplets struct {
	n          int
	rows, cols []int
	vals       []float64
}

// laplace2D is the 5-point Laplacian on an nx×ny grid plus a random positive
// diagonal shift (SPD); with asym > 0 a random upwind convection term of that
// size is added (non-symmetric, still diagonally dominant).
func laplace2D(rng *rand.Rand, nx, ny int, asym float64) triplets {
	t := triplets{n: nx * ny}
	add := func(i, j int, v float64) {
		t.rows = append(t.rows, i)
		t.cols = append(t.cols, j)
		t.vals = append(t.vals, v)
	}
	for y := range ny {
		for x := range nx {
			i := y*nx + x
			add(i, i, 4+rng.Float64()+2*asym)
			nb := func(ok bool, j int) {
				if ok {
					add(i, j, -1-asym*rng.Float64())
				}
			}
			nb(x > 0, i-1)
			nb(x < nx-1, i+1)
			nb(y > 0, i-nx)
			nb(y < ny-1, i+nx)
		}
	}
	return t
}

// block is the rows [lo, hi) of the triplets.
func (t triplets) block(tb testing.TB, lo, hi int) *CSR {
	tb.Helper()
	var r, c []int
	var v []float64
	for k, i := range t.rows {
		if i >= lo && i < hi {
			r, c, v = append(r, i), append(c, t.cols[k]), append(v, t.vals[k])
		}
	}
	a, err := RowBlockFromTriplets(t.n, lo, hi-lo, r, c, v)
	require.NoError(tb, err)
	return a
}

func (t triplets) whole(tb testing.TB) *CSR { return t.block(tb, 0, t.n) }

// dense is the matrix as a dense row-major array.
func (t triplets) dense() []float64 {
	d := make([]float64, t.n*t.n)
	for k, i := range t.rows {
		d[i*t.n+t.cols[k]] += t.vals[k]
	}
	return d
}

// denseSolve solves the dense system by Gaussian elimination with partial
// pivoting (the float64 reference).
func denseSolve(n int, a, b []float64, trans bool) []float64 {
	m := make([]float64, n*n)
	for i := range n {
		for j := range n {
			if trans {
				m[i*n+j] = a[j*n+i]
			} else {
				m[i*n+j] = a[i*n+j]
			}
		}
	}
	x := slices.Clone(b)
	for k := range n {
		p := k
		for i := k + 1; i < n; i++ {
			if math.Abs(m[i*n+k]) > math.Abs(m[p*n+k]) {
				p = i
			}
		}
		for j := range n {
			m[k*n+j], m[p*n+j] = m[p*n+j], m[k*n+j]
		}
		x[k], x[p] = x[p], x[k]
		for i := k + 1; i < n; i++ {
			f := m[i*n+k] / m[k*n+k]
			for j := k; j < n; j++ {
				m[i*n+j] -= f * m[k*n+j]
			}
			x[i] -= f * x[k]
		}
	}
	for i := n - 1; i >= 0; i-- {
		for j := i + 1; j < n; j++ {
			x[i] -= m[i*n+j] * x[j]
		}
		x[i] /= m[i*n+i]
	}
	return x
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func vecNode(g *G.ExprGraph, name string, v []float64) *G.Node {
	return G.NewVector(g, tensor.Float64, G.WithShape(len(v)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(slices.Clone(v)))))
}

func relErr(got, want []float64) float64 {
	var d, w float64
	for i := range want {
		d += (got[i] - want[i]) * (got[i] - want[i])
		w += want[i] * want[i]
	}
	return math.Sqrt(d / w)
}

func nodeFloats(t testing.TB, v G.Value) []float64 {
	t.Helper()
	f, err := floats("test", v)
	require.NoError(t, err)
	return slices.Clone(f)
}

// neumann1D is the 1-D Laplacian of order n with Neumann ends (singular:
// constants are its null space) plus shift·I.
func neumann1D(n int, shift float64) triplets {
	tr := triplets{n: n}
	for i := range n {
		d := 2 + shift
		if i == 0 || i == n-1 {
			d = 1 + shift
		}
		tr.rows, tr.cols, tr.vals = append(tr.rows, i), append(tr.cols, i), append(tr.vals, d)
		if i > 0 {
			tr.rows, tr.cols, tr.vals = append(tr.rows, i, i-1), append(tr.cols, i-1, i), append(tr.vals, -1, -1)
		}
	}
	return tr
}

// residual is the true relative residual ‖b − A·x‖/‖b‖.
func (t triplets) residual(x, b []float64) float64 {
	r := slices.Clone(b)
	for k, i := range t.rows {
		r[i] -= t.vals[k] * x[t.cols[k]]
	}
	num, den := 0.0, 0.0
	for i := range r {
		num += r[i] * r[i]
		den += b[i] * b[i]
	}
	return math.Sqrt(num / den)
}
