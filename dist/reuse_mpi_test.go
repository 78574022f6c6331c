//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mgla/mgla/dist"
)

// TestInverseFromFactor checks InverseFromFactor(Cholesky(A)) against
// Potri(A), element for element (the same p?potri on the same factor), and
// against the float64 reference; and, for the real dtypes,
// LogDetGradFromFactor(L, ḡ) against LogDetGrad(A, ḡ) element for element
// (complex ones fail with ErrComplexGradient on every rank). The factor is
// left as it was. Every grid, every dtype, odd orders and block sizes.
func TestInverseFromFactor(t *testing.T) {
	eachDtype(t, "", testInverseFromFactor[float32], testInverseFromFactor[float64],
		testInverseFromFactor[complex64], testInverseFromFactor[complex128])
}

func testInverseFromFactor[T dist.Scalar](t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 41))
	tol := tolerance[T]()
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, s := range shapes {
			n := s.n
			name := fmt.Sprintf("%dx%d n=%d nb=%d seed=%d", pq[0], pq[1], n, s.nb, seed)
			a := randomHPD[T](rng, n)
			da, err := dist.FromReplicated(g, n, n, s.nb, conv[T](a))
			if err != nil {
				t.Fatal(name, err)
			}
			l, err := dist.Cholesky(da)
			if err != nil {
				t.Fatal(name, err)
			}
			before := slices.Clone(l.Local)
			want, err := dist.Potri(da)
			if err != nil {
				t.Fatal(name, err)
			}
			got, err := dist.InverseFromFactor(l)
			if err != nil {
				t.Fatal(name, err)
			}
			if !slices.Equal(got.Local, want.Local) {
				t.Errorf("%s: InverseFromFactor(L) differs from Potri(A)", name)
			}
			if !slices.Equal(before, l.Local) {
				t.Errorf("%s: InverseFromFactor changed the factor", name)
			}
			full, err := got.Gather(-1)
			if err != nil {
				t.Fatal(name, err)
			}
			if e := relErr(widen(full), refSolve(a, n, identity(n), n)); !(e <= tol) {
				t.Errorf("%s: InverseFromFactor: relative error %.3g > %.3g", name, e, tol)
			}

			gbar := 1.5 + rng.Float64()
			abar, err := dist.LogDetGradFromFactor(l, gbar)
			errorsAgree(t, err)
			if isComplex[T]() {
				if !errors.Is(err, dist.ErrComplexGradient) {
					t.Errorf("%s: LogDetGradFromFactor of a complex factor: %v", name, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(name, err)
			}
			wantBar, err := dist.LogDetGrad(da, gbar)
			if err != nil {
				t.Fatal(name, err)
			}
			if !slices.Equal(abar.Local, wantBar.Local) {
				t.Errorf("%s: LogDetGradFromFactor(L, %v) differs from LogDetGrad(A, %v)", name, gbar, gbar)
			}
		}
	}
}

// TestInverseFromFactorErrors checks that a singular factor (zeros on the
// diagonal at orders k and n, on whichever ranks own them: the error names
// k), NaN or Inf in one
// rank's part, a non-square factor and a nil one fail with the same error
// on every rank (ErrNotPositiveDefinite naming order k, ErrNonFinite,
// ErrBadInput), for InverseFromFactor and LogDetGradFromFactor, and leave
// the factor as it was.
func TestInverseFromFactorErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 43))
	size := world.Size()
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		n, nb := 9, 2
		a := randomHPD[float64](rng, n)
		da, err := dist.FromReplicated(g, n, n, nb, conv[float64](a))
		if err != nil {
			t.Fatal(err)
		}
		ops := []struct {
			name string
			run  func(l *dist.Matrix[float64]) error
		}{
			{"InverseFromFactor", func(l *dist.Matrix[float64]) error { _, err := dist.InverseFromFactor(l); return err }},
			{"LogDetGradFromFactor", func(l *dist.Matrix[float64]) error { _, err := dist.LogDetGradFromFactor(l, 2); return err }},
		}
		for _, k := range []int{1, 3, 6, n} {
			l, err := dist.Cholesky(da)
			if err != nil {
				t.Fatal(err)
			}
			lf := refCholesky(a, n)
			l.Fill(func(r, c int) float64 {
				if r == c && (r == k-1 || r == n-1) {
					return 0
				}
				return real(lf[r+c*n])
			})
			for _, op := range ops {
				before := slices.Clone(l.Local)
				err := op.run(l)
				errorsAgree(t, err)
				name := fmt.Sprintf("%dx%d %s with L[%d,%d] = L[%d,%d] = 0 seed=%d", pq[0], pq[1], op.name, k-1, k-1, n-1, n-1, seed)
				if !errors.Is(err, dist.ErrNotPositiveDefinite) || !containsOrder(err, k) {
					t.Errorf("%s: %v", name, err)
				}
				if !slices.Equal(before, l.Local) {
					t.Errorf("%s: the factor changed", name)
				}
			}
		}
		for _, bad := range []float64{math.NaN(), math.Inf(1)} {
			l, err := dist.Cholesky(da)
			if err != nil {
				t.Fatal(err)
			}
			holder, at := lastPlace(t, l, func(r, c int) bool { return r >= c }) // the lower triangle is read
			if holder {
				l.Local[at] = bad
			}
			for _, op := range ops {
				before := slices.Clone(l.Local)
				err := op.run(l)
				errorsAgree(t, err)
				name := fmt.Sprintf("%dx%d %s with %v in L's lower triangle, seed=%d", pq[0], pq[1], op.name, bad, seed)
				if !errors.Is(err, dist.ErrNonFinite) {
					t.Errorf("%s: %v", name, err)
				}
				if !sameBits(before, l.Local) {
					t.Errorf("%s: the factor changed", name)
				}
			}
		}
		rect, err := dist.NewMatrix[float64](g, n, n+1, nb)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			err := op.run(rect)
			errorsAgree(t, err)
			if !errors.Is(err, dist.ErrBadInput) {
				t.Errorf("%dx%d %s of a %d×%d factor: %v", pq[0], pq[1], op.name, n, n+1, err)
			}
		}
		if size == 1 { // a nil factor has no grid: the other ranks would wait
			for _, op := range ops {
				if err := op.run(nil); !errors.Is(err, dist.ErrBadInput) {
					t.Errorf("%s(nil): %v", op.name, err)
				}
			}
		}
	}
}
