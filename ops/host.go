package ops

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// colMajor returns the global column-major matrix (leading dimension = rows)
// of a sharded tensor, for the host kernels. On a one-device CPU mesh in a
// column layout the shard already is that matrix and is returned itself: the
// caller must not modify it. Otherwise g is a copy, private: the caller may
// overwrite it. The copy of the shards of a CPU mesh of several devices is
// lent by the scratch pool: release gives it back once the kernel is done
// with it (for the other results release does nothing).
func colMajor[T kernels.Scalar](t *sharding.Tensor) (g []T, private bool, release func(), err error) {
	rows, cols := t.Rows(), t.Cols()
	if t.Mesh().Kind() != sharding.CPU {
		// Other meshes: through a row-major host copy, both buffers lent by
		// the scratch pool.
		rm, releaseRM := lend[T](rows * cols) // GatherInto writes all of it
		defer releaseRM()
		if err := t.GatherInto(tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(rm))); err != nil {
			return nil, false, nil, err
		}
		g, release := lend[T](rows * cols)
		kernels.Transpose(cols, rows, rm, max(1, cols), g, max(1, rows))
		return g, true, release, nil
	}
	sh, err := sharding.HostShards[T](t)
	if err != nil {
		return nil, false, nil, err
	}
	if len(sh) == 1 && t.Layout().Kind != cyclic.RowBlocks {
		return sh[0], false, keep, nil
	}
	g, release = lend[T](rows * cols)
	cyclic.Gather(t.Layout(), rows, cols, len(sh), sh, g, rows, false)
	return g, true, release, nil
}

// storeColMajor writes a global column-major matrix into t's shards.
func storeColMajor[T kernels.Scalar](g []T, t *sharding.Tensor) error {
	rows, cols := t.Rows(), t.Cols()
	if t.Mesh().Kind() != sharding.CPU {
		rm, release := lend[T](rows * cols) // Transpose writes all of it
		defer release()
		kernels.Transpose(rows, cols, g, max(1, rows), rm, max(1, cols))
		return t.Load(tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(rm)))
	}
	sh, err := sharding.HostShards[T](t)
	if err != nil {
		return err
	}
	if len(sh) == 1 && t.Layout().Kind != cyclic.RowBlocks && &sh[0][0] == &g[0] {
		return nil // g is the shard itself
	}
	cyclic.Scatter(t.Layout(), rows, cols, len(sh), g, rows, false, sh)
	return nil
}

// writable returns t's single shard when it can be written in place as the
// global column-major matrix, else a zeroed buffer to store later, lent by
// the scratch pool, which release gives back after storeColMajor (for the
// shard release does nothing).
func writable[T any](t *sharding.Tensor) (w []T, release func()) {
	n := t.Rows() * t.Cols()
	if t.Mesh().Kind() == sharding.CPU && t.Mesh().Size() == 1 && t.Layout().Kind != cyclic.RowBlocks {
		if sh, err := sharding.HostShards[T](t); err == nil {
			return sh[0], keep
		}
	}
	w, release = lend[T](n)
	clear(w)
	return w, release
}

// keep is the release of a buffer that is not the scratch pool's.
func keep() {}

// scratch holds the global column-major matrices that the host kernels work
// on for CPU meshes of several devices, gathered from the shards and
// scattered back on every call: taking them from a pool instead of
// allocating them spares each call the page faults of fresh memory. One
// sync.Pool per element type and capacity class (scratchCap: a bounded set,
// at most a quarter more than asked for); a sync.Pool keeps nothing that two
// garbage collections pass unused.
var scratch sync.Map // scratchClass → *sync.Pool of *[]T

type scratchClass struct{ elem, cap int }

// scratchCap is the capacity of the class of n elements: n itself up to 8,
// else n rounded up to a multiple of an eighth of the power of two at or
// above it, so 4 classes for each power of two.
func scratchCap(n int) int {
	if n <= 8 {
		return n
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + step - 1) / step * step
}

// lend returns a buffer of n elements from the scratch pool (its contents
// are stale) and the function that gives it back; the caller must not use
// the buffer after that.
func lend[T any](n int) ([]T, func()) {
	elem := -1
	switch any(*new(T)).(type) {
	case float32:
		elem = 0
	case float64:
		elem = 1
	case complex64:
		elem = 2
	case complex128:
		elem = 3
	}
	if elem < 0 || n == 0 {
		return make([]T, n), keep
	}
	class := scratchClass{elem, scratchCap(n)}
	p, ok := scratch.Load(class)
	if !ok {
		p, _ = scratch.LoadOrStore(class, new(sync.Pool))
	}
	pool := p.(*sync.Pool)
	buf, ok := pool.Get().(*[]T)
	if !ok {
		b := make([]T, class.cap)
		buf = &b
	}
	lent.add(int64(n) * int64(unsafe.Sizeof(*new(T))))
	return (*buf)[:n], func() {
		lent.add(-int64(n) * int64(unsafe.Sizeof(*new(T))))
		pool.Put(buf)
	}
}

// lent counts the bytes of scratch buffers lent out (not the capacity
// beyond what was asked for) and their high-water mark since the last
// resetPeak, which the tests of the ops' memory read.
var lent lentCount

type lentCount struct{ bytes, peak atomic.Int64 }

func (c *lentCount) add(b int64) {
	v := c.bytes.Add(b)
	for p := c.peak.Load(); v > p && !c.peak.CompareAndSwap(p, v); p = c.peak.Load() {
	}
}

func (c *lentCount) resetPeak() { c.peak.Store(c.bytes.Load()) }
