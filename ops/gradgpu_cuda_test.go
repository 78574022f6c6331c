//go:build mglacuda

package ops

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla/internal/benchpair"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
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

// The backward computations on a GPU mesh run on its first GPU (cuBLAS) and
// agree with the host code on a CPU mesh: every computation, both real
// dtypes, orders of one, a few and more than one GPU block (1100 > 1024)
// columns, meshes of one and (with two GPUs) two GPUs in column
// block-cyclic and row-block layouts, with an operand given as a host
// tensor, into sharded and into host results. The symmetric results are
// exactly symmetric, CholSolve's L̄ exactly lower triangular.
func TestGradOnDeviceMatchesHost(t *testing.T) {
	ngpu, err := cu.NumDevices()
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	cpu, err := sharding.CPUMesh(1)
	require.NoError(t, err)
	type meshCase struct {
		name   string
		mesh   *sharding.Mesh
		layout sharding.Layout
	}
	var meshes []meshCase
	for _, ids := range [][]int{{0}, {0, 1}}[:min(ngpu, 2)] {
		m, err := sharding.GPUMesh(ids...)
		require.NoError(t, err)
		meshes = append(meshes,
			meshCase{fmt.Sprintf("%d GPU, cyclic 64", len(ids)), m, sharding.Cyclic(64)},
			meshCase{fmt.Sprintf("%d GPU, row blocks", len(ids)), m, sharding.RowBlocks()})
	}
	for _, n := range []int{1, 67, 1100} {
		for _, c := range gradCases(rng, n) {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				what := fmt.Sprintf("seed %d, %s, n=%d, %v", seed, c.name, n, dt)
				want := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
				require.NoError(t, runGradHost(c.kind, cpu, want, c.values(t, dt, cpu, sharding.Cyclic(64), -1)...), what)
				for k, mc := range meshes {
					hostAt := -1
					if k%2 == 1 {
						hostAt = len(c.mats) - 1 // the last matrix from the host
					}
					what := fmt.Sprintf("%s, %s, host operand %d", what, mc.name, hostAt)
					vals := c.values(t, dt, mc.mesh, mc.layout, hostAt)
					before := gradsOnDevice.Load()
					out, err := sharding.New(mc.mesh, tensor.Shape{n, n}, dt, mc.layout)
					require.NoError(t, err, what)
					require.NoError(t, runGrad(c.kind, out, vals...), what)
					got, err := out.Gather()
					require.NoError(t, err, what)
					out.Free()
					gotHost := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
					require.NoError(t, runGradHost(c.kind, mc.mesh, gotHost, vals...), what)
					require.Equal(t, before+2, gradsOnDevice.Load(), "%s: the device path did not run", what)
					for _, g := range []*tensor.Dense{got, gotHost} {
						checkGradResult(t, what, c.kind, n, toFloats(g.Data()), toFloats(want.Data()), dt)
					}
				}
			}
		}
	}
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

// gradDeviceStart starts a test of the device path: a mesh of the first
// GPU, and a generator on a fresh seed (logged) and stream.
func gradDeviceStart(t *testing.T, stream uint64) (*sharding.Mesh, uint64, *rand.Rand) {
	t.Helper()
	mesh, err := sharding.GPUMesh(0)
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return mesh, seed, rand.New(rand.NewPCG(seed, stream))
}

// Errors from the device path: equal eigenvalues where the eigenvectors
// count are ErrRepeatedEigenvalues; a float64 gradient beyond the range is
// ErrNonFinite; a float32 one is left to the host code (which computes it
// again in float64 and finds it beyond float32's range too). Nothing is
// written into the result on an error. A freed operand is ErrFreed.
func TestGradOnDeviceErrors(t *testing.T) {
	mesh, seed, rng := gradDeviceStart(t, 12)
	const n = 40
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, c := range gradCases(rng, n) {
			switch c.kind {
			case gEigVectors:
				c.w = make([]float64, n) // all equal
			case gScale, gLogDensity:
				c.scalar = 1e300
				if dt == tensor.Float32 {
					c.scalar = 1e38
				}
				for i := range c.mats[0] {
					c.mats[0][i] *= 1e10
				}
			default:
				continue
			}
			what := fmt.Sprintf("seed %d, %s, %v", seed, c.name, dt)
			out, err := sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(64))
			require.NoError(t, err, what)
			require.NoError(t, out.Load(hostTensor(dt, n, n, make([]float64, n*n))), what)
			before := gradsOnDevice.Load()
			err = runGrad(c.kind, out, c.values(t, dt, mesh, sharding.Cyclic(64), -1)...)
			if c.kind == gEigVectors {
				require.ErrorIs(t, err, kernels.ErrRepeatedEigenvalues, what)
			} else {
				require.ErrorIs(t, err, kernels.ErrNonFinite, what)
			}
			require.Equal(t, before, gradsOnDevice.Load(), what)
			g, err := out.Gather()
			require.NoError(t, err, what)
			for i, v := range toFloats(g.Data()) {
				require.Zero(t, v, "%s: element %d written", what, i)
			}
			out.Free()
		}
	}
	// A freed operand on a one-GPU mesh is ErrFreed, as on the host path.
	c := gradCases(rng, n)[0]
	vals := c.values(t, tensor.Float64, mesh, sharding.Cyclic(64), -1)
	vals[0].(*sharding.Tensor).Free()
	out, err := sharding.New(mesh, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(64))
	require.NoError(t, err)
	defer out.Free()
	require.ErrorIs(t, runGrad(c.kind, out, vals...), sharding.ErrFreed)
}

