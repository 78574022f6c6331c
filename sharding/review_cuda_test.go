//go:build mglacuda

package sharding

import (
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// Tall and wide matrices move and are checked on a GPU: the kernels index
// columns by blockIdx.y, limited to 65535 blocks, so such launches are split
// (a 3,000,000×1 Gather and a 1×3,000,000 Put used to fail to launch).
func TestTallAndWideOnGPU(t *testing.T) {
	m, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	defer SetHostTransfer(SetHostTransfer(HostTransferAuto))
	for _, mode := range []HostTransfer{HostTransferStaged, HostTransferRegistered} {
		SetHostTransfer(mode)
		for _, shape := range [][]int{{3_000_000, 1}, {1, 3_000_000}, {1, 9_000_000}} {
			n := shape[0] * shape[1]
			data := make([]float64, n)
			for i := range data {
				data[i] = float64(i)
			}
			host := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
			for _, l := range []Layout{RowBlocks(), Replicated(), ColBlocks()} {
				x, err := Put(host, m, l)
				require.NoError(t, err, "mode %d Put %v %v", mode, shape, l)
				require.NoError(t, x.CheckFinite(false), "mode %d CheckFinite %v %v", mode, shape, l)
				got, err := x.Gather()
				require.NoError(t, err, "mode %d Gather %v %v", mode, shape, l)
				require.Equal(t, data, got.Data(), "mode %d %v %v", mode, shape, l)
				x.Free()
			}
		}
	}
	// A NaN far along a wide row is found.
	for _, l := range []Layout{RowBlocks(), Replicated(), ColBlocks()} {
		x, err := New(m, tensor.Shape{2, 600_000}, tensor.Float32, l)
		require.NoError(t, err)
		require.NoError(t, x.CheckFinite(false), "%v", l)
		data := make([]float32, 2*600_000)
		data[1*600_000+599_999] = float32(nanF64())
		y, err := Put(tensor.New(tensor.WithShape(2, 600_000), tensor.WithBacking(data)), m, l)
		require.NoError(t, err)
		require.ErrorIs(t, y.CheckFinite(false), ErrNonFinite, "%v", l)
		x.Free()
		y.Free()
	}
}

func nanF64() float64 { var z float64; return z / z }

// A freed device buffer, or a view of one, is refused with ErrFreed: its old
// address may belong to another allocation by now.
func TestFreedDeviceBuffersAreRejected(t *testing.T) {
	m, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	const n = 256
	ones := make([]float64, n*n)
	for i := range ones {
		ones[i] = 1
	}
	src, err := Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(ones)), m, ColBlocks())
	require.NoError(t, err)
	p, err := cyclic.NewPlan(n, n, 1, ColBlocks(), ColBlocks())
	require.NoError(t, err)
	a, err := New(m, tensor.Shape{n, n}, tensor.Float64, ColBlocks())
	require.NoError(t, err)
	raw := a.Shard(0)
	view, err := View(raw, 0, n*n)
	require.NoError(t, err)
	a.Free()
	b, err := New(m, tensor.Shape{n, n}, tensor.Float64, ColBlocks()) // often a's old address
	require.NoError(t, err)
	require.ErrorIs(t, ExecutePlan(p, tensor.Float64, []Buffer{src.Shard(0)}, []Buffer{raw}), ErrFreed)
	require.ErrorIs(t, ExecutePlan(p, tensor.Float64, []Buffer{src.Shard(0)}, []Buffer{view}), ErrFreed)
	require.ErrorIs(t, ExecutePlan(p, tensor.Float64, []Buffer{view}, []Buffer{b.Shard(0)}), ErrFreed)
	got, err := b.Gather()
	require.NoError(t, err)
	for _, v := range got.Data().([]float64) {
		require.Zero(t, v, "a freed tensor's view wrote into a live tensor")
	}
	d, err := src.ToDense(0)
	require.NoError(t, err)
	d.Release()
	require.ErrorIs(t, src.IntoDense(d), ErrFreed)
	require.ErrorIs(t, src.FromDense(d), ErrFreed)
}

type foreignGPUBuffer struct{}

func (foreignGPUBuffer) Device() Device { return Device{Kind: GPU} }
func (foreignGPUBuffer) Len() int       { return 16 }

// A GPU-kind Buffer of the caller's own type is an error, not a panic.
func TestExecutePlanForeignGPUBuffer(t *testing.T) {
	p, err := cyclic.NewPlan(4, 4, 1, Cyclic(2), ColBlocks())
	require.NoError(t, err)
	bufs := []Buffer{foreignGPUBuffer{}}
	require.NotPanics(t, func() { err = ExecutePlan(p, tensor.Float64, bufs, bufs) })
	require.Error(t, err)
}

