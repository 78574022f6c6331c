//go:build mglacuda

package cusolver

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/tensor"
)

// Blas is a cuBLAS handle on one device for the real level-3 routines of
// the backward passes. Matrices are column-major device arrays given by
// address and leading dimension; the routines follow cuBLAS (and BLAS)
// argument for argument, with the side, fill and diagonal fixed where mgla
// needs one: lower triangles, non-unit diagonals. Only Float32 and Float64.
//
// The calls are queued on the device's legacy default stream and return
// before the work is done; Sync waits for it. A sequence of calls therefore
// runs in order, also with cuSOLVER's (Dn) calls on the same device. All
// methods are safe for concurrent use; calls on one Blas are serialized.
type Blas struct {
	mu     sync.Mutex
	device int
	handle unsafe.Pointer
	closed bool
}

// BlasStatus is a cublasStatus_t.
type BlasStatus int

var blasStatusNames = map[BlasStatus]string{
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (s BlasStatus) String() string {
	if n, ok := blasStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("cublasStatus %d", int(s))
}

// BlasError is a failed cuBLAS call.
type BlasError struct {
	Func   string
	Status BlasStatus
}

func (e *BlasError) Error() string { return fmt.Sprintf("%s: %v", e.Func, e.Status) }

func blasErr(fn string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc == C.MGLA_NOSYM {
		return errNoSym(fn)
	}
	return &BlasError{Func: fn, Status: BlasStatus(rc)}
}

// cuBLAS enum values.
const (
	blasOpN     = 0
	blasOpT     = 1
	blasLower   = 0
	blasLeft    = 0
	blasRight   = 1
	blasNonUnit = 0
)

func blasOp(trans bool) C.int {
	if trans {
		return blasOpT
	}
	return blasOpN
}

// NewBlas creates a cuBLAS handle on device.
func NewBlas(device int) (*Blas, error) {
	if err := loadForDevices("NewBlas", device); err != nil {
		return nil, err
	}
	b := &Blas{device: device}
	err := onDevice(device, func() error {
		var h unsafe.Pointer
		if err := blasErr("cublasCreate", C.mgla_blasCreate(&h)); err != nil {
			return err
		}
		b.handle = h
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Device returns the device of the handle.
func (b *Blas) Device() int { return b.device }

// Close destroys the handle. It is idempotent.
func (b *Blas) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return onDevice(b.device, func() error { return blasErr("cublasDestroy", C.mgla_blasDestroy(b.handle)) })
}

// Sync waits for the device's work, the queued calls included.
func (b *Blas) Sync() error { return Synchronize(b.device) }

// call checks dt and runs f with the handle's device current and the
// routine kind (0 single, 1 double).
func (b *Blas) call(fn string, dt tensor.Dtype, f func(kind C.int) C.int) error {
	var kind C.int
	switch dt {
	case tensor.Float32:
	case tensor.Float64:
		kind = 1
	default:
		return fmt.Errorf("cusolver: %s: dtype %v, want Float32 or Float64", fn, dt)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("cusolver: Blas is closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(b.device))); err != nil {
		return err
	}
	return blasErr(fn, f(kind))
}

// checkDims refuses negative sizes, leading dimensions below the rows
// stored (cuBLAS would answer CUBLAS_STATUS_INVALID_VALUE without saying
// which) and sizes beyond cuBLAS's 32-bit arguments.
func checkDims(fn string, dims ...int) error {
	for i := 0; i+1 < len(dims); i += 2 {
		rows, ld := dims[i], dims[i+1]
		if rows < 0 || ld < max(1, rows) || ld > math.MaxInt32 {
			return fmt.Errorf("cusolver: %s: %d rows with leading dimension %d", fn, rows, ld)
		}
	}
	return nil
}

func rowsOf(trans bool, m, k int) int {
	if trans {
		return k
	}
	return m
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C, C m×n, op(A) m×k, op(B) k×n
// (op is the transpose when trans is set).
func (b *Blas) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64, a uintptr, lda int, bm uintptr, ldb int, beta float64, c uintptr, ldc int) error {
	const fn = "cublasGemm"
	if err := checkDims(fn, rowsOf(transA, m, k), lda, rowsOf(transB, k, n), ldb, m, ldc); err != nil || m == 0 || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasGemm(kind, b.handle, blasOp(transA), blasOp(transB), C.int(m), C.int(n), C.int(k), C.double(alpha),
			C.uintptr_t(a), C.int(lda), C.uintptr_t(bm), C.int(ldb), C.double(beta), C.uintptr_t(c), C.int(ldc))
	})
}

// Syrkx computes the lower triangle of C = alpha·A·Bᵀ + beta·C (n×n; A and B
// n×k) for a product known to be symmetric; C's strict upper triangle is not
// touched.
func (b *Blas) Syrkx(dt tensor.Dtype, n, k int, alpha float64, a uintptr, lda int, bm uintptr, ldb int, beta float64, c uintptr, ldc int) error {
	const fn = "cublasSyrkx"
	if err := checkDims(fn, n, lda, n, ldb, n, ldc); err != nil || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasSyrkx(kind, b.handle, blasLower, blasOpN, C.int(n), C.int(k), C.double(alpha),
			C.uintptr_t(a), C.int(lda), C.uintptr_t(bm), C.int(ldb), C.double(beta), C.uintptr_t(c), C.int(ldc))
	})
}

