//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mgla/mgla/dist"
)

// TestGradientsFiniteDifferences checks each gradient Ā against the central
// difference of its cost along a random symmetric direction E:
// Σ Ā∘E ≈ (f(A+hE) − f(A−hE))/2h, float64, on every grid.
func TestGradientsFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 31))
	const h, tol = 1e-5, 1e-6
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, s := range []struct{ n, nb int }{{1, 1}, {6, 4}, {9, 2}} {
			n, k := s.n, 2
			name := fmt.Sprintf("%dx%d n=%d nb=%d seed=%d", pq[0], pq[1], n, s.nb, seed)
			a := real64(randomHPD[float64](rng, n))
			b := real64(randomDense[float64](rng, n, k))
			e := real64(randomDense[float64](rng, n, n))
			for i := range n {
				for j := range i {
					e[i+j*n] = e[j+i*n]
				}
			}
			wx := real64(randomDense[float64](rng, n, k))
			wn := real64(randomDense[float64](rng, n, n))
			distribute := func(x []float64, cols int) *dist.Matrix[float64] {
				m, err := dist.FromReplicated(g, n, cols, s.nb, x)
				if err != nil {
					t.Fatal(name, err)
				}
				return m
			}
			gather := func(m *dist.Matrix[float64]) []float64 {
				x, err := m.Gather(-1)
				if err != nil {
					t.Fatal(name, err)
				}
				return x
			}
			fd := func(f func(a []float64) float64) float64 {
				plus, minus := append([]float64(nil), a...), append([]float64(nil), a...)
				for i := range a {
					plus[i] += h * e[i]
					minus[i] -= h * e[i]
				}
				return (f(plus) - f(minus)) / (2 * h)
			}
			check := func(op string, abar []float64, f func(a []float64) float64) {
				got, want := dot(abar, e), fd(f)
				tol := tol
				if op == "SyevdGrad" {
					tol = 1e-5 // eigenvectors: the difference's error grows as the gaps shrink
				}
				if d := math.Abs(got - want); !(d <= tol*max(1, math.Abs(want))) {
					t.Errorf("%s %s: Σ Ā∘E = %.10g, finite difference %.10g", name, op, got, want)
				}
			}
			da, db := distribute(a, n), distribute(b, k)

			// Potrs: f = Σ W∘X.
			l, err := dist.Cholesky(da)
			if err != nil {
				t.Fatal(name, err)
			}
			x, err := dist.Potrs(da, db)
			if err != nil {
				t.Fatal(name, err)
			}
			abar, bbar, err := dist.PotrsGrad(l, x, distribute(wx, k))
			if err != nil {
				t.Fatal(name, err)
			}
			potrsCost := func(a, b []float64) float64 {
				x, err := dist.Potrs(distribute(a, n), distribute(b, k))
				if err != nil {
					t.Fatal(name, err)
				}
				return dot(gather(x), wx)
			}
			check("PotrsGrad Ā", gather(abar), func(a []float64) float64 { return potrsCost(a, b) })
			eb := real64(randomDense[float64](rng, n, k))
			bp, bm := append([]float64(nil), b...), append([]float64(nil), b...)
			for i := range b {
				bp[i] += h * eb[i]
				bm[i] -= h * eb[i]
			}
			if got, want := dot(gather(bbar), eb), (potrsCost(a, bp)-potrsCost(a, bm))/(2*h); math.Abs(got-want) > tol*max(1, math.Abs(want)) {
				t.Errorf("%s PotrsGrad B̄: %.10g, finite difference %.10g", name, got, want)
			}

			// Potri: f = Σ W∘A⁻¹.
			inv, err := dist.Potri(da)
			if err != nil {
				t.Fatal(name, err)
			}
			abar, err = dist.PotriGrad(inv, distribute(wn, n))
			if err != nil {
				t.Fatal(name, err)
			}
			check("PotriGrad", gather(abar), func(a []float64) float64 {
				inv, err := dist.Potri(distribute(a, n))
				if err != nil {
					t.Fatal(name, err)
				}
				return dot(gather(inv), wn)
			})

			// LogDet: f = 3·log det A.
			logDetCost := func(a []float64) float64 {
				ld, err := dist.LogDet(distribute(a, n))
				if err != nil {
					t.Fatal(name, err)
				}
				return 3 * ld
			}
			abar, err = dist.LogDetGrad(da, 3)
			if err != nil {
				t.Fatal(name, err)
			}
			check("LogDetGrad", gather(abar), logDetCost)
			// The same from the factor.
			abar, err = dist.LogDetGradFromFactor(l, 3)
			if err != nil {
				t.Fatal(name, err)
			}
			check("LogDetGradFromFactor", gather(abar), logDetCost)

			// Cholesky: f = Σ W∘L.
			abar, err = dist.CholeskyGrad(l, distribute(wn, n))
			if err != nil {
				t.Fatal(name, err)
			}
			check("CholeskyGrad", gather(abar), func(a []float64) float64 {
				l, err := dist.Cholesky(distribute(a, n))
				if err != nil {
					t.Fatal(name, err)
				}
				return dot(gather(l), wn)
			})

			// CholSolve: f = Σ W∘X, X = (L·Lᵀ)⁻¹B, along a lower
			// triangular direction of L.
			lf := gather(l)
			cholSolveCost := func(lf []float64) float64 {
				x, err := dist.CholSolve(distribute(lf, n), db)
				if err != nil {
					t.Fatal(name, err)
				}
				return dot(gather(x), wx)
			}
			lbar, _, err := dist.CholSolveGrad(l, x, distribute(wx, k))
			if err != nil {
				t.Fatal(name, err)
			}
			el := real64(randomDense[float64](rng, n, n))
			lp, lm := append([]float64(nil), lf...), append([]float64(nil), lf...)
			for j := range n {
				for i := j; i < n; i++ {
					lp[i+j*n] += h * el[i+j*n]
					lm[i+j*n] -= h * el[i+j*n]
				}
			}
			if got, want := dot(gather(lbar), el), (cholSolveCost(lp)-cholSolveCost(lm))/(2*h); math.Abs(got-want) > tol*max(1, math.Abs(want)) {
				t.Errorf("%s CholSolveGrad L̄: %.10g, finite difference %.10g", name, got, want)
			}

			// Syevd: f = Σ c_i w_i + Σ_j d_j v_jᵀ G v_j (sign-free in V),
			// V̄ = 2·G·V·diag(d).
			c, d := real64(randomDense[float64](rng, n, 1)), real64(randomDense[float64](rng, n, 1))
			gsym := append([]float64(nil), wn...)
			for i := range n {
				for j := range i {
					gsym[i+j*n] = gsym[j+i*n]
				}
			}
			eigCost := func(a []float64) float64 {
				w, v, err := dist.Syevd(distribute(a, n), true)
				if err != nil {
					t.Fatal(name, err)
				}
				vf, f := gather(v), 0.0
				for j := range n {
					f += c[j] * w[j]
					for p := range n {
						for q := range n {
							f += d[j] * vf[p+j*n] * gsym[p+q*n] * vf[q+j*n]
						}
					}
				}
				return f
			}
			// Well separated eigenvalues: A + diag(0, 3, 6, …).
			a = append([]float64(nil), a...)
			for i := range n {
				a[i+i*n] += 3 * float64(i)
			}
			w, v, err := dist.Syevd(distribute(a, n), true)
			if err != nil {
				t.Fatal(name, err)
			}
			vf, vbar := gather(v), make([]float64, n*n)
			for j := range n {
				for p := range n {
					for q := range n {
						vbar[p+j*n] += 2 * gsym[p+q*n] * vf[q+j*n] * d[j]
					}
				}
			}
			abar, err = dist.SyevdGrad(w, v, c, distribute(vbar, n))
			if err != nil {
				t.Fatal(name, err)
			}
			check("SyevdGrad", gather(abar), eigCost)
		}
	}
}

