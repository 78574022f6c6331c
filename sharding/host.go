package sharding

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"gorgonia.org/tensor"
)

// backend moves shard memory for the devices of one kind.
type backend interface {
	// alloc returns a buffer of n elements, zeroed when zero is set and
	// of any contents otherwise (which a host buffer never has).
	alloc(dev Device, dt tensor.Dtype, n int, zero bool) (Buffer, error)
	free(b Buffer)
	zero(b Buffer)
	put(t *Tensor, host any) error    // row-major host slice → shards
	gather(t *Tensor, host any) error // shards → row-major host slice
	execute(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error
	axpy(alpha float64, x, y Buffer) error // y += alpha·x
	diagonal(t *Tensor) (any, error)
	// zeroUpper zeroes the elements (i, j) with i + shift < j of the
	// rows×cols block at element offset off (leading dimension ld).
	zeroUpper(b Buffer, off, ld, rows, cols, shift int) error
	mirrorLower(t *Tensor) error // upper triangle ← conjugate of the lower one
	// nonFinite returns the index of the first piece whose block holds NaN
	// or Inf (elements with global row ≥ column only, when lower), or -1.
	nonFinite(t *Tensor, pieces []cyclic.Piece, lower bool) (int, error)
	// setDiagonalOnes sets the elements of a diagonal run to one.
	setDiagonalOnes(t *Tensor, r diagonalRun) error
	// diagonalSuspect reports whether the main diagonal may hold NaN, Inf
	// or zero (true: read it to see).
	diagonalSuspect(t *Tensor) (bool, error)
	// mulChain runs the products of MulLower, MulHermitian or
	// MulCholesky after their checks, adding the results to y and yAbs.
	mulChain(t *Tensor, y []complex128, yAbs []float64, x []complex128, xAbs []float64, steps []lowerStep) error
	// kernelMatrix writes the kernel matrix's columns cols (global
	// indices, in local order) into the n-row float32 or float64 shard b.
	kernelMatrix(b Buffer, n int, cols []int, x []float64, d int, p KernelParams) error
	// kernelMatrixGrad returns the share of KernelMatrixGrad of the kernel
	// gradient's columns cols held by shard b.
	kernelMatrixGrad(b Buffer, n int, cols []int, x []float64, d int, p KernelParams) (kernelGradShare, error)
}

// HostBuffer is a shard in host memory: a slice of one of Dtypes or
// IntDtypes ([]float64, []int32, …).
type HostBuffer struct {
	dev  Device
	data any
}

func (b *HostBuffer) Device() Device { return b.dev }

// Len is the number of elements (0 for a zero HostBuffer).
func (b *HostBuffer) Len() int {
	if b.data == nil {
		return 0
	}
	return reflect.ValueOf(b.data).Len()
}

// Data is the shard's typed slice.
func (b *HostBuffer) Data() any { return b.data }

// Dtype is the element type of the shard's slice (the zero Dtype for a
// zero HostBuffer).
func (b *HostBuffer) Dtype() tensor.Dtype {
	if b.data == nil {
		return tensor.Dtype{}
	}
	return tensor.Dtype{Type: reflect.TypeOf(b.data).Elem()}
}

// Bytes is the shard's memory (Len()·Dtype().Size() bytes), for engines that
// move raw memory. It aliases Data.
func (b *HostBuffer) Bytes() []byte {
	p, n := sliceMemory(b.data)
	return unsafe.Slice((*byte)(p), n)
}

// sliceMemory is the first element and the size in bytes of a typed slice
// (nil and 0 for nil).
func sliceMemory(data any) (unsafe.Pointer, int) {
	if data == nil {
		return nil, 0
	}
	v := reflect.ValueOf(data)
	return v.UnsafePointer(), v.Len() * int(v.Type().Elem().Size())
}

// HostShards returns the typed shard slices of a tensor on a CPU mesh.
func HostShards[T any](t *Tensor) ([][]T, error) {
	if err := t.usable(); err != nil {
		return nil, err
	}
	return hostSlices[T](t.shards)
}

// hostSlices returns the typed slices of host buffers.
func hostSlices[T any](shards []Buffer) ([][]T, error) {
	out := make([][]T, len(shards))
	for i, b := range shards {
		hb, ok := b.(*HostBuffer)
		if !ok {
			return nil, fmt.Errorf("sharding: shard %d is in %v memory, not host memory", i, b.Device().Kind)
		}
		if out[i], ok = hb.data.([]T); !ok {
			return nil, fmt.Errorf("sharding: shard %d holds %T, not %T", i, hb.data, out[i])
		}
	}
	return out, nil
}

// hostType runs the host routines that need the element type statically.
type hostType interface {
	put(t *Tensor, host any) error    // row-major host slice → shards
	gather(t *Tensor, host any) error // shards → row-major host slice
	execute(p *cyclic.Plan, src, dst []Buffer) error
}

// hostOf is the hostType of element type T.
type hostOf[T any] struct{}

// hostTypes are the element types a sharded tensor may hold (Dtypes and
// IntDtypes), each with its host routines.
var hostTypes = map[tensor.Dtype]hostType{
	tensor.Float32: hostOf[float32]{}, tensor.Float64: hostOf[float64]{},
	tensor.Complex64: hostOf[complex64]{}, tensor.Complex128: hostOf[complex128]{},
	tensor.Int: hostOf[int]{}, tensor.Int8: hostOf[int8]{}, tensor.Int16: hostOf[int16]{},
	tensor.Int32: hostOf[int32]{}, tensor.Int64: hostOf[int64]{},
	tensor.Uint: hostOf[uint]{}, tensor.Uint8: hostOf[uint8]{}, tensor.Uint16: hostOf[uint16]{},
	tensor.Uint32: hostOf[uint32]{}, tensor.Uint64: hostOf[uint64]{},
}

func (hostOf[T]) put(t *Tensor, host any) error {
	return withHost(t, host, func(sh [][]T, g []T) {
		cyclic.Scatter(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), g, t.Cols(), true, sh)
	})
}

