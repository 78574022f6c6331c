package sharding

import (
	"fmt"

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
}

// HostBuffer is a shard in host memory: a []float32, []float64, []complex64
// or []complex128.
type HostBuffer struct {
	dev  Device
	data any
}

func (b *HostBuffer) Device() Device { return b.dev }
func (b *HostBuffer) Len() int {
	switch s := b.data.(type) {
	case []float32:
		return len(s)
	case []float64:
		return len(s)
	case []complex64:
		return len(s)
	case []complex128:
		return len(s)
	}
	return 0
}

// Data is the shard's typed slice.
func (b *HostBuffer) Data() any { return b.data }

// HostShards returns the typed shard slices of a tensor on a CPU mesh.
func HostShards[T any](t *Tensor) ([][]T, error) {
	out := make([][]T, len(t.shards))
	for i, b := range t.shards {
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

type hostBackend struct{}

func (hostBackend) alloc(dev Device, dt tensor.Dtype, n int, _ bool) (Buffer, error) {
	var data any
	switch dt {
	case tensor.Float32:
		data = make([]float32, n)
	case tensor.Float64:
		data = make([]float64, n)
	case tensor.Complex64:
		data = make([]complex64, n)
	case tensor.Complex128:
		data = make([]complex128, n)
	default:
		return nil, CheckDtype(dt)
	}
	return &HostBuffer{dev: dev, data: data}, nil
}

func (hostBackend) free(Buffer) {}

func (hostBackend) zero(b Buffer) {
	switch s := b.(*HostBuffer).data.(type) {
	case []float32:
		clear(s)
	case []float64:
		clear(s)
	case []complex64:
		clear(s)
	case []complex128:
		clear(s)
	}
}

func (hostBackend) put(t *Tensor, host any) error {
	return withHost(t, host, func(sh any, g any) error {
		switch s := sh.(type) {
		case [][]float32:
			cyclic.Scatter(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), g.([]float32), t.Cols(), true, s)
		case [][]float64:
			cyclic.Scatter(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), g.([]float64), t.Cols(), true, s)
		case [][]complex64:
			cyclic.Scatter(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), g.([]complex64), t.Cols(), true, s)
		case [][]complex128:
			cyclic.Scatter(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), g.([]complex128), t.Cols(), true, s)
		}
		return nil
	})
}

func (hostBackend) gather(t *Tensor, host any) error {
	return withHost(t, host, func(sh any, g any) error {
		switch s := sh.(type) {
		case [][]float32:
			cyclic.Gather(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), s, g.([]float32), t.Cols(), true)
		case [][]float64:
			cyclic.Gather(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), s, g.([]float64), t.Cols(), true)
		case [][]complex64:
			cyclic.Gather(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), s, g.([]complex64), t.Cols(), true)
		case [][]complex128:
			cyclic.Gather(t.layout, t.Rows(), t.Cols(), t.mesh.Size(), s, g.([]complex128), t.Cols(), true)
		}
		return nil
	})
}

// withHost checks that host is a slice of t's dtype and size and hands fn the
// typed shard slices and the host slice.
func withHost(t *Tensor, host any, fn func(shards any, host any) error) error {
	var sh any
	var n int
	var err error
	switch h := host.(type) {
	case []float32:
		n = len(h)
		sh, err = HostShards[float32](t)
	case []float64:
		n = len(h)
		sh, err = HostShards[float64](t)
	case []complex64:
		n = len(h)
		sh, err = HostShards[complex64](t)
	case []complex128:
		n = len(h)
		sh, err = HostShards[complex128](t)
	default:
		return fmt.Errorf("sharding: unsupported host data %T", host)
	}
	if err != nil {
		return err
	}
	if n < t.Size() {
		return fmt.Errorf("sharding: host data has %d elements, want %d", n, t.Size())
	}
	return fn(sh, host)
}

func (hostBackend) execute(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error {
	s := &Tensor{shards: src}
	d := &Tensor{shards: dst}
	switch dt {
	case tensor.Float32:
		return executeHost[float32](p, s, d)
	case tensor.Float64:
		return executeHost[float64](p, s, d)
	case tensor.Complex64:
		return executeHost[complex64](p, s, d)
	case tensor.Complex128:
		return executeHost[complex128](p, s, d)
	}
	return CheckDtype(dt)
}

func executeHost[T any](p *cyclic.Plan, src, dst *Tensor) error {
	s, err := HostShards[T](src)
	if err != nil {
		return err
	}
	d, err := HostShards[T](dst)
	if err != nil {
		return err
	}
	return cyclic.ExecuteHost(p, s, d)
}

// NewHostBuffer wraps a typed host slice ([]float32, []float64, []complex64
// or []complex128) as a Buffer of host device 0 without copying it, so
// collective engines can take host tensors and shards alike.
func NewHostBuffer(data any) (*HostBuffer, error) {
	switch data.(type) {
	case []float32, []float64, []complex64, []complex128:
		return &HostBuffer{dev: Device{Kind: CPU}, data: data}, nil
	}
	return nil, fmt.Errorf("sharding: a host buffer needs a []float32, []float64, []complex64 or []complex128, got %T", data)
}

func (b *HostBuffer) viewOf(off, n int) Buffer {
	v := &HostBuffer{dev: b.dev}
	switch s := b.data.(type) {
	case []float32:
		v.data = s[off : off+n]
	case []float64:
		v.data = s[off : off+n]
	case []complex64:
		v.data = s[off : off+n]
	case []complex128:
		v.data = s[off : off+n]
	}
	return v
}

// gpuMemory is the GPU backend (set by the mglacuda build), for ExecutePlan
// on device buffers.
var gpuMemory backend

// View is elements off … off+n of b, sharing its memory (a host slice or
// device memory); freeing a view frees nothing.
func View(b Buffer, off, n int) (Buffer, error) {
	v, ok := b.(interface{ viewOf(off, n int) Buffer })
	if !ok || off < 0 || n < 0 || off+n > b.Len() {
		return nil, fmt.Errorf("sharding: no view of %d elements at %d of a %T of %d", n, off, b, b.Len())
	}
	return v.viewOf(off, n), nil
}

// ExecutePlan runs the moves of p between buffers of one kind of device:
// src[d] and dst[d] stand for device d of the plan, column-major with the
// plan's local row counts as leading dimensions. Host buffers are copied by
// the host, device buffers by device (and peer) copies. Buffers may be views
// (View), so a plan's "devices" can be the blocks of one buffer.
func ExecutePlan(p *cyclic.Plan, dt tensor.Dtype, src, dst []Buffer) error {
	if len(src) != p.NDev || len(dst) != p.NDev {
		return fmt.Errorf("sharding: plan for %d devices got %d source and %d destination buffers", p.NDev, len(src), len(dst))
	}
	kind := src[0].Device().Kind
	for _, b := range append(append([]Buffer(nil), src...), dst...) {
		if b == nil || b.Device().Kind != kind {
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
