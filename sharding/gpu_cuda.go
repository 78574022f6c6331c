//go:build mglacuda

package sharding

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels/cusolver"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// Importing gorgonia.org/cu runs its init, which calls cuInit and EXITS the
// process (printing the CUDA error) when no driver is installed: a cuda-tagged
// binary only starts on a machine with the NVIDIA driver. With a driver but no
// GPU, GPUMesh returns ErrNoGPU and DefaultMesh falls back to the CPU.

func init() {
	defaultGPUMesh = func() (*Mesh, error) { return GPUMesh() }
}

// DeviceBuffer is a shard in GPU memory, allocated in the device's primary
// context (the one the CUDA runtime inside cuSolverMg uses).
type DeviceBuffer struct {
	dev  Device
	ctx  cu.CUContext
	ptr  cu.DevicePtr
	n    int
	elem int
}

func (b *DeviceBuffer) Device() Device { return b.dev }
func (b *DeviceBuffer) Len() int       { return b.n }

// Ptr is the device address of the first element (0 for an empty shard).
func (b *DeviceBuffer) Ptr() uintptr { return uintptr(b.ptr) }

var (
	primaryMu   sync.Mutex
	primaryCtxs = map[int]cu.CUContext{}
	peersDone   = map[[2]int]bool{}
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
			}
			peersDone[[2]int{a, b}] = true
		}
	}
	return nil
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

// perDevice runs fn for every device index concurrently.
func perDevice(n int, fn func(d int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for d := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[d] = fn(d) }()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (gpuBackend) alloc(dev Device, dt tensor.Dtype, n int) (Buffer, error) {
	ctx, err := primary(dev.ID)
	if err != nil {
		return nil, err
	}
	b := &DeviceBuffer{dev: dev, ctx: ctx, n: n, elem: int(dt.Size())}
	if n == 0 {
		return b, nil
	}
	err = onDevice(dev, func() error {
		p, err := cu.MemAlloc(int64(n * b.elem))
		if err != nil {
			return fmt.Errorf("sharding: allocating %d bytes on %v: %w", n*b.elem, dev, err)
		}
		b.ptr = p
		return cu.MemsetD8(p, 0, int64(n*b.elem))
	})
	return b, err
}

func (gpuBackend) free(b Buffer) {
	db := b.(*DeviceBuffer)
	if db.ptr != 0 {
		_ = onDevice(db.dev, func() error { return cu.MemFree(db.ptr) })
		db.ptr = 0
	}
}

func (gpuBackend) zero(b Buffer) {
	db := b.(*DeviceBuffer)
	if db.ptr != 0 {
		_ = onDevice(db.dev, func() error { return cu.MemsetD8(db.ptr, 0, int64(db.n*db.elem)) })
	}
}

// hostBytes views a typed host slice as bytes.
func hostBytes(host any) (unsafe.Pointer, int, error) {
	switch h := host.(type) {
	case []float32:
		return unsafe.Pointer(unsafe.SliceData(h)), len(h) * 4, nil
	case []float64:
		return unsafe.Pointer(unsafe.SliceData(h)), len(h) * 8, nil
	case []complex64:
		return unsafe.Pointer(unsafe.SliceData(h)), len(h) * 8, nil
	case []complex128:
		return unsafe.Pointer(unsafe.SliceData(h)), len(h) * 16, nil
	}
	return nil, 0, fmt.Errorf("sharding: unsupported host data %T", host)
}

// stage transposes the pieces of one device between the row-major host
// matrix and a column-major staging buffer holding the whole local shard,
// then copies it in one transfer.
func (gpuBackend) transfer(t *Tensor, host any, up bool) error {
	rows, cols := t.Rows(), t.Cols()
	pieces := cyclic.Pieces(t.layout, rows, cols, t.mesh.Size())
	return perDevice(t.mesh.Size(), func(d int) error {
		if !up && t.layout.Kind == cyclic.Replicated && d != 0 {
			return nil
		}
		db := t.shards[d].(*DeviceBuffer)
		if db.n == 0 {
			return nil
		}
		lr, lc := t.LocalShape(d)
		var mine []cyclic.Piece
		for _, p := range pieces {
			if p.Dev == d {
				mine = append(mine, p)
			}
		}
		return withStaging(t.dtype, lr*lc, func(stage any) error {
			sp, sb, _ := hostBytes(stage)
			if !up {
				if err := onDevice(db.dev, func() error { return cu.MemcpyDtoH(sp, db.ptr, int64(sb)) }); err != nil {
					return err
				}
			}
			for _, p := range mine {
				transposePiece(host, stage, p, cols, lr, up)
			}
			if up {
				return onDevice(db.dev, func() error { return cu.MemcpyHtoD(db.ptr, sp, int64(sb)) })
			}
			return nil
		})
	})
}

func withStaging(dt tensor.Dtype, n int, fn func(any) error) error {
	switch dt {
	case tensor.Float32:
		return fn(make([]float32, n))
	case tensor.Float64:
		return fn(make([]float64, n))
	case tensor.Complex64:
		return fn(make([]complex64, n))
	case tensor.Complex128:
		return fn(make([]complex128, n))
	}
	return CheckDtype(dt)
}

func transposePiece(host, stage any, p cyclic.Piece, ld, sld int, up bool) {
	switch h := host.(type) {
	case []float32:
		transposeTyped(h, stage.([]float32), p, ld, sld, up)
	case []float64:
		transposeTyped(h, stage.([]float64), p, ld, sld, up)
	case []complex64:
		transposeTyped(h, stage.([]complex64), p, ld, sld, up)
	case []complex128:
		transposeTyped(h, stage.([]complex128), p, ld, sld, up)
	}
}

func transposeTyped[T any](host, stage []T, p cyclic.Piece, ld, sld int, up bool) {
	for j := range p.Cols {
		col := stage[p.LocalRow+(p.LocalCol+j)*sld:]
		for i := range p.Rows {
			if up {
				col[i] = host[(p.Row+i)*ld+p.Col+j]
			} else {
				host[(p.Row+i)*ld+p.Col+j] = col[i]
			}
		}
	}
}

func (g gpuBackend) put(t *Tensor, host any) error    { return g.transfer(t, host, true) }
func (g gpuBackend) gather(t *Tensor, host any) error { return g.transfer(t, host, false) }

// execute runs the plan as peer copies: one copy per move when it is
// contiguous on both sides, one per column otherwise; destination devices
// work concurrently.
func (gpuBackend) execute(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error {
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
					sp, dp := s.ptr+cu.DevicePtr(so*elem), ddst.ptr+cu.DevicePtr(do*elem)
					if s.dev == ddst.dev {
						return cu.MemcpyDtoD(dp, sp, bytes)
					}
					return cu.MemcpyPeer(dp, ddst.ctx, sp, s.ctx, bytes)
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
			return nil
		})
	})
}