func (hostOf[T]) gather(t *Tensor, host any) error {
	return withHost(t, host, func(sh [][]T, g []T) {
		cyclic.Gather(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), sh, g, t.Cols(), true)
	})
}

func (hostOf[T]) execute(p *cyclic.Plan, src, dst []Buffer) error {
	s, err := hostSlices[T](src)
	if err != nil {
		return err
	}
	d, err := hostSlices[T](dst)
	if err != nil {
		return err
	}
	return cyclic.ExecuteHost(p, s, d)
}

// withHost checks that host is a []T of t's size and hands fn the typed
// shard slices and the host slice.
func withHost[T any](t *Tensor, host any, fn func(shards [][]T, host []T)) error {
	g, ok := host.([]T)
	if !ok {
		return fmt.Errorf("sharding: host data %T for a %v tensor", host, t.dtype)
	}
	sh, err := HostShards[T](t)
	if err != nil {
		return err
	}
	if len(g) < t.Size() {
		return fmt.Errorf("sharding: host data has %d elements, want %d", len(g), t.Size())
	}
	fn(sh, g)
	return nil
}

// typeOf is the host routines of dt.
func typeOf(dt tensor.Dtype) (hostType, error) {
	if h, ok := hostTypes[dt]; ok {
		return h, nil
	}
	return nil, CheckStorageDtype(dt)
}

type hostBackend struct{}

func (hostBackend) alloc(dev Device, dt tensor.Dtype, n int, _ bool) (b Buffer, err error) {
	if err := CheckStorageDtype(dt); err != nil {
		return nil, err
	}
	defer func() {
		// Go's allocator panics (recoverably) on a size it can never
		// serve; in the goroutines of perDevice that would end the process.
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("sharding: cannot allocate %d elements of %v on %v: %v", n, dt, dev, r)
		}
	}()
	return &HostBuffer{dev: dev, data: reflect.MakeSlice(reflect.SliceOf(dt.Type), n, n).Interface()}, nil
}

func (hostBackend) free(Buffer) {}

func (hostBackend) zero(b Buffer) { reflect.ValueOf(b.(*HostBuffer).data).Clear() }

func (hostBackend) put(t *Tensor, host any) error {
	h, err := typeOf(t.dtype)
	if err != nil {
		return err
	}
	return h.put(t, host)
}

