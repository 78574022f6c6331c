package ops

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
)

// This file holds where the host code of the backward computations
// (gradCompute) runs its cubic products: on the CPU through package
// kernels, or, for a GPU mesh in the mglacuda build, through cuBLASXt over
// the mesh's GPUs (deviceProducts), which tiles host matrices through the
// devices itself. The host code runs for a GPU mesh only where the device
// path of gradgpu_cuda.go cannot (the first GPU out of memory for its dense
// copies, an operand on another mesh, a float32 result computed again in
// float64); its products then run on every GPU of the mesh instead of the
// CPU, in host memory, so they need no dense copy on any one GPU. The
// element-wise steps stay on the CPU.

// deviceProducts runs real level-3 routines on column-major host matrices
// on devices; *cusolver.Xt implements it. Matrices are []float32 or
// []float64, one type per call.
type deviceProducts interface {
	Gemm(transA, transB bool, m, n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error
	Syrkx(n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error
	TrmmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int, c any, ldc int) error
	TrsmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int) error
}

// productsFor, set by the mglacuda build, returns the deviceProducts of a
// GPU mesh's devices, or nil where they cannot be had (the products then run
// on the CPU).
var productsFor func(mesh *sharding.Mesh) deviceProducts

// meshProducts returns the deviceProducts for the host backward
// computations of mesh (which may be nil), or nil for the CPU.
func meshProducts(mesh *sharding.Mesh) deviceProducts {
	if productsFor == nil || mesh == nil || mesh.Kind() != sharding.GPU {
		return nil
	}
	return productsFor(mesh)
}

// gradsWithDeviceProducts counts the host backward computations that ran
// products on devices (one call or more, none failed); tests read it.
var gradsWithDeviceProducts atomic.Int64

// callCounter is a deviceProducts that counts the calls made through it.
type callCounter struct {
	deviceProducts
	calls int
}

func (c *callCounter) Gemm(transA, transB bool, m, n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, cm any, ldc int) error {
	c.calls++
	return c.deviceProducts.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
}

func (c *callCounter) Syrkx(n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, cm any, ldc int) error {
	c.calls++
	return c.deviceProducts.Syrkx(n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
}

func (c *callCounter) TrmmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int, cm any, ldc int) error {
	c.calls++
	return c.deviceProducts.TrmmLowerLeft(trans, m, n, alpha, a, lda, b, ldb, cm, ldc)
}

func (c *callCounter) TrsmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int) error {
	c.calls++
	return c.deviceProducts.TrsmLowerLeft(trans, m, n, alpha, a, lda, b, ldb)
}

// errDeviceProducts marks a failed call of deviceProducts (out of device
// memory for the tiles, say): gradInRange computes the result again with
// the CPU's products, from the same operands (gradCompute writes only dst
// and its own temporaries).
var errDeviceProducts = errors.New("ops: the backward products on the devices failed")

func devErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errDeviceProducts, err)
}

// devMinDim is the smallest dimension of a product that runs on the
// devices: a product with a dimension below it (K right-hand sides, say)
// does too few flops for each element it moves to and from host memory to
// gain from the devices, and runs on the CPU. (A variable for tests.)
var devMinDim = 256

// onDevices reports whether a product of these dimensions runs on dev.
func onDevices(dev deviceProducts, dims ...int) bool {
	if dev == nil {
		return false
	}
	for _, d := range dims {
		if d < devMinDim {
			return false
		}
	}
	return true
}

// pGemm is kernels.Gemm on dev, or on the CPU where dev is nil or the
// product small (onDevices).
func pGemm[T gradReal](dev deviceProducts, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if !onDevices(dev, m, n, k) {
		kernels.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return nil
	}
	return devErr(dev.Gemm(transA, transB, m, n, k, float64(alpha), a, lda, b, ldb, float64(beta), c, ldc))
}

// pTrmmLowerLeft is kernels.TrmmLowerLeft (B = op(L)·B in place) on dev, or
// on the CPU where dev is nil or the product small. On dev, through a copy
// of B (cuBLASXt's product is not in place).
func pTrmmLowerLeft[T gradReal](dev deviceProducts, trans bool, m, n int, l []T, ldl int, b []T, ldb int) error {
	if !onDevices(dev, m, n) {
		kernels.TrmmLowerLeft(trans, m, n, l, ldl, b, ldb)
		return nil
	}
	tmp, release := lend[T](m * n) // every element written below
	defer release()
	for j := range n {
		copy(tmp[j*m:j*m+m], b[j*ldb:j*ldb+m])
	}
	return devErr(dev.TrmmLowerLeft(trans, m, n, 1, l, ldl, tmp, m, b, ldb))
}

// pTrsmLowerLeft is kernels.TrsmLowerLeft on dev, or on the CPU where dev
// is nil or the product small.
func pTrsmLowerLeft[T gradReal](dev deviceProducts, trans bool, m, n int, l []T, ldl int, b []T, ldb int) error {
	if !onDevices(dev, m, n) {
		kernels.TrsmLowerLeft(trans, m, n, l, ldl, b, ldb)
		return nil
	}
	return devErr(dev.TrsmLowerLeft(trans, m, n, 1, l, ldl, b, ldb))
}
