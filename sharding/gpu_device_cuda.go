//go:build mglacuda

package sharding

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/kernels/ptx"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// stageBytes is the size of one staging slot: host transfers move a piece in
// row bands of at most this many bytes, nslots bands in flight per device.
const (
	stageBytes = 64 << 20
	nslots     = 3
)

// gpuDevice is the per-GPU state of the backend, made on first use and kept
// for the life of the process: mgla's kernels loaded into the primary
// context and nslots staging slots (pinned host memory, device scratch, an
// event) for host transfers. mu serializes transfers on the GPU. Kernels and
// copies go to the device's legacy default stream, so that they are ordered
// with the allocator's memsets and the peer copies of relayouts.
type gpuDevice struct {
	mu     sync.Mutex
	id     int
	fns    map[string]cu.Function
	stream cu.Stream // the zero Stream: the legacy default stream
	slots  [nslots]stageSlot
}

type stageSlot struct {
	host unsafe.Pointer // pinned, stageBytes
	dev  cu.DevicePtr   // stageBytes
	done cu.Event
}

var (
	gpuDevMu sync.Mutex
	gpuDevs  = map[int]*gpuDevice{}
)

// deviceState returns GPU id's state; it must be called on a thread whose
// current context is id's primary context (inside onDevice).
func deviceState(id int) (*gpuDevice, error) {
	gpuDevMu.Lock()
	defer gpuDevMu.Unlock()
	if g, ok := gpuDevs[id]; ok {
		return g, nil
	}
	mod, err := cu.LoadData(ptx.Source)
	if err != nil {
		return nil, fmt.Errorf("sharding: loading mgla's PTX kernels on gpu:%d: %w", id, err)
	}
	g := &gpuDevice{id: id, fns: map[string]cu.Function{}}
	for _, name := range ptx.Names() {
		fn, err := mod.Function(name)
		if err != nil {
			return nil, fmt.Errorf("sharding: kernel %s on gpu:%d: %w", name, id, err)
		}
		g.fns[name] = fn
	}
	for s := range g.slots {
		slot := &g.slots[s]
		if slot.host, err = cusolver.HostAlloc(stageBytes); err != nil {
			return nil, err
		}
		if slot.dev, err = cu.MemAlloc(stageBytes); err != nil {
			return nil, fmt.Errorf("sharding: staging buffer on gpu:%d: %w", id, err)
		}
		if slot.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return nil, err
		}
	}
	gpuDevs[id] = g
	return g, nil
}

// launch runs kernel name on the device's stream; args are 64-bit words.
func (g *gpuDevice) launch(name string, gridX, gridY, blockX, blockY int, args ...uint64) error {
	fn, ok := g.fns[name]
	if !ok {
		return fmt.Errorf("sharding: no kernel %q", name)
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	if err := fn.Launch(gridX, gridY, 1, blockX, blockY, 1, 0, g.stream, params); err != nil {
		return fmt.Errorf("sharding: launching %s on gpu:%d: %w", name, g.id, err)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// transpose enqueues out(i, j) = in(j, i) for i < rows, j < cols (column-major
// with leading dimensions ldo and ldi).
func (g *gpuDevice) transpose(elem int, out cu.DevicePtr, ldo int, in cu.DevicePtr, ldi, rows, cols int) error {
	if rows == 0 || cols == 0 {
		return nil
	}
	return g.launch(ptx.Transpose[elem], ceilDiv(rows, 32), ceilDiv(cols, 32), 32, 8,
		uint64(out), uint64(ldo), uint64(in), uint64(ldi), uint64(rows), uint64(cols))
}

// band is the part of a piece that one staging slot carries: rows
// [r0, r0+rows) and columns [c0, c0+cols) of the piece.
type band struct {
	p                    cyclic.Piece
	r0, rows, c0, cols   int
	localOff, bandBytes  int
	hostRow0, hostStride int
}

// bands cuts the pieces into bands of at most stageBytes.
func bands(pieces []cyclic.Piece, hostCols, ld, elem int) []band {
	var out []band
	for _, p := range pieces {
		w := min(p.Cols, max(1, stageBytes/elem))
		for c0 := 0; c0 < p.Cols; c0 += w {
			cw := min(w, p.Cols-c0)
			h := max(1, stageBytes/(cw*elem))
			for r0 := 0; r0 < p.Rows; r0 += h {
				rh := min(h, p.Rows-r0)
				out = append(out, band{p: p, r0: r0, rows: rh, c0: c0, cols: cw,
					localOff:  (p.LocalRow + r0 + (p.LocalCol+c0)*ld) * elem,
					bandBytes: rh * cw * elem,
				})
			}
		}
	}
	return out
}

// copyRows copies a band between the row-major host matrix (hostCols
// columns) and a compact row-major staging slot, with several goroutines for
// large bands.
func copyRows(host, stage unsafe.Pointer, b band, hostCols, elem int, up bool, workers int) {
	rowBytes := b.cols * elem
	row := func(i int) {
		h := unsafe.Add(host, ((b.p.Row+b.r0+i)*hostCols+b.p.Col+b.c0)*elem)
		s := unsafe.Add(stage, i*rowBytes)
		hb, sb := unsafe.Slice((*byte)(h), rowBytes), unsafe.Slice((*byte)(s), rowBytes)
		if up {
			copy(sb, hb)
		} else {
			copy(hb, sb)
		}
	}
	if workers <= 1 || b.bandBytes < 4<<20 {
		for i := range b.rows {
			row(i)
		}
		return
	}
	var wg sync.WaitGroup
	per := ceilDiv(b.rows, workers)
	for w := 0; w < b.rows; w += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				row(i)
			}
		}(w, min(w+per, b.rows))
	}
	wg.Wait()
}

