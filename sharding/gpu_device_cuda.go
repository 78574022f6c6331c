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

// rowBandBytes is the most bytes of one band of whole host rows
// (transferRowBands); at most stageBytes, less in tests that want many bands.
var rowBandBytes = stageBytes

// gpuDevice is the per-GPU state of the backend, made on first use and kept
// for the life of the process: mgla's kernels loaded into the primary
// context and nslots staging slots (pinned host memory, device scratch, an
// event) for host transfers (MulLower and its chains keep their vectors in
// the first).
// mu serializes transfers and the slots' other users on the GPU. Kernels and
// copies go to the device's legacy default stream, so that they are ordered
// with the allocator's memsets and the peer copies of relayouts.
type gpuDevice struct {
	mu     sync.Mutex
	id     int
	fns    map[string]kernelFunc
	stream cu.Stream // the zero Stream: the legacy default stream
	// copies and kernels are the two streams of row-band transfers, so
	// that a band's DMA overlaps the previous band's kernel.
	copies, kernels cu.Stream
	slots           [nslots]stageSlot
	flags           scratch // the checks' kernels' 32-bit flags
}

// scratch is device memory that grows to the largest size asked of it and
// is kept for the next call (under the device's mu).
type scratch struct {
	ptr   cu.DevicePtr
	bytes int
}

// reserve returns at least bytes of s, made again when it is smaller; it
// must be called on the device's thread with its mu held.
func (s *scratch) reserve(bytes int) (cu.DevicePtr, error) {
	if s.bytes >= bytes {
		return s.ptr, nil
	}
	if s.ptr != 0 {
		if err := memFree(s.ptr); err != nil {
			return 0, err
		}
		s.ptr, s.bytes = 0, 0
	}
	p, err := allocHere(bytes)
	if err != nil {
		return 0, err
	}
	s.ptr, s.bytes = p, bytes
	return p, nil
}

// allocHere allocates bytes in the calling thread's current context through
// memAlloc, so that device memory of dropped tensors is reclaimed when the
// device is full, as for tensors.
func allocHere(bytes int) (cu.DevicePtr, error) {
	ctx, err := cu.CurrentContext()
	if err != nil {
		return 0, err
	}
	return memAlloc(ctx, int64(bytes))
}

type stageSlot struct {
	host  unsafe.Pointer // pinned, stageBytes
	dev   cu.DevicePtr   // stageBytes
	done  cu.Event       // the slot's last DMA finished
	moved cu.Event       // the slot's last row-band kernel finished
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
	fns, err := loadKernels(ptx.Source, ptx.Names())
	if err != nil {
		return nil, fmt.Errorf("sharding: loading mgla's PTX kernels on gpu:%d: %w", id, err)
	}
	g := &gpuDevice{id: id, fns: fns}
	if err := g.setUp(); err != nil {
		g.release() // a later call tries again from nothing
		return nil, fmt.Errorf("sharding: staging buffers and streams on gpu:%d: %w", id, err)
	}
	gpuDevs[id] = g
	return g, nil
}

// setUp makes the staging slots and the streams of a new device state.
func (g *gpuDevice) setUp() (err error) {
	for s := range g.slots {
		slot := &g.slots[s]
		if slot.host, err = cusolver.HostAlloc(stageBytes); err != nil {
			return err
		}
		if slot.dev, err = allocHere(stageBytes); err != nil {
			return err
		}
		if slot.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return err
		}
		if slot.moved, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return err
		}
	}
	if g.copies, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return err
	}
	g.kernels, err = cu.MakeStream(cu.NonBlocking)
	return err
}

// release frees what setUp made before it failed.
func (g *gpuDevice) release() {
	for s := range g.slots {
		slot := &g.slots[s]
		if slot.host != nil {
			_ = cusolver.FreeHost(slot.host)
		}
		if slot.dev != 0 {
			_ = memFree(slot.dev)
		}
		if slot.done != (cu.Event{}) {
			_ = cu.DestroyEvent(&slot.done)
		}
		if slot.moved != (cu.Event{}) {
			_ = cu.DestroyEvent(&slot.moved)
		}
	}
	for _, st := range []*cu.Stream{&g.copies, &g.kernels} {
		if *st != (cu.Stream{}) {
			_ = st.Destroy()
		}
	}
}

