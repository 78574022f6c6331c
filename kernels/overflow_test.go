package kernels

import (
	"errors"
	"testing"
)

// Single-precision results that overflow float32 are errors, not silent
// Inf: the inverse of diag(1e-39) and the eigenvalues of a 64×64 matrix of
// 1e37 (largest eigenvalue 6.4e38), for float32 and complex64.
func TestSinglePrecisionOverflow(t *testing.T) {
	const n = 64
	tiny := make([]float32, n*n)
	big := make([]float32, n*n)
	tinyC := make([]complex64, n*n)
	bigC := make([]complex64, n*n)
	for i := range n {
		tiny[i+i*n], tinyC[i+i*n] = 1e-39, 1e-39
	}
	for i := range big {
		big[i], bigC[i] = 1e37, 1e37
	}
	cases := []struct {
		name string
		run  func() error
	}{
		{"Potrf+Potri float32", func() error {
			if err := Potrf(n, tiny, n); err != nil {
				return err
			}
			return Potri(n, tiny, n)
		}},
		{"Potrf+Potri complex64", func() error {
			if err := Potrf(n, tinyC, n); err != nil {
				return err
			}
			return Potri(n, tinyC, n)
		}},
		{"Syevd float32", func() error { return Syevd(n, big, n, make([]float32, n), false) }},
		{"Syevd complex64", func() error { return Syevd(n, bigC, n, make([]float32, n), true) }},
	}
	for _, c := range cases {
		if err := c.run(); !errors.Is(err, ErrNonFinite) {
			t.Errorf("%s: got %v, want ErrNonFinite", c.name, err)
		}
	}
}

// TestPotrfOverflowNotPositiveDefinite: a finite matrix that is not
// positive definite and whose factorization overflows (L30 = +Inf,
// L31 = −Inf, L32 = Inf − Inf = NaN, a NaN last pivot) is ErrNonFinite in
// every build, at sizes that take OpenBLAS's unblocked, blocked and threaded
// paths; OpenBLAS's dpotrf let the NaN pivot through with info = 0.
func TestPotrfOverflowNotPositiveDefinite(t *testing.T) {
	for _, n := range []int{4, 64, 300} {
		a := make([]float64, n*n) // column-major
		for j := range n {
			a[j+j*n] = 1
		}
		a[0] = 1e-300
		a[1], a[2] = 1e-150, 1e-150
		a[1+1*n], a[2+1*n], a[2+2*n] = 2, 2, 3
		a[n-1] = 1e200 // A(n−1, 0)
		l := make([]float64, n*n)
		err := PotrfTo(n, a, n, l, n)
		if !errors.Is(err, ErrNonFinite) {
			t.Errorf("n=%d: PotrfTo: %v, want ErrNonFinite", n, err)
		}
		b := append([]float64(nil), a...)
		if err := Potrf(n, b, n); !errors.Is(err, ErrNonFinite) {
			t.Errorf("n=%d: Potrf: %v, want ErrNonFinite", n, err)
		}
	}
}
