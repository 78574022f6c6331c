//go:build mglacuda

package mgla_test

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
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

var (
	potrsN = flag.Int("mgla.potrs-n", 16384, "matrix order of BenchmarkGPUPotrsPhases")
	potriN = flag.Int("mgla.potri-n", 8192, "matrix order of BenchmarkGPUPotriSinglePhases")
)

// BenchmarkGPUPotrsPhases splits the time of the Potrs op with one
// right-hand side (float64, N = -mgla.potrs-n, T = 2048, the factor already
// on every visible GPU, cuSolverMg) into its phases, next to the raw
// cuSolverMg call on the same buffers: the op's overhead over the raw call,
// phase by phase.
func BenchmarkGPUPotrsPhases(b *testing.B) {
	const tile = 2048
	n := *potrsN
	mesh, a, l := factorOnGPUs(b, n, tile)
	defer a.Free()
	rhs, err := sharding.Put(benchOnes(n), mesh, sharding.Cyclic(tile))
	require.NoError(b, err)
	x, err := sharding.New(mesh, tensor.Shape{n, 1}, tensor.Float64, sharding.Cyclic(tile))
	require.NoError(b, err)
	ids := make([]int, mesh.Size())
	for i, d := range mesh.Devices() {
		ids[i] = d.ID
	}
	mg, err := cusolver.NewMg(ids)
	require.NoError(b, err)
	defer mg.Close()
	shardPtrs := func(t *sharding.Tensor) []uintptr {
		p := make([]uintptr, mesh.Size())
		for d := range p {
			p[d] = t.Shard(d).(*sharding.DeviceBuffer).Ptr()
		}
		return p
	}
	phases := []struct {
		name string
		run  func() error
	}{
		{"raw-cusolverMg", func() error {
			return mg.PotrsBlock(tensor.Float64, n, 1, tile, tile, shardPtrs(l), shardPtrs(x))
		}},
		{"check-factor-diagonal", l.CheckDiagonal},
		{"check-rhs", func() error { return rhs.CheckFinite(false) }},
		{"copy-rhs", func() error { return rhs.RelayoutInto(x) }},
	}
	for _, p := range phases {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				require.NoError(b, p.run())
			}
		})
	}
	opGraph := G.NewGraph()
	_, err = ops.Potrs(ops.Input(opGraph, a, "A"), ops.Input(opGraph, l, "L"), ops.Input(opGraph, rhs, "B"),
		ops.WithDispatch(ops.DispatchMesh))
	require.NoError(b, err)
	opMachine := G.NewTapeMachine(opGraph)
	runOp := func() error { opMachine.Reset(); return opMachine.RunAll() }
	b.Run("op", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, runOp())
		}
	})
	// The raw call and the op in turns, so that the drift of the GPUs'
	// speed between batches (±5% for this call) hits both alike.
	b.Run("op-over-raw", func(b *testing.B) {
		var raw, op time.Duration
		for b.Loop() {
			for _, p := range []struct {
				run func() error
				sum *time.Duration
			}{{phases[0].run, &raw}, {runOp, &op}} {
				start := time.Now()
				require.NoError(b, p.run())
				*p.sum += time.Since(start)
			}
		}
		b.ReportMetric(float64(op)/float64(raw), "op/raw")
		b.ReportMetric(float64(raw.Microseconds())/float64(b.N), "raw-µs/op")
	})
}