// HostTransfer selects how Put and Gather move a host matrix between Go
// memory and GPU shards.
type HostTransfer int32

const (
	// HostTransferAuto copies in place when the host matrix is page-locked
	// already (RegisterHost) and stages it otherwise.
	HostTransferAuto HostTransfer = iota
	// HostTransferStaged copies row bands with CPU threads through pinned
	// staging buffers, overlapped with the DMA of the previous band.
	HostTransferStaged
	// HostTransferRegistered page-locks the host matrix for the duration
	// of each transfer (cudaHostRegister) and copies in place. Measured on
	// 4×H200, registering costs more than staging saves (3.4 s to register
	// and unregister 34 GB, against 1.0 s for the staged upload), so this
	// only pays when the caller keeps the memory registered (RegisterHost).
	HostTransferRegistered
)

var hostTransfer atomic.Int32

// SetHostTransfer sets how later transfers move host data and returns the
// previous setting.
func SetHostTransfer(m HostTransfer) HostTransfer {
	return HostTransfer(hostTransfer.Swap(int32(m)))
}

// RegisterHost page-locks the backing array of a host slice or dense
// tensor ([]float32, []float64, []complex64, []complex128 or a
// *tensor.Dense of those) for every GPU, so that Put and Gather copy it in
// place with the copy engines at full PCIe speed, with no CPU copy. It pays
// for a large matrix that is moved several times: registering costs about
// as much as one staged copy. Call the returned function before the memory
// is dropped.
func RegisterHost(data any) (unregister func() error, err error) {
	if d, ok := data.(*tensor.Dense); ok {
		data = d.Data()
	}
	p, n, err := hostBytes(data)
	if err != nil {
		return nil, err
	}
	return cusolver.RegisterHost(p, n)
}

