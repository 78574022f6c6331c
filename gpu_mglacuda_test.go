//go:build mglacuda

package mgla_test

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The shared suite asks for meshes of 1, 2, 3 and 5 devices; on GPUs the
// request for 5 gets every visible GPU when there are at least 4, so that
// 4-GPU meshes are part of the suite.
func init() {
	gpuTestMesh = func(t *testing.T, ndev int) (*sharding.Mesh, bool) {
		n, err := cusolver.DeviceCount()
		require.NoError(t, err)
		if ndev == 5 && n >= 4 {
			ndev = n
		}
		if ndev > n {
			return nil, false
		}
		ids := make([]int, ndev)
		for i := range ids {
			ids[i] = i
		}
		m, err := sharding.GPUMesh(ids...)
		require.NoError(t, err)
		return m, true
	}
}

// gpuMeshes are the GPU subsets to test: 1, 2, 3 and 4 devices where present.
func gpuMeshes(t *testing.T) [][]int {
	n, err := cusolver.DeviceCount()
	require.NoError(t, err)
	require.Greater(t, n, 0, "no GPU")
	var out [][]int
	for k := 1; k <= min(n, 4); k++ {
		ids := make([]int, k)
		for i := range ids {
			ids[i] = i
		}
		out = append(out, ids)
	}
	return out
}

// TestGPUAgainstCPU runs every op on GPU meshes of 1 to 4 devices and on a
// CPU mesh (once per dtype) and compares, for all four dtypes, with N not a
// multiple of the tile.
func TestGPUAgainstCPU(t *testing.T) {
	rng := newRNG(t, 7)
	const n, k, tile = 1537, 5, 512
	cpu, _ := sharding.CPUMesh(1)
	var meshes []*sharding.Mesh
	for _, ids := range gpuMeshes(t) {
		gpu, err := sharding.GPUMesh(ids...)
		require.NoError(t, err)
		meshes = append(meshes, gpu)
	}
	for _, dt := range sharding.Dtypes {
		_, junk := hpd(rng, n, isComplex(dt))
		b := randomMatrix(rng, n, k, isComplex(dt))
		results := func(mesh *sharding.Mesh) map[string][]complex128 {
			g := G.NewGraph()
			a := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(dt, junk, n, n)))
			bn := G.NewMatrix(g, dt, G.WithShape(n, k), G.WithName("B"), G.WithValue(toDense(dt, b, n, k)))
			opts := []mgla.Option{mgla.WithMesh(mesh), mgla.WithTile(tile)}
			x := must(mgla.Potrs(a, bn, opts...))
			inv := must(mgla.Potri(a, opts...))
			l := must(mgla.Cholesky(a, opts...))
			ld := must(mgla.LogDet(a, opts...))
			w, _, err := mgla.Syevd(a, append(opts, mgla.EigenvaluesOnly())...)
			require.NoError(t, err)
			start := time.Now()
			require.NoError(t, run(t, g, false), "%v %v", mesh, dt)
			t.Logf("%v %v: graph ran in %v", mesh, dt, time.Since(start))
			out := map[string][]complex128{}
			for _, nd := range []*G.Node{x, inv, l, ld, w} {
				out[nd.Name()] = fromValue(t, nd.Value())
			}
			return out
		}
		want := results(cpu)
		for _, gpu := range meshes {
			for name, got := range results(gpu) {
				require.Less(t, relDiff(got, want[name]), tolerance(dt)*float64(n)*10, "%s on %v %v", name, gpu, dt)
			}
		}
	}
}

// TestGPUSyevdVectors checks eigenvectors on 4 (or fewer) GPUs.
func TestGPUSyevdVectors(t *testing.T) {
	rng := newRNG(t, 8)
	meshes := gpuMeshes(t)
	gpu, err := sharding.GPUMesh(meshes[len(meshes)-1]...)
	require.NoError(t, err)
	const n = 700
	for _, dt := range sharding.Dtypes {
		full, junk := hpd(rng, n, isComplex(dt))
		full = fromValue(t, toDense(dt, full, n, n))
		g := G.NewGraph()
		a := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(dt, junk, n, n)))
		w, v, err := mgla.Syevd(a, mgla.WithMesh(gpu), mgla.WithTile(256))
		require.NoError(t, err)
		require.NoError(t, run(t, g, false))
		wv, vv := fromValue(t, w.Value()), fromValue(t, v.Value())
		vw := make([]complex128, n*n)
		for i := range n {
			for j := range n {
				vw[i*n+j] = vv[i*n+j] * wv[j]
			}
		}
		require.Less(t, relDiff(matmul(full, n, n, vv, n), vw), tolerance(dt)*float64(n), "%v", dt)
	}
}

