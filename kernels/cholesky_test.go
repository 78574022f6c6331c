package kernels

import (
	"errors"
	"math"
	"math/cmplx"
	"slices"
	"testing"
)

var testSizes = []int{1, 2, 3, 17, 64, 65, 130, 200}

// tolT is the relative tolerance of the residual checks for T.
func tolT[T Scalar]() float64 {
	if isSingleT[T]() {
		return 1e-4
	}
	return 1e-10
}

func TestCholesky(t *testing.T) {
	forAllTypes(t, testCholesky[float32], testCholesky[float64], testCholesky[complex64], testCholesky[complex128])
}

func testCholesky[T Scalar](t *testing.T) {
	rnd := newRand(t, 1)
	tol := tolT[T]()
	var maxFac, maxSolve, maxInv, maxRef float64
	for _, n := range testSizes {
		a := randHPD[T](rnd, n)
		lda := n + 3
		junkBig := complex(1e30, -1e30)
		junkNaN := complex(math.NaN(), math.NaN())
		a1 := store[T](a, lda, &junkBig)
		a2 := store[T](a, lda, &junkNaN)
		if err := Potrf(n, a1, lda); err != nil {
			t.Fatalf("seed %d n=%d: Potrf: %v", testSeed, n, err)
		}
		if err := Potrf(n, a2, lda); err != nil {
			t.Fatalf("seed %d n=%d: Potrf (NaN junk): %v", testSeed, n, err)
		}
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				x, y := toC(a1[i+j*lda]), toC(a2[i+j*lda])
				if x != y {
					t.Fatalf("seed %d n=%d: junk in the upper triangle changed L(%d,%d): %v vs %v", testSeed, n, i, j, x, y)
				}
				if i < j && x != 0 {
					t.Fatalf("seed %d n=%d: strict upper (%d,%d) = %v, want 0", testSeed, n, i, j, x)
				}
			}
		}
		L := denseOf(n, n, a1, lda)
		res := fnorm(sub(mul(L, adjoint(L)), a)) / fnorm(a)
		maxFac = max(maxFac, res)
		if !(res <= tol) {
			t.Errorf("seed %d n=%d: ‖L·Lᴴ−A‖/‖A‖ = %.3g > %.3g", testSeed, n, res, tol)
		}
		// Single precision against the double precision factor of the same input.
		if isSingleT[T]() {
			ref := store[complex128](a, n, nil)
			if !isComplexT[T]() {
				rf := store[float64](a, n, nil)
				if err := Potrf(n, rf, n); err != nil {
					t.Fatal(err)
				}
				ref = store[complex128](denseOf(n, n, rf, n), n, nil)
			} else if err := Potrf(n, ref, n); err != nil {
				t.Fatal(err)
			}
			R := denseOf(n, n, ref, n)
			d := fnorm(sub(L, R)) / fnorm(R)
			maxRef = max(maxRef, d)
			if !(d <= 1e-6) {
				t.Errorf("seed %d n=%d: ‖L32−L64‖/‖L64‖ = %.3g", testSeed, n, d)
			}
		}

		// Potrs with junk in L's strict upper triangle.
		l := append([]T(nil), a1...)
		for j := 0; j < n; j++ {
			for i := 0; i < j; i++ {
				l[i+j*lda] = fromC[T](junkBig)
			}
		}
		nrhs, ldb := 3, n+2
		B := roundTo[T](randDense(rnd, n, nrhs, isComplexT[T]()))
		b := store[T](B, ldb, nil)
		if err := Potrs(n, nrhs, l, lda, b, ldb); err != nil {
			t.Fatalf("seed %d n=%d: Potrs: %v", testSeed, n, err)
		}
		X := denseOf(n, nrhs, b, ldb)
		res = fnorm(sub(mul(a, X), B)) / (fnorm(a)*fnorm(X) + fnorm(B))
		maxSolve = max(maxSolve, res)
		if !(res <= tol) {
			t.Errorf("seed %d n=%d: Potrs ‖A·X−B‖/(‖A‖‖X‖+‖B‖) = %.3g", testSeed, n, res)
		}

		// Potri, also from an L with junk above the diagonal.
		if err := Potri(n, l, lda); err != nil {
			t.Fatalf("seed %d n=%d: Potri: %v", testSeed, n, err)
		}
		for j := 0; j < n; j++ {
			if imag(toC(l[j+j*lda])) != 0 {
				t.Fatalf("seed %d n=%d: Potri diagonal %d not real", testSeed, n, j)
			}
			for i := j + 1; i < n; i++ {
				if toC(l[j+i*lda]) != cmplx.Conj(toC(l[i+j*lda])) {
					t.Fatalf("seed %d n=%d: Potri result not exactly Hermitian at (%d,%d)", testSeed, n, i, j)
				}
			}
		}
		Ainv := denseOf(n, n, l, lda)
		res = fnorm(sub(mul(a, Ainv), eye(n))) / math.Sqrt(float64(n))
		maxInv = max(maxInv, res)
		if !(res <= tol) {
			t.Errorf("seed %d n=%d: Potri ‖A·A⁻¹−I‖_F/√n = %.3g", testSeed, n, res)
		}
	}
	t.Logf("%s accuracy: ‖LLᴴ−A‖/‖A‖ ≤ %.2g, solve ≤ %.2g, ‖AA⁻¹−I‖/√n ≤ %.2g, ‖L−Lref‖/‖Lref‖ ≤ %.2g",
		dtName[T](), maxFac, maxSolve, maxInv, maxRef)
}

