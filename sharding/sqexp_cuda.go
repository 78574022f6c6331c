//go:build mglacuda

package sharding

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/mgla/mgla/kernels/ptx"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// seScratchBytes bounds the device scratch of sqExpGrad's weights (n doubles
// per local column): the columns go through it in chunks of at most this
// many bytes (at least one column). A test lowers it to run several chunks.
var seScratchBytes = 256 << 20

// seDevice is what both squared-exponential kernels need on the device: the
// shard, checked, and the points (by dimension, xt[k·n + i] = x_i[k]) and
// the local columns' global indices (int64) uploaded to it.
type seDevice struct {
	db       *DeviceBuffer
	g        *gpuDevice
	xt, cols cu.DevicePtr
	allocs   []cu.DevicePtr
}

// seCheck checks the arguments of sqExp and sqExpGrad against the shard.
func seCheck(b Buffer, n int, cols []int, x []float64, d int) (*DeviceBuffer, error) {
	db, ok := b.(*DeviceBuffer)
	switch {
	case !ok:
		return nil, fmt.Errorf("sharding: squared-exponential kernel on a GPU mesh of a %T shard", b)
	case db.dt != tensor.Float32 && db.dt != tensor.Float64:
		return nil, fmt.Errorf("%w: squared-exponential kernel in a %v shard: want float32 or float64", ErrBadInput, db.dt)
	case n < 1 || d < 1 || len(x) != n*d:
		return nil, fmt.Errorf("%w: squared-exponential kernel of %d points of dimension %d from %d values", ErrBadInput, n, d, len(x))
	case db.n < n*len(cols):
		return nil, fmt.Errorf("sharding: squared-exponential kernel: a shard of %d elements for %d columns of %d rows", db.n, len(cols), n)
	case len(cols) > 0 && db.ptr == 0:
		return nil, fmt.Errorf("%w: squared-exponential kernel in a freed shard", ErrFreed)
	}
	for _, j := range cols {
		if j < 0 || j >= n {
			return nil, fmt.Errorf("sharding: squared-exponential kernel: column %d of a %d×%d matrix", j, n, n)
		}
	}
	return db, nil
}

// seOnDevice runs fn on the shard's device with the points and columns
// uploaded; it waits for the device's work and frees everything fn
// allocated through s.alloc, on every path.
func seOnDevice(db *DeviceBuffer, n int, cols []int, x []float64, d int, fn func(s *seDevice) error) error {
	xt := make([]float64, n*d)
	for i := range n {
		for k := range d {
			xt[k*n+i] = x[i*d+k]
		}
	}
	cols64 := make([]int64, len(cols))
	for c, j := range cols {
		cols64[c] = int64(j)
	}
	return onDevice(db.dev, func() (err error) {
		g, err := deviceState(db.dev.ID)
		if err != nil {
			return err
		}
		s := &seDevice{db: db, g: g}
		defer func() {
			if serr := cu.Synchronize(); err == nil {
				err = serr
			}
			for _, p := range s.allocs {
				if ferr := memFree(p); err == nil {
					err = ferr
				}
			}
		}()
		if s.xt, err = s.alloc(8 * len(xt)); err != nil {
			return err
		}
		if err := memcpyHtoD(s.xt, unsafe.Pointer(&xt[0]), int64(8*len(xt))); err != nil {
			return err
		}
		if s.cols, err = s.alloc(8 * len(cols64)); err != nil {
			return err
		}
		if err := memcpyHtoD(s.cols, unsafe.Pointer(&cols64[0]), int64(8*len(cols64))); err != nil {
			return err
		}
		return fn(s)
	})
}

// alloc allocates bytes on the device (the calling thread's current
// context), freed when seOnDevice returns.
func (s *seDevice) alloc(bytes int) (cu.DevicePtr, error) {
	p, err := allocHere(bytes)
	if err != nil {
		return 0, fmt.Errorf("sharding: allocating %d bytes on %v for the squared-exponential kernel: %w", bytes, s.db.dev, err)
	}
	s.allocs = append(s.allocs, p)
	return p, nil
}

