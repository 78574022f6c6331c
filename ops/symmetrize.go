package ops

import (
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// symmetrizeThroughHost fills the upper triangle of a sharded matrix from its
// lower triangle (Hermitian), through a host copy.
func symmetrizeThroughHost(c *sharding.Tensor) error {
	switch c.Dtype() {
	case tensor.Float32:
		return mirrorLower[float32](c)
	case tensor.Float64:
		return mirrorLower[float64](c)
	case tensor.Complex64:
		return mirrorLower[complex64](c)
	case tensor.Complex128:
		return mirrorLower[complex128](c)
	}
	return sharding.CheckDtype(c.Dtype())
}

func mirrorLower[T kernels.Scalar](c *sharding.Tensor) error {
	n := c.Rows()
	g, err := colMajor[T](c, false)
	if err != nil {
		return err
	}
	for j := range n {
		for i := j + 1; i < n; i++ {
			g[j+i*n] = conj(g[i+j*n])
		}
		g[j+j*n] = realPart(g[j+j*n])
	}
	return storeColMajor(g, c)
}

func conj[T kernels.Scalar](v T) T {
	switch x := any(v).(type) {
	case complex64:
		return any(complex(real(x), -imag(x))).(T)
	case complex128:
		return any(complex(real(x), -imag(x))).(T)
	}
	return v
}

func realPart[T kernels.Scalar](v T) T {
	switch x := any(v).(type) {
	case complex64:
		return any(complex(real(x), 0)).(T)
	case complex128:
		return any(complex(real(x), 0)).(T)
	}
	return v
}