func TestCholeskyDiagonal(t *testing.T) {
	forAllTypes(t, testCholeskyDiagonal[float32], testCholeskyDiagonal[float64], testCholeskyDiagonal[complex64], testCholeskyDiagonal[complex128])
}

// A = diag(1..N), b = 1 gives x_i = 1/i.
func testCholeskyDiagonal[T Scalar](t *testing.T) {
	for _, n := range []int{1, 10, 150} {
		a := make([]T, n*n)
		b := make([]T, n)
		for i := 0; i < n; i++ {
			a[i+i*n] = fromC[T](complex(float64(i+1), 0))
			b[i] = fromC[T](1)
		}
		if err := Potrf(n, a, n); err != nil {
			t.Fatal(err)
		}
		if err := Potrs(n, 1, a, n, b, n); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			want := 1 / float64(i+1)
			got := toC(b[i])
			if cmplx.Abs(got-complex(want, 0)) > 4*epsT[T]()*want {
				t.Errorf("n=%d: x[%d] = %v, want %v", n, i, got, want)
			}
		}
	}
}

func TestNotPositiveDefinite(t *testing.T) {
	forAllTypes(t, testNotPD[float32], testNotPD[float64], testNotPD[complex64], testNotPD[complex128])
}

func testNotPD[T Scalar](t *testing.T) {
	rnd := newRand(t, 2)
	check := func(name string, err error, want int) {
		t.Helper()
		if !errors.Is(err, ErrNotPositiveDefinite) {
			t.Fatalf("seed %d %s: err = %v, want ErrNotPositiveDefinite", testSeed, name, err)
		}
		var npd *NotPositiveDefiniteError
		if !errors.As(err, &npd) || npd.Order != want {
			t.Fatalf("seed %d %s: err = %v, want Order %d", testSeed, name, err, want)
		}
	}
	// The 3rd leading minor of this matrix is negative (det = −20), the
	// first two are positive.
	small := dense{4, 4, []complex128{
		4, 2, 0, 0,
		2, 5, 3, 0,
		0, 3, 1, 0,
		0, 0, 0, 1,
	}}
	a := store[T](small, 4, nil)
	check("4×4", Potrf(4, a, 4), 3)

	// Random HPD matrices with a negative diagonal entry at position k−1:
	// leading minors up to k−1 stay positive definite, order k fails. The
	// positions exercise the blocked code paths.
	for _, c := range []struct{ n, k int }{{5, 3}, {200, 3}, {200, 64}, {200, 65}, {200, 129}, {200, 150}, {200, 200}} {
		A := randHPD[T](rnd, c.n)
		A.set(c.k-1, c.k-1, -1)
		junk := complex(math.NaN(), 0)
		a := store[T](A, c.n+1, &junk)
		check("random", Potrf(c.n, a, c.n+1), c.k)
	}
	// A finite indefinite matrix whose second pivot overflows to −Inf,
	// 1 − (1e10/√1e-300)², is not positive definite, as in every dtype (the
	// complex path used to call it non-finite). Single precision widens and
	// cannot reach the overflow: its pivot is merely very negative.
	if !isSingleT[T]() {
		a := store[T](dense{2, 2, []complex128{1e-300, 1e10, 1e10, 1}}, 2, nil)
		check("overflowing pivot", Potrf(2, a, 2), 2)
	}
	// Indefinite matrix with the failing minor found only after updates.
	A := randHPD[T](rnd, 100)
	for i := 0; i < 100; i++ {
		A.set(i, i, A.at(i, i)-complex(float64(100+4*100), 0))
	}
	a = store[T](A, 100, nil)
	err := Potrf(100, a, 100)
	if !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("seed %d: indefinite: err = %v", testSeed, err)
	}

	// Potrs / Potri on a factor with a zero or non-finite diagonal entry.
	for _, bad := range []complex128{0, complex(math.NaN(), 0), complex(math.Inf(1), 0)} {
		l := store[T](eye(6), 6, nil)
		l[3+3*6] = fromC[T](bad)
		b := make([]T, 6)
		check("Potrs", Potrs(6, 1, l, 6, b, 6), 4)
		check("Potri", Potri(6, l, 6), 4)
	}
}