// sqExp writes the kernel's columns with one thread per element (32×8
// blocks; columns along y, in launches of at most maxGridY blocks).
func (gpuBackend) sqExp(b Buffer, n int, cols []int, x []float64, d int, p SEParams) error {
	db, err := seCheck(b, n, cols, x, d)
	if err != nil || len(cols) == 0 {
		return err
	}
	return seOnDevice(db, n, cols, x, d, func(s *seDevice) error {
		return yChunks(len(cols), 8, func(c0, c1 int) error {
			return s.g.launch(ptx.SqExp[db.elem], ceilDiv(n, 32), ceilDiv(c1-c0, 8), 32, 8,
				uint64(db.ptr), uint64(n), uint64(c0), uint64(c1), uint64(s.cols), uint64(s.xt), uint64(d),
				math.Float64bits(p.LengthScale), math.Float64bits(p.SignalVar), math.Float64bits(p.NoiseVar))
		})
	})
}

// sqExpGrad reads the gradient's columns in chunks of seScratchBytes: for
// each chunk, one block per column (SqExpGradCols, 256 threads) writes the
// column's weights into the scratch, its three sums and the column point's
// share P; then one thread per (row, dimension) (SqExpGradRows) adds the
// chunk's shares R of the row points, the columns in order. The host forms
// x̄ᵢ −= Rᵢ, x̄_cols[c] += P_c and the sums in column order. No atomics: the
// result does not depend on scheduling.
func (gpuBackend) sqExpGrad(b Buffer, n int, cols []int, x []float64, d int, p SEParams) (seShare, error) {
	db, err := seCheck(b, n, cols, x, d)
	if err != nil {
		return seShare{}, err
	}
	share := seShare{xbar: make([]float64, n*d)}
	lcols := len(cols)
	if lcols == 0 {
		return share, nil
	}
	chunk := max(1, min(lcols, seScratchBytes/(8*n)))
	sums := make([]float64, 3*lcols)
	pc := make([]float64, lcols*d) // P, by column
	r := make([]float64, d*n)      // R, by dimension
	// The rows kernel's blocks: 256 threads, up to 8 dimensions along y.
	by := 1
	for by < 8 && 2*by <= d {
		by *= 2
	}
	bx := 256 / by
	err = seOnDevice(db, n, cols, x, d, func(s *seDevice) error {
		w, err := s.alloc(8 * n * chunk)
		if err != nil {
			return err
		}
		dsums, err := s.alloc(8 * len(sums))
		if err != nil {
			return err
		}
		dp, err := s.alloc(8 * len(pc))
		if err != nil {
			return err
		}
		dr, err := s.alloc(8 * len(r))
		if err != nil {
			return err
		}
		if err := cu.MemsetD8(dr, 0, int64(8*len(r))); err != nil {
			return err
		}
		for c0 := 0; c0 < lcols; c0 += chunk {
			cw := min(chunk, lcols-c0)
			if err := s.g.launch(ptx.SqExpGradCols[db.elem], cw, 1, 256, 1,
				uint64(db.ptr), uint64(n), uint64(c0), uint64(s.cols), uint64(s.xt), uint64(d),
				math.Float64bits(p.LengthScale), math.Float64bits(p.SignalVar),
				uint64(w), uint64(dsums), uint64(dp)); err != nil {
				return err
			}
			err := yChunks(d, by, func(m0, m1 int) error {
				return s.g.launch(ptx.SqExpGradRows, ceilDiv(n, bx), ceilDiv(m1-m0, by), bx, by,
					uint64(w), uint64(n), uint64(c0), uint64(cw), uint64(s.cols), uint64(s.xt), uint64(d),
					uint64(m0), math.Float64bits(p.LengthScale), uint64(dr))
			})
			if err != nil {
				return err
			}
		}
		if err := cu.Synchronize(); err != nil {
			return err
		}
		for _, v := range []struct {
			host []float64
			dev  cu.DevicePtr
		}{{sums, dsums}, {pc, dp}, {r, dr}} {
			if err := memcpyDtoH(unsafe.Pointer(&v.host[0]), v.dev, int64(8*len(v.host))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return seShare{}, err
	}
	for i := range n {
		for m := range d {
			share.xbar[i*d+m] = -r[m*n+i]
		}
	}
	for c, j := range cols {
		for m := range d {
			share.xbar[j*d+m] += pc[c*d+m]
		}
		for k := range share.sums {
			share.sums[k] += sums[3*c+k]
		}
	}
	return share, nil
}