// The device path refuses operands whose columns do not fit the kind as the
// host code does (gradCheckColumns), and writes nothing.
func TestGradOnDeviceChecksColumns(t *testing.T) {
	mesh, _, _ := gradDeviceStart(t, 13)
	before := gradsOnDevice.Load()
	checkGradColumns(t, mesh)
	require.Equal(t, before, gradsOnDevice.Load())
}

// Out of device memory part way (the first or a later temporary), the
// device path leaves the computation to the host code, whose result is the
// host's, in sharded and host results alike.
func TestGradOnDeviceFallsBackOnOutOfMemory(t *testing.T) {
	mesh, seed, rng := gradDeviceStart(t, 13)
	cpu, err := sharding.CPUMesh(1)
	require.NoError(t, err)
	const n = 67
	defer func() { failGradAlloc = nil }()
	for _, c := range gradCases(rng, n) {
		if c.kind != gCholesky && c.kind != gCholSolveL && c.kind != gEigVectors {
			continue
		}
		dt := tensor.Float64
		want := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
		require.NoError(t, runGradHost(c.kind, cpu, want, c.values(t, dt, cpu, sharding.Cyclic(64), -1)...), c.name)
		for _, failAt := range []int{1, 2} {
			what := fmt.Sprintf("seed %d, %s, allocation %d fails", seed, c.name, failAt)
			vals := c.values(t, dt, mesh, sharding.Cyclic(64), -1)
			calls := 0
			failGradAlloc = func() bool { calls++; return calls == failAt }
			before := gradsOnDevice.Load()
			out, err := sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(64))
			require.NoError(t, err, what)
			require.NoError(t, runGrad(c.kind, out, vals...), what)
			got, err := out.Gather()
			require.NoError(t, err, what)
			out.Free()
			calls = 0
			gotHost := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
			require.NoError(t, runGradHost(c.kind, mesh, gotHost, vals...), what)
			failGradAlloc = nil
			require.GreaterOrEqual(t, calls, failAt, "%s: the device path did not allocate", what)
			require.Equal(t, before, gradsOnDevice.Load(), "%s: counted as run on the device", what)
			for _, g := range []*tensor.Dense{got, gotHost} {
				require.Equal(t, toFloats(want.Data()), toFloats(g.Data()), what)
			}
		}
	}
}

var gradDeviceN = flag.Int("ops.grad-device-n", 4096, "matrix order of BenchmarkGradOnDevice")

// BenchmarkGradOnDevice times each backward computation on a one-GPU mesh
// (float64, N = -ops.grad-device-n, operands already on the GPU, a sharded
// result) in turns with the forward's Cholesky factorization of an N×N
// matrix on the same GPU (the anchor: cuSOLVER's potrf through the mesh
// solver). Metrics: ms, the computation's median time; x-potrf, the median
// ratio of the two.
func BenchmarkGradOnDevice(b *testing.B) {
	mesh, err := sharding.GPUMesh(0)
	if err != nil {
		b.Fatal(err)
	}
	n := *gradDeviceN
	rng := rand.New(rand.NewPCG(1, 2))
	a, err := sharding.Put(randomHPD(rng, tensor.Float64, n), mesh, sharding.Cyclic(n))
	if err != nil {
		b.Fatal(err)
	}
	l, err := sharding.New(mesh, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(n))
	if err != nil {
		b.Fatal(err)
	}
	potrf := func() {
		if err := (gpuSolver{}).potrf(a, l); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range gradCases(rng, n) {
		vals := c.values(b, tensor.Float64, mesh, sharding.Cyclic(n), -1)
		out, err := sharding.New(mesh, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			grad := func() {
				if err := runGrad(c.kind, out, vals...); err != nil {
					b.Fatal(err)
				}
			}
			grad() // warm-up: the handle, the first allocations
			potrf()
			var p benchpair.Pairs
			for range b.N {
				p.Time(grad, potrf)
			}
			b.ReportMetric(float64(benchpair.Median(p.Wall[0]))/1e6, "ms")
			b.ReportMetric(p.MedianRatio(), "x-potrf")
		})
		out.Free()
	}
}
