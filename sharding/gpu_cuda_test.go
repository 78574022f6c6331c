//go:build mglacuda

package sharding

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mgla/mgla/kernels/cusolver"
	"gorgonia.org/tensor"

	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

// On a GPU machine every mesh-parameterized test of this package also runs
// on GPU meshes of 1, 2, 3 and 4 devices (as many as are visible), one of
// them in reverse device order.
func init() {
	gpuTestMeshes = func(t *testing.T) []*Mesh {
		n, err := cu.NumDevices()
		require.NoError(t, err)
		var out []*Mesh
		for _, ids := range [][]int{{0}, {1, 0}, {0, 1, 2}, {0, 1, 2, 3}} {
			if len(ids) > n {
				break
			}
			m, err := GPUMesh(ids...)
			require.NoError(t, err)
			out = append(out, m)
		}
		return out
	}
}

// Both host transfer modes give exact round trips on every GPU mesh, for
// small matrices, pieces that cut tiles, and a matrix of several bands; a
// registered transfer leaves the host memory as it found it: unregistered,
// or still registered when the caller had registered it.
func TestHostTransferModes(t *testing.T) {
	rng, seed := seededRNG(t)
	defer SetHostTransfer(SetHostTransfer(HostTransferAuto))
	small := [][]int{{1, 1}, {33, 7}, {100, 100}, {9}}
	layouts := []Layout{Cyclic(3), Cyclic(64), RowBlocks(), Replicated()}
	large := randomDense(rng, tensor.Float64, 3001, 3001)
	for _, mode := range []HostTransfer{HostTransferStaged, HostTransferRegistered} {
		SetHostTransfer(mode)
		for _, mesh := range gpuTestMeshes(t) {
			for _, dt := range Dtypes {
				for _, shape := range small {
					host := randomDense(rng, dt, shape...)
					for _, layout := range layouts {
						roundTrip(t, host, mesh, layout, fmt.Sprintf("seed %d mode %d %v %v %v %v", seed, mode, mesh, dt, shape, layout))
					}
				}
			}
			roundTrip(t, large, mesh, Cyclic(512), fmt.Sprintf("seed %d mode %d %v large", seed, mode, mesh))
			// Many bands of whole rows per device, round the slots
			// several times, for every dtype and both whole-column layouts.
			rowBandBytes = 96 << 10
			for _, dt := range Dtypes {
				host := randomDense(rng, dt, 1203, 517)
				for _, layout := range []Layout{Cyclic(50), ColBlocks()} {
					roundTrip(t, host, mesh, layout, fmt.Sprintf("seed %d mode %d %v %v %v small bands", seed, mode, mesh, dt, layout))
				}
			}
			rowBandBytes = stageBytes
		}
		p, n, err := hostBytes(large.Data())
		require.NoError(t, err)
		require.NoError(t, cusolver.HostRegister(p, n), "mode %d left the host matrix registered", mode)
		if mode == HostTransferRegistered {
			mesh, err := GPUMesh(0)
			require.NoError(t, err)
			roundTrip(t, large, mesh, Cyclic(512), "caller-registered")
		}
		require.NoError(t, cusolver.HostUnregister(p), "the caller's registration was undone")
	}
	// The default copies a matrix registered with RegisterHost in place.
	SetHostTransfer(HostTransferAuto)
	unregister, err := RegisterHost(large)
	require.NoError(t, err)
	p, n, _ := hostBytes(large.Data())
	require.True(t, cusolver.HostRegistered(p) && cusolver.HostRegistered(unsafe.Add(p, n-1)))
	for _, mesh := range gpuTestMeshes(t) {
		roundTrip(t, large, mesh, Cyclic(512), fmt.Sprintf("seed %d registered, default mode, %v", seed, mesh))
	}
	require.NoError(t, unregister())
	require.False(t, cusolver.HostRegistered(p))
}

func roundTrip(t *testing.T, host *tensor.Dense, mesh *Mesh, layout Layout, what string) {
	t.Helper()
	st, err := Put(host, mesh, layout)
	require.NoError(t, err, what)
	defer st.Free()
	back, err := st.Gather()
	require.NoError(t, err, what)
	require.Equal(t, host.Data(), back.Data(), what)
	// The shards hold the matrix where the layout plan says: a relayout by
	// the plan's peer copies, gathered by row pieces, gives it back too.
	rb, err := st.Relayout(RowBlocks())
	require.NoError(t, err, what)
	defer rb.Free()
	back, err = rb.Gather()
	require.NoError(t, err, what)
	require.Equal(t, host.Data(), back.Data(), what+" through RowBlocks")
}