// Syr2k computes the lower triangle of C = alpha·(A·Bᵀ + B·Aᵀ) + beta·C (n×n;
// A and B n×k); C's strict upper triangle is not touched.
func (b *Blas) Syr2k(dt tensor.Dtype, n, k int, alpha float64, a uintptr, lda int, bm uintptr, ldb int, beta float64, c uintptr, ldc int) error {
	const fn = "cublasSyr2k"
	if err := checkDims(fn, n, lda, n, ldb, n, ldc); err != nil || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasSyr2k(kind, b.handle, blasLower, blasOpN, C.int(n), C.int(k), C.double(alpha),
			C.uintptr_t(a), C.int(lda), C.uintptr_t(bm), C.int(ldb), C.double(beta), C.uintptr_t(c), C.int(ldc))
	})
}

// TrmmLowerLeft computes C = alpha·op(L)·B, L the lower triangle (non-unit
// diagonal) of the m×m matrix at a, B and C m×n. C may be B (in place).
func (b *Blas) TrmmLowerLeft(dt tensor.Dtype, trans bool, m, n int, alpha float64, a uintptr, lda int, bm uintptr, ldb int, c uintptr, ldc int) error {
	const fn = "cublasTrmm"
	if err := checkDims(fn, m, lda, m, ldb, m, ldc); err != nil || m == 0 || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasTrmm(kind, b.handle, blasLeft, blasLower, blasOp(trans), blasNonUnit, C.int(m), C.int(n),
			C.double(alpha), C.uintptr_t(a), C.int(lda), C.uintptr_t(bm), C.int(ldb), C.uintptr_t(c), C.int(ldc))
	})
}

// TrsmLowerLeft overwrites the m×n B by X with op(L)·X = alpha·B, L the lower
// triangle (non-unit diagonal) of the m×m matrix at a.
func (b *Blas) TrsmLowerLeft(dt tensor.Dtype, trans bool, m, n int, alpha float64, a uintptr, lda int, bm uintptr, ldb int) error {
	const fn = "cublasTrsm"
	if err := checkDims(fn, m, lda, m, ldb); err != nil || m == 0 || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasTrsm(kind, b.handle, blasLeft, blasLower, blasOp(trans), blasNonUnit, C.int(m), C.int(n),
			C.double(alpha), C.uintptr_t(a), C.int(lda), C.uintptr_t(bm), C.int(ldb))
	})
}

// Geam computes C = alpha·op(A) + beta·op(B), C m×n. C may be A when A is
// not transposed (and likewise B); with beta = 0, B is not read.
func (b *Blas) Geam(dt tensor.Dtype, transA, transB bool, m, n int, alpha float64, a uintptr, lda int, beta float64, bm uintptr, ldb int, c uintptr, ldc int) error {
	const fn = "cublasGeam"
	if err := checkDims(fn, rowsOf(transA, m, n), lda, rowsOf(transB, m, n), ldb, m, ldc); err != nil || m == 0 || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasGeam(kind, b.handle, blasOp(transA), blasOp(transB), C.int(m), C.int(n), C.double(alpha),
			C.uintptr_t(a), C.int(lda), C.double(beta), C.uintptr_t(bm), C.int(ldb), C.uintptr_t(c), C.int(ldc))
	})
}

// DgmmRight computes C = A·diag(x), A and C m×n, x n elements at stride 1.
// C may be A.
func (b *Blas) DgmmRight(dt tensor.Dtype, m, n int, a uintptr, lda int, x uintptr, c uintptr, ldc int) error {
	const fn = "cublasDgmm"
	if err := checkDims(fn, m, lda, m, ldc); err != nil || m == 0 || n == 0 {
		return err
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasDgmm(kind, b.handle, blasRight, C.int(m), C.int(n), C.uintptr_t(a), C.int(lda),
			C.uintptr_t(x), 1, C.uintptr_t(c), C.int(ldc))
	})
}

// Scal multiplies n elements at stride inc (from x) by alpha.
func (b *Blas) Scal(dt tensor.Dtype, n int, alpha float64, x uintptr, inc int) error {
	const fn = "cublasScal"
	if n < 0 || inc < 1 {
		return fmt.Errorf("cusolver: %s: %d elements at stride %d", fn, n, inc)
	}
	if n == 0 {
		return nil
	}
	return b.call(fn, dt, func(kind C.int) C.int {
		return C.mgla_blasScal(kind, b.handle, C.int(n), C.double(alpha), C.uintptr_t(x), C.int(inc))
	})
}
