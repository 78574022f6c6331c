package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gradCase is one backward computation's inputs, row-major float64: the
// matrices (rows n, cols each), then a scalar or a vector where the kind
// takes one, and the eigenvalues of the eigenvector share.
type gradCase struct {
	name   string
	kind   gradKind
	n      int
	cols   []int
	mats   [][]float64
	scalar float64
	vector []float64
	w      []float64
}

// gradCases are random inputs of every backward computation at order n:
// L well conditioned and lower triangular, C symmetric (Potri's result is),
// distinct eigenvalues; the other matrices (the upstream gradients) with
// no structure.
func gradCases(rng *rand.Rand, n int) []gradCase {
	mat := func(rows, cols int) []float64 {
		m := make([]float64, rows*cols)
		for i := range m {
			m[i] = rng.NormFloat64()
		}
		return m
	}
	lower := func() []float64 {
		l := make([]float64, n*n)
		for i := range n {
			for j := range i {
				l[i*n+j] = rng.NormFloat64() / float64(n)
			}
			l[i*n+i] = 2 + rng.Float64()
		}
		return l
	}
	sym := func() []float64 {
		c := mat(n, n)
		for i := range n {
			for j := range i {
				c[j*n+i] = c[i*n+j]
			}
		}
		return c
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = float64(i) + rng.Float64()/2
	}
	return []gradCase{
		{name: "PotrsGrad K=3", kind: gSymOuter, n: n, cols: []int{3, 3}, mats: [][]float64{mat(n, 3), mat(n, 3)}},
		{name: "PotrsGrad K=12", kind: gSymOuter, n: n, cols: []int{12, 12}, mats: [][]float64{mat(n, 12), mat(n, 12)}},
		{name: "CholSolveGradL", kind: gCholSolveL, n: n, cols: []int{5, 5, n}, mats: [][]float64{mat(n, 5), mat(n, 5), lower()}},
		{name: "PotriGrad", kind: gSandwich, n: n, cols: []int{n, n}, mats: [][]float64{sym(), mat(n, n)}},
		{name: "LogDetGrad", kind: gScale, n: n, cols: []int{n}, mats: [][]float64{sym()}, scalar: -1.7},
		{name: "GaussianLogDensityGrad K=3", kind: gLogDensity, n: n, cols: []int{n, 3}, mats: [][]float64{sym(), mat(n, 3)}, scalar: -0.6},
		{name: "GaussianLogDensityGrad K=12", kind: gLogDensity, n: n, cols: []int{n, 12}, mats: [][]float64{sym(), mat(n, 12)}, scalar: 1.3},
		{name: "CholeskyGrad", kind: gCholesky, n: n, cols: []int{n, n}, mats: [][]float64{lower(), mat(n, n)}},
		{name: "EigenValuesGrad", kind: gEigValues, n: n, cols: []int{n}, mats: [][]float64{mat(n, n)}, vector: mat(n, 1), w: w},
		{name: "EigenVectorsGrad", kind: gEigVectors, n: n, cols: []int{n, n}, mats: [][]float64{mat(n, n), mat(n, n)}, w: w},
	}
}

// values are c's inputs as the op receives them: the matrices sharded on
// mesh in layout (the one at hostAt, when in range, a host tensor instead),
// the first one the eigenvectors of an Eigen node for the eigen shares.
func (c gradCase) values(t testing.TB, dt tensor.Dtype, mesh *sharding.Mesh, layout sharding.Layout, hostAt int) []gorgonia.Value {
	t.Helper()
	var vals []gorgonia.Value
	for i, m := range c.mats {
		h := hostTensor(dt, c.n, c.cols[i], m)
		if i == hostAt {
			vals = append(vals, h)
			continue
		}
		s, err := sharding.Put(h, mesh, layout)
		require.NoError(t, err)
		if i == 0 && c.w != nil {
			vals = append(vals, &eigenValue{Tensor: s, w: c.w})
			continue
		}
		vals = append(vals, s)
	}
	switch {
	case c.kind == gScale || c.kind == gLogDensity:
		vals = append(vals, hostTensor(dt, 1, 1, []float64{c.scalar}))
	case c.vector != nil:
		vals = append(vals, hostTensor(dt, c.n, 1, c.vector))
	}
	return vals
}

// checkGradResult compares the row-major n×n got with want (relative
// Frobenius error) and checks got's structure.
func checkGradResult(t *testing.T, what string, kind gradKind, n int, got, want []float64, dt tensor.Dtype) {
	t.Helper()
	var diff, norm float64
	for i, w := range want {
		diff += (got[i] - w) * (got[i] - w)
		norm += w * w
	}
	tol := 1e-12
	if dt == tensor.Float32 {
		tol = 2e-5
	}
	if e := math.Sqrt(diff / math.Max(norm, math.SmallestNonzeroFloat64)); !(e <= tol) {
		t.Errorf("%s: relative error %.3g against the host code, want ≤ %g", what, e, tol)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			switch {
			case kind == gCholSolveL && got[i*n+j] != 0:
				t.Fatalf("%s: [%d,%d] = %v above the diagonal", what, i, j, got[i*n+j])
			case kind != gCholSolveL && got[i*n+j] != got[j*n+i]:
				t.Fatalf("%s: [%d,%d] = %v but [%d,%d] = %v", what, i, j, got[i*n+j], j, i, got[j*n+i])
			}
		}
	}
}

func toFloats(data any) []float64 {
	var out []float64
	switch s := data.(type) {
	case []float32:
		for _, v := range s {
			out = append(out, float64(v))
		}
	case []float64:
		out = append(out, s...)
	case []complex64:
		for _, v := range s {
			out = append(out, float64(real(v)), float64(imag(v)))
		}
	case []complex128:
		for _, v := range s {
			out = append(out, real(v), imag(v))
		}
	}
	return out
}