// BenchmarkGPUPotriSinglePhases splits the time of Potri with
// DispatchSingle on every visible GPU (float64, N = -mgla.potri-n, T = 2048,
// the factor already on the GPUs) into its phases: the copy of the factor
// into the result, the dense copy onto the first GPU (with and without the
// allocation), cuSOLVER's potri there, the copy back and the mirror of the
// lower triangle; next to the whole op on the single and on the mesh path.
func BenchmarkGPUPotriSinglePhases(b *testing.B) {
	const tile = 2048
	n := *potriN
	mesh, a, l := factorOnGPUs(b, n, tile)
	defer a.Free()
	c, err := sharding.New(mesh, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(tile))
	require.NoError(b, err)
	defer c.Free()
	first := mesh.Device(0).ID
	dn, err := cusolver.NewDn(first)
	require.NoError(b, err)
	defer dn.Close()
	dense, err := l.ToDense(0)
	require.NoError(b, err)
	defer dense.Release()
	phases := []struct {
		name string
		run  func() error
	}{
		{"relayout-into", func() error { return l.RelayoutInto(c) }},
		{"to-dense-alloc", func() error {
			buf, err := c.ToDense(0)
			if err == nil {
				buf.Release()
			}
			return err
		}},
		{"into-dense", func() error { return c.IntoDense(dense) }},
		{"into-dense+dn-potri", func() error {
			if err := l.IntoDense(dense); err != nil {
				return err
			}
			return dn.Potri(tensor.Float64, n, dense.Ptr(), n)
		}},
		{"from-dense", func() error { return c.FromDense(dense) }},
		{"mirror-lower", c.MirrorLower},
	}
	for _, p := range phases {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				require.NoError(b, p.run())
				require.NoError(b, cusolver.Synchronize(first))
			}
		})
	}
	for _, d := range []ops.Dispatch{ops.DispatchSingle, ops.DispatchMesh} {
		opGraph := G.NewGraph()
		_, err := ops.Potri(ops.Input(opGraph, a, "A"), ops.Input(opGraph, l, "L"), ops.WithDispatch(d))
		require.NoError(b, err)
		m := G.NewTapeMachine(opGraph)
		b.Run(fmt.Sprintf("op-%v", d), func(b *testing.B) {
			for b.Loop() {
				m.Reset()
				require.NoError(b, m.RunAll())
			}
		})
	}
}

// BenchmarkGPUGraphEndToEnd times mgla.Potrs from a host matrix to the host
// solution on every visible GPU (float64, N = -mgla.potrs-n, one right-hand
// side) next to its parts: the upload of A and the op on A already on the
// GPUs. Run it with -test.cpuprofile to see where the host time goes.
func BenchmarkGPUGraphEndToEnd(b *testing.B) {
	const tile = 2048
	n := *potrsN
	mesh, err := sharding.GPUMesh()
	require.NoError(b, err)
	host := benchSPD(n)
	b.Run("upload", func(b *testing.B) {
		for b.Loop() {
			a, err := sharding.Put(host, mesh, sharding.Cyclic(tile))
			require.NoError(b, err)
			a.Free()
		}
	})
	run := func(b *testing.B, a *G.Node, g *G.ExprGraph) {
		_, err := mgla.Potrs(a, G.NewMatrix(g, tensor.Float64, G.WithShape(n, 1), G.WithName("b"), G.WithValue(benchOnes(n))),
			mgla.WithMesh(mesh), mgla.WithTile(tile))
		require.NoError(b, err)
		m := G.NewTapeMachine(g)
		defer m.Close()
		for b.Loop() {
			m.Reset()
			require.NoError(b, m.RunAll())
		}
	}
	b.Run("graph-on-gpus", func(b *testing.B) {
		a, err := sharding.Put(host, mesh, sharding.Cyclic(tile))
		require.NoError(b, err)
		defer a.Free()
		g := G.NewGraph()
		run(b, ops.Input(g, a, "A"), g)
	})
	b.Run("graph-from-host", func(b *testing.B) {
		g := G.NewGraph()
		run(b, G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(host)), g)
	})
}

// factorOnGPUs puts an n×n SPD matrix on every visible GPU (block-cyclic,
// tile T) and factors it with cuSolverMg: the mesh, A and its factor L.
func factorOnGPUs(b *testing.B, n, tile int) (*sharding.Mesh, *sharding.Tensor, *sharding.Tensor) {
	mesh, err := sharding.GPUMesh()
	require.NoError(b, err)
	a, err := sharding.Put(benchSPD(n), mesh, sharding.Cyclic(tile))
	require.NoError(b, err)
	g := G.NewGraph()
	ln, err := ops.Cholesky(ops.Input(g, a, "A"), ops.WithDispatch(ops.DispatchMesh))
	require.NoError(b, err)
	require.NoError(b, G.NewTapeMachine(g).RunAll())
	return mesh, a, ln.Value().(*sharding.Tensor)
}

// benchSPD is a diagonally dominant, so positive definite, n×n matrix,
// filled in parallel.
func benchSPD(n int) *tensor.Dense {
	data := make([]float64, n*n)
	var wg sync.WaitGroup
	for w := range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += runtime.NumCPU() {
				for j := range n {
					data[i*n+j] = 1 / float64(1+max(i-j, j-i))
				}
				data[i*n+i] += float64(n)
			}
		}()
	}
	wg.Wait()
	return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(data))
}

func benchOnes(n int) *tensor.Dense {
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	return tensor.New(tensor.WithShape(n, 1), tensor.WithBacking(ones))
}
