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

// EigenvectorTerms replaces the square real matrix t, on a one-GPU mesh in
// a layout of whole columns (its shard is the dense column-major matrix),
// by sym(F∘M) for the eigenvalues w: kernels.SymmetricEigenvectorTerms on
// the device, with one kernel and bit for bit the same result (the middle
// factor of the eigenvector share of Syevd's gradient). When a pair is
// undefined, ok is false with the first such pair (the smallest j, then the
// smallest i), and t is then partly overwritten.
func EigenvectorTerms(t *Tensor, w []float64, gap float64) (i, j int, ok bool, err error) {
	if err := t.checkWholeColumns(); err != nil {
		return 0, 0, false, err
	}
	n := t.Rows()
	switch {
	case t.mesh.Size() != 1:
		return 0, 0, false, fmt.Errorf("sharding: EigenvectorTerms on %v: want a one-GPU mesh", t.mesh)
	case t.Cols() != n || len(w) != n:
		return 0, 0, false, fmt.Errorf("sharding: EigenvectorTerms of %v with %d eigenvalues", t.shape, len(w))
	case t.dtype != tensor.Float32 && t.dtype != tensor.Float64:
		return 0, 0, false, fmt.Errorf("sharding: EigenvectorTerms of %v: want Float32 or Float64", t.dtype)
	case n == 0:
		return 0, 0, true, nil
	}
	db := t.shards[0].(*DeviceBuffer)
	ld, _ := t.LocalShape(0)
	wb, err := gpuBackend{}.alloc(db.dev, tensor.Float64, n, false)
	if err != nil {
		return 0, 0, false, err
	}
	defer gpuBackend{}.free(wb)
	wd := wb.(*DeviceBuffer).ptr
	if err := onDevice(db.dev, func() error {
		return memcpyHtoD(wd, unsafe.Pointer(&w[0]), int64(8*n))
	}); err != nil {
		return 0, 0, false, err
	}
	// The first undefined pair k = j·n + i leaves the largest n·n − k in a
	// 64-bit flag: two of flagged's 32-bit ones, little-endian.
	flags, err := flagged(db.dev, 2, func(g *gpuDevice, flags cu.DevicePtr) error {
		return yChunks(n, 8, func(c0, c1 int) error {
			return g.launch(ptx.EigenvectorTerms[db.elem], ceilDiv(n, 32), ceilDiv(c1-c0, 8), 32, 8,
				uint64(db.ptr), uint64(ld), uint64(n), uint64(c0), uint64(wd), math.Float64bits(gap), uint64(flags))
		})
	})
	if err != nil {
		return 0, 0, false, err
	}
	if v := uint64(uint32(flags[0])) | uint64(uint32(flags[1]))<<32; v != 0 {
		k := uint64(n)*uint64(n) - v
		return int(k % uint64(n)), int(k / uint64(n)), false, nil
	}
	return 0, 0, true, nil
}
