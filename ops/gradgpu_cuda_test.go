//go:build mglacuda

package ops

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla/internal/benchpair"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

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
					got, gotHost := gradBothResults(t, what, c.kind, mc.mesh, mc.layout, vals, nil)
					require.Equal(t, before+2, gradsOnDevice.Load(), "%s: the device path did not run", what)
					for _, g := range []*tensor.Dense{got, gotHost} {
						checkGradResult(t, what, c.kind, n, toFloats(g.Data()), toFloats(want.Data()), dt)
					}
				}
			}
		}
	}
}

// gradBothResults runs the backward computation kind of vals on mesh twice:
// into a new sharded n×n result in layout (returned gathered) and, after
// between (when not nil), into a row-major host result.
func gradBothResults(t *testing.T, what string, kind gradKind, mesh *sharding.Mesh, layout sharding.Layout, vals []gorgonia.Value, between func()) (sharded, host *tensor.Dense) {
	t.Helper()
	n := gradOrder(vals)
	dt := vals[0].Dtype()
	out, err := sharding.New(mesh, tensor.Shape{n, n}, dt, layout)
	require.NoError(t, err, what)
	defer out.Free()
	require.NoError(t, runGrad(kind, out, vals...), what)
	sharded, err = out.Gather()
	require.NoError(t, err, what)
	if between != nil {
		between()
	}
	host = tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
	require.NoError(t, runGradHost(kind, mesh, host, vals...), what)
	return sharded, host
}

// gradOrder is the order N of a backward computation: the rows of its first
// operand.
func gradOrder(vals []gorgonia.Value) int { return vals[0].Shape()[0] }

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
// host's, in sharded and host results alike. (Here without cuBLASXt, so
// that the products run on the CPU: TestGradHostProductsOnGPUs has them on
// the GPUs.)
func TestGradOnDeviceFallsBackOnOutOfMemory(t *testing.T) {
	mesh, seed, rng := gradDeviceStart(t, 13)
	cpu, err := sharding.CPUMesh(1)
	require.NoError(t, err)
	const n = 67
	failXtOn = func() bool { return true }
	defer func() { failGradAlloc, failXtOn = nil, nil }()
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
			failGradAlloc = func(int, int) bool { calls++; return calls == failAt }
			before := gradsOnDevice.Load()
			got, gotHost := gradBothResults(t, what, c.kind, mesh, sharding.Cyclic(64), vals, func() { calls = 0 })
			failGradAlloc = nil
			require.GreaterOrEqual(t, calls, failAt, "%s: the device path did not allocate", what)
			require.Equal(t, before, gradsOnDevice.Load(), "%s: counted as run on the device", what)
			for _, g := range []*tensor.Dense{got, gotHost} {
				require.Equal(t, toFloats(want.Data()), toFloats(g.Data()), what)
			}
		}
	}
}

// The device path holds at most three N×N matrices on the first GPU,
// operands included (its own dense copies of operands on several GPUs
// become its scratch once read), and at most two beside the operands where
// those are the values' own shards (a one-GPU mesh): every computation, on
// a mesh of the first GPU and (with two GPUs) of two, against the host
// code's result.
func TestGradOnDeviceMemory(t *testing.T) {
	ngpu, err := cu.NumDevices()
	require.NoError(t, err)
	_, seed, rng := gradDeviceStart(t, 15)
	defer func() { failGradAlloc = nil }()
	const n = 70
	for _, c := range gradCases(rng, n) {
		want, err := gradHostResult(t, c, tensor.Float64, nil)
		require.NoError(t, err, c.name)
		for _, ids := range [][]int{{0}, {0, 1}}[:min(ngpu, 2)] {
			mesh, err := sharding.GPUMesh(ids...)
			require.NoError(t, err)
			what := fmt.Sprintf("seed %d, %s, GPUs %v", seed, c.name, ids)
			vals := c.values(t, tensor.Float64, mesh, sharding.Cyclic(16), -1)
			square := 0
			failGradAlloc = func(rows, cols int) bool {
				if rows == n && cols == n {
					square++
				}
				return false
			}
			before := gradsOnDevice.Load()
			got := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(n, n))
			require.NoError(t, runGradHost(c.kind, mesh, got, vals...), what)
			failGradAlloc = nil
			require.Equal(t, before+1, gradsOnDevice.Load(), "%s: the device path did not run", what)
			limit := 3
			if len(ids) == 1 {
				limit = 2
			}
			require.LessOrEqual(t, square, limit, "%s: N×N matrices on the first GPU", what)
			checkGradResult(t, what, c.kind, n, toFloats(got.Data()), toFloats(want.Data()), tensor.Float64)
		}
	}
}

