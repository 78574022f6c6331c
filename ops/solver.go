package ops

import (
	"fmt"
	"math"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// meshSolver runs the forward dense kernels on the devices of a mesh, on
// tensors in the column block-cyclic layout. Inputs are never modified.
type meshSolver interface {
	potrf(a, l *sharding.Tensor) error                               // l ← lower Cholesky factor of a
	potrs(l, b, x *sharding.Tensor) error                            // x ← (L·Lᴴ)⁻¹b
	potri(l, c *sharding.Tensor) error                               // c ← (L·Lᴴ)⁻¹, both triangles
	syevd(a *sharding.Tensor, w []float64, v *sharding.Tensor) error // v == nil: values only
}

// gpuSolverFor is set by the cuda build: the GPU solver with a dispatch.
var gpuSolverFor func(Dispatch) meshSolver

func solverFor(m *sharding.Mesh, d Dispatch) meshSolver {
	if m.Kind() == sharding.GPU && gpuSolverFor != nil {
		return gpuSolverFor(d)
	}
	return hostSolver{}
}

func logOf(x float64) float64 {
	if x <= 0 {
		return math.NaN()
	}
	return math.Log(x)
}

// hostSolver runs the kernels of package kernels on the host: it assembles
// the global column-major matrix from the shards (no copy on a one-device
// mesh), factors or solves it, and scatters the result.
type hostSolver struct{}

func (hostSolver) potrf(a, l *sharding.Tensor) error {
	return withHost(a, func(h hostKernels) error { return h.potrf(a, l) })
}

func (hostSolver) potrs(l, b, x *sharding.Tensor) error {
	return withHost(l, func(h hostKernels) error { return h.potrs(l, b, x) })
}

func (hostSolver) potri(l, c *sharding.Tensor) error {
	return withHost(l, func(h hostKernels) error { return h.potri(l, c) })
}

func (hostSolver) syevd(a *sharding.Tensor, w []float64, v *sharding.Tensor) error {
	return withHost(a, func(h hostKernels) error { return h.syevd(a, w, v) })
}

// hostKernels is hostSolver's work for one element type.
type hostKernels interface {
	potrf(a, l *sharding.Tensor) error
	potrs(l, b, x *sharding.Tensor) error
	potri(l, c *sharding.Tensor) error
	syevd(a *sharding.Tensor, w []float64, v *sharding.Tensor) error
	checkFactor(l *sharding.Tensor) error
}

// hostOf is hostKernels for elements of type T, whose real part is R.
type hostOf[T kernels.Scalar, R float32 | float64] struct{}

// withHost calls run with the hostKernels of t's element type.
func withHost(t *sharding.Tensor, run func(hostKernels) error) error {
	switch t.Dtype() {
	case tensor.Float32:
		return run(hostOf[float32, float32]{})
	case tensor.Float64:
		return run(hostOf[float64, float64]{})
	case tensor.Complex64:
		return run(hostOf[complex64, float32]{})
	case tensor.Complex128:
		return run(hostOf[complex128, float64]{})
	}
	return sharding.CheckDtype(t.Dtype())
}

// The host kernels work in place on a private copy of their input
// (colMajor's of a CPU mesh of several devices, or of a GPU mesh), and
// otherwise from the input's own shard into the output's (writable).

func (hostOf[T, R]) potrf(a, l *sharding.Tensor) error {
	n := a.Rows()
	src, private, releaseSrc, err := colMajor[T](a)
	if err != nil {
		return err
	}
	defer releaseSrc()
	if private {
		if err := kernels.Potrf(n, src, n); err != nil {
			return err
		}
		return storeColMajor(src, l)
	}
	dst, releaseDst := writable[T](l)
	defer releaseDst()
	if err := kernels.PotrfTo(n, src, n, dst, n); err != nil {
		return err
	}
	return storeColMajor(dst, l)
}

func (hostOf[T, R]) potrs(l, b, x *sharding.Tensor) error {
	n, k := l.Rows(), b.Cols()
	lg, _, releaseL, err := colMajor[T](l)
	if err != nil {
		return err
	}
	defer releaseL()
	bg, private, releaseB, err := colMajor[T](b)
	if err != nil {
		return err
	}
	defer releaseB()
	if err := kernels.CheckFinite(n, k, bg, n, false); err != nil {
		return fmt.Errorf("right-hand side: %w", err)
	}
	xg := bg
	if !private {
		var releaseX func()
		xg, releaseX = writable[T](x)
		defer releaseX()
		copy(xg, bg)
	}
	if err := kernels.Potrs(n, k, lg, n, xg, n); err != nil {
		return err
	}
	return storeColMajor(xg, x)
}

// checkFactor reports the first NaN or Inf in the lower triangle of a factor
// from outside mgla, by its position (the solves themselves do not scan
// it: a factor of mgla's own holds none).
func (hostOf[T, R]) checkFactor(l *sharding.Tensor) error {
	n := l.Rows()
	lg, _, release, err := colMajor[T](l)
	if err != nil {
		return err
	}
	defer release()
	return kernels.CheckFinite(n, n, lg, n, true)
}

func (hostOf[T, R]) potri(l, c *sharding.Tensor) error {
	n := l.Rows()
	lg, private, releaseL, err := colMajor[T](l)
	if err != nil {
		return err
	}
	defer releaseL()
	if private {
		if err := kernels.Potri(n, lg, n); err != nil {
			return err
		}
		return storeColMajor(lg, c)
	}
	cg, releaseC := writable[T](c)
	defer releaseC()
	if err := kernels.PotriTo(n, lg, n, cg, n); err != nil {
		return err
	}
	return storeColMajor(cg, c)
}

func (hostOf[T, R]) syevd(a *sharding.Tensor, w []float64, v *sharding.Tensor) error {
	n := a.Rows()
	src, private, releaseSrc, err := colMajor[T](a)
	if err != nil {
		return err
	}
	defer releaseSrc()
	if err := kernels.CheckFinite(n, n, src, n, true); err != nil {
		return err
	}
	work := src
	if !private {
		var releaseWork func()
		if v != nil {
			work, releaseWork = writable[T](v)
		} else {
			work, releaseWork = lend[T](n * n) // values only: a scratch copy, fully overwritten below
		}
		defer releaseWork()
		copy(work, src)
	}
	wr := make([]R, n)
	if err := kernels.Syevd(n, work, n, wr, v != nil); err != nil {
		return err
	}
	for i, x := range wr {
		w[i] = float64(x)
	}
	if v == nil {
		return nil
	}
	return storeColMajor(work, v)
}