func TestGradientComplexRejected(t *testing.T) {
	g := newGrid(t, 0, 0)
	a, err := dist.FromReplicated(g, 3, 3, 2, []complex128{2, 0, 0, 0, 2, 0, 0, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dist.LogDetGrad(a, 1)
	errorsAgree(t, err)
	if !errors.Is(err, dist.ErrComplexGradient) {
		t.Fatalf("LogDetGrad of complex128: %v", err)
	}
}

func real64(xs []complex128) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = real(x)
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestSyevdGradRepeatedEigenvalues: at repeated eigenvalues (the identity,
// in blocks of 2) SyevdGrad gives the eigenvalue gradient (V·diag(w̄)·Vᵀ)
// with V̄ absent or zero, and ErrRepeatedEigenvalues on every rank, not NaN,
// when V̄ uses the eigenvectors; on every grid of the world.
func TestSyevdGradRepeatedEigenvalues(t *testing.T) {
	const n = 5
	eye, ones := make([]float64, n*n), make([]float64, n*n)
	for i := range eye {
		ones[i] = 1
	}
	for i := range n {
		eye[i+i*n] = 1
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		a, err := dist.FromReplicated(g, n, n, 2, eye)
		must(err)
		w, v, err := dist.Syevd(a, true)
		must(err)
		wbar := []float64{1, 2, 3, 4, 5}
		zero, err := dist.NewMatrix[float64](g, n, n, 2)
		must(err)
		one, err := dist.FromReplicated(g, n, n, 2, ones)
		must(err)
		gathered := func(vbar *dist.Matrix[float64]) []float64 {
			t.Helper()
			abar, err := dist.SyevdGrad(w, v, wbar, vbar)
			must(err)
			full, err := abar.Gather(-1)
			must(err)
			for _, x := range full {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("%dx%d: V̄ %v: %v", pq[0], pq[1], vbar != nil, full)
				}
			}
			return full
		}
		values, withZero := gathered(nil), gathered(zero)
		for i := range values {
			if values[i] != withZero[i] {
				t.Fatalf("%dx%d: with V̄ = 0 %v, without %v", pq[0], pq[1], withZero, values)
			}
		}
		if _, err := dist.SyevdGrad(w, v, wbar, one); !errors.Is(err, dist.ErrRepeatedEigenvalues) {
			t.Fatalf("%dx%d: V̄ of ones: %v, want ErrRepeatedEigenvalues", pq[0], pq[1], err)
		}
	}
}

// TestGradientOperandErrors: operands of the wrong shape, on every rank or
// on one, are the same error on every rank before any PBLAS call (a column
// count mismatch used to abort the job in p?gemm, an eigenvalue gradient of
// the wrong length on one rank to leave the others waiting in PBLAS), and
// a nil factor is an error, not a panic.
func TestGradientOperandErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 61))
	me, size := world.Rank(), world.Size()
	const n, nb = 6, 2
	g := newGrid(t, 0, 0) // near square
	mat := func(rows, cols int, xs []complex128) *dist.Matrix[float64] {
		m, err := dist.FromReplicated(g, rows, cols, nb, conv[float64](xs))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := mat(n, n, randomHPD[float64](rng, n))
	l, err := dist.Cholesky(a)
	if err != nil {
		t.Fatal(err)
	}
	x2, x3 := mat(n, 2, randomDense[float64](rng, n, 2)), mat(n, 3, randomDense[float64](rng, n, 3))
	rect := mat(n, n-1, randomDense[float64](rng, n, n-1))
	w, v, err := dist.Syevd(a, true)
	if err != nil {
		t.Fatal(err)
	}
	wbar := make([]float64, n)
	if me == size-1 {
		wbar = wbar[:n-1] // one rank only
	}
	var vbarOnSome *dist.Matrix[float64]
	if me == 0 && size > 1 {
		vbarOnSome = v
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"PotrsGrad x n×2, x̄ n×3", func() error { _, _, err := dist.PotrsGrad(l, x2, x3); return err }},
		{"CholSolveGrad x n×3, x̄ n×2", func() error { _, _, err := dist.CholSolveGrad(l, x3, x2); return err }},
		{"PotrsGrad rectangular factor", func() error { _, _, err := dist.PotrsGrad(rect, x2, x2); return err }},
		{"CholeskyGrad rectangular L̄", func() error { _, err := dist.CholeskyGrad(l, rect); return err }},
		{"PotriGrad rectangular C̄", func() error { _, err := dist.PotriGrad(a, rect); return err }},
		{"LogDetGrad rectangular", func() error { _, err := dist.LogDetGrad(rect, 1); return err }},
		{"SyevdGrad w̄ short on one rank", func() error { _, err := dist.SyevdGrad(w, v, wbar, nil); return err }},
		{"SyevdGrad w short", func() error { _, err := dist.SyevdGrad(w[:n-1], v, nil, v); return err }},
		{"SyevdGrad rectangular V̄", func() error { _, err := dist.SyevdGrad(w, v, nil, rect); return err }},
		{"PotrsGrad nil factor", func() error { _, _, err := dist.PotrsGrad(nil, x2, x2); return err }},
		{"CholeskyGrad nil", func() error { _, err := dist.CholeskyGrad[float64](nil, nil); return err }},
	} {
		err := c.run()
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrBadInput) && !errors.Is(err, dist.ErrMismatch) {
			t.Errorf("%s: %v, want ErrBadInput or ErrMismatch", c.name, err)
		}
	}
	if size > 1 { // V̄ on one rank only
		_, err := dist.SyevdGrad(w, v, nil, vbarOnSome)
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrMismatch) {
			t.Errorf("SyevdGrad with V̄ on one rank: %v, want ErrMismatch", err)
		}
	}
	// The rules still let good operands through.
	if _, _, err := dist.PotrsGrad(l, x2, x2); err != nil {
		t.Fatal(err)
	}
	if _, err := dist.SyevdGrad(w, v, make([]float64, n), v); err != nil {
		t.Fatal(err)
	}
}