// TestGPUNotPD: the error names the minor, through Cause.
func TestGPUNotPD(t *testing.T) {
	gpu, err := sharding.GPUMesh(0)
	require.NoError(t, err)
	const n = 600
	a := make([]complex128, n*n)
	for i := range n {
		a[i*n+i] = 1
	}
	a[300*n+300] = -1
	g := G.NewGraph()
	an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(tensor.Float64, a, n, n)))
	_, err = mgla.Cholesky(an, mgla.WithMesh(gpu), mgla.WithTile(128))
	require.NoError(t, err)
	err = run(t, g, false)
	require.ErrorIs(t, mgla.Cause(err), mgla.ErrNotPositiveDefinite)
	require.Contains(t, err.Error(), "order 301")
}

// TestGPUManyPotrsFlat: 1000 Potrs runs keep device memory and goroutines flat.
func TestGPUManyPotrsFlat(t *testing.T) {
	meshes := gpuMeshes(t)
	gpu, err := sharding.GPUMesh(meshes[len(meshes)-1]...)
	require.NoError(t, err)
	rng := newRNG(t, 9)
	const n = 2048
	_, junk := hpd(rng, n, false)
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(tensor.Float64, junk, n, n)))
	b := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("b"), G.WithInit(G.Ones()))
	_, err = mgla.Potrs(a, b, mgla.WithMesh(gpu), mgla.WithTile(512))
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	var free0 int
	var gor0 int
	start := time.Now()
	for i := range 1000 {
		require.NoError(t, m.RunAll())
		m.Reset()
		if i == 10 {
			free0, _, _ = cusolver.MemGetInfo(0)
			gor0 = runtime.NumGoroutine()
		}
	}
	free1, _, _ := cusolver.MemGetInfo(0)
	t.Logf("1000 Potrs N=%d on %v: %v; free memory on gpu 0 %d → %d bytes; goroutines %d → %d",
		n, gpu, time.Since(start), free0, free1, gor0, runtime.NumGoroutine())
	require.Less(t, free0-free1, 64<<20, "device memory grew")
	require.LessOrEqual(t, runtime.NumGoroutine(), gor0+2)
}

// TestGPUDisjointMeshes: two graphs on disjoint GPU subsets in one process.
func TestGPUDisjointMeshes(t *testing.T) {
	meshes := gpuMeshes(t)
	if len(meshes) < 2 {
		t.Skip("needs 2 GPUs")
	}
	m0, err := sharding.GPUMesh(0)
	require.NoError(t, err)
	m1, err := sharding.GPUMesh(1)
	require.NoError(t, err)
	for i, mesh := range []*sharding.Mesh{m0, m1} {
		g := G.NewGraph()
		a := G.NewMatrix(g, tensor.Float64, G.WithShape(64, 64), G.WithName(fmt.Sprint("A", i)), G.WithInit(G.Ones()))
		eye := G.NewMatrix(g, tensor.Float64, G.WithShape(64, 64), G.WithName("I"), G.WithValue(tensor.New(tensor.WithShape(64, 64), tensor.WithBacking(identity(64)))))
		spd := G.Must(G.Add(a, G.Must(G.Mul(G.NewConstant(64.0), eye))))
		x := must(mgla.Potrs(spd, G.NewVector(g, tensor.Float64, G.WithShape(64), G.WithName("b"), G.WithInit(G.Ones())), mgla.WithMesh(mesh), mgla.WithTile(16)))
		require.NoError(t, run(t, g, false))
		require.InDelta(t, 1.0/128, x.Value().Data().([]float64)[0], 1e-12)
	}
}

