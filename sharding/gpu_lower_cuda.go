//go:build mglacuda

package sharding

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels/ptx"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// mvCols is the number of local columns one block row of the lower_mv
// kernels sums (MV_COLS in mgla.cu), mhvWarps the number of columns one
// block of the lower_mhv kernels sums, a warp each (MHV_WARPS). Both add to
// their output.
const (
	mvCols   = 256
	mhvWarps = 8
)

// typeLetter is LAPACK's letter for a float dtype, which names its kernels.
func typeLetter(dt tensor.Dtype) byte {
	return map[tensor.Dtype]byte{tensor.Float32: 's', tensor.Float64: 'd', tensor.Complex64: 'c', tensor.Complex128: 'z'}[dt]
}

// mulChain runs each step's kernel on every device, on its columns of a
// column block-cyclic matrix (other layouts go through the host), and sums
// the devices' shares of y on the host. Each device holds the chain's
// vectors in its first staging slot (x and xAbs up, y and yAbs down, on its
// stream, one synchronization) and adds its share to y from there: no host
// allocation. An intermediate stays on the device:
// the adjoint product leaves each device the entries of its own columns,
// and the product that follows reads no others.
func (gpuBackend) mulChain(t *Tensor, y []complex128, yAbs []float64, x []complex128, xAbs []float64, steps []lowerStep) error {
	if t.layout.Kind != cyclic.ColCyclic {
		return mulChainHost(t, y, yAbs, x, xAbs, steps)
	}
	n, ndev := t.Rows(), t.mesh.Size()
	elem, realSize := int(t.dtype.Size()), int(t.dtype.Size())
	if t.dtype == tensor.Complex64 || t.dtype == tensor.Complex128 {
		realSize /= 2
	}
	// The slot holds x, w, y, then yAbs, wAbs, xAbs, each aligned for its
	// type; w through wAbs (zeroed together) and y with yAbs (read back
	// together) are contiguous.
	off := func(v chainVector) int { return int(v) * n * elem }
	offAbs := func(v chainVector) int { return 3*n*elem + int(chainY-v)*n*realSize }
	slotBytes := 3 * n * (elem + realSize)
	if slotBytes > stageBytes {
		return fmt.Errorf("sharding: products of order %d need %d bytes of vectors, more than a staging slot's %d", n, slotBytes, stageBytes)
	}
	// The devices add their shares into y by stripes of rows, each device
	// starting at its own stripe, so that they add at once.
	stripes := make([]sync.Mutex, ndev)
	return eachColumnDevice(t, func(d, lcols int, db *DeviceBuffer, g *gpuDevice) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		slot := &g.slots[0]
		host := func(o int) unsafe.Pointer { return unsafe.Add(slot.host, o) }
		dev := func(o int) cu.DevicePtr { return slot.dev + cu.DevicePtr(o) }
		putComplex(host(off(chainX)), t.dtype, x)
		putReal(host(offAbs(chainX)), realSize, xAbs)
		if err := cu.MemcpyHtoDAsync(dev(off(chainX)), host(off(chainX)), int64(n*elem), g.stream); err != nil {
			return err
		}
		if err := cu.MemcpyHtoDAsync(dev(offAbs(chainX)), host(offAbs(chainX)), int64(n*realSize), g.stream); err != nil {
			return err
		}
		if err := cu.MemsetD32Async(dev(off(chainW)), 0, int64(2*n*(elem+realSize)/4), g.stream); err != nil {
			return err
		}
		for _, st := range steps {
			args := []uint64{uint64(db.ptr), uint64(n), uint64(t.layout.Tile), uint64(ndev), uint64(d), uint64(lcols),
				uint64(dev(off(st.in))), uint64(dev(offAbs(st.in))), uint64(dev(off(st.out))), uint64(dev(offAbs(st.out))), 0}
			if st.strict {
				args[len(args)-1] = 1
			}
			var err error
			if st.adjoint {
				err = g.launch(ptx.LowerMhv[typeLetter(t.dtype)], ceilDiv(lcols, mhvWarps), 1, 32*mhvWarps, 1, args...)
			} else {
				err = g.launch(ptx.LowerMv[typeLetter(t.dtype)], ceilDiv(n, 256), ceilDiv(lcols, mvCols), 256, 1, args...)
			}
			if err != nil {
				return err
			}
		}
		if err := cu.MemcpyDtoHAsync(host(off(chainY)), dev(off(chainY)), int64(n*(elem+realSize)), g.stream); err != nil {
			return err
		}
		if err := g.stream.Synchronize(); err != nil {
			return err
		}
		for k := range ndev {
			s := (d + k) % ndev
			lo, hi := s*n/ndev, (s+1)*n/ndev
			stripes[s].Lock()
			addComplex(y[lo:hi], host(off(chainY)+lo*elem), t.dtype)
			addReal(yAbs[lo:hi], host(offAbs(chainY)+lo*realSize), realSize)
			stripes[s].Unlock()
		}
		return nil
	})
}

// putComplex writes x, rounded to dtype dt, at p.
func putComplex(p unsafe.Pointer, dt tensor.Dtype, x []complex128) {
	switch dt {
	case tensor.Float32:
		storeAs(p, x, func(v complex128) float32 { return float32(real(v)) })
	case tensor.Float64:
		storeAs(p, x, func(v complex128) float64 { return real(v) })
	case tensor.Complex64:
		storeAs(p, x, func(v complex128) complex64 { return complex64(v) })
	default:
		storeAs(p, x, func(v complex128) complex128 { return v })
	}
}

// putReal writes x, rounded to reals of size bytes (4 or 8), at p.
func putReal(p unsafe.Pointer, size int, x []float64) {
	if size == 4 {
		storeAs(p, x, func(v float64) float32 { return float32(v) })
		return
	}
	storeAs(p, x, func(v float64) float64 { return v })
}

// addComplex adds the len(y) elements of dtype dt at p to y.
func addComplex(y []complex128, p unsafe.Pointer, dt tensor.Dtype) {
	switch dt {
	case tensor.Float32:
		addLoaded(y, p, func(v float32) complex128 { return complex(float64(v), 0) })
	case tensor.Float64:
		addLoaded(y, p, func(v float64) complex128 { return complex(v, 0) })
	case tensor.Complex64:
		addLoaded(y, p, func(v complex64) complex128 { return complex128(v) })
	default:
		addLoaded(y, p, func(v complex128) complex128 { return v })
	}
}

// addReal adds the len(y) reals of size bytes (4 or 8) at p to y.
func addReal(y []float64, p unsafe.Pointer, size int) {
	if size == 4 {
		addLoaded(y, p, func(v float32) float64 { return float64(v) })
		return
	}
	addLoaded(y, p, func(v float64) float64 { return v })
}

// storeAs writes conv(x[i]) as the i-th element of type E at p.
func storeAs[E, X any](p unsafe.Pointer, x []X, conv func(X) E) {
	dst := unsafe.Slice((*E)(p), len(x))
	for i, v := range x {
		dst[i] = conv(v)
	}
}

// addLoaded adds conv of the i-th element of type E at p to y[i].
func addLoaded[E any, Y float64 | complex128](y []Y, p unsafe.Pointer, conv func(E) Y) {
	src := unsafe.Slice((*E)(p), len(y))
	for i, v := range src {
		y[i] += conv(v)
	}
}