// Where the device path leaves a computation to the host code (here: the
// first GPU out of memory for its dense copies), the host code's products
// run on every GPU of the mesh through cuBLASXt: every computation, both
// real dtypes, meshes of one and (with two GPUs) two GPUs, sharded and host
// results, against the host code on a CPU mesh; and with tiles smaller than
// the matrices (several per product, partial at the edges). Every product
// runs on the GPUs here, however small (allProductsOnDevices).
func TestGradHostProductsOnGPUs(t *testing.T) {
	ngpu, err := cu.NumDevices()
	require.NoError(t, err)
	_, seed, rng := gradDeviceStart(t, 14)
	defer allProductsOnDevices()()
	failGradAlloc = func(int, int) bool { return true }
	defer func() { failGradAlloc = nil }()
	small, err := cusolver.NewXt(seq(min(ngpu, 2))...)
	require.NoError(t, err)
	defer small.Close()
	require.NoError(t, small.SetBlockDim(48))
	for _, n := range []int{1, 67, 300} {
		for _, c := range gradCases(rng, n) {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				what := fmt.Sprintf("seed %d, %s, n=%d, %v", seed, c.name, n, dt)
				want, err := gradHostResult(t, c, dt, nil)
				require.NoError(t, err, what)
				got, err := gradHostResult(t, c, dt, small)
				require.NoError(t, err, what+", tiles of 48")
				checkGradResult(t, what+", tiles of 48", c.kind, n, toFloats(got.Data()), toFloats(want.Data()), dt)
				for _, ids := range [][]int{{0}, {0, 1}}[:min(ngpu, 2)] {
					mesh, err := sharding.GPUMesh(ids...)
					require.NoError(t, err)
					what := fmt.Sprintf("%s, GPUs %v", what, ids)
					vals := c.values(t, dt, mesh, sharding.Cyclic(64), -1)
					before, beforeDev := gradsWithDeviceProducts.Load(), gradsOnDevice.Load()
					gotSharded, gotHost := gradBothResults(t, what, c.kind, mesh, sharding.Cyclic(64), vals, nil)
					if c.hasProducts() {
						require.Equal(t, before+2, gradsWithDeviceProducts.Load(), "%s: the products did not run on the GPUs", what)
					} else {
						require.Equal(t, before, gradsWithDeviceProducts.Load(), "%s: counted without a product", what)
					}
					require.Equal(t, beforeDev, gradsOnDevice.Load(), "%s: the device path ran", what)
					for _, g := range []*tensor.Dense{gotSharded, gotHost} {
						checkGradResult(t, what, c.kind, n, toFloats(g.Data()), toFloats(want.Data()), dt)
					}
				}
			}
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

var (
	gradDeviceN     = flag.Int("ops.grad-device-n", 4096, "matrix order of BenchmarkGradOnDevice")
	gradBenchGPUs   = flag.Int("ops.grad-gpus", 1, "GPUs of the mesh of BenchmarkGradOnDevice's operands")
	gradBenchXtTile = flag.Int("ops.grad-xt-tile", cusolver.XtBlockDim, "BenchmarkGradOnDevice: cuBLASXt's tile side (Xt.SetBlockDim)")
	gradBenchXtPin  = flag.Bool("ops.grad-xt-pin", false, "BenchmarkGradOnDevice: cuBLASXt page-locks the host matrices of each call (Xt.SetPinning)")
	gradBenchPaths  = flag.String("ops.grad-paths", "device", "BenchmarkGradOnDevice's paths, comma separated: device (the first GPU), xt (the host code, its products through cuBLASXt on the mesh's GPUs), cpu (the host code on the CPU)")
)

// BenchmarkGradOnDevice times each backward computation on a GPU mesh
// (float64, N = -ops.grad-device-n, operands already on the mesh's
// -ops.grad-gpus GPUs, a sharded result; on one GPU whole, on more in
// 512-column blocks), by each of
// -ops.grad-paths, in turns with the forward's Cholesky factorization of an
// N×N matrix on the first GPU (the anchor: cuSOLVER's potrf through the
// mesh solver). The xt and cpu paths are the host code, which the device
// path leaves a computation to when the first GPU cannot hold its dense
// copies: the operands gathered to the host, the result scattered back.
// Metrics: ms, the computation's median time; x-potrf, the median ratio of
// the two.
func BenchmarkGradOnDevice(b *testing.B) {
	first, err := sharding.GPUMesh(0)
	if err != nil {
		b.Fatal(err)
	}
	mesh, err := sharding.GPUMesh(seq(*gradBenchGPUs)...)
	if err != nil {
		b.Fatal(err)
	}
	n := *gradDeviceN
	rng := rand.New(rand.NewPCG(1, 2))
	a, err := sharding.Put(randomHPD(rng, tensor.Float64, n), first, sharding.Cyclic(n))
	if err != nil {
		b.Fatal(err)
	}
	l, err := sharding.New(first, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(n))
	if err != nil {
		b.Fatal(err)
	}
	potrf := func() {
		if err := (gpuSolver{}).potrf(a, l); err != nil {
			b.Fatal(err)
		}
	}
	layout := sharding.Cyclic(n)
	if mesh.Size() > 1 {
		layout = sharding.Cyclic(512)
	}
	if x := xtFor(mesh); x != nil {
		xt := x.(*cusolver.Xt)
		if err := errors.Join(xt.SetPinning(*gradBenchXtPin), xt.SetBlockDim(*gradBenchXtTile)); err != nil {
			b.Fatal(err)
		}
		defer xt.SetPinning(false)
		defer xt.SetBlockDim(cusolver.XtBlockDim)
	}
	always := func() bool { return true }
	defer func() { failGradAlloc, failXtOn = nil, nil }()
	for _, c := range gradCases(rng, n) {
		vals := c.values(b, tensor.Float64, mesh, layout, -1)
		out, err := sharding.New(mesh, tensor.Shape{n, n}, tensor.Float64, layout)
		if err != nil {
			b.Fatal(err)
		}
		for _, path := range strings.Split(*gradBenchPaths, ",") {
			switch path {
			case "device":
				failGradAlloc, failXtOn = nil, nil
			case "xt":
				failGradAlloc, failXtOn = func(int, int) bool { return true }, nil
			case "cpu":
				failGradAlloc, failXtOn = func(int, int) bool { return true }, always
			default:
				b.Fatalf("unknown path %q", path)
			}
			b.Run(c.name+"/"+path, func(b *testing.B) {
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
		}
		out.Free()
	}
}