// TestGradientsBeyondRange: finite operands whose gradient leaves the
// dtype's range are ErrNonFinite on every rank, as the forward results are
// (they came back as Inf or NaN with no error).
func TestGradientsBeyondRange(t *testing.T) {
	t.Run("float32", testGradientsBeyondRange[float32])
	t.Run("float64", testGradientsBeyondRange[float64])
}

func testGradientsBeyondRange[T float32 | float64](t *testing.T) {
	const n, nb = 5, 2
	tiny := 1e-160 // its reciprocal squared overflows
	if _, single := any(T(0)).(float32); single {
		tiny = 1e-20
	}
	diag := func(d0 float64) []complex128 {
		a := make([]complex128, n*n)
		for i := range n {
			a[i*n+i] = 1
		}
		a[0] = complex(d0, 0)
		return a
	}
	ones := make([]complex128, n*n)
	for i := range ones {
		ones[i] = 1
	}
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		mat := func(xs []complex128) *dist.Matrix[T] {
			m, err := dist.FromReplicated(g, n, n, nb, conv[T](xs))
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		a := mat(diag(tiny * tiny)) // L = diag(tiny, 1, …), A⁻¹ in range
		l, err := dist.Cholesky(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			run  func() error
		}{
			{"PotrsGrad", func() error {
				x, err := dist.Potrs(mat(diag(1/tiny)), mat(ones)) // x = diag(tiny, 1, …)·ones
				if err != nil {
					return err
				}
				_, _, err = dist.PotrsGrad(l, x, mat(ones))
				return err
			}},
			{"CholeskyGrad", func() error {
				big := make([]complex128, n*n) // L̄ = ones/tiny: Ā ≈ L̄/tiny off the first diagonal entry
				for i := range big {
					big[i] = complex(1/tiny, 0)
				}
				_, err := dist.CholeskyGrad(l, mat(big))
				return err
			}},
			{"PotriGrad", func() error { _, err := dist.PotriGrad(mat(diag(1/tiny)), mat(ones)); return err }},
			{"LogDetGrad of ḡ = Inf", func() error { _, err := dist.LogDetGrad(mat(diag(2)), math.Inf(1)); return err }},
		} {
			err := c.run()
			errorsAgree(t, err)
			if !errors.Is(err, dist.ErrNonFinite) {
				t.Errorf("%dx%d %s: %v, want ErrNonFinite", pq[0], pq[1], c.name, err)
			}
		}
	}
}