// transfer moves a row-major host matrix into the shards (up) or back,
// every device concurrently, in place or staged (HostTransfer).
func (gpuBackend) transfer(t *Tensor, host any, up bool) (err error) {
	hostPtr, nbytes, err := hostBytes(host)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(host)
	direct := false
	switch HostTransfer(hostTransfer.Load()) {
	case HostTransferAuto:
		direct = nbytes > 0 && cusolver.HostRegistered(hostPtr) && cusolver.HostRegistered(unsafe.Add(hostPtr, nbytes-1))
	case HostTransferRegistered:
		unregister, regErr := cusolver.RegisterHost(hostPtr, nbytes)
		if regErr == nil { // else staging, which needs no registration
			direct = true
			defer func() {
				if uerr := unregister(); err == nil {
					err = uerr
				}
			}()
		}
	}
	rows, cols := t.Rows(), t.Cols()
	elem := int(t.dtype.Size())
	pieces := cyclic.Pieces(t.layout, rows, cols, t.mesh.Size())
	workers := max(1, min(16, runtime.NumCPU()/t.mesh.Size()))
	return perDevice(t.mesh.Size(), func(d int) error {
		if !up && t.layout.Kind == cyclic.Replicated && d != 0 {
			return nil
		}
		db := t.shards[d].(*DeviceBuffer)
		if db.n == 0 {
			return nil
		}
		ld, _ := t.LocalShape(d)
		var mine []cyclic.Piece
		for _, p := range pieces {
			if p.Dev == d {
				mine = append(mine, p)
			}
		}
		return onDevice(db.dev, func() error {
			g, err := deviceState(db.dev.ID)
			if err != nil {
				return err
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			bs := bands(mine, cols, ld, elem)
			if direct {
				return g.inPlace(bs, db, hostPtr, cols, ld, elem, up)
			}
			return g.pipeline(bs, db, hostPtr, cols, ld, elem, up, workers)
		})
	})
}

// inPlace moves bands between page-locked host memory and the shard: a 2-D
// copy of the band between its place in the row-major host matrix and a
// compact device scratch buffer, and a transpose between that buffer and the
// band's column-major place in the shard. Everything goes to one stream, in
// order, so the scratch buffers need no events; the transposes cost a few
// percent of the copies.
func (g *gpuDevice) inPlace(bs []band, db *DeviceBuffer, hostPtr unsafe.Pointer, hostCols, ld, elem int, up bool) error {
	pitch := hostCols * elem
	for k := range bs {
		b := &bs[k]
		scratch := g.slots[k%nslots].dev
		local := db.ptr + cu.DevicePtr(b.localOff)
		host := uintptr(hostPtr) + uintptr(((b.p.Row+b.r0)*hostCols+b.p.Col+b.c0)*elem)
		width := b.cols * elem
		if up {
			if err := cusolver.Memcpy2DAsync(uintptr(scratch), width, host, pitch, width, b.rows, true, 0); err != nil {
				return err
			}
			if err := g.transpose(elem, local, ld, scratch, b.cols, b.rows, b.cols); err != nil {
				return err
			}
			continue
		}
		if err := g.transpose(elem, scratch, b.cols, local, ld, b.cols, b.rows); err != nil {
			return err
		}
		if err := cusolver.Memcpy2DAsync(host, pitch, uintptr(scratch), width, width, b.rows, false, 0); err != nil {
			return err
		}
	}
	return cu.Synchronize()
}

// pipeline moves bands through the nslots pinned staging slots: the CPU
// copies band k+1 between host and pinned memory while the GPU copies band k
// over PCIe and transposes it between the row-major band and its
// column-major place in the shard.
func (g *gpuDevice) pipeline(bs []band, db *DeviceBuffer, hostPtr unsafe.Pointer, hostCols, ld, elem int, up bool, workers int) error {
	var inFlight [nslots]*band
	// finish waits for the band in slot s and, on the way down, copies it
	// out of pinned memory.
	finish := func(s int) error {
		if inFlight[s] == nil {
			return nil
		}
		if err := g.slots[s].done.Synchronize(); err != nil {
			return err
		}
		if !up {
			copyRows(hostPtr, g.slots[s].host, *inFlight[s], hostCols, elem, false, workers)
		}
		inFlight[s] = nil
		return nil
	}
	for k := range bs {
		b := &bs[k]
		s := k % nslots
		if err := finish(s); err != nil {
			return err
		}
		slot := &g.slots[s]
		local := db.ptr + cu.DevicePtr(b.localOff)
		if up {
			copyRows(hostPtr, slot.host, *b, hostCols, elem, true, workers)
			if err := cu.MemcpyHtoDAsync(slot.dev, slot.host, int64(b.bandBytes), g.stream); err != nil {
				return err
			}
			if err := g.transpose(elem, local, ld, slot.dev, b.cols, b.rows, b.cols); err != nil {
				return err
			}
		} else {
			if err := g.transpose(elem, slot.dev, b.cols, local, ld, b.cols, b.rows); err != nil {
				return err
			}
			if err := cu.MemcpyDtoHAsync(slot.host, slot.dev, int64(b.bandBytes), g.stream); err != nil {
				return err
			}
		}
		if err := slot.done.Record(g.stream); err != nil {
			return err
		}
		inFlight[s] = b
	}
	for k := range nslots {
		if err := finish((len(bs) + k) % nslots); err != nil {
			return err
		}
	}
	return cu.Synchronize()
}

// zeroUpper zeroes, in a rows×cols block at element offset off (leading
// dimension ld), the elements with i + shift < j.
func (gpuBackend) zeroUpper(b Buffer, off, ld, rows, cols, shift int) error {
	db := b.(*DeviceBuffer)
	if rows == 0 || cols == 0 {
		return nil
	}
	return onDevice(db.dev, func() error {
		g, err := deviceState(db.dev.ID)
		if err != nil {
			return err
		}
		err = g.launch(ptx.ZeroUpper[db.elem], ceilDiv(rows, 32), ceilDiv(cols, 8), 32, 8,
			uint64(db.ptr)+uint64(off*db.elem), uint64(ld), uint64(rows), uint64(cols), uint64(int64(shift)))
		if err != nil {
			return err
		}
		return cu.Synchronize()
	})
}

// axpy computes y += alpha·x on the device (complex data as pairs of reals).
func (gpuBackend) axpy(alpha float64, x, y Buffer) error {
	xb, yb := x.(*DeviceBuffer), y.(*DeviceBuffer)
	if yb.n == 0 {
		return nil
	}
	if xb.dev != yb.dev || xb.n != yb.n {
		return fmt.Errorf("sharding: axpy of shards on %v and %v", xb.dev, yb.dev)
	}
	real := 8
	if yb.dt == tensor.Float32 || yb.dt == tensor.Complex64 {
		real = 4
	}
	n := yb.n * yb.elem / real
	return onDevice(yb.dev, func() error {
		g, err := deviceState(yb.dev.ID)
		if err != nil {
			return err
		}
		if err := g.launch(ptx.Axpy[real], min(ceilDiv(n, 256), 4096), 1, 256, 1,
			uint64(n), math.Float64bits(alpha), uint64(xb.ptr), uint64(yb.ptr)); err != nil {
			return err
		}
		return cu.Synchronize()
	})
}

// mirrorLower fills the upper triangle of a square column block-cyclic GPU
// tensor from its lower triangle with one kernel per device, which reads the
// mirrored tiles of the other devices through peer access.
func (gpuBackend) mirrorLower(t *Tensor) error {
	if t.layout.Kind != cyclic.ColCyclic {
		return mirrorLowerHost(t)
	}
	n, ndev := t.Rows(), t.mesh.Size()
	ptrs := make([]uint64, ndev)
	for d := range ndev {
		ptrs[d] = uint64(t.shards[d].(*DeviceBuffer).ptr)
	}
	name := ptx.Mirror[map[tensor.Dtype]byte{tensor.Float32: 's', tensor.Float64: 'd', tensor.Complex64: 'c', tensor.Complex128: 'z'}[t.dtype]]
	return perDevice(ndev, func(d int) error {
		db := t.shards[d].(*DeviceBuffer)
		_, lcols := t.LocalShape(d)
		if lcols == 0 {
			return nil
		}
		return onDevice(db.dev, func() error {
			g, err := deviceState(db.dev.ID)
			if err != nil {
				return err
			}
			table, err := cu.MemAlloc(int64(8 * ndev))
			if err != nil {
				return err
			}
			defer cu.MemFree(table)
			if err := cu.MemcpyHtoD(table, unsafe.Pointer(&ptrs[0]), int64(8*ndev)); err != nil {
				return err
			}
			if err := g.launch(name, ceilDiv(n, 32), ceilDiv(lcols, 32), 32, 8,
				uint64(table), uint64(d), uint64(ndev), uint64(n), uint64(t.layout.Tile), uint64(lcols)); err != nil {
				return err
			}
			return cu.Synchronize()
		})
	})
}

// nonFinite checks one piece with a kernel that raises a device flag.
func (gpuBackend) nonFinite(t *Tensor, p cyclic.Piece, lower bool) (bool, error) {
	db := t.shards[p.Dev].(*DeviceBuffer)
	if db.n == 0 || p.Rows == 0 || p.Cols == 0 {
		return false, nil
	}
	ld, _ := t.LocalShape(p.Dev)
	pairs, real := 1, db.elem
	if db.dt == tensor.Complex64 || db.dt == tensor.Complex128 {
		pairs, real = 2, db.elem/2
	}
	var bad int32
	err := onDevice(db.dev, func() error {
		g, err := deviceState(db.dev.ID)
		if err != nil {
			return err
		}
		flag, err := cu.MemAlloc(4)
		if err != nil {
			return err
		}
		defer cu.MemFree(flag)
		if err := cu.MemsetD32(flag, 0, 1); err != nil {
			return err
		}
		lo := uint64(0)
		if lower {
			lo = 1
		}
		off := (p.LocalRow + p.LocalCol*ld) * db.elem
		rows := p.Rows * pairs
		if err := g.launch(ptx.NonFinite[real], ceilDiv(rows, 32), ceilDiv(p.Cols, 8), 32, 8,
			uint64(db.ptr)+uint64(off), uint64(ld*pairs), uint64(rows), uint64(p.Cols),
			uint64(int64(p.Row-p.Col)), lo, uint64(pairs), uint64(flag)); err != nil {
			return err
		}
		if err := cu.Synchronize(); err != nil {
			return err
		}
		return cu.MemcpyDtoH(unsafe.Pointer(&bad), flag, 4)
	})
	return bad != 0, err
}
