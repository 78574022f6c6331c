//go:build mglacuda

package sharding

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/internal/cudaguard"
	"github.com/mgla/mgla/kernels/cusolver"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// Importing gorgonia.org/cu runs its init, which calls cuInit and EXITS the
// process (printing the CUDA error) on any failure: with no driver, and with
// a driver but no GPU (NoDevice, also when CUDA_VISIBLE_DEVICES hides every
// GPU). A cuda-tagged binary only starts on a machine with a GPU; build
// without the tag for machines without one. GPUMesh's ErrNoGPU covers GPUs
// asked for that do not exist (gpu:3 of 2).

func init() {
	defaultGPUMesh = func() (*Mesh, error) { return GPUMesh() }
	gpuMemory = gpuBackend{}
}

// DeviceBuffer is a shard in GPU memory, allocated in the device's primary
// context (the one the CUDA runtime inside cuSolverMg uses).
//
// Its memory is freed by Free (Tensor.Free) or, once the buffer is
// unreachable, after the garbage collector has found it: a graph that is
// dropped gives its values' device memory back. The collector does not see
// device memory, so an allocation that runs out of it collects garbage,
// frees the memory of every unreachable buffer at once and tries again.
type DeviceBuffer struct {
	dev    Device
	ctx    cu.CUContext
	ptr    cu.DevicePtr
	n      int
	elem   int
	dt     tensor.Dtype
	mem    *deviceMemory // nil for a view (freeing it frees nothing) and an empty buffer
	parent *DeviceBuffer // a view's buffer, kept alive by the view
}

// viewOf is elements off … off+n of b, sharing its memory.
func (b *DeviceBuffer) viewOf(off, n int) Buffer {
	v := *b
	v.ptr += cu.DevicePtr(off * b.elem)
	v.n, v.mem, v.parent = n, nil, b
	return &v
}

// deviceMemory is one device allocation, freed once: by Free, by the
// cleanup of its unreachable buffer, or by reclaim, whichever comes first;
// the others wait until it is done, so that memory a caller has seen freed
// is back on the device (reclaim may race the collector's cleanup goroutine).
type deviceMemory struct {
	dev  Device
	ptr  cu.DevicePtr
	size int64
	once sync.Once
}

func (m *deviceMemory) free() {
	m.once.Do(func() {
		if testHookFree != nil {
			testHookFree()
		}
		_ = onDevice(m.dev, func() error { return memFree(m.ptr) })
		pace.freed(m.size) // explicitly, by a cleanup or a reclaim: no garbage left to find
		liveMu.Lock()
		delete(live, m)
		liveMu.Unlock()
	})
}

// memFree, memcpyHtoD and memcpyDtoH are cu's calls of those names, made
// through cudaguard.Blocking: each may wait for a GPU's work while it holds
// the driver's locks, which must not happen during a launch across GPUs
// (cuSolverMg, NCCL). Every free and synchronous copy between a GPU and
// pageable host memory in this package goes through them.
func memFree(p cu.DevicePtr) error {
	return cudaguard.Blocking(func() error { return cu.MemFree(p) })
}

func memcpyHtoD(dst cu.DevicePtr, src unsafe.Pointer, bytes int64) error {
	return cudaguard.Blocking(func() error { return cu.MemcpyHtoD(dst, src, bytes) })
}

func memcpyDtoH(dst unsafe.Pointer, src cu.DevicePtr, bytes int64) error {
	return cudaguard.Blocking(func() error { return cu.MemcpyDtoH(dst, src, bytes) })
}

// testHookFree, when set by a test, runs at the start of every free.
var testHookFree func()

var (
	liveMu sync.Mutex
	// live maps every device allocation to its buffer, weakly: reclaim
	// frees those whose buffer the collector found unreachable.
	live = map[*deviceMemory]weak.Pointer[DeviceBuffer]{}
)

