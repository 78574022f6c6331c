//go:build mglacuda

package sharding

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/kernels/ptx"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// kernelScratchBytes bounds the device scratch of kernelMatrixGrad's weights (n doubles
// per local column): the columns go through it in chunks of at most this
// many bytes (at least one column). A test lowers it to run several chunks.
var kernelScratchBytes = 256 << 20

// kernelDevice is what both kernel-matrix kernels need on the device: the
// shard, checked, the points (by dimension, xt[k·n + i] = x_i[k]), the
// dimensions' length scales and the local columns' global indices (int64)
// uploaded to it, and the regions of the device's scratch that the caller
// asked for.
type kernelDevice struct {
	db             *DeviceBuffer
	g              *gpuDevice
	xt, ells, cols cu.DevicePtr
	regions        []cu.DevicePtr
}

// kernelScratch is a GPU's scratch for the kernel-matrix kernels, kept
// between calls (it grows to the largest call's need, at most about
// kernelScratchBytes more than the points and the sums) so that a call pays no
// allocation or free; mu serializes the calls on the GPU.
type kernelScratch struct {
	mu  sync.Mutex
	buf scratch
}

var (
	kernelScratchesMu sync.Mutex
	kernelScratches   = map[int]*kernelScratch{}
)

// kernelScratchOf returns GPU id's kernel-matrix scratch.
func kernelScratchOf(id int) *kernelScratch {
	kernelScratchesMu.Lock()
	defer kernelScratchesMu.Unlock()
	st, ok := kernelScratches[id]
	if !ok {
		st = &kernelScratch{}
		kernelScratches[id] = st
	}
	return st
}

// kernelAlign is the alignment of the scratch's regions in bytes.
const kernelAlign = 256

// checkKernelShard checks the arguments of kernelMatrix and kernelMatrixGrad against the shard.
func checkKernelShard(b Buffer, n int, cols []int, x []float64, d int) (*DeviceBuffer, error) {
	db, ok := b.(*DeviceBuffer)
	switch {
	case !ok:
		return nil, fmt.Errorf("sharding: kernel matrix on a GPU mesh of a %T shard", b)
	case db.dt != tensor.Float32 && db.dt != tensor.Float64:
		return nil, fmt.Errorf("%w: kernel matrix in a %v shard: want float32 or float64", ErrBadInput, db.dt)
	case n < 1 || d < 1 || len(x) != n*d:
		return nil, fmt.Errorf("%w: kernel matrix of %d points of dimension %d from %d values", ErrBadInput, n, d, len(x))
	case db.n < n*len(cols):
		return nil, fmt.Errorf("sharding: kernel matrix: a shard of %d elements for %d columns of %d rows", db.n, len(cols), n)
	case len(cols) > 0 && db.ptr == 0:
		return nil, fmt.Errorf("%w: kernel matrix in a freed shard", ErrFreed)
	}
	for _, j := range cols {
		if j < 0 || j >= n {
			return nil, fmt.Errorf("sharding: kernel matrix: column %d of a %d×%d matrix", j, n, n)
		}
	}
	return db, nil
}

// onKernelDevice runs fn on the shard's device with the points, the length
// scales ells (one per dimension) and the columns uploaded and regions of
// the given sizes in bytes (s.regions) in the device's scratch, under the
// scratch's lock; it waits for the device's work on every path before the
// lock is let go.
func onKernelDevice(db *DeviceBuffer, n int, cols []int, x []float64, d int, ells []float64, sizes []int, fn func(s *kernelDevice) error) error {
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
	aligned := func(bytes int) int { return (bytes + kernelAlign - 1) / kernelAlign * kernelAlign }
	total := aligned(8*len(xt)) + aligned(8*d) + aligned(8*len(cols64))
	for _, b := range sizes {
		total += aligned(b)
	}
	return onDevice(db.dev, func() (err error) {
		g, err := deviceState(db.dev.ID)
		if err != nil {
			return err
		}
		st := kernelScratchOf(db.dev.ID)
		st.mu.Lock()
		defer st.mu.Unlock()
		defer func() {
			if serr := cu.Synchronize(); err == nil {
				err = serr
			}
		}()
		base, err := st.buf.reserve(total)
		if err != nil {
			return fmt.Errorf("sharding: allocating %d bytes on %v for the kernel matrix: %w", total, db.dev, err)
		}
		next := func(bytes int) cu.DevicePtr {
			p := base
			base += cu.DevicePtr(aligned(bytes))
			return p
		}
		s := &kernelDevice{db: db, g: g, xt: next(8 * len(xt)), ells: next(8 * d)}
		if len(cols64) > 0 {
			s.cols = next(8 * len(cols64))
		}
		for _, b := range sizes {
			s.regions = append(s.regions, next(b))
		}
		if err := memcpyHtoD(s.xt, unsafe.Pointer(&xt[0]), int64(8*len(xt))); err != nil {
			return err
		}
		if err := memcpyHtoD(s.ells, unsafe.Pointer(&ells[0]), int64(8*d)); err != nil {
			return err
		}
		if len(cols64) > 0 {
			if err := memcpyHtoD(s.cols, unsafe.Pointer(&cols64[0]), int64(8*len(cols64))); err != nil {
				return err
			}
		}
		return fn(s)
	})
}