func (hostBackend) gather(t *Tensor, host any) error {
	h, err := typeOf(t.dtype)
	if err != nil {
		return err
	}
	return h.gather(t, host)
}

func (hostBackend) execute(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error {
	h, err := typeOf(dt)
	if err != nil {
		return err
	}
	return h.execute(p, src, dst)
}

// NewHostBuffer wraps a typed host slice of one of Dtypes or IntDtypes
// ([]float64, []int32, …) as a Buffer of host device 0 without copying it,
// so collective engines can take host tensors and shards alike.
func NewHostBuffer(data any) (*HostBuffer, error) {
	if t := reflect.TypeOf(data); t != nil && t.Kind() == reflect.Slice {
		if _, ok := hostTypes[tensor.Dtype{Type: t.Elem()}]; ok {
			return &HostBuffer{dev: Device{Kind: CPU}, data: data}, nil
		}
	}
	return nil, fmt.Errorf("sharding: a host buffer needs a slice of float32, float64, complex64, complex128 or a fixed-size integer type, got %T", data)
}

func (b *HostBuffer) viewOf(off, n int) Buffer {
	if b.data == nil { // a zero HostBuffer: its only view is empty
		return &HostBuffer{dev: b.dev}
	}
	return &HostBuffer{dev: b.dev, data: reflect.ValueOf(b.data).Slice(off, off+n).Interface()}
}

// isNil reports whether b is nil or a nil pointer in the interface.
func isNil(b Buffer) bool {
	if b == nil {
		return true
	}
	v := reflect.ValueOf(b)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// gpuMemory is the GPU backend (set by the mglacuda build), for ExecutePlan
// on device buffers.
var gpuMemory backend

// View is elements off … off+n of b, sharing its memory (a host slice or
// device memory); freeing a view frees nothing.
func View(b Buffer, off, n int) (Buffer, error) {
	if isNil(b) {
		return nil, fmt.Errorf("sharding: View of a nil buffer")
	}
	v, ok := b.(interface{ viewOf(off, n int) Buffer })
	if !ok || off < 0 || n < 0 || off > b.Len() || n > b.Len()-off {
		return nil, fmt.Errorf("sharding: no view of %d elements at %d of a %T of %d", n, off, b, b.Len())
	}
	return v.viewOf(off, n), nil
}

// ExecutePlan runs the moves of p between buffers of one kind of device:
// src[d] and dst[d] stand for device d of the plan, column-major with the
// plan's local row counts as leading dimensions. Host buffers are copied by
// the host, device buffers by device (and peer) copies. Buffers may be views
// (View), so a plan's "devices" can be the blocks of one buffer. A plan
// that fails its Check, buffers shorter than its local shapes or of another
// dtype than dt are an error before anything is copied.
func ExecutePlan(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("sharding: ExecutePlan: %w", err)
	}
	if len(src) != p.NDev || len(dst) != p.NDev {
		return fmt.Errorf("sharding: plan for %d devices got %d source and %d destination buffers", p.NDev, len(src), len(dst))
	}
	bufs := append(append([]Buffer(nil), src...), dst...)
	for _, b := range bufs {
		if isNil(b) {
			return fmt.Errorf("sharding: ExecutePlan got a nil buffer")
		}
		if f, ok := b.(interface{ Freed() bool }); ok && f.Freed() {
			return fmt.Errorf("%w: ExecutePlan got a freed buffer (or a view of one)", ErrFreed)
		}
	}
	for d := range p.NDev {
		sr, sc := p.LocalShape(d, false)
		dr, dc := p.LocalShape(d, true)
		if src[d].Len() < sr*sc || dst[d].Len() < dr*dc {
			return fmt.Errorf("sharding: ExecutePlan: buffers of device %d too small: have %d and %d elements, need %d and %d",
				d, src[d].Len(), dst[d].Len(), sr*sc, dr*dc)
		}
	}
	kind := src[0].Device().Kind
	for _, b := range bufs {
		if b.Device().Kind != kind {
			return fmt.Errorf("sharding: ExecutePlan needs buffers of one device kind")
		}
	}
	switch {
	case kind == CPU:
		return hostBackend{}.execute(p, dt, src, dst)
	case gpuMemory != nil:
		return gpuMemory.execute(p, dt, src, dst)
	}
	return ErrNoGPU
}