// ReclaimDeviceMemory frees the device memory of the buffers that are no
// longer reachable, now instead of when their cleanups run after a garbage
// collection, and reports whether it freed any. The ops call it before
// trying again an engine call (cuSolverMg or NCCL resources) that failed:
// the engines allocate device memory of their own, which unreachable
// buffers may hold.
func ReclaimDeviceMemory() bool { return reclaim() }

// The cuSolverMg and cuSOLVER workspaces are allocated by package cusolver,
// which reclaims through this too when a device runs out.
func init() { cusolver.Reclaim = reclaim }

// reclaim runs the garbage collector and frees the device memory of every
// buffer it found unreachable (whose cleanups may not have run yet). It
// reports whether it freed any.
func reclaim() bool {
	pace.reset()
	runtime.GC()
	var dead []*deviceMemory
	liveMu.Lock()
	for m, w := range live {
		if w.Value() == nil {
			dead = append(dead, m)
		}
	}
	liveMu.Unlock()
	for _, m := range dead {
		m.free()
	}
	return len(dead) > 0
}

// pace decides when an allocation reclaims unreachable buffers first
// (reclaimpace.go).
var pace reclaimPace

// deviceTotal is the memory of the current context's device, or 16 GiB when
// the driver does not say.
func deviceTotal() int64 {
	if _, t, err := cu.MemInfo(); err == nil && t > 0 {
		return t
	}
	return 16 << 30
}

// deviceFree is the free memory of the current context's device, over every
// process that uses it; when the driver does not say, as if it were empty.
func deviceFree() int64 {
	if f, _, err := cu.MemInfo(); err == nil {
		return f
	}
	return math.MaxInt64
}

// memAlloc allocates bytes in ctx, the current context: when a reclaim is
// due, and after an out-of-memory error, it reclaims unreachable buffers
// (whose frees make their own devices current) and allocates in ctx again.
func memAlloc(ctx cu.CUContext, bytes int64) (cu.DevicePtr, error) {
	reclaimed := false
	if pace.due(bytes, deviceTotal, deviceFree) {
		reclaimed = true
		if reclaim() {
			if err := cu.SetCurrentContext(ctx); err != nil {
				return 0, err
			}
		}
	}
	p, err := cu.MemAlloc(bytes)
	if errors.Is(err, cu.OutOfMemory) {
		reclaimed = true
		if reclaim() {
			if err := cu.SetCurrentContext(ctx); err != nil {
				return 0, err
			}
			p, err = cu.MemAlloc(bytes)
		}
	}
	if reclaimed && err == nil {
		pace.count(bytes) // the reclaim started the count again after due counted it
	}
	return p, err
}

// Freed reports whether b's memory was freed (Tensor.Free, Release): for a
// view, its parent's. A freed buffer still reports its length; mgla's
// copies and collectives refuse it with an error matching ErrFreed, where
// its old address might by now belong to another allocation.
func (b *DeviceBuffer) Freed() bool {
	r := b
	for r.parent != nil {
		r = r.parent
	}
	return r.n > 0 && r.mem == nil
}

func (b *DeviceBuffer) Device() Device { return b.dev }
func (b *DeviceBuffer) Len() int       { return b.n }

// Dtype is the element type of the buffer.
func (b *DeviceBuffer) Dtype() tensor.Dtype { return b.dt }

// Ptr is the device address of the first element (0 for an empty shard).
func (b *DeviceBuffer) Ptr() uintptr { return uintptr(b.ptr) }

var (
	primaryMu   sync.Mutex
	primaryCtxs = map[int]cu.CUContext{}
	peersDone   = map[[2]int]bool{}
	peerAccess  = map[[2]int]bool{} // a's kernels can reach b's memory
)

