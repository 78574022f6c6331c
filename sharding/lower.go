package sharding

import (
	"fmt"
	"math"
	"math/cmplx"
	"unsafe"

	"gorgonia.org/tensor"
)

// MulLower returns y = op(tril(t))·x and yAbs = |op(tril(t))|·xAbs for the
// square matrix t (xAbs = |x| when nil), where tril(t) is t's lower
// triangle with its diagonal taken as real (the Hermitian convention of the
// solvers), or its strictly lower triangle when strict, and op is the
// identity or, with adjoint, the conjugate transpose. yAbs, the same
// product of magnitudes, bounds the rounding error of y; an xAbs that
// bounds x's own error carries that bound through. x and y are host
// vectors of complex128 whatever t's dtype (x is rounded to it on the
// devices, which accumulate in it; for a real t, x must be real); every device multiplies by its own
// columns and the shares are summed on the host. MulHermitian and
// MulCholesky chain two such products with one round trip to the devices:
// checks of a distributed factorization that read the matrix, not factor
// it. On GPU meshes the order of the additions varies from call to call
// (the kernels add partial sums atomically), so y may change in its last
// bits; yAbs bounds that.
func (t *Tensor) MulLower(x []complex128, xAbs []float64, adjoint, strict bool) (y []complex128, yAbs []float64, err error) {
	return t.newProducts("MulLower", x, xAbs, lowerSteps(adjoint, strict))
}

// MulLowerInto is MulLower with the results written into y and yAbs, of
// t's order, which it overwrites and which must not overlap x and xAbs.
// Calls that reuse their results' memory skip the first writes into fresh
// memory, which on the GPU hosts measured cost more than the product (page
// faults: 0.3–0.9 ms for the two vectors of order 16384, against 0.4 ms for
// the kernel on one H100).
func (t *Tensor) MulLowerInto(y []complex128, yAbs []float64, x []complex128, xAbs []float64, adjoint, strict bool) error {
	return t.mulChain("MulLowerInto", y, yAbs, x, xAbs, lowerSteps(adjoint, strict))
}

func lowerSteps(adjoint, strict bool) []lowerStep {
	return []lowerStep{{adjoint, strict, chainX, chainY}}
}

// MulHermitian returns y = A·x and yAbs = |A|·xAbs for the Hermitian matrix
// A whose lower triangle t holds (its diagonal taken as real; the strictly
// upper triangle is not read): tril(t)·x plus the adjoint of the strictly
// lower triangle times x, as MulLower twice but with one round trip to the
// devices.
func (t *Tensor) MulHermitian(x []complex128, xAbs []float64) (y []complex128, yAbs []float64, err error) {
	return t.newProducts("MulHermitian", x, xAbs, hermitianSteps)
}

// MulHermitianInto is MulHermitian with the results written into y and
// yAbs, as MulLowerInto.
func (t *Tensor) MulHermitianInto(y []complex128, yAbs []float64, x []complex128, xAbs []float64) error {
	return t.mulChain("MulHermitianInto", y, yAbs, x, xAbs, hermitianSteps)
}

var hermitianSteps = []lowerStep{{false, false, chainX, chainY}, {true, true, chainX, chainY}}

// MulCholesky returns y = L·(Lᴴ·x) and yAbs = |L|·(|Lᴴ|·xAbs) for the lower
// triangle L of t (its diagonal taken as real), a Cholesky factor: A·x for
// A = L·Lᴴ without forming A. On GPU meshes in the column block-cyclic
// layout each device keeps the entries of Lᴴ·x that belong to its own
// columns, which are all its second product reads, so Lᴴ·x never leaves the
// devices and the call makes one round trip.
func (t *Tensor) MulCholesky(x []complex128, xAbs []float64) (y []complex128, yAbs []float64, err error) {
	return t.newProducts("MulCholesky", x, xAbs, choleskySteps)
}

// MulCholeskyInto is MulCholesky with the results written into y and yAbs,
// as MulLowerInto.
func (t *Tensor) MulCholeskyInto(y []complex128, yAbs []float64, x []complex128, xAbs []float64) error {
	return t.mulChain("MulCholeskyInto", y, yAbs, x, xAbs, choleskySteps)
}

