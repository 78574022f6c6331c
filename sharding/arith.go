package sharding

import (
	"fmt"

	"gorgonia.org/tensor"
)

// AddScaled sets t += alpha·src, elementwise. src must have t's mesh, shape
// and dtype; it is moved to t's layout first when its layout differs.
func (t *Tensor) AddScaled(alpha float64, src *Tensor) error {
	if err := t.checkArith("AddScaled"); err != nil {
		return err
	}
	if err := src.usable(); err != nil {
		return fmt.Errorf("%w (the source of AddScaled)", err)
	}
	if !t.mesh.Same(src.mesh) {
		return fmt.Errorf("%w: %v and %v", ErrMeshMismatch, t.mesh, src.mesh)
	}
	if !sameMatrix(t.shape, src.shape) || t.dtype != src.dtype {
		return fmt.Errorf("sharding: cannot add %v %v to %v %v", src.shape, src.dtype, t.shape, t.dtype)
	}
	if src.layout != t.layout {
		moved, err := src.Relayout(t.layout)
		if err != nil {
			return err
		}
		defer moved.Free()
		src = moved
	}
	for d := range t.shards {
		if err := t.mesh.mem.axpy(alpha, src.shards[d], t.shards[d]); err != nil {
			return err
		}
	}
	return nil
}

func axpyHost[T float32 | float64 | complex64 | complex128](alpha T, x, y []T) {
	for i := range y {
		y[i] += alpha * x[i]
	}
}

func (hostBackend) axpy(alpha float64, x, y Buffer) error {
	xs, ys := x.(*HostBuffer).data, y.(*HostBuffer).data
	switch yv := ys.(type) {
	case []float32:
		axpyHost(float32(alpha), xs.([]float32), yv)
	case []float64:
		axpyHost(alpha, xs.([]float64), yv)
	case []complex64:
		axpyHost(complex(float32(alpha), 0), xs.([]complex64), yv)
	case []complex128:
		axpyHost(complex(alpha, 0), xs.([]complex128), yv)
	default:
		return CheckDtype(tensor.Dtype{})
	}
	return nil
}