// primary retains (once) the primary context of GPU id.
func primary(id int) (cu.CUContext, error) {
	primaryMu.Lock()
	defer primaryMu.Unlock()
	if c, ok := primaryCtxs[id]; ok {
		return c, nil
	}
	c, err := cu.Device(id).RetainPrimaryCtx()
	if err != nil {
		return cu.CUContext{}, fmt.Errorf("sharding: retaining the primary context of gpu:%d: %w", id, err)
	}
	primaryCtxs[id] = c
	return c, nil
}

// GPUMesh returns a mesh over the given GPU ordinals, in that order (every
// visible GPU when none are given), and enables peer access between them.
func GPUMesh(ids ...int) (*Mesh, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGPU, err)
	}
	if n == 0 {
		return nil, ErrNoGPU
	}
	if len(ids) == 0 {
		for i := range n {
			ids = append(ids, i)
		}
	}
	seen := map[int]bool{}
	devs := make([]Device, len(ids))
	for i, id := range ids {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("%w: gpu:%d does not exist (%d visible)", ErrNoGPU, id, n)
		}
		if seen[id] {
			return nil, fmt.Errorf("sharding: gpu:%d listed twice", id)
		}
		seen[id] = true
		devs[i] = Device{Kind: GPU, ID: id}
		if _, err := primary(id); err != nil {
			return nil, err
		}
	}
	if err := enablePeers(ids); err != nil {
		return nil, err
	}
	return newMesh(devs, gpuBackend{}), nil
}

func enablePeers(ids []int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	primaryMu.Lock()
	defer primaryMu.Unlock()
	for _, a := range ids {
		for _, b := range ids {
			if a == b || peersDone[[2]int{a, b}] {
				continue
			}
			ok, err := cu.Device(a).CanAccessPeer(cu.Device(b))
			if err != nil {
				return err
			}
			if ok == 1 {
				if err := cu.SetCurrentContext(primaryCtxs[a]); err != nil {
					return err
				}
				if err := primaryCtxs[b].EnablePeerAccess(0); err != nil && err != cu.PeerAccessAlreadyEnabled {
					return fmt.Errorf("sharding: peer access gpu:%d → gpu:%d: %w", a, b, err)
				}
				peerAccess[[2]int{a, b}] = true
			}
			peersDone[[2]int{a, b}] = true
		}
	}
	return nil
}

// allPeers reports whether every device of a GPU mesh can reach the memory
// of every other one.
func allPeers(m *Mesh) bool {
	primaryMu.Lock()
	defer primaryMu.Unlock()
	for _, a := range m.devices {
		for _, b := range m.devices {
			if a != b && !peerAccess[[2]int{a.ID, b.ID}] {
				return false
			}
		}
	}
	return true
}

type gpuBackend struct{}

// onDevice runs fn with dev's primary context current on a locked OS thread.
func onDevice(dev Device, fn func() error) error {
	ctx, err := primary(dev.ID)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return err
	}
	return fn()
}

func (gpuBackend) alloc(dev Device, dt tensor.Dtype, n int, zero bool) (Buffer, error) {
	if err := CheckGPUDtype(dt); err != nil {
		return nil, err
	}
	ctx, err := primary(dev.ID)
	if err != nil {
		return nil, err
	}
	b := &DeviceBuffer{dev: dev, ctx: ctx, n: n, elem: int(dt.Size()), dt: dt}
	if n == 0 {
		return b, nil
	}
	err = onDevice(dev, func() error {
		p, err := memAlloc(ctx, int64(n*b.elem))
		if err != nil {
			return fmt.Errorf("sharding: allocating %d bytes on %v: %w", n*b.elem, dev, err)
		}
		b.ptr, b.mem = p, &deviceMemory{dev: dev, ptr: p, size: int64(n * b.elem)}
		liveMu.Lock()
		live[b.mem] = weak.Make(b)
		liveMu.Unlock()
		runtime.AddCleanup(b, (*deviceMemory).free, b.mem)
		if !zero {
			return nil
		}
		if err := cu.MemsetD8(p, 0, int64(n*b.elem)); err != nil {
			return err
		}
		return cu.Synchronize()
	})
	return b, err
}