// CopyColumns copies any range of columns between whole-column layouts of
// one GPU mesh, and refuses ranges out of bounds.
func TestCopyColumns(t *testing.T) {
	rng, seed := seededRNG(t)
	for _, mesh := range gpuTestMeshes(t) {
		for _, dt := range Dtypes {
			const rows = 37
			src := randomDense(rng, dt, rows, 40)
			dst := randomDense(rng, dt, rows, 29)
			for _, c := range []struct {
				from, to       Layout
				srcCol, dstCol int
				cols           int
			}{{Cyclic(3), Cyclic(5), 4, 2, 20}, {Cyclic(40), Cyclic(4), 0, 0, 29}, {ColBlocks(), Cyclic(1), 11, 28, 1}, {Cyclic(7), ColBlocks(), 33, 0, 7}} {
				what := fmt.Sprintf("seed %d %v %v %+v", seed, mesh, dt, c)
				s, err := Put(src, mesh, c.from)
				require.NoError(t, err, what)
				d, err := Put(dst, mesh, c.to)
				require.NoError(t, err, what)
				require.NoError(t, d.CopyColumns(c.dstCol, s, c.srcCol, c.cols), what)
				got, err := d.Gather()
				require.NoError(t, err, what)
				want := dst.Clone().(*tensor.Dense)
				for i := range rows {
					for j := range c.cols {
						v, err := src.At(i, c.srcCol+j)
						require.NoError(t, err)
						require.NoError(t, want.SetAt(v, i, c.dstCol+j))
					}
				}
				require.Equal(t, want.Data(), got.Data(), what)
				require.Error(t, d.CopyColumns(25, s, 0, 5), what+" out of bounds")
				s.Free()
				d.Free()
			}
		}
	}
}

// liveAllocations is the number of device allocations not yet freed.
func liveAllocations() int {
	liveMu.Lock()
	defer liveMu.Unlock()
	return len(live)
}

// TestDroppedTensorsFreeDeviceMemory: tensors dropped without Free give
// their device memory back. On GPU 0 alone, and on all GPUs (where an
// allocation that runs out on one device frees dropped buffers on the
// others, whose frees make those devices current, and must retry on its
// own), tensors holding an eighth of each device's free memory, three times
// that memory in all, are made and dropped (every third one freed first,
// which the collector must not free again); a view keeps its buffer alive
// after the buffer's tensor is dropped.
func TestDroppedTensorsFreeDeviceMemory(t *testing.T) {
	n, err := cu.NumDevices()
	require.NoError(t, err)
	meshes := [][]int{{0}}
	if n > 1 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		meshes = append(meshes, all)
	}
	for _, ids := range meshes {
		mesh, err := GPUMesh(ids...)
		require.NoError(t, err)
		free := 1 << 62
		for _, id := range ids {
			f, _, err := cusolver.MemGetInfo(id)
			require.NoError(t, err)
			free = min(free, f)
		}
		share := min(free/8, 4<<30) // bytes on each device
		elems := share / 8 * len(ids)
		reclaim() // what earlier tests dropped, so that only this test's allocations count
		before := liveAllocations()
		for i := range 3 * free / share {
			x, err := New(mesh, tensor.Shape{elems}, tensor.Float64, RowBlocks())
			require.NoError(t, err, "%v: tensor %d of %d bytes", mesh, i, elems*8)
			if i%3 == 0 {
				x.Free()
			}
		}
		reclaim()
		require.Equal(t, before, liveAllocations(), "%v: allocations left after the tensors were dropped", mesh)
	}
	mesh, err := GPUMesh(0)
	require.NoError(t, err)
	before := liveAllocations()
	// A view of a dropped tensor's buffer keeps the buffer's memory.
	data := []float64{1, 2, 3, 4, 5, 6}
	x, err := Put(tensor.New(tensor.WithShape(6), tensor.WithBacking(data)), mesh, RowBlocks())
	require.NoError(t, err)
	v, err := View(x.Shard(0), 2, 3)
	require.NoError(t, err)
	x = nil
	reclaim()
	require.Equal(t, before+1, liveAllocations(), "the view's buffer was freed")
	got := make([]float64, 3)
	require.NoError(t, cusolver.MemcpyDtoH(0, unsafe.Pointer(&got[0]), v.(*DeviceBuffer).Ptr(), 24))
	require.Equal(t, data[2:5], got)
	v = nil
	reclaim()
	require.Equal(t, before, liveAllocations(), "the buffer outlived its view")
}

// TestReclaimWaitsForCleanup: a reclaim that finds a buffer whose cleanup
// the collector has started returns only once that cleanup has given the
// memory back (memAlloc allocates again right after it). It failed about
// once in 40 runs of TestDroppedTensorsFreeDeviceMemory on 4 GPUs, when
// free returned at once to whoever came second.
func TestReclaimWaitsForCleanup(t *testing.T) {
	mesh, err := GPUMesh(0)
	require.NoError(t, err)
	reclaim()
	before := liveAllocations()
	entered, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	testHookFree = func() { first.Do(func() { close(entered); <-release }) }
	defer func() { testHookFree = nil }()
	x, err := New(mesh, tensor.Shape{1000}, tensor.Float64, RowBlocks())
	require.NoError(t, err)
	require.NotNil(t, x)
	require.Equal(t, before+1, liveAllocations())
	x = nil
	runtime.GC() // the buffer's cleanup starts freeing it and waits in the hook
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the dropped buffer's cleanup did not run")
	}
	done := make(chan struct{})
	go func() {
		reclaim()
		close(done)
	}()
	select {
	case <-done:
		close(release)
		t.Fatal("reclaim returned while the cleanup was still freeing the buffer")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-done
	require.Equal(t, before, liveAllocations())
}