// launch runs kernel name on the device's stream; args are 64-bit words.
func (g *gpuDevice) launch(name string, gridX, gridY, blockX, blockY int, args ...uint64) error {
	return g.launchOn(g.stream, name, gridX, gridY, blockX, blockY, args...)
}

// launchOn runs kernel name on stream.
func (g *gpuDevice) launchOn(stream cu.Stream, name string, gridX, gridY, blockX, blockY int, args ...uint64) error {
	fn, ok := g.fns[name]
	if !ok {
		return fmt.Errorf("sharding: no kernel %q", name)
	}
	if err := launchKernel(fn, stream, gridX, gridY, blockX, blockY, args); err != nil {
		return fmt.Errorf("sharding: launching %s on gpu:%d: %w", name, g.id, err)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// maxGridY is CUDA's limit on a grid's y dimension.
const maxGridY = 65535

// yChunks calls fn for the ranges [c0, c1) that split cols columns into
// launches of at most maxGridY blocks of per columns along y: the kernels
// index columns by blockIdx.y, so a wider launch fails (a 1×3,000,000
// transfer or a finiteness check of a row wider than 524,280).
func yChunks(cols, per int, fn func(c0, c1 int) error) error {
	step := maxGridY * per
	for c0 := 0; c0 < cols; c0 += step {
		if err := fn(c0, min(c0+step, cols)); err != nil {
			return err
		}
	}
	return nil
}

// transpose enqueues out(i, j) = in(j, i) for i < rows, j < cols (column-major
// with leading dimensions ldo and ldi).
func (g *gpuDevice) transpose(elem int, out cu.DevicePtr, ldo int, in cu.DevicePtr, ldi, rows, cols int) error {
	if rows == 0 || cols == 0 {
		return nil
	}
	return yChunks(cols, 32, func(c0, c1 int) error {
		return g.launch(ptx.Transpose[elem], ceilDiv(rows, 32), ceilDiv(c1-c0, 32), 32, 8,
			uint64(out)+uint64(c0*ldo*elem), uint64(ldo), uint64(in)+uint64(c0*elem), uint64(ldi), uint64(rows), uint64(c1-c0))
	})
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
	// 4×H200 (float64, N = 65536, 34 GB), registering costs more than
	// staging saves (2.1–4.0 s to register and unregister, against 0.61–0.97
	// s for the staged upload and 0.23–0.72 s in place on 4–1 GPUs), so this
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
	workers := max(1, min(16, runtime.NumCPU()/t.mesh.Size()))
	if t.checkWholeColumns() == nil && rows > 0 && cols > 0 && cols*elem <= rowBandBytes && allPeers(t.mesh) {
		return transferRowBands(t, hostPtr, direct, up, workers)
	}
	pieces := cyclic.Pieces(t.layout, rows, cols, t.mesh.Size())
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
			if direct && cols*elem <= maxPitch { // else staged: the host rows are too far apart for a 2-D copy
				return g.inPlace(bs, db, hostPtr, cols, ld, elem, up)
			}
			return g.pipeline(bs, db, hostPtr, cols, ld, elem, up, workers)
		})
	})
}

// transferRowBands moves a matrix whose layout keeps whole columns on one
// device in bands of whole host rows: contiguous host memory, so one 1-D DMA
// per band at the full speed of the link (pinned or registered host memory
// alike). The bands go round-robin to the devices, which copy them over
// their own links at once; a kernel then scatters each band into the
// column-major shards of every device (through peer access, over NVLink),
// or, on the way down, gathers it from them.
func transferRowBands(t *Tensor, hostPtr unsafe.Pointer, direct, up bool, workers int) error {
	return eachRowBands(t, hostPtr, direct, workers, func(rb *rowBands) error {
		if up {
			return rb.up()
		}
		return rb.down()
	})
}