func (gpuBackend) free(b Buffer) {
	db := b.(*DeviceBuffer)
	if db.mem != nil {
		db.mem.free()
		db.mem, db.ptr = nil, 0
	}
}

func (gpuBackend) zero(b Buffer) {
	db := b.(*DeviceBuffer)
	if db.ptr != 0 {
		_ = onDevice(db.dev, func() error {
			if err := cu.MemsetD8(db.ptr, 0, int64(db.n*db.elem)); err != nil {
				return err
			}
			return cu.Synchronize()
		})
	}
}

// hostBytes views a typed host slice (of Dtypes or IntDtypes) as bytes.
func hostBytes(host any) (unsafe.Pointer, int, error) {
	if _, err := NewHostBuffer(host); err != nil {
		return nil, 0, err
	}
	p, n := sliceMemory(host)
	return p, n, nil
}

func (g gpuBackend) put(t *Tensor, host any) error    { return g.transfer(t, host, true) }
func (g gpuBackend) gather(t *Tensor, host any) error { return g.transfer(t, host, false) }

// describeBuffer names b's type and, for device buffers, their dtype.
func describeBuffer(b Buffer) string {
	if d, ok := b.(*DeviceBuffer); ok {
		return fmt.Sprintf("a %v device buffer", d.dt)
	}
	return fmt.Sprintf("a %T", b)
}

