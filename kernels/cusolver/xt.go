//go:build mglacuda

package cusolver

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/internal/cudaguard"
)

// Xt is a cuBLASXt handle over a set of devices: the real level-3 routines
// on column-major matrices in host memory, which cuBLASXt cuts into tiles
// and moves to and from the devices itself, with the work spread over all
// of them. A product need not fit in the devices' memory. Matrices are
// []float32 or []float64 host slices, all of one type, each long enough for
// its rows, columns and leading dimension; the routines follow cuBLAS (and
// BLAS) argument for argument, with the side, fill and diagonal fixed
// where mgla needs one: lower triangles, non-unit diagonals.
//
// Each call returns when its result is in host memory. All methods are safe
// for concurrent use; calls on one Xt are serialized.
type Xt struct {
	mu      sync.Mutex
	devices []int
	handle  unsafe.Pointer
	closed  bool
}

// xtSymbols are the cuBLASXt functions Xt needs (cuBLAS has exported them
// since CUDA 6).
var xtSymbols = []string{
	"cublasXtCreate", "cublasXtDestroy", "cublasXtDeviceSelect", "cublasXtSetBlockDim", "cublasXtSetPinningMemMode",
	"cublasXtSgemm", "cublasXtDgemm", "cublasXtSsyrkx", "cublasXtDsyrkx",
	"cublasXtStrmm", "cublasXtDtrmm", "cublasXtStrsm", "cublasXtDtrsm",
}

// XtBlockDim is the side of the tiles NewXt sets: large enough that each
// tile's product keeps an H100's or H200's cores busy while the next tiles
// move.
const XtBlockDim = 4096

// NewXt creates a cuBLASXt handle over devices (distinct, at least one).
func NewXt(devices ...int) (*Xt, error) {
	if len(devices) == 0 {
		return nil, errors.New("cusolver: NewXt: no device")
	}
	ids := slices.Clone(devices)
	slices.Sort(ids)
	if len(slices.Compact(ids)) != len(devices) {
		return nil, fmt.Errorf("cusolver: NewXt: devices %v repeat one", devices)
	}
	if err := loadForDevices("NewXt", devices...); err != nil {
		return nil, err
	}
	if err := need(xtSymbols...); err != nil {
		return nil, err
	}
	x := &Xt{devices: slices.Clone(devices)}
	cids := make([]C.int, len(devices))
	for i, d := range devices {
		cids[i] = C.int(d)
	}
	var h unsafe.Pointer
	if err := blasErr("cublasXtCreate", C.mgla_xtCreate(&h)); err != nil {
		return nil, err
	}
	err := errors.Join(
		blasErr("cublasXtDeviceSelect", C.mgla_xtDeviceSelect(h, C.int(len(cids)), &cids[0])),
		blasErr("cublasXtSetBlockDim", C.mgla_xtSetBlockDim(h, XtBlockDim)))
	if err != nil {
		return nil, errors.Join(err, blasErr("cublasXtDestroy", C.mgla_xtDestroy(h)))
	}
	x.handle = h
	return x, nil
}

// SetBlockDim sets the side of the tiles (XtBlockDim from NewXt).
func (x *Xt) SetBlockDim(dim int) error {
	if dim < 1 {
		return fmt.Errorf("cusolver: Xt.SetBlockDim: %d", dim)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errors.New("cusolver: Xt is closed")
	}
	return blasErr("cublasXtSetBlockDim", C.mgla_xtSetBlockDim(x.handle, C.int(dim)))
}

// SetPinning sets whether cuBLASXt page-locks the host matrices of each
// call for its duration (CUBLASXT_PINNING_ENABLED; off from NewXt): faster
// copies, at the price of locking and unlocking the pages on every call.
func (x *Xt) SetPinning(on bool) error {
	mode := C.int(0)
	if on {
		mode = 1
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errors.New("cusolver: Xt is closed")
	}
	return blasErr("cublasXtSetPinningMemMode", C.mgla_xtSetPinning(x.handle, mode))
}

// Devices returns the devices of the handle.
func (x *Xt) Devices() []int { return slices.Clone(x.devices) }

// Close destroys the handle. It is idempotent.
func (x *Xt) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	return cudaguard.Blocking(func() error { return blasErr("cublasXtDestroy", C.mgla_xtDestroy(x.handle)) })
}

// xtMatrix is one matrix argument of a call: its slice and the rows,
// columns and leading dimension the call reads or writes.
type xtMatrix struct {
	name           string
	data           any
	rows, cols, ld int
}

// call checks the matrices (one element type; each long enough) and runs f
// with the routine kind (0 single, 1 double) and the matrices' addresses,
// holding the matrices' memory for the call. A call with an empty result
// does nothing.
func (x *Xt) call(fn string, empty bool, ms []xtMatrix, f func(kind C.int, p []unsafe.Pointer) C.int) error {
	var kind C.int = -1
	p := make([]unsafe.Pointer, len(ms))
	for i, m := range ms {
		if m.rows < 0 || m.cols < 0 || m.ld < max(1, m.rows) {
			return fmt.Errorf("cusolver: %s: %s is %d×%d with leading dimension %d", fn, m.name, m.rows, m.cols, m.ld)
		}
		var k C.int
		var n int
		switch d := m.data.(type) {
		case []float32:
			n = len(d)
			if n > 0 {
				p[i] = unsafe.Pointer(&d[0])
			}
		case []float64:
			k, n = 1, len(d)
			if n > 0 {
				p[i] = unsafe.Pointer(&d[0])
			}
		default:
			return fmt.Errorf("cusolver: %s: %s is %T, want []float32 or []float64", fn, m.name, m.data)
		}
		if kind >= 0 && k != kind {
			return fmt.Errorf("cusolver: %s: %s is %T, unlike the matrices before it", fn, m.name, m.data)
		}
		kind = k
		if !spanFits(n, m.rows, m.cols, m.ld) {
			return fmt.Errorf("cusolver: %s: %s holds %d elements, fewer than %d×%d with leading dimension %d",
				fn, m.name, n, m.rows, m.cols, m.ld)
		}
	}
	if empty {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errors.New("cusolver: Xt is closed")
	}
	// cuBLASXt copies between pageable host memory and the devices and
	// frees its tiles: calls that may wait for a device's work while they
	// hold the driver's locks.
	err := cudaguard.Blocking(func() error { return blasErr(fn, f(kind, p)) })
	for _, m := range ms {
		runtime.KeepAlive(m.data)
	}
	return err
}