// eachRowBands cuts the matrix into bands of whole rows, deals them
// round-robin to the devices and runs move on every device at once with
// that device's share, its column table on the device, and waits for the
// device's work.
func eachRowBands(t *Tensor, hostPtr unsafe.Pointer, direct bool, workers int, move func(*rowBands) error) error {
	rows, cols, ndev := t.Rows(), t.Cols(), t.mesh.Size()
	elem := int(t.dtype.Size())
	table := make([]uint64, ndev, ndev+cols) // shard addresses, then the column map
	for d := range ndev {
		table[d] = uint64(t.shards[d].(*DeviceBuffer).ptr)
	}
	table = append(table, columnMap(t.layout, rows, cols, ndev)...)
	h := rowBandBytes / (cols * elem) // rows per band
	nb := ceilDiv(rows, h)
	return perDevice(ndev, func(d int) error {
		if d >= nb {
			return nil
		}
		dev := t.mesh.devices[d]
		return onDevice(dev, func() error {
			g, err := deviceState(dev.ID)
			if err != nil {
				return err
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			dtable, err := allocHere(8 * len(table))
			if err != nil {
				return err
			}
			defer func() { _ = cu.Synchronize(); _ = memFree(dtable) }()
			if err := memcpyHtoD(dtable, unsafe.Pointer(&table[0]), int64(8*len(table))); err != nil {
				return err
			}
			// The non-blocking streams do not wait for the legacy stream.
			if err := cu.Synchronize(); err != nil {
				return err
			}
			rb := rowBands{g: g, host: hostPtr, cols: cols, elem: elem, table: dtable, ndev: ndev, ld: rows,
				direct: direct, workers: workers}
			for b := d; b < nb; b += ndev {
				rb.bands = append(rb.bands, [2]int{b * h, min(h, rows-b*h)})
			}
			if err := move(&rb); err != nil {
				return err
			}
			return cu.Synchronize()
		})
	})
}

// rowBands is one device's share of a row-band transfer: bands of rows
// {first row, rows} of the row-major host matrix.
type rowBands struct {
	g          *gpuDevice
	host       unsafe.Pointer
	cols, elem int
	table      cu.DevicePtr
	ndev, ld   int
	direct     bool // host memory is page-locked: DMA in place
	workers    int
	bands      [][2]int
}

// hostBand is the address of a band in the host matrix and its size.
func (r *rowBands) hostBand(b [2]int) (unsafe.Pointer, int) {
	return unsafe.Add(r.host, b[0]*r.cols*r.elem), b[1] * r.cols * r.elem
}

// kernel enqueues the scatter (up) or gather of band b through slot s on
// the kernel stream.
func (r *rowBands) kernel(name string, s int, b [2]int) error {
	tiles := ceilDiv(b[1], 32) * ceilDiv(r.cols, 32)
	return r.g.launchOn(r.g.kernels, name, tiles, 1, 32, 8, uint64(r.g.slots[s].dev), uint64(b[1]),
		uint64(r.cols), uint64(b[0]), uint64(r.table), uint64(r.ndev), uint64(r.ld))
}

// up: for each band, the CPU fills the slot's pinned buffer (staged) once
// its previous DMA is done, the copy stream moves the band to the slot's
// device buffer once its previous kernel is done, and the kernel stream
// scatters it once it has arrived.
func (r *rowBands) up() error {
	g := r.g
	for k, b := range r.bands {
		s := k % nslots
		slot := &g.slots[s]
		src, n := r.hostBand(b)
		if !r.direct {
			if err := slot.done.Synchronize(); err != nil {
				return err
			}
			parallelCopy(slot.host, src, n, r.workers)
			src = slot.host
		}
		if err := g.copies.Wait(slot.moved, 0); err != nil {
			return err
		}
		if err := cu.MemcpyHtoDAsync(slot.dev, src, int64(n), g.copies); err != nil {
			return err
		}
		if err := slot.done.Record(g.copies); err != nil {
			return err
		}
		if err := g.kernels.Wait(slot.done, 0); err != nil {
			return err
		}
		if err := r.kernel(ptx.ScatterRows[r.elem], s, b); err != nil {
			return err
		}
		if err := slot.moved.Record(g.kernels); err != nil {
			return err
		}
	}
	return nil
}

// down: for each band, the kernel stream gathers it into the slot once the
// slot's previous DMA is done (the CPU waited for it), the copy stream moves
// it to the host (or to the slot's pinned buffer, which the CPU copies out
// when the slot comes round again or at the end).
func (r *rowBands) down() error {
	g := r.g
	inFlight := make([]int, nslots) // band index + 1 in each slot, 0 for none
	finish := func(s int) error {
		if inFlight[s] == 0 {
			return nil
		}
		if err := g.slots[s].done.Synchronize(); err != nil {
			return err
		}
		if !r.direct {
			dst, n := r.hostBand(r.bands[inFlight[s]-1])
			parallelCopy(dst, g.slots[s].host, n, r.workers)
		}
		inFlight[s] = 0
		return nil
	}
	for k, b := range r.bands {
		s := k % nslots
		slot := &g.slots[s]
		if err := finish(s); err != nil {
			return err
		}
		if err := r.kernel(ptx.GatherRows[r.elem], s, b); err != nil {
			return err
		}
		if err := slot.moved.Record(g.kernels); err != nil {
			return err
		}
		if err := g.copies.Wait(slot.moved, 0); err != nil {
			return err
		}
		dst, n := r.hostBand(b)
		if !r.direct {
			dst = slot.host
		}
		if err := cu.MemcpyDtoHAsync(dst, slot.dev, int64(n), g.copies); err != nil {
			return err
		}
		if err := slot.done.Record(g.copies); err != nil {
			return err
		}
		inFlight[s] = k + 1
	}
	for k := range nslots {
		if err := finish((len(r.bands) + k) % nslots); err != nil {
			return err
		}
	}
	return nil
}

// parallelCopy copies n bytes from src to dst with up to workers goroutines.
func parallelCopy(dst, src unsafe.Pointer, n, workers int) {
	d, s := unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n)
	if workers <= 1 || n < 4<<20 {
		copy(d, s)
		return
	}
	per := ceilDiv(ceilDiv(n, workers), 4096) * 4096
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			copy(d[lo:hi], s[lo:hi])
		}(lo, min(lo+per, n))
	}
	wg.Wait()
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
		err = yChunks(cols, 8, func(c0, c1 int) error {
			return g.launch(ptx.ZeroUpper[db.elem], ceilDiv(rows, 32), ceilDiv(c1-c0, 8), 32, 8,
				uint64(db.ptr)+uint64((off+c0*ld)*db.elem), uint64(ld), uint64(rows), uint64(c1-c0), uint64(int64(shift-c0)))
		})
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
	// The kernel reads the other devices' shards through peer access.
	if t.layout.Kind != cyclic.ColCyclic || t.mesh.Size() > 1 && !allPeers(t.mesh) {
		return mirrorLowerHost(t)
	}
	n, ndev := t.Rows(), t.mesh.Size()
	ptrs := make([]uint64, ndev)
	for d := range ndev {
		ptrs[d] = uint64(t.shards[d].(*DeviceBuffer).ptr)
	}
	name := ptx.Mirror[typeLetter(t.dtype)]
	return eachColumnDevice(t, func(d, lcols int, _ *DeviceBuffer, g *gpuDevice) error {
		table, err := allocHere(8 * ndev)
		if err != nil {
			return err
		}
		defer memFree(table)
		if err := memcpyHtoD(table, unsafe.Pointer(&ptrs[0]), int64(8*ndev)); err != nil {
			return err
		}
		if err := g.launch(name, ceilDiv(n, 32), ceilDiv(lcols, 32), 32, 8,
			uint64(table), uint64(d), uint64(ndev), uint64(n), uint64(t.layout.Tile), uint64(lcols)); err != nil {
			return err
		}
		return cu.Synchronize()
	})
}