// SetIdentity works as a process's first call into the CUDA runtime (its
// strided copy is the runtime's, which used to be loaded only by others).
func TestSetIdentityAsFirstRuntimeCall(t *testing.T) {
	if os.Getenv("MGLA_FRESH_PROCESS") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSetIdentityAsFirstRuntimeCall$", "-test.v")
		cmd.Env = append(os.Environ(), "MGLA_FRESH_PROCESS=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestSetIdentityAsFirstRuntimeCall")
		return
	}
	m, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	x, err := New(m, tensor.Shape{4, 4}, tensor.Float64, Cyclic(2))
	require.NoError(t, err)
	require.NoError(t, x.SetIdentity())
	got, err := x.Gather()
	require.NoError(t, err)
	require.Equal(t, []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, got.Data())
}

// CopyColumns refuses overlapping columns of one tensor (its devices copy
// concurrently) and allows disjoint ones.
func TestCopyColumnsOverlap(t *testing.T) {
	m, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	x, err := New(m, tensor.Shape{3, 4}, tensor.Float64, Cyclic(1))
	require.NoError(t, err)
	require.Error(t, x.CopyColumns(0, x, 1, 3))
	require.NoError(t, x.CopyColumns(0, x, 2, 2))
	require.NoError(t, x.CopyColumns(1, x, 1, 3))
}

// SetIdentityColumns of a shard with more than 2³¹ bytes a column: the
// strided copy's pitch would pass CUDA's limit.
func TestSetIdentityColumnsTall(t *testing.T) {
	mesh, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	const rows = 1 << 28
	for _, cols := range []int{1, 2} {
		st, err := New(mesh, tensor.Shape{rows, cols}, tensor.Float64, RowBlocks())
		require.NoError(t, err)
		require.NoError(t, st.SetIdentityColumns(0), "%d columns", cols)
		db := st.shards[0].(*DeviceBuffer)
		at := func(i, j int) float64 {
			var v float64
			require.NoError(t, onDevice(db.dev, func() error {
				return cu.MemcpyDtoH(unsafe.Pointer(&v), db.ptr+cu.DevicePtr(8*(i+j*rows)), 8)
			}))
			return v
		}
		for j := range cols {
			require.Equal(t, 1.0, at(j, j), "%d columns: (%d, %d)", cols, j, j)
			require.Equal(t, 0.0, at(j+1, j), "%d columns: (%d, %d)", cols, j+1, j)
		}
		st.Free()
	}
}

// A registered (in-place) Put of a row wider than 2³¹ bytes goes staged:
// the host rows are too far apart for a 2-D copy.
func TestRegisteredPutWideRow(t *testing.T) {
	mesh, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	defer SetHostTransfer(SetHostTransfer(HostTransferRegistered))
	const cols = 1 << 28
	data := make([]float64, cols)
	data[0], data[cols-1] = 1, 2
	st, err := Put(tensor.New(tensor.WithShape(1, cols), tensor.WithBacking(data)), mesh, Cyclic(1<<27))
	require.NoError(t, err)
	defer st.Free()
	got, err := st.Gather()
	require.NoError(t, err)
	g := got.Data().([]float64)
	require.Equal(t, 1.0, g[0])
	require.Equal(t, 2.0, g[cols-1])
}

// MirrorLower on a mesh without peer access (GPUMesh accepts such GPUs)
// mirrors through the host instead of a kernel that reads the other
// devices' shards, which would fault.
func TestMirrorLowerWithoutPeerAccess(t *testing.T) {
	ngpu, err := cu.NumDevices()
	require.NoError(t, err)
	if ngpu < 2 {
		t.Skip("needs 2 GPUs")
	}
	mesh, err := GPUMesh(0, 1)
	require.NoError(t, err)
	pairs := [][2]int{{0, 1}, {1, 0}}
	for _, p := range pairs { // as on a host without P2P
		require.NoError(t, onDevice(Device{Kind: GPU, ID: p[0]}, func() error { return primaryCtxs[p[1]].DisablePeerAccess() }))
		primaryMu.Lock()
		peerAccess[p] = false
		primaryMu.Unlock()
	}
	defer func() {
		for _, p := range pairs {
			require.NoError(t, onDevice(Device{Kind: GPU, ID: p[0]}, func() error { return primaryCtxs[p[1]].EnablePeerAccess(0) }))
			primaryMu.Lock()
			peerAccess[p] = true
			primaryMu.Unlock()
		}
	}()
	const n = 40
	data := make([]float64, n*n)
	for i := range data {
		data[i] = float64(i)
	}
	st, err := Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(data)), mesh, Cyclic(8))
	require.NoError(t, err)
	defer st.Free()
	require.NoError(t, st.MirrorLower())
	got, err := st.Gather()
	require.NoError(t, err)
	g := got.Data().([]float64)
	for i := range n {
		for j := range n {
			want := data[i*n+j]
			if j > i {
				want = data[j*n+i]
			}
			require.Equal(t, want, g[i*n+j], "(%d, %d)", i, j)
		}
	}
}