// execute runs the plan as peer copies: one copy per move when it is
// contiguous on both sides, one per column otherwise; destination devices
// work concurrently.
func (gpuBackend) execute(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error {
	for _, b := range append(append([]Buffer(nil), src...), dst...) {
		if db, ok := b.(*DeviceBuffer); !ok || db.dt != dt {
			return fmt.Errorf("sharding: ExecutePlan of %v needs %v device buffers, got %v", dt, dt, describeBuffer(b))
		}
	}
	elem := int64(dt.Size())
	return perDevice(p.NDev, func(d int) error {
		ddst := dst[d].(*DeviceBuffer)
		dld, _ := p.LocalShape(d, true)
		return onDevice(ddst.dev, func() error {
			for _, m := range p.Moves {
				if m.DstDev != d {
					continue
				}
				s := src[m.SrcDev].(*DeviceBuffer)
				sld, _ := p.LocalShape(m.SrcDev, false)
				copyCols := func(so, do, bytes int64) error {
					return copyBytes(ddst, do*elem, s, so*elem, bytes)
				}
				if m.Rows == sld && m.Rows == dld {
					if err := copyCols(int64(m.SrcCol*sld), int64(m.DstCol*dld), int64(m.Rows*m.Cols)*elem); err != nil {
						return err
					}
					continue
				}
				for j := range m.Cols {
					if err := copyCols(int64(m.SrcRow+(m.SrcCol+j)*sld), int64(m.DstRow+(m.DstCol+j)*dld), int64(m.Rows)*elem); err != nil {
						return err
					}
				}
			}
			// Device-to-device copies return before they finish: wait, so
			// that the relayout is complete for every stream and device.
			return cu.Synchronize()
		})
	})
}

// diagonal reads the diagonal with one strided 2-D copy per piece.
func (gpuBackend) diagonal(t *Tensor) (any, error) {
	n := t.Rows()
	elem := int64(t.dtype.Size())
	if err := cusolver.Load(); err != nil {
		return nil, err
	}
	hb, err := hostBackend{}.alloc(Device{}, t.dtype, n, true)
	if err != nil {
		return nil, err
	}
	out := hb.(*HostBuffer).data
	op, _, err := hostBytes(out)
	if err != nil {
		return nil, err
	}
	for _, r := range diagonalRuns(t) {
		db := t.shards[r.dev].(*DeviceBuffer)
		// gorgonia.org/cu's Memcpy2D dereferences its nil Array fields, so the
		// strided copy goes through the CUDA runtime of package cusolver.
		err := cusolver.Memcpy2DDtoH(db.dev.ID, unsafe.Add(op, int64(r.first)*elem), int(elem),
			db.Ptr()+uintptr(int64(r.off)*elem), int(int64(r.ld+1)*elem), int(elem), r.count)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ToDense copies a GPU tensor whose layout keeps whole columns on one device
// (the column block-cyclic and column-block layouts) into a new dense
// column-major buffer (leading dimension Rows) on device position pos of its
// mesh: one peer copy per tile, the source devices concurrently. It is the
// operand of single-GPU solvers; release it with Release.
func (t *Tensor) ToDense(pos int) (*DeviceBuffer, error) {
	if err := t.checkWholeColumns(); err != nil {
		return nil, err
	}
	if pos < 0 || pos >= t.mesh.Size() {
		return nil, fmt.Errorf("sharding: ToDense on device position %d of %v", pos, t.mesh)
	}
	buf, err := gpuBackend{}.alloc(t.mesh.devices[pos], t.dtype, t.Rows()*t.Cols(), true)
	if err != nil {
		return nil, err
	}
	b := buf.(*DeviceBuffer)
	if err := t.copyDense(b, true); err != nil {
		b.Release()
		return nil, err
	}
	return b, nil
}

// IntoDense copies t into a dense buffer made by ToDense.
func (t *Tensor) IntoDense(b *DeviceBuffer) error {
	if err := t.checkWholeColumns(); err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("sharding: IntoDense of %v into a nil buffer", t)
	}
	if b.Freed() {
		return fmt.Errorf("%w: IntoDense into a freed buffer", ErrFreed)
	}
	if b.n != t.Rows()*t.Cols() || b.dt != t.dtype {
		return fmt.Errorf("sharding: IntoDense of %v into %d %v elements", t, b.n, b.dt)
	}
	return t.copyDense(b, true)
}

// FromDense copies a dense buffer made by ToDense (or of the same shape)
// back into t's shards.
func (t *Tensor) FromDense(b *DeviceBuffer) error {
	if err := t.checkWholeColumns(); err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("sharding: FromDense of a nil buffer into %v", t)
	}
	if b.Freed() {
		return fmt.Errorf("%w: FromDense of a freed buffer", ErrFreed)
	}
	if b.n != t.Rows()*t.Cols() || b.dt != t.dtype {
		return fmt.Errorf("sharding: FromDense of %d %v elements into %v", b.n, b.dt, t)
	}
	return t.copyDense(b, false)
}

// copyBytes copies bytes from byte offset srcOff of src to byte offset
// dstOff of dst: a device copy on one GPU, a peer copy between two.
func copyBytes(dst *DeviceBuffer, dstOff int64, src *DeviceBuffer, srcOff, bytes int64) error {
	dp, sp := dst.ptr+cu.DevicePtr(dstOff), src.ptr+cu.DevicePtr(srcOff)
	if src.dev == dst.dev {
		return cu.MemcpyDtoD(dp, sp, bytes)
	}
	return cu.MemcpyPeer(dp, dst.ctx, sp, src.ctx, bytes)
}

// Release frees the buffer's device memory now.
func (b *DeviceBuffer) Release() { gpuBackend{}.free(b) }

func (t *Tensor) checkWholeColumns() error {
	if err := t.usable(); err != nil {
		return err
	}
	if t.mesh.Kind() != GPU {
		return fmt.Errorf("sharding: %v is not on GPUs", t)
	}
	if k := t.layout.Kind; k != cyclic.ColCyclic && k != cyclic.ColBlocks {
		return fmt.Errorf("sharding: dense copies need whole columns per device, %v has %v", t, t.layout)
	}
	return nil
}

func (t *Tensor) copyDense(b *DeviceBuffer, toDense bool) error {
	rows, elem := t.Rows(), int64(t.dtype.Size())
	pieces := cyclic.Pieces(t.layout, rows, t.Cols(), t.mesh.Size())
	return perDevice(t.mesh.Size(), func(d int) error {
		s := t.shards[d].(*DeviceBuffer)
		return onDevice(s.dev, func() error {
			for _, p := range pieces {
				if p.Dev != d || p.Cols == 0 {
					continue
				}
				so, do := int64(p.LocalCol*rows)*elem, int64(p.Col*rows)*elem
				bytes := int64(p.Cols*rows) * elem
				var err error
				if toDense {
					err = copyBytes(b, do, s, so, bytes)
				} else {
					err = copyBytes(s, so, b, do, bytes)
				}
				if err != nil {
					return fmt.Errorf("sharding: dense copy between %v and %v: %w", s.dev, b.dev, err)
				}
			}
			return cu.Synchronize()
		})
	})
}

// CopyColumns copies columns srcCol … srcCol+cols−1 of src into columns
// dstCol … dstCol+cols−1 of t: GPU tensors of one mesh with the same rows
// and dtype, in layouts that keep whole columns on one device. Each run of
// columns that is contiguous on both sides is one device or peer copy; the
// destination devices work concurrently, so overlapping columns of one
// tensor are an error.
func (t *Tensor) CopyColumns(dstCol int, src *Tensor, srcCol, cols int) error {
	if err := t.checkWholeColumns(); err != nil {
		return err
	}
	if err := src.checkWholeColumns(); err != nil {
		return err
	}
	if !t.mesh.Same(src.mesh) || t.Rows() != src.Rows() || t.dtype != src.dtype {
		return fmt.Errorf("sharding: CopyColumns from %v %v into %v %v", src, src.dtype, t, t.dtype)
	}
	if cols < 0 || srcCol < 0 || dstCol < 0 || srcCol+cols > src.Cols() || dstCol+cols > t.Cols() {
		return fmt.Errorf("sharding: CopyColumns of %d columns from %d of %v into %d of %v", cols, srcCol, src, dstCol, t)
	}
	if t == src && srcCol != dstCol && srcCol < dstCol+cols && dstCol < srcCol+cols {
		// The devices copy concurrently, in no order.
		return fmt.Errorf("sharding: CopyColumns within %v between overlapping columns %d and %d (%d of them)", t, srcCol, dstCol, cols)
	}
	const mask = 1<<40 - 1
	rows, ndev := t.Rows(), t.mesh.Size()
	sm := columnMap(src.layout, rows, src.Cols(), ndev)
	dm := columnMap(t.layout, rows, t.Cols(), ndev)
	type run struct{ sdev, scol, ddev, dcol, n int }
	var runs []run
	for j := range cols {
		s, d := sm[srcCol+j], dm[dstCol+j]
		r := run{int(s >> 40), int(s & mask), int(d >> 40), int(d & mask), 1}
		if k := len(runs) - 1; k >= 0 && runs[k].sdev == r.sdev && runs[k].ddev == r.ddev &&
			runs[k].scol+runs[k].n == r.scol && runs[k].dcol+runs[k].n == r.dcol {
			runs[k].n++
			continue
		}
		runs = append(runs, r)
	}
	elem := int64(t.dtype.Size())
	return perDevice(ndev, func(d int) error {
		db := t.shards[d].(*DeviceBuffer)
		return onDevice(db.dev, func() error {
			for _, r := range runs {
				if r.ddev != d {
					continue
				}
				sb := src.shards[r.sdev].(*DeviceBuffer)
				err := copyBytes(db, int64(r.dcol*rows)*elem, sb, int64(r.scol*rows)*elem, int64(r.n*rows)*elem)
				if err != nil {
					return fmt.Errorf("sharding: column copy from %v to %v: %w", sb.dev, db.dev, err)
				}
			}
			return cu.Synchronize()
		})
	})
}