var choleskySteps = []lowerStep{{true, false, chainX, chainW}, {false, false, chainW, chainY}}

// A lowerStep is one product of a chain: out += op(tril(t))·in and
// outAbs += |op(tril(t))|·inAbs, with op and tril as in MulLower.
type lowerStep struct {
	adjoint, strict bool
	in, out         chainVector
}

// chainVector names a vector of a chain of products.
type chainVector int

const (
	chainX chainVector = iota // the caller's x
	chainW                    // an intermediate, zero at the start
	chainY                    // the result, zero at the start
)

// newProducts runs steps into new result vectors (mulChain checks the call).
func (t *Tensor) newProducts(what string, x []complex128, xAbs []float64, steps []lowerStep) ([]complex128, []float64, error) {
	y, yAbs := make([]complex128, len(x)), make([]float64, len(x))
	if err := t.mulChain(what, y, yAbs, x, xAbs, steps); err != nil {
		return nil, nil, err
	}
	return y, yAbs, nil
}

// mulChain checks the call named what, zeroes y and yAbs and runs steps on
// the backend.
func (t *Tensor) mulChain(what string, y []complex128, yAbs []float64, x []complex128, xAbs []float64, steps []lowerStep) error {
	if err := t.checkArith(what); err != nil {
		return err
	}
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return fmt.Errorf("sharding: %s of non-square %v", what, t.shape)
	}
	if len(x) != t.Rows() {
		return fmt.Errorf("sharding: %s of order %d by a vector of %d", what, t.Rows(), len(x))
	}
	if t.dtype == tensor.Float32 || t.dtype == tensor.Float64 {
		for i, v := range x {
			if imag(v) != 0 {
				return fmt.Errorf("sharding: %s of a real %v matrix by a complex vector (entry %d is %v): the devices hold x in the matrix's dtype", what, t.dtype, i, v)
			}
		}
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
		return fmt.Errorf("sharding: %s: %d magnitudes for a vector of %d", what, len(xAbs), len(x))
	}
	if len(y) != len(x) || len(yAbs) != len(x) {
		return fmt.Errorf("sharding: %s: results of %d and %d for order %d", what, len(y), len(yAbs), len(x))
	}
	if overlap(y, x) || overlap(yAbs, xAbs) {
		return fmt.Errorf("sharding: %s: the results overlap the vector or its magnitudes", what)
	}
	if len(x) == 0 {
		return nil
	}
	clear(y)
	clear(yAbs)
	return t.mesh.mem.mulChain(t, y, yAbs, x, xAbs, steps)
}

// overlap reports whether the non-empty slices a and b share memory.
func overlap[E any](a, b []E) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	size := unsafe.Sizeof(a[0])
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b))*size && b0 < a0+uintptr(len(a))*size
}

func (hostBackend) mulChain(t *Tensor, y []complex128, yAbs []float64, x []complex128, xAbs []float64, steps []lowerStep) error {
	return mulChainHost(t, y, yAbs, x, xAbs, steps)
}

// mulChainHost multiplies through a host copy of the whole matrix, in
// complex128, adding to y and yAbs.
func mulChainHost(t *Tensor, y []complex128, yAbs []float64, x []complex128, xAbs []float64, steps []lowerStep) error {
	d, err := t.Gather()
	if err != nil {
		return err
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
	vecs := [3][]complex128{x, nil, y}
	abss := [3][]float64{xAbs, nil, yAbs}
	for _, st := range steps {
		if st.out == chainW && vecs[chainW] == nil { // an intermediate, zero at the start
			vecs[chainW], abss[chainW] = make([]complex128, n), make([]float64, n)
		}
	}
	for _, st := range steps {
		x, xAbs, y, yAbs := vecs[st.in], abss[st.in], vecs[st.out], abss[st.out]
		for i := range n {
			for j := 0; j < i || j == i && !st.strict; j++ {
				v := at(i*n + j) // row-major
				if i == j {
					v = complex(real(v), 0)
				}
				if st.adjoint {
					y[j] += cmplx.Conj(v) * x[i]
					yAbs[j] += cmplx.Abs(v) * xAbs[i]
				} else {
					y[i] += v * x[j]
					yAbs[i] += cmplx.Abs(v) * xAbs[j]
				}
			}
		}
	}
	return nil
}