// axpy has no device kernel yet: it goes through the host (used only to
// accumulate LispMachine gradients).
func (gpuBackend) axpy(alpha float64, x, y Buffer) error {
	xb, yb := x.(*DeviceBuffer), y.(*DeviceBuffer)
	if yb.n == 0 {
		return nil
	}
	var dt tensor.Dtype
	switch yb.elem {
	case 4:
		dt = tensor.Float32
	case 8:
		dt = tensor.Float64 // complex64 is handled as pairs of float32 below
	case 16:
		dt = tensor.Complex128
	}
	return withStaging(dt, yb.n*yb.elem/int(dt.Size()), func(hx any) error {
		return withStaging(dt, yb.n*yb.elem/int(dt.Size()), func(hy any) error {
			px, nb, _ := hostBytes(hx)
			py, _, _ := hostBytes(hy)
			if err := onDevice(xb.dev, func() error { return cu.MemcpyDtoH(px, xb.ptr, int64(nb)) }); err != nil {
				return err
			}
			if err := onDevice(yb.dev, func() error { return cu.MemcpyDtoH(py, yb.ptr, int64(nb)) }); err != nil {
				return err
			}
			hb := &HostBuffer{data: hx}
			hyb := &HostBuffer{data: hy}
			if err := (hostBackend{}).axpy(alpha, hb, hyb); err != nil {
				return err
			}
			return onDevice(yb.dev, func() error { return cu.MemcpyHtoD(yb.ptr, py, int64(nb)) })
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
	var out any
	_ = withStaging(t.dtype, n, func(s any) error { out = s; return nil })
	op, _, err := hostBytes(out)
	if err != nil {
		return nil, err
	}
	for _, p := range cyclic.Pieces(t.layout, n, n, t.mesh.Size()) {
		if t.layout.Kind == cyclic.Replicated && p.Dev != 0 {
			continue
		}
		i0, i1 := max(p.Row, p.Col), min(p.Row+p.Rows, p.Col+p.Cols)
		if i0 >= i1 {
			continue
		}
		db := t.shards[p.Dev].(*DeviceBuffer)
		ld, _ := t.LocalShape(p.Dev)
		off := int64(p.LocalRow+i0-p.Row+(p.LocalCol+i0-p.Col)*ld) * elem
		// gorgonia.org/cu's Memcpy2D dereferences its nil Array fields, so the
		// strided copy goes through the CUDA runtime of package cusolver.
		err := cusolver.Memcpy2DDtoH(db.dev.ID, unsafe.Add(op, int64(i0)*elem), int(elem),
			db.Ptr()+uintptr(off), int(int64(ld+1)*elem), int(elem), i1-i0)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (gpuBackend) zeroRange(b Buffer, off, n int) error {
	db := b.(*DeviceBuffer)
	return onDevice(db.dev, func() error {
		return cu.MemsetD8(db.ptr+cu.DevicePtr(off*db.elem), 0, int64(n*db.elem))
	})
}
