package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"runtime"
	"testing"
)

func TestGemm(t *testing.T) {
	forAllTypes(t, testGemm[float32], testGemm[float64], testGemm[complex64], testGemm[complex128])
}

func testGemm[T Scalar](t *testing.T) {
	rnd := newRand(t, 6)
	cplx := isComplexT[T]()
	tol := 16 * epsT[T]()
	if !isSingleT[T]() {
		tol = 1e-13
	}
	// Sizes cover the unpacked path, the packed path with ragged edges and
	// the parallel split in both directions.
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {0, 4, 3}, {4, 0, 3}, {5, 4, 0}, {37, 41, 29}, {130, 129, 100}, {3, 400, 300}, {400, 3, 300}, {1, 777, 513}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				ar, ac := m, k
				if tA {
					ar, ac = k, m
				}
				br, bc := k, n
				if tB {
					br, bc = n, k
				}
				A := roundTo[T](randDense(rnd, ar, ac, cplx))
				B := roundTo[T](randDense(rnd, br, bc, cplx))
				C := roundTo[T](randDense(rnd, m, n, cplx))
				lda, ldb, ldc := max(1, ar+1), max(1, br+2), max(1, m+3)
				a := store[T](A, lda, nil)
				b := store[T](B, ldb, nil)
				c := store[T](C, ldc, nil)
				alpha, beta := complex(0.75, 0), complex(-0.5, 0)
				if cplx {
					alpha, beta = complex(0.75, -0.25), complex(-0.5, 0.125)
				}
				Gemm(tA, tB, m, n, k, fromC[T](alpha), a, lda, b, ldb, fromC[T](beta), c, ldc)
				opA, opB := A, B
				if tA {
					opA = adjoint(A)
				}
				if tB {
					opB = adjoint(B)
				}
				want := mul(opA, opB)
				for i := range want.v {
					want.v[i] = alpha*want.v[i] + beta*C.v[i]
				}
				got := denseOf(m, n, c, ldc)
				scale := (fnorm(A)*fnorm(B) + fnorm(C) + 1)
				if e := fnorm(sub(got, want)) / scale; !(e <= tol) {
					t.Errorf("seed %d %v tA=%v tB=%v: rel err %.3g", testSeed, sz, tA, tB, e)
				}
				// beta = 0 must ignore NaN in C.
				if m > 0 && n > 0 {
					cn := store[T](C, ldc, nil)
					for i := range cn {
						cn[i] = fromC[T](complex(math.NaN(), 0))
					}
					Gemm(tA, tB, m, n, k, fromC[T](1), a, lda, b, ldb, fromC[T](0), cn, ldc)
					got := denseOf(m, n, cn, ldc)
					want := mul(opA, opB)
					if e := fnorm(sub(got, want)) / (fnorm(A)*fnorm(B) + 1); !(e <= tol) {
						t.Errorf("seed %d %v beta=0 with NaN C: err %.3g", testSeed, sz, e)
					}
				}
			}
		}
	}
}

func TestTrsmLowerLeft(t *testing.T) {
	// GOMAXPROCS 1 and 2: float32 goes by blocks only on two cores or more
	// (blockTriangular; the pure-Go build).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			forAllTypes(t, testTrsm[float32], testTrsm[float64], testTrsm[complex64], testTrsm[complex128])
		})
	}
}

func testTrsm[T Scalar](t *testing.T) {
	rnd := newRand(t, 7)
	cplx := isComplexT[T]()
	tol := tolT[T]()
	for _, m := range []int{1, 5, 64, 65, 130, 300} { // 300: three blocks of the blocked path, the last partial
		for _, n := range []int{1, 3, 70, 260} { // 70, 260: float64's and float32's blocked path
			L := roundTo[T](randLower(rnd, m, cplx))
			junk := complex(1e30, math.NaN())
			if !cplx {
				junk = complex(math.NaN(), 0)
			}
			l := store[T](L, m+1, &junk)
			for _, ct := range []bool{false, true} {
				B := roundTo[T](randDense(rnd, m, n, cplx))
				b := store[T](B, m+2, nil)
				TrsmLowerLeft(ct, m, n, l, m+1, b, m+2)
				X := denseOf(m, n, b, m+2)
				opL := L
				if ct {
					opL = adjoint(L)
				}
				if e := fnorm(sub(mul(opL, X), B)) / (fnorm(L)*fnorm(X) + fnorm(B)); !(e <= tol) {
					t.Errorf("seed %d m=%d n=%d conjTrans=%v: residual %.3g", testSeed, m, n, ct, e)
				}
			}
		}
	}
}

func TestTrmmLowerLeft(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2} { // as in TestTrsmLowerLeft
		runtime.GOMAXPROCS(procs)
		t.Run(fmt.Sprintf("procs=%d/float32", procs), testTrmm[float32])
		t.Run(fmt.Sprintf("procs=%d/float64", procs), testTrmm[float64])
	}
}

// testTrmm: op(L)·B against the product of the dense matrices, with NaN in
// L's strict upper triangle and padding (never read).
func testTrmm[T float32 | float64](t *testing.T) {
	rnd := newRand(t, 8)
	tol := tolT[T]()
	for _, m := range []int{1, 5, 64, 65, 130, 300} { // 300: three blocks of the blocked path, the last partial
		for _, n := range []int{1, 3, 70, 260} { // 70, 260: float64's and float32's blocked path
			L := roundTo[T](randLower(rnd, m, false))
			junk := complex(math.NaN(), 0)
			l := store[T](L, m+1, &junk)
			for _, trans := range []bool{false, true} {
				B := roundTo[T](randDense(rnd, m, n, false))
				b := store[T](B, m+2, nil)
				TrmmLowerLeft(trans, m, n, l, m+1, b, m+2)
				opL := L
				if trans {
					opL = adjoint(L)
				}
				want := mul(opL, B)
				if e := fnorm(sub(denseOf(m, n, b, m+2), want)) / (fnorm(L) * fnorm(B)); !(e <= tol) {
					t.Errorf("seed %d m=%d n=%d trans=%v: error %.3g", testSeed, m, n, trans, e)
				}
			}
		}
	}
}