// rowRanges writes sorted row indices as ranges, "[a–b c–d]".
func rowRanges(rows []int) string {
	var parts []string
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && rows[j+1] == rows[j]+1 {
			j++
		}
		parts = append(parts, fmt.Sprintf("%d–%d", rows[i], rows[j]))
		i = j + 1
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func identity(n int) []float64 {
	d := make([]float64, n*n)
	for i := range n {
		d[i*n+i] = 1
	}
	return d
}

// TestGPUPotriLarge inverts a random SPD matrix of order 6000 (T = 2048 and
// 512) on GPU meshes of 1 to 4 devices, on the mesh (cuSolverMg) and with
// the default dispatch, and checks A·C = I on 25 random columns of C and the
// last one, and solves for 2T+37 right-hand sides: cusolverMgPotri, and
// cusolverMgPotrs with B over several devices, were wrong at this size.
func TestGPUPotriLarge(t *testing.T) {
	rng := newRNG(t, 11)
	const n = 6000
	a := make([]float64, n*n)
	for i := range n {
		for j := range i {
			v := rng.Float64() - 0.5
			a[i*n+j], a[j*n+i] = v, v
		}
		a[i*n+i] = n / 2 // diagonally dominant: positive definite, κ ≤ 3
	}
	cols := []int{n - 1}
	for range 25 {
		cols = append(cols, rng.IntN(n))
	}
	for _, ids := range gpuMeshes(t) {
		mesh, err := sharding.GPUMesh(ids...)
		require.NoError(t, err)
		for _, tile := range []int{2048, 512} {
			for _, d := range []mgla.Dispatch{mgla.DispatchMesh, mgla.DispatchAuto} {
				what := fmt.Sprintf("%d GPUs T=%d %v", len(ids), tile, d)
				g := G.NewGraph()
				an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
					G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))))
				c := must(mgla.Potri(an, mgla.WithMesh(mesh), mgla.WithTile(tile), mgla.WithDispatch(d)))
				m := G.NewTapeMachine(g)
				require.NoError(t, m.RunAll(), what)
				cv := c.Value().Data().([]float64)
				worst := 0.0
				cj := make([]float64, n)
				for _, j := range cols {
					for q := range n {
						cj[q] = cv[q*n+j]
					}
					for i := range n {
						s := 0.0
						for q, v := range a[i*n : (i+1)*n] {
							s += v * cj[q]
						}
						if i == j {
							s--
						}
						worst = max(worst, math.Abs(s))
					}
				}
				t.Logf("%s: max |A·C − I| on %d columns = %.3g", what, len(cols), worst)
				require.Less(t, worst, 1e-11, what)
				m.Close()
				// Potrs with right-hand sides over several tiles (so several
				// devices): cusolverMgPotrs was wrong with B spread out.
				k := 2*tile + 37
				bv := make([]float64, n*k)
				for i := range bv {
					bv[i] = rng.Float64() - 0.5
				}
				g = G.NewGraph()
				an = G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
					G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))))
				bn := G.NewMatrix(g, tensor.Float64, G.WithShape(n, k), G.WithName("B"),
					G.WithValue(tensor.New(tensor.WithShape(n, k), tensor.WithBacking(bv))))
				x := must(mgla.Potrs(an, bn, mgla.WithMesh(mesh), mgla.WithTile(tile), mgla.WithDispatch(d)))
				m = G.NewTapeMachine(g)
				require.NoError(t, m.RunAll(), what)
				// residual is the largest |A·x − b| over five columns of X,
				// and where a wrong solve is wrong: the rows off by more
				// than 1e-10, as ranges.
				residual := func() (worst float64, where string) {
					xv := x.Value().Data().([]float64)
					for _, j := range []int{0, k / 2, k - 1, tile, 2 * tile} {
						for q := range n {
							cj[q] = xv[q*k+j]
						}
						var off []int
						col := 0.0
						for i := range n {
							s := -bv[i*k+j]
							for q, v := range a[i*n : (i+1)*n] {
								s += v * cj[q]
							}
							col = max(col, math.Abs(s))
							if math.Abs(s) > 1e-10 {
								off = append(off, i)
							}
						}
						if len(off) > 0 {
							where += fmt.Sprintf("; column %d: %.3g in %d rows %s", j, col, len(off), rowRanges(off))
						}
						worst = max(worst, col)
					}
					return worst, where
				}
				worst, where := residual()
				t.Logf("%s: Potrs with %d right-hand sides: max |A·X − B| = %.3g%s", what, k, worst, where)
				if worst >= 1e-10 {
					// Again on the same machine and inputs: a race, or wrong
					// every time?
					for range 2 {
						m.Reset()
						require.NoError(t, m.RunAll(), what)
						again, where := residual()
						t.Logf("%s: Potrs run again: max |A·X − B| = %.3g%s", what, again, where)
					}
				}
				require.Less(t, worst, 1e-10, what+" Potrs")
				m.Close()
			}
		}
	}
	t.Logf("wrong results from cuSolverMg replaced in this process (wrong factors, errors the host settled): %d", ops.WrongFactorsCaught())
}