// spanFits reports whether n elements hold a rows×cols matrix with leading
// dimension ld ≥ rows, that is (cols−1)·ld + rows ≤ n, without overflow.
func spanFits(n, rows, cols, ld int) bool {
	if rows == 0 || cols == 0 {
		return true
	}
	return n >= rows && (cols == 1 || ld <= (n-rows)/(cols-1))
}

// scaleC is C = beta·C for an update with no terms (k = 0), which BLAS
// defines and cuBLASXt is not given (its A and B would be empty): C is
// zeroed for beta = 0, as BLAS does, whatever it held.
func scaleC(beta float64, c any, m, n, ldc int, lower bool) {
	switch d := c.(type) {
	case []float32:
		scaleCOf(float32(beta), d, m, n, ldc, lower)
	case []float64:
		scaleCOf(beta, d, m, n, ldc, lower)
	}
}

func scaleCOf[T float32 | float64](beta T, c []T, m, n, ldc int, lower bool) {
	for j := range n {
		i0 := 0
		if lower {
			i0 = j
		}
		col := c[j*ldc+i0 : j*ldc+m]
		for i := range col {
			if beta == 0 {
				col[i] = 0
			} else {
				col[i] *= beta
			}
		}
	}
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C, C m×n, op(A) m×k, op(B) k×n
// (op is the transpose when trans is set). With k = 0 it scales C on the
// host.
func (x *Xt) Gemm(transA, transB bool, m, n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error {
	ms := []xtMatrix{
		{"A", a, rowsOf(transA, m, k), rowsOf(transA, k, m), lda},
		{"B", b, rowsOf(transB, k, n), rowsOf(transB, n, k), ldb},
		{"C", c, m, n, ldc},
	}
	if k == 0 {
		if err := x.call("cublasXtGemm", true, ms, nil); err != nil || m == 0 || n == 0 {
			return err
		}
		scaleC(beta, c, m, n, ldc, false)
		return nil
	}
	return x.call("cublasXtGemm", m == 0 || n == 0, ms, func(kind C.int, p []unsafe.Pointer) C.int {
		return C.mgla_xtGemm(kind, x.handle, blasOp(transA), blasOp(transB), C.size_t(m), C.size_t(n), C.size_t(k),
			C.double(alpha), p[0], C.size_t(lda), p[1], C.size_t(ldb), C.double(beta), p[2], C.size_t(ldc))
	})
}

// Syrkx computes the lower triangle of C = alpha·A·Bᵀ + beta·C (n×n; A and B
// n×k) for a product known to be symmetric; C's strict upper triangle is not
// touched.
func (x *Xt) Syrkx(n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error {
	ms := []xtMatrix{{"A", a, n, k, lda}, {"B", b, n, k, ldb}, {"C", c, n, n, ldc}}
	if k == 0 {
		if err := x.call("cublasXtSyrkx", true, ms, nil); err != nil || n == 0 {
			return err
		}
		scaleC(beta, c, n, n, ldc, true)
		return nil
	}
	return x.call("cublasXtSyrkx", n == 0, ms, func(kind C.int, p []unsafe.Pointer) C.int {
		return C.mgla_xtSyrkx(kind, x.handle, blasLower, blasOpN, C.size_t(n), C.size_t(k), C.double(alpha),
			p[0], C.size_t(lda), p[1], C.size_t(ldb), C.double(beta), p[2], C.size_t(ldc))
	})
}

// TrmmLowerLeft computes C = alpha·op(L)·B, L the lower triangle (non-unit
// diagonal) of the m×m matrix a, B and C m×n, C not overlapping B.
func (x *Xt) TrmmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int, c any, ldc int) error {
	ms := []xtMatrix{{"L", a, m, m, lda}, {"B", b, m, n, ldb}, {"C", c, m, n, ldc}}
	return x.call("cublasXtTrmm", m == 0 || n == 0, ms, func(kind C.int, p []unsafe.Pointer) C.int {
		return C.mgla_xtTrmm(kind, x.handle, blasLeft, blasLower, blasOp(trans), blasNonUnit, C.size_t(m), C.size_t(n),
			C.double(alpha), p[0], C.size_t(lda), p[1], C.size_t(ldb), p[2], C.size_t(ldc))
	})
}

// TrsmLowerLeft overwrites the m×n B by X with op(L)·X = alpha·B, L the lower
// triangle (non-unit diagonal) of the m×m matrix a.
func (x *Xt) TrsmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int) error {
	ms := []xtMatrix{{"L", a, m, m, lda}, {"B", b, m, n, ldb}}
	return x.call("cublasXtTrsm", m == 0 || n == 0, ms, func(kind C.int, p []unsafe.Pointer) C.int {
		return C.mgla_xtTrsm(kind, x.handle, blasLeft, blasLower, blasOp(trans), blasNonUnit, C.size_t(m), C.size_t(n),
			C.double(alpha), p[0], C.size_t(lda), p[1], C.size_t(ldb))
	})
}