func TestNonFinite(t *testing.T) {
	forAllTypes(t, testNonFinite[float32], testNonFinite[float64], testNonFinite[complex64], testNonFinite[complex128])
}

func testNonFinite[T Scalar](t *testing.T) {
	rnd := newRand(t, 3)
	n := 70
	bads := []complex128{complex(math.NaN(), 0), complex(math.Inf(1), 0), complex(math.Inf(-1), 0)}
	if isComplexT[T]() {
		bads = append(bads, complex(0, math.NaN()), complex(1, math.Inf(1)))
	}
	for _, bad := range bads {
		for _, pos := range [][2]int{{0, 0}, {n - 1, 0}, {40, 33}, {n - 1, n - 1}} {
			A := randHPD[T](rnd, n)
			a := store[T](A, n, nil)
			a[pos[0]+pos[1]*n] = fromC[T](bad)
			err := Potrf(n, append([]T(nil), a...), n)
			if !errors.Is(err, ErrNonFinite) {
				t.Errorf("seed %d: Potrf with %v at %v: err = %v, want ErrNonFinite", testSeed, bad, pos, err)
			}
			var nf *NonFiniteError
			if errors.As(err, &nf) && (nf.Row != pos[0] || nf.Col != pos[1]) {
				t.Errorf("Potrf: NonFiniteError at (%d,%d), want %v", nf.Row, nf.Col, pos)
			}
			for _, vec := range []bool{false, true} {
				err = syevdAny[T](n, append([]T(nil), a...), n, vec)
				if !errors.Is(err, ErrNonFinite) {
					t.Errorf("seed %d: Syevd with %v at %v: err = %v, want ErrNonFinite", testSeed, bad, pos, err)
				}
			}
			if err := CheckFinite(n, n, a, n, true); !errors.Is(err, ErrNonFinite) {
				t.Errorf("CheckFinite missed %v at %v", bad, pos)
			}
		}
		// Non-finite values above the diagonal are not read.
		A := randHPD[T](rnd, n)
		junk := bad
		a := store[T](A, n, &junk)
		if err := Potrf(n, append([]T(nil), a...), n); err != nil {
			t.Errorf("Potrf with %v above the diagonal: %v", bad, err)
		}
		if err := syevdAny[T](n, append([]T(nil), a...), n, true); err != nil {
			t.Errorf("Syevd with %v above the diagonal: %v", bad, err)
		}
		if err := CheckFinite(n, n, a, n, true); err != nil {
			t.Errorf("CheckFinite(lowerOnly) with %v above the diagonal: %v", bad, err)
		}
		err := CheckFinite(n, n, a, n, false)
		var nf *NonFiniteError
		if !errors.As(err, &nf) || nf.Row != 0 || nf.Col != 1 {
			t.Errorf("CheckFinite(full) = %v, want entry (0,1)", err)
		}
	}
	// A finite input that overflows during the factorization must not give
	// a silent Inf/NaN factor.
	if !isSingleT[T]() {
		ov := store[T](dense{2, 2, []complex128{1e-300, 1e300, 1e300, 1}}, 2, nil)
		if err := Potrf(2, ov, 2); err == nil {
			t.Errorf("overflowing 2×2: no error, L = %v", ov)
		}
	}
}

// TestResultOverflow: results beyond the dtype's range (and solutions of
// NaN right-hand sides) are ErrNonFinite in every dtype, double precision
// included (which used to return ±Inf with no error, where single precision
// reported the overflow of its rounding).
func TestResultOverflow(t *testing.T) {
	forAllTypes(t, testResultOverflow[float32], testResultOverflow[float64], testResultOverflow[complex64], testResultOverflow[complex128])
}

