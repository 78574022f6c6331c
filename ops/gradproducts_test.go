package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// cpuProducts is a deviceProducts on the CPU (package kernels) that keeps
// cuBLASXt's contract (one element type per call, slices long enough, a
// triangular product out of place, Syrkx writing the lower triangle only),
// counts its calls and fails every one from the one numbered failFrom
// (counted from 1; 0: none), as a device that went wrong stays so.
type cpuProducts struct {
	calls, failFrom int
}

var errInjected = errors.New("injected device failure")

func (p *cpuProducts) begin() error {
	p.calls++
	if p.failFrom > 0 && p.calls >= p.failFrom {
		return errInjected
	}
	return nil
}

// span is the elements a rows×cols matrix with leading dimension ld spans.
func span(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (cols-1)*ld + rows
}

func asFloats[T gradReal](x any, need int) ([]T, error) {
	s, ok := x.([]T)
	if !ok {
		return nil, fmt.Errorf("%T, want %T", x, []T(nil))
	}
	if len(s) < need {
		return nil, fmt.Errorf("%d elements, want %d", len(s), need)
	}
	return s, nil
}

func cpuGemm[T gradReal](transA, transB bool, m, n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error {
	ar, ac, br, bc := m, k, k, n
	if transA {
		ar, ac = k, m
	}
	if transB {
		br, bc = n, k
	}
	as, err1 := asFloats[T](a, span(ar, ac, lda))
	bs, err2 := asFloats[T](b, span(br, bc, ldb))
	cs, err3 := asFloats[T](c, span(m, n, ldc))
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	kernels.Gemm(transA, transB, m, n, k, T(alpha), as, lda, bs, ldb, T(beta), cs, ldc)
	return nil
}

func (p *cpuProducts) Gemm(transA, transB bool, m, n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error {
	if err := p.begin(); err != nil {
		return err
	}
	if _, ok := c.([]float32); ok {
		return cpuGemm[float32](transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	return cpuGemm[float64](transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func cpuSyrkx[T gradReal](n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error {
	cs, err := asFloats[T](c, span(n, n, ldc))
	if err != nil {
		return err
	}
	full := make([]T, n*n)
	if err := cpuGemm[T](false, true, n, n, k, alpha, a, lda, b, ldb, 0, full, n); err != nil {
		return err
	}
	for j := range n {
		for i := j; i < n; i++ {
			cs[i+j*ldc] = full[i+j*n] + T(beta)*cs[i+j*ldc]
		}
	}
	return nil
}

func (p *cpuProducts) Syrkx(n, k int, alpha float64, a any, lda int, b any, ldb int, beta float64, c any, ldc int) error {
	if err := p.begin(); err != nil {
		return err
	}
	if _, ok := c.([]float32); ok {
		return cpuSyrkx[float32](n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	return cpuSyrkx[float64](n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func cpuTrmm[T gradReal](trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int, c any, ldc int) error {
	ls, err1 := asFloats[T](a, span(m, m, lda))
	bs, err2 := asFloats[T](b, span(m, n, ldb))
	cs, err3 := asFloats[T](c, span(m, n, ldc))
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	lo, hi := uintptr(unsafe.Pointer(&bs[0])), uintptr(unsafe.Pointer(&bs[len(bs)-1]))
	if c0 := uintptr(unsafe.Pointer(&cs[0])); c0 >= lo && c0 <= hi {
		return errors.New("trmm in place")
	}
	for j := range n {
		col := cs[j*ldc : j*ldc+m]
		for i, v := range bs[j*ldb : j*ldb+m] {
			col[i] = T(alpha) * v
		}
	}
	kernels.TrmmLowerLeft(trans, m, n, ls, lda, cs, ldc)
	return nil
}

func (p *cpuProducts) TrmmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int, c any, ldc int) error {
	if err := p.begin(); err != nil {
		return err
	}
	if _, ok := c.([]float32); ok {
		return cpuTrmm[float32](trans, m, n, alpha, a, lda, b, ldb, c, ldc)
	}
	return cpuTrmm[float64](trans, m, n, alpha, a, lda, b, ldb, c, ldc)
}

func cpuTrsm[T gradReal](trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int) error {
	ls, err1 := asFloats[T](a, span(m, m, lda))
	bs, err2 := asFloats[T](b, span(m, n, ldb))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if alpha != 1 {
		return fmt.Errorf("alpha %v", alpha)
	}
	kernels.TrsmLowerLeft(trans, m, n, ls, lda, bs, ldb)
	return nil
}

func (p *cpuProducts) TrsmLowerLeft(trans bool, m, n int, alpha float64, a any, lda int, b any, ldb int) error {
	if err := p.begin(); err != nil {
		return err
	}
	if _, ok := b.([]float32); ok {
		return cpuTrsm[float32](trans, m, n, alpha, a, lda, b, ldb)
	}
	return cpuTrsm[float64](trans, m, n, alpha, a, lda, b, ldb)
}

// gradHostResult runs the host backward computation of c in dt with its
// products on dev (the CPU where nil) into a fresh row-major n×n tensor.
func gradHostResult(t *testing.T, c gradCase, dt tensor.Dtype, dev deviceProducts) (*tensor.Dense, error) {
	t.Helper()
	cpu, err := sharding.CPUMesh(1)
	require.NoError(t, err)
	out := tensor.New(tensor.Of(dt), tensor.WithShape(c.n, c.n))
	vals := c.values(t, dt, cpu, sharding.Cyclic(64), -1)
	switch dt {
	case tensor.Float64:
		err = gradDense[float64](c.kind, out, vals, dev)
	default:
		err = gradDense[float32](c.kind, out, vals, dev)
	}
	return out, err
}

// With its products on devices (here a stand-in on the CPU that keeps
// cuBLASXt's contract) the host code of every backward computation gives
// the CPU's result to rounding, in both dtypes, at orders of one, a few
// and more than one gpuLowerBlock; symmetric results exactly symmetric,
// CholSolve's L̄ exactly lower triangular.
func TestGradDeviceProducts(t *testing.T) {
	defer allProductsOnDevices()()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 21))
	sizes := []int{1, 67, gpuLowerBlock + 37}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		for _, c := range gradCases(rng, n) {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				what := fmt.Sprintf("seed %d, %s, n=%d, %v", seed, c.name, n, dt)
				want, err := gradHostResult(t, c, dt, nil)
				require.NoError(t, err, what)
				dev := &cpuProducts{}
				before := gradsWithDeviceProducts.Load()
				got, err := gradHostResult(t, c, dt, dev)
				require.NoError(t, err, what)
				require.Equal(t, c.hasProducts(), dev.calls > 0, "%s: %d calls on the devices", what, dev.calls)
				require.Equal(t, c.hasProducts(), gradsWithDeviceProducts.Load() == before+1, "%s: counted", what)
				checkGradResult(t, what, c.kind, n, toFloats(got.Data()), toFloats(want.Data()), dt)
			}
		}
	}
}

// A failed call on the devices, at any point, makes the host code compute
// the whole result again on the CPU: the CPU's result bit for bit, not
// counted as done on the devices. Errors of the computation itself (equal
// eigenvalues where the eigenvectors count) are not retried.
func TestGradDeviceProductsFailure(t *testing.T) {
	defer allProductsOnDevices()()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 22))
	const n = 40
	for _, c := range gradCases(rng, n) {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			count := &cpuProducts{}
			_, err := gradHostResult(t, c, dt, count)
			require.NoError(t, err)
			want, err := gradHostResult(t, c, dt, nil)
			require.NoError(t, err)
			for failAt := 1; failAt <= count.calls; failAt++ {
				what := fmt.Sprintf("seed %d, %s, %v, call %d of %d fails", seed, c.name, dt, failAt, count.calls)
				dev := &cpuProducts{failFrom: failAt}
				before := gradsWithDeviceProducts.Load()
				got, err := gradHostResult(t, c, dt, dev)
				require.NoError(t, err, what)
				require.GreaterOrEqual(t, dev.calls, failAt, what)
				require.Equal(t, before, gradsWithDeviceProducts.Load(), what)
				require.Equal(t, toFloats(want.Data()), toFloats(got.Data()), what)
			}
		}
	}
	// Equal eigenvalues: ErrRepeatedEigenvalues, from the devices' path.
	for _, c := range gradCases(rng, n) {
		if c.kind != gEigVectors {
			continue
		}
		c.w = make([]float64, n)
		dev := &cpuProducts{}
		_, err := gradHostResult(t, c, tensor.Float64, dev)
		require.ErrorIs(t, err, kernels.ErrRepeatedEigenvalues)
		require.Equal(t, 1, dev.calls, "computed again on the CPU")
	}
}

// hasProducts reports whether c's computation has a product for the
// devices (at every order, with allProductsOnDevices): not LogDet's, nor
// the direct loops of Potrs' and GaussianLogDensity's few right-hand sides.
func (c gradCase) hasProducts() bool {
	return c.kind != gScale && !((c.kind == gSymOuter || c.kind == gLogDensity) && c.cols[len(c.cols)-1] <= symOuterDirect)
}

// allProductsOnDevices sends every product to the devices, however small,
// until the function it returns is called.
func allProductsOnDevices() (restore func()) {
	old := devMinDim
	devMinDim = 1
	return func() { devMinDim = old }
}

// Products with a dimension below devMinDim run on the CPU: at an order
// below it none reaches the devices; above it, the N×N×N products do and
// the products with K right-hand sides do not (a dimension of K).
func TestGradDeviceProductsSmallOnCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 23))
	for _, n := range []int{devMinDim - 1, devMinDim + 3} {
		for _, c := range gradCases(rng, n) {
			dev := &cpuProducts{}
			_, err := gradHostResult(t, c, tensor.Float64, dev)
			require.NoError(t, err)
			cubic := n >= devMinDim && c.kind != gScale && c.kind != gSymOuter && c.kind != gCholSolveL && c.kind != gLogDensity
			require.Equal(t, cubic, dev.calls > 0, "%s, n=%d: %d calls on the devices", c.name, n, dev.calls)
		}
	}
}

// meshProducts: the CPU for CPU meshes and a nil mesh, whatever the build.
func TestMeshProductsCPU(t *testing.T) {
	cpu, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	require.Nil(t, meshProducts(cpu))
	require.Nil(t, meshProducts(nil))
}