// TestGradientsNaNAboveDiagonal: the gradients read the operands that the
// forward ops read by their lower triangle (A, the factor L, Cholesky's L̄)
// by that triangle too: NaN above the diagonal gives the gradient without
// it, NaN below is ErrNonFinite on every rank (CholSolve took a grid L with
// NaN above its diagonal, and its gradient refused it).
func TestGradientsNaNAboveDiagonal(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 71))
	n, nb, k := 9, 2, 2
	a := conv[float64](randomHPD[float64](rng, n))
	b := conv[float64](randomDense[float64](rng, n, k))
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		da, err := dist.FromReplicated(g, n, n, nb, a)
		if err != nil {
			t.Fatal(err)
		}
		db, err := dist.FromReplicated(g, n, k, nb, b)
		if err != nil {
			t.Fatal(err)
		}
		l, err := dist.Cholesky(da)
		if err != nil {
			t.Fatal(err)
		}
		x, err := dist.CholSolve(l, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			bad  *dist.Matrix[float64]
			run  func() ([]float64, error)
		}{
			{"CholSolveGrad (L)", l, func() ([]float64, error) {
				lbar, bbar, err := dist.CholSolveGrad(l, x, db)
				if err != nil {
					return nil, err
				}
				lb, err := whole(lbar, nil)
				if err != nil {
					return nil, err
				}
				bb, err := whole(bbar, nil)
				return append(lb, bb...), err
			}},
			{"PotrsGrad (L)", l, func() ([]float64, error) {
				abar, _, err := dist.PotrsGrad(l, x, db)
				return whole(abar, err)
			}},
			{"CholeskyGrad (L)", l, func() ([]float64, error) { return whole(dist.CholeskyGrad(l, l)) }},
			{"LogDetGrad (A)", da, func() ([]float64, error) { return whole(dist.LogDetGrad(da, 1.5)) }},
			{"LogDetGradFromFactor (L)", l, func() ([]float64, error) { return whole(dist.LogDetGradFromFactor(l, 1.5)) }},
		} {
			clean, err := c.run()
			if err != nil {
				t.Fatalf("%dx%d %s: %v", pq[0], pq[1], c.name, err)
			}
			for _, place := range []string{"above", "below"} {
				name := fmt.Sprintf("%dx%d %s with NaN %s the diagonal, seed=%d", pq[0], pq[1], c.name, place, seed)
				holder, at := lastPlace(t, c.bad, func(r, col int) bool { return place == "above" && r < col || place == "below" && r > col })
				var old float64
				if holder {
					old, c.bad.Local[at] = c.bad.Local[at], math.NaN()
				}
				got, err := c.run()
				errorsAgree(t, err)
				switch {
				case place == "below" && !errors.Is(err, dist.ErrNonFinite):
					t.Errorf("%s: %v, want ErrNonFinite", name, err)
				case place == "above" && err != nil:
					t.Errorf("%s: %v", name, err)
				case place == "above" && relErr(widen(got), widen(clean)) > 1e-12:
					t.Errorf("%s: a gradient other than without it", name)
				}
				if holder {
					c.bad.Local[at] = old
				}
			}
		}
	}
}