func testResultOverflow[T Scalar](t *testing.T) {
	tiny, huge := 1e-200, 1.7e308
	if isSingleT[T]() {
		tiny, huge = 1e-30, 3e38
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Potri of diag(tiny, 1)", func() error {
			l := store[T](dense{2, 2, []complex128{complex(tiny, 0), 0, 0, 1}}, 2, nil)
			return Potri(2, l, 2)
		}},
		{"PotriTo of diag(tiny, 1)", func() error {
			l := store[T](dense{2, 2, []complex128{complex(tiny, 0), 0, 0, 1}}, 2, nil)
			return PotriTo(2, l, 2, make([]T, 4), 2)
		}},
		{"Potrs with diag(tiny, 1)", func() error {
			l := store[T](dense{2, 2, []complex128{complex(tiny, 0), 0, 0, 1}}, 2, nil)
			return Potrs(2, 1, l, 2, store[T](dense{2, 1, []complex128{1, 1}}, 2, nil), 2)
		}},
		{"Potrs of a NaN right-hand side", func() error {
			l := store[T](eye(2), 2, nil)
			return Potrs(2, 1, l, 2, store[T](dense{2, 1, []complex128{1, complex(math.NaN(), 0)}}, 2, nil), 2)
		}},
		{"Syevd of entries near the largest", func() error {
			a := store[T](dense{2, 2, []complex128{complex(huge, 0), complex(huge, 0), complex(huge, 0), complex(huge, 0)}}, 2, nil)
			return syevdAny[T](2, a, 2, false)
		}},
	} {
		if err := c.run(); !errors.Is(err, ErrNonFinite) {
			t.Errorf("%s: err = %v, want ErrNonFinite", c.name, err)
		}
	}
}

// syevdAny calls Syevd with the eigenvalue type matching T.
func syevdAny[T Scalar](n int, a []T, lda int, vectors bool) error {
	if isSingleT[T]() {
		return Syevd(n, a, lda, make([]float32, n), vectors)
	}
	return Syevd(n, a, lda, make([]float64, n), vectors)
}

// TestKeepingInput: PotrfTo and PotriTo give bit for bit what Potrf and
// Potri give on a copy, leave their input unchanged, overwrite the junk in
// the output's strict upper triangle and leave its rows past n alone, and
// return the same errors (not positive definite, NaN) as the in-place calls.
func TestKeepingInput(t *testing.T) {
	forAllTypes(t, testKeepingInput[float32], testKeepingInput[float64], testKeepingInput[complex64], testKeepingInput[complex128])
}

func testKeepingInput[T Scalar](t *testing.T) {
	rnd := newRand(t, 5)
	nan := complex(math.NaN(), math.NaN())
	for _, n := range append([]int{600}, testSizes...) {
		lda, ldl := n+3, n+1
		junk := complex(1e30, -1e30)
		for _, input := range []string{"spd", "not-pd", "nan"} {
			d := randHPD[T](rnd, n)
			switch input {
			case "not-pd":
				d.set(n-1, n-1, complex(-1, 0))
			case "nan":
				d.set(n-1, n/2, nan)
			}
			a := store[T](d, lda, &junk)
			a0 := slices.Clone(a)
			want := store[T](d, ldl, &junk)
			wantErr := Potrf(n, want, ldl)
			got := store[T](newDense(n, n), ldl, &nan) // NaN junk above, zeros below
			padding := slices.Clone(got)
			err := PotrfTo(n, a, lda, got, ldl)
			if !sameError(err, wantErr) {
				t.Fatalf("seed %d n=%d %s: PotrfTo error %v, Potrf %v", testSeed, n, input, err, wantErr)
			}
			if !equalBits(a, a0) {
				t.Fatalf("seed %d n=%d %s: PotrfTo changed its input", testSeed, n, input)
			}
			if err != nil {
				continue
			}
			checkKept(t, "PotrfTo", n, ldl, got, want, padding)

			wantInv := slices.Clone(want)
			wantErr = Potri(n, wantInv, ldl)
			l0 := slices.Clone(want)
			inv := store[T](newDense(n, n), ldl, &nan)
			padding = slices.Clone(inv)
			err = PotriTo(n, want, ldl, inv, ldl)
			if !sameError(err, wantErr) {
				t.Fatalf("seed %d n=%d: PotriTo error %v, Potri %v", testSeed, n, err, wantErr)
			}
			if !equalBits(want, l0) {
				t.Fatalf("seed %d n=%d: PotriTo changed the factor", testSeed, n)
			}
			if err == nil {
				checkKept(t, "PotriTo", n, ldl, inv, wantInv, padding)
			}
		}
	}
}

// checkKept compares the first n rows of got and want bit for bit and the
// rows past n of got with what they held before (padding).
func checkKept[T Scalar](t *testing.T, name string, n, ld int, got, want, padding []T) {
	t.Helper()
	for j := range n {
		for i := range ld {
			k := i + j*ld
			w := want[k]
			if i >= n {
				w = padding[k]
			}
			if !equalBits([]T{got[k]}, []T{w}) {
				t.Fatalf("seed %d n=%d: %s (%d,%d) = %v, want %v", testSeed, n, name, i, j, got[k], w)
			}
		}
	}
}

// equalBits compares a and b element by element, NaN equal to NaN.
func equalBits[T Scalar](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := toC(a[i]), toC(b[i])
		if !(x == y || (x != x && y != y)) {
			return false
		}
	}
	return true
}