// kernelMatrix writes the kernel's columns with one thread per element (32×8
// blocks; columns along y, in launches of at most maxGridY blocks).
func (gpuBackend) kernelMatrix(b Buffer, n int, cols []int, x []float64, d int, p KernelParams) error {
	db, err := checkKernelShard(b, n, cols, x, d)
	if err != nil || len(cols) == 0 {
		return err
	}
	return onKernelDevice(db, n, cols, x, d, p.scales(d), nil, func(s *kernelDevice) error {
		return yChunks(len(cols), 8, func(c0, c1 int) error {
			return s.g.launch(ptx.KernelMatrix[db.elem], ceilDiv(n, 32), ceilDiv(c1-c0, 8), 32, 8,
				uint64(db.ptr), uint64(n), uint64(c0), uint64(c1), uint64(s.cols), uint64(s.xt), uint64(d),
				uint64(s.ells), math.Float64bits(p.SignalVar), math.Float64bits(p.NoiseVar),
				uint64(p.Family))
		})
	})
}

// kernelSlabs is how many slabs of local columns kernelMatrixGrad's rows kernel sums
// apart, and their width: enough for about 2¹⁹ threads, slabs of at least
// minSlab columns. It depends on n, d and the columns alone (not on the
// chunks of the scratch), so that neither do the sums.
func kernelSlabs(n, d, lcols int) (nslabs, slab int) {
	const minSlab = 32
	nslabs = max(1, min(ceilDiv(1<<19, n*d), lcols/minSlab))
	slab = ceilDiv(lcols, nslabs)
	return ceilDiv(lcols, slab), slab
}

// kernelMatrixGrad reads the gradient's columns in chunks of kernelScratchBytes: for
// each chunk, one block per column (KernelMatrixGradCols, 256 threads) writes the
// column's weights into the scratch, its three sums and the column point's
// share P; then one thread per (row, dimension, slab of columns)
// (KernelMatrixGradRows) adds the chunk's shares of the row points to its slab's
// partial sums, the columns in order. KernelMatrixGradSum adds the slabs' sums in
// order into R. The host forms x̄ᵢ −= Rᵢ, x̄_cols[c] += P_c and the sums in
// column order (with per-dimension length scales the columns' ℓ sums too).
// No atomics: the result depends neither on scheduling nor on the chunks.
func (gpuBackend) kernelMatrixGrad(b Buffer, n int, cols []int, x []float64, d int, p KernelParams) (kernelGradShare, error) {
	db, err := checkKernelShard(b, n, cols, x, d)
	if err != nil {
		return kernelGradShare{}, err
	}
	share := newGradShare(n, d, p)
	lcols := len(cols)
	if lcols == 0 {
		return share, nil
	}
	chunk := max(1, min(lcols, kernelScratchBytes/(8*n)))
	nslabs, slab := kernelSlabs(n, d, lcols)
	sums := make([]float64, 3*lcols)
	pc := make([]float64, lcols*d) // P, by column
	r := make([]float64, d*n)      // R, by dimension
	// The rows kernel's blocks: 256 threads, up to 8 dimensions along y.
	by := 1
	for by < 8 && 2*by <= d {
		by *= 2
	}
	bx := 256 / by
	xblocks := ceilDiv(n, bx)
	var ls []float64 // the columns' ℓ sums, by column (per-dimension length scales)
	if share.ellSums != nil {
		ls = make([]float64, lcols*d)
	}
	sizes := []int{8 * n * chunk, 8 * len(sums), 8 * len(pc), 8 * nslabs * n * d, 8 * len(r), 8 * len(ls)}
	err = onKernelDevice(db, n, cols, x, d, p.scales(d), sizes, func(s *kernelDevice) error {
		w, dsums, dp, part, dr := s.regions[0], s.regions[1], s.regions[2], s.regions[3], s.regions[4]
		var dls cu.DevicePtr // 0: no ℓ sums
		if ls != nil {
			dls = s.regions[5]
		}
		for c0 := 0; c0 < lcols; c0 += chunk {
			cw := min(chunk, lcols-c0)
			if err := s.g.launch(ptx.KernelMatrixGradCols[db.elem], cw, 1, 256, 1,
				uint64(db.ptr), uint64(n), uint64(c0), uint64(s.cols), uint64(s.xt), uint64(d),
				uint64(s.ells), math.Float64bits(p.SignalVar),
				uint64(w), uint64(dsums), uint64(dp), uint64(dls), uint64(p.Family)); err != nil {
				return err
			}
			s0, s1 := c0/slab, (c0+cw-1)/slab
			err := yChunks(d, by, func(m0, m1 int) error {
				return s.g.launch(ptx.KernelMatrixGradRows, xblocks*(s1-s0+1), ceilDiv(m1-m0, by), bx, by,
					uint64(w), uint64(n), uint64(c0), uint64(cw), uint64(s.cols), uint64(s.xt), uint64(d),
					uint64(m0), uint64(s.ells), uint64(part), uint64(slab),
					uint64(s0), uint64(xblocks))
			})
			if err != nil {
				return err
			}
		}
		if err := s.g.launch(ptx.KernelMatrixGradSum, min(ceilDiv(n*d, 256), 1<<16), 1, 256, 1,
			uint64(part), uint64(n*d), uint64(nslabs), uint64(dr)); err != nil {
			return err
		}
		if err := cu.Synchronize(); err != nil {
			return err
		}
		for _, v := range []struct {
			host []float64
			dev  cu.DevicePtr
		}{{sums, dsums}, {pc, dp}, {r, dr}, {ls, dls}} {
			if len(v.host) == 0 {
				continue
			}
			if err := memcpyDtoH(unsafe.Pointer(&v.host[0]), v.dev, int64(8*len(v.host))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return kernelGradShare{}, err
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
		for m := range share.ellSums {
			share.ellSums[m] += ls[c*d+m]
		}
	}
	return share, nil
}