// eachColumnDevice runs fn for every device that holds columns of t (lcols
// of them, in shard db), the devices concurrently, each on a thread of its
// own with its context current and its state g.
func eachColumnDevice(t *Tensor, fn func(d, lcols int, db *DeviceBuffer, g *gpuDevice) error) error {
	return perDevice(t.mesh.Size(), func(d int) error {
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
			return fn(d, lcols, db, g)
		})
	})
}

// flagged runs checks on one device that each raise a 32-bit flag in device
// memory (launch enqueues them, with flag k at flags + 4k) and returns the
// n flags: one synchronization and one read-back for all of them.
func flagged(dev Device, n int, launch func(g *gpuDevice, flags cu.DevicePtr) error) ([]int32, error) {
	out := make([]int32, n)
	if n == 0 {
		return out, nil
	}
	err := onDevice(dev, func() error {
		g, err := deviceState(dev.ID)
		if err != nil {
			return err
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		flags, err := g.flags.reserve(4 * n)
		if err != nil {
			return err
		}
		if err := cu.MemsetD32(flags, 0, int64(n)); err != nil {
			return err
		}
		if err := launch(g, flags); err != nil {
			return err
		}
		if err := cu.Synchronize(); err != nil {
			return err
		}
		return memcpyDtoH(unsafe.Pointer(&out[0]), flags, int64(4*n))
	})
	return out, err
}

// realParts is the size of a real part of the tensor's elements and the
// number of reals per element.
func realParts(b *DeviceBuffer) (size, pairs int) {
	if b.dt == tensor.Complex64 || b.dt == tensor.Complex128 {
		return b.elem / 2, 2
	}
	return b.elem, 1
}

// nonFinite checks every piece with a kernel, the devices concurrently.
func (gpuBackend) nonFinite(t *Tensor, pieces []cyclic.Piece, lower bool) (int, error) {
	ndev := t.mesh.Size()
	first := make([]int, ndev)
	err := perDevice(ndev, func(d int) error {
		first[d] = -1
		var mine []int
		for i, p := range pieces {
			if p.Dev == d {
				mine = append(mine, i)
			}
		}
		db := t.shards[d].(*DeviceBuffer)
		if len(mine) == 0 || db.n == 0 {
			return nil
		}
		ld, _ := t.LocalShape(d)
		real, pairs := realParts(db)
		lo := uint64(0)
		if lower {
			lo = 1
		}
		flags, err := flagged(db.dev, len(mine), func(g *gpuDevice, flags cu.DevicePtr) error {
			for k, i := range mine {
				p := pieces[i]
				off := (p.LocalRow + p.LocalCol*ld) * db.elem
				rows := p.Rows * pairs
				err := yChunks(p.Cols, 8, func(c0, c1 int) error {
					return g.launch(ptx.NonFinite[real], ceilDiv(rows, 32), ceilDiv(c1-c0, 8), 32, 8,
						uint64(db.ptr)+uint64(off+c0*ld*db.elem), uint64(ld*pairs), uint64(rows), uint64(c1-c0),
						uint64(int64(p.Row-p.Col-c0)), lo, uint64(pairs), uint64(flags)+uint64(4*k))
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		for k, f := range flags {
			if f != 0 {
				first[d] = mine[k]
				break
			}
		}
		return err
	})
	bad := -1
	for _, f := range first {
		if f >= 0 && (bad < 0 || f < bad) {
			bad = f
		}
	}
	return bad, err
}

// setDiagonalOnes writes the run's ones with one strided copy from the host.
func (gpuBackend) setDiagonalOnes(t *Tensor, r diagonalRun) error {
	db := t.shards[r.dev].(*DeviceBuffer)
	ones, err := onesOf(t.dtype, r.count)
	if err != nil {
		return err
	}
	src, _, err := hostBytes(ones)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(ones)
	dst := uintptr(db.ptr) + uintptr(r.off*db.elem)
	pitch := (r.ld + 1) * db.elem
	if r.count == 1 {
		pitch = db.elem // one row: the pitch is never stepped, but must be valid
	}
	return onDevice(db.dev, func() error {
		if pitch > maxPitch { // a shard of more than 2³¹ bytes a column: one copy an element
			for k := range r.count {
				if err := memcpyHtoD(cu.DevicePtr(dst+uintptr(k*(r.ld+1)*db.elem)), unsafe.Add(src, k*db.elem), int64(db.elem)); err != nil {
					return err
				}
			}
			return nil
		}
		if err := cusolver.Memcpy2DAsync(dst, pitch, uintptr(src), db.elem, db.elem, r.count, true, 0); err != nil {
			return err
		}
		return cu.Synchronize()
	})
}

// maxPitch is the largest row pitch cudaMemcpy2D takes (the devices'
// cudaDevAttrMaxPitch on the GPUs mgla runs on).
const maxPitch = 1<<31 - 1

// diagonalSuspect checks the diagonal's runs with a kernel per run, the
// devices concurrently.
func (gpuBackend) diagonalSuspect(t *Tensor) (bool, error) {
	runs := diagonalRuns(t)
	ndev := t.mesh.Size()
	suspect := make([]bool, ndev)
	err := perDevice(ndev, func(d int) error {
		db := t.shards[d].(*DeviceBuffer)
		var mine []diagonalRun
		for _, r := range runs {
			if r.dev == d {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 || db.n == 0 {
			return nil
		}
		real, pairs := realParts(db)
		flags, err := flagged(db.dev, 1, func(g *gpuDevice, flag cu.DevicePtr) error {
			for _, r := range mine {
				if err := g.launch(ptx.DiagCheck[real], min(ceilDiv(r.count, 256), 1024), 1, 256, 1,
					uint64(db.ptr)+uint64(r.off*db.elem), uint64(r.count), uint64((r.ld+1)*pairs),
					uint64(pairs), uint64(flag)); err != nil {
					return err
				}
			}
			return nil
		})
		suspect[d] = len(flags) == 1 && flags[0] != 0
		return err
	})
	for _, s := range suspect {
		if s {
			return true, err
		}
	}
	return false, err
}

// MinMaxKeys enqueues on stream, on GPU id, the kernel that writes to keys
// the n unsigned keys (uint32 for float32, uint64 for float64) of the
// floats of type dt at src: keys in the floats' order, -0 below +0, and a
// NaN mapped to the key that wins the reduction (the smallest for min, the
// largest for max). An unsigned min or max of keys, mapped back by
// MinMaxValues, is Go's min or max of the floats; package collective/nccl
// runs Min and Max so, since NCCL's own drop NaNs. The calling thread's
// current context must be id's primary context.
func MinMaxKeys(id int, stream cu.Stream, keys, src cu.DevicePtr, n int, dt tensor.Dtype, forMax bool) error {
	g, size, err := minMaxKernels(id, n, dt)
	if err != nil || n == 0 {
		return err
	}
	flag := uint64(0)
	if forMax {
		flag = 1
	}
	return g.launchOn(stream, ptx.MinMaxKeys[size], min(ceilDiv(n, 256), 4096), 1, 256, 1, uint64(keys), uint64(src), uint64(n), flag)
}

// MinMaxValues enqueues on stream, on GPU id, the kernel that maps the n
// keys of MinMaxKeys at a back to floats of type dt in place.
func MinMaxValues(id int, stream cu.Stream, a cu.DevicePtr, n int, dt tensor.Dtype) error {
	g, size, err := minMaxKernels(id, n, dt)
	if err != nil || n == 0 {
		return err
	}
	return g.launchOn(stream, ptx.MinMaxValues[size], min(ceilDiv(n, 256), 4096), 1, 256, 1, uint64(a), uint64(n))
}

func minMaxKernels(id, n int, dt tensor.Dtype) (*gpuDevice, int, error) {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, 0, fmt.Errorf("sharding: min and max keys of %v: float32 and float64 only", dt)
	}
	if n < 0 {
		return nil, 0, fmt.Errorf("sharding: min and max keys of %d elements", n)
	}
	g, err := deviceState(id)
	return g, int(dt.Size()), err
}
