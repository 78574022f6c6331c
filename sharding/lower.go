package sharding

import (
	"fmt"
	"math"
	"math/cmplx"
)

// MulLower returns y = op(tril(t))·x and yAbs = |op(tril(t))|·xAbs for the
// square matrix t (xAbs = |x| when nil), where tril(t) is t's lower
// triangle with its diagonal taken as real (the Hermitian convention of the
// solvers), or its strictly lower triangle when strict, and op is the
// identity or, with adjoint, the conjugate transpose. yAbs, the same
// product of magnitudes, bounds the rounding error of y; an xAbs that
// bounds x's own error carries that bound through. x and y are host
// vectors of complex128 whatever t's dtype (x is rounded to it on the
// devices, which accumulate in it); every device multiplies by its own
// columns and the shares are summed on the host. A Hermitian A stored in
// its lower triangle gives A·x as MulLower(x, nil, false, false) +
// MulLower(x, nil, true, true), and a factor L gives L·(Lᴴ·x) in two calls
// (the second with the first's yAbs as xAbs): checks of a distributed
// factorization that read the matrix, not factor it. On GPU meshes the
// order of the additions varies from call to call (the kernels add partial
// sums atomically), so y may change in its last bits; yAbs bounds that.
func (t *Tensor) MulLower(x []complex128, xAbs []float64, adjoint, strict bool) (y []complex128, yAbs []float64, err error) {
	if err := t.checkArith("MulLower"); err != nil {
		return nil, nil, err
	}
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return nil, nil, fmt.Errorf("sharding: MulLower of non-square %v", t.shape)
	}
	if len(x) != t.Rows() {
		return nil, nil, fmt.Errorf("sharding: MulLower of order %d by a vector of %d", t.Rows(), len(x))
	}
	if xAbs == nil {
		xAbs = make([]float64, len(x))
		for i, v := range x {
			if imag(v) == 0 {
				xAbs[i] = math.Abs(real(v))
			} else {
				xAbs[i] = cmplx.Abs(v)
			}
		}
	} else if len(xAbs) != len(x) {
		return nil, nil, fmt.Errorf("sharding: MulLower: %d magnitudes for a vector of %d", len(xAbs), len(x))
	}
	if len(x) == 0 {
		return nil, nil, nil
	}
	return t.mesh.mem.mulLower(t, x, xAbs, adjoint, strict)
}

func (hostBackend) mulLower(t *Tensor, x []complex128, xAbs []float64, adjoint, strict bool) ([]complex128, []float64, error) {
	return mulLowerHost(t, x, xAbs, adjoint, strict)
}

// mulLowerHost multiplies through a host copy of the whole matrix, in
// complex128.
func mulLowerHost(t *Tensor, x []complex128, xAbs []float64, adjoint, strict bool) ([]complex128, []float64, error) {
	d, err := t.Gather()
	if err != nil {
		return nil, nil, err
	}
	var at func(k int) complex128
	switch s := d.Data().(type) {
	case []float32:
		at = func(k int) complex128 { return complex(float64(s[k]), 0) }
	case []float64:
		at = func(k int) complex128 { return complex(s[k], 0) }
	case []complex64:
		at = func(k int) complex128 { return complex128(s[k]) }
	case []complex128:
		at = func(k int) complex128 { return s[k] }
	}
	n := t.Rows()
	y, yAbs := make([]complex128, n), make([]float64, n)
	for i := range n {
		for j := 0; j < i || j == i && !strict; j++ {
			v := at(i*n + j) // row-major
			if i == j {
				v = complex(real(v), 0)
			}
			if adjoint {
				y[j] += cmplx.Conj(v) * x[i]
				yAbs[j] += cmplx.Abs(v) * xAbs[i]
			} else {
				y[i] += v * x[j]
				yAbs[i] += cmplx.Abs(v) * xAbs[j]
			}
		}
	}
	return y, yAbs, nil
}