func TestSymmetrize(t *testing.T) {
	forAllTypes(t, testSymmetrize[float32], testSymmetrize[float64], testSymmetrize[complex64], testSymmetrize[complex128])
}

func testSymmetrize[T Scalar](t *testing.T) {
	rnd := newRand(t, 8)
	for _, n := range []int{1, 4, 33, 64, 65, 130} { // around the 64-wide blocks
		A := roundTo[T](randDense(rnd, n, n, isComplexT[T]()))
		a := store[T](A, n+1, nil)
		Symmetrize(n, a, n+1)
		for j := 0; j < n; j++ {
			if imag(toC(a[j+j*(n+1)])) != 0 {
				t.Fatalf("diagonal %d not real", j)
			}
			for i := 0; i < n; i++ {
				got := toC(a[i+j*(n+1)])
				if got != cmplx.Conj(toC(a[j+i*(n+1)])) {
					t.Fatalf("not exactly Hermitian at (%d,%d)", i, j)
				}
				want := (A.at(i, j) + cmplx.Conj(A.at(j, i))) / 2
				if cmplx.Abs(got-want) > 4*epsT[T]()*cmplx.Abs(want) {
					t.Fatalf("(%d,%d) = %v, want %v", i, j, got, want)
				}
			}
		}
	}
}

// TestSymmetrizeLargeEntries: entries beyond half the largest float (of
// the type, or of its parts) give their finite mean, not Inf.
func TestSymmetrizeLargeEntries(t *testing.T) {
	const n = 3
	for _, c := range []struct {
		name string
		run  func() bool // symmetrizes a matrix of 0.9·max entries and reports all finite
	}{
		{"float64", func() bool { return symmetrizedFinite(n, 0.9*math.MaxFloat64) }},
		{"float32", func() bool { return symmetrizedFinite(n, float32(0.9*math.MaxFloat32)) }},
		{"complex128", func() bool { return symmetrizedFinite(n, complex(0.9*math.MaxFloat64, 0.9*math.MaxFloat64)) }},
		{"complex64", func() bool {
			return symmetrizedFinite(n, complex64(complex(0.9*math.MaxFloat32, 0.9*math.MaxFloat32)))
		}},
	} {
		if !c.run() {
			t.Errorf("%s: Symmetrize overflowed", c.name)
		}
	}
}

func symmetrizedFinite[T Scalar](n int, v T) bool {
	a := make([]T, n*n)
	for i := range a {
		a[i] = v
	}
	Symmetrize(n, a, n)
	return CheckFinite(n, n, a, n, false) == nil
}

func TestCheckFinite(t *testing.T) {
	a := []float64{1, 2, 3, math.Inf(1), 5, 6} // 3×2, (0,1) = Inf
	if err := CheckFinite(3, 2, a, 3, true); err != nil {
		t.Fatalf("lowerOnly: %v", err)
	}
	err := CheckFinite(3, 2, a, 3, false)
	var nf *NonFiniteError
	if !errors.Is(err, ErrNonFinite) || !errors.As(err, &nf) || nf.Row != 0 || nf.Col != 1 {
		t.Fatalf("full: %v", err)
	}
	long := make([]float64, 100)
	long[77] = math.NaN()
	if err := CheckFinite(100, 1, long, 100, false); !errors.As(err, &nf) || nf.Row != 77 {
		t.Fatalf("long column: %v", err)
	}
	c := []complex64{1, complex(0, float32(math.NaN())), 3, 4}
	if err := CheckFinite(2, 2, c, 2, true); !errors.As(err, &nf) || nf.Row != 1 || nf.Col != 0 {
		t.Fatalf("complex64: %v", err)
	}
	z := []complex128{1, 2, complex(math.Inf(-1), 0), 4}
	if err := CheckFinite(2, 2, z, 2, true); err != nil {
		t.Fatalf("complex128 lowerOnly: %v", err)
	}
	if err := CheckFinite(2, 2, z, 2, false); !errors.As(err, &nf) || nf.Row != 0 || nf.Col != 1 {
		t.Fatalf("complex128 full: %v", err)
	}
	if err := CheckFinite(0, 0, []float32(nil), 1, false); err != nil {
		t.Fatal(err)
	}
}

// TestPotrsNoRightHandSides: Potrs with nrhs = 0 and an empty b checks the
// factor's diagonal and returns, for every dtype and in every build (the
// openblas build's complex128 solver took &b[0]).
func TestPotrsNoRightHandSides(t *testing.T) {
	t.Run("float64", func(t *testing.T) { potrsNoRHS[float64](t) })
	t.Run("float32", func(t *testing.T) { potrsNoRHS[float32](t) })
	t.Run("complex128", func(t *testing.T) { potrsNoRHS[complex128](t) })
	t.Run("complex64", func(t *testing.T) { potrsNoRHS[complex64](t) })
}

func potrsNoRHS[T Scalar](t *testing.T) {
	l := []T{2, 0, 1, 3} // column-major 2×2 lower factor
	if err := Potrs(2, 0, l, 2, nil, 2); err != nil {
		t.Fatalf("nrhs = 0: %v", err)
	}
	zero := []T{2, 0, 1, 0} // a zero on the diagonal is still found
	if err := Potrs(2, 0, zero, 2, nil, 2); !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("nrhs = 0, zero pivot: %v, want ErrNotPositiveDefinite", err)
	}
}
