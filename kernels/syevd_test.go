package kernels

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestSyevd(t *testing.T) {
	forAllTypes(t, testSyevd[float32, float32], testSyevd[float64, float64], testSyevd[complex64, float32], testSyevd[complex128, float64])
}

type eigCase struct {
	name string
	a    dense
}

// eigCases returns random and clustered Hermitian test matrices.
func eigCases[T Scalar](rnd *rand.Rand) []eigCase {
	cplx := isComplexT[T]()
	var cases []eigCase
	for _, n := range testSizes {
		m := randDense(rnd, n, n, cplx)
		h := newDense(n, n)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				h.set(i, j, (m.at(i, j)+cmplx.Conj(m.at(j, i)))/2)
			}
		}
		cases = append(cases, eigCase{"random", h})
	}
	pert := 1e-14
	if isSingleT[T]() {
		pert = 1e-6
	}
	for _, n := range []int{17, 65, 200} {
		// Identity plus a tiny Hermitian perturbation.
		m := randDense(rnd, n, n, cplx)
		h := eye(n)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				h.add(i, j, complex(pert, 0)*(m.at(i, j)+cmplx.Conj(m.at(j, i)))/2)
			}
		}
		cases = append(cases, eigCase{"identity+tiny", h})
		// Diagonal with repeated entries.
		d := newDense(n, n)
		for i := 0; i < n; i++ {
			d.set(i, i, complex(float64(i%3), 0))
		}
		cases = append(cases, eigCase{"diag-repeated", d})
		// Q·diag(1,1,1,2,2,3,…)·Qᴴ with a random unitary Q.
		q := randUnitary(rnd, n, cplx)
		lam := newDense(n, n)
		v, cnt := 1.0, 0
		for i := 0; i < n; i++ {
			lam.set(i, i, complex(v, 0))
			cnt++
			if cnt >= max(1, 4-int(v)) && i%7 != 3 {
				v++
				cnt = 0
			}
		}
		cases = append(cases, eigCase{"Q·clustered·Qᴴ", mul(mul(q, lam), adjoint(q))})
		// Zero matrix and a Wilkinson-like tridiagonal with pairs of close eigenvalues.
		cases = append(cases, eigCase{"zero", newDense(n, n)})
		wk := newDense(n, n)
		for i := 0; i < n; i++ {
			wk.set(i, i, complex(math.Abs(float64(i-n/2)), 0))
			if i+1 < n {
				wk.set(i+1, i, 1)
				wk.set(i, i+1, 1)
			}
		}
		cases = append(cases, eigCase{"wilkinson", wk})
	}
	// All ones (rank one): reflectors of the reduction end in zeros, which
	// gonum's blocked dormlq turned into non-orthogonal eigenvectors
	// (n = 39, 100).
	for _, n := range []int{39, 100} {
		ones := newDense(n, n)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				ones.set(i, j, 1)
			}
		}
		cases = append(cases, eigCase{"ones", ones})
	}
	// One case large enough for several divide and conquer levels and the
	// blocked reduction.
	m := randDense(rnd, 300, 300, cplx)
	h := newDense(300, 300)
	for j := 0; j < 300; j++ {
		for i := 0; i < 300; i++ {
			h.set(i, j, (m.at(i, j)+cmplx.Conj(m.at(j, i)))/2)
		}
	}
	cases = append(cases, eigCase{"random", h})
	return cases
}

// refEigenvalues computes reference eigenvalues independently: gonum's
// EigenSym on A (real) or on the real 2n×2n embedding [Re −Im; Im Re] of a
// complex Hermitian A (whose eigenvalues are those of A, each twice).
func refEigenvalues(a dense, cplx bool) []float64 {
	n := a.r
	if n == 0 {
		return nil
	}
	if !cplx {
		s := mat.NewSymDense(n, nil)
		for j := 0; j < n; j++ {
			for i := 0; i <= j; i++ {
				s.SetSym(i, j, real(a.at(i, j)))
			}
		}
		var es mat.EigenSym
		if !es.Factorize(s, false) {
			panic("EigenSym failed")
		}
		return es.Values(nil)
	}
	s := mat.NewSymDense(2*n, nil)
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			z := a.at(i, j)
			s.SetSym(i, j, real(z))
			s.SetSym(i+n, j+n, real(z))
			s.SetSym(i+n, j, imag(z))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		panic("EigenSym failed")
	}
	v := es.Values(nil)
	sort.Float64s(v)
	out := make([]float64, n)
	for i := range out {
		out[i] = (v[2*i] + v[2*i+1]) / 2
	}
	return out
}

func testSyevd[T Scalar, R Float](t *testing.T) {
	rnd := newRand(t, 4)
	single := isSingleT[T]()
	var maxRes, maxOrth, maxVal, maxValsOnly float64
	for _, c := range eigCases[T](rnd) {
		A := roundTo[T](c.a)
		n := A.r
		lda := n + 2
		junkBig := complex(1e30, 1e30)
		junkNaN := complex(math.NaN(), math.NaN())
		a1 := store[T](A, lda, &junkBig)
		a2 := store[T](A, lda, &junkNaN)
		w1 := make([]R, n)
		w2 := make([]R, n)
		if err := Syevd(n, a1, lda, w1, true); err != nil {
			t.Fatalf("seed %d %s n=%d: %v", testSeed, c.name, n, err)
		}
		if err := Syevd(n, a2, lda, w2, true); err != nil {
			t.Fatalf("seed %d %s n=%d (NaN junk): %v", testSeed, c.name, n, err)
		}
		for i := 0; i < n; i++ {
			if w1[i] != w2[i] {
				t.Fatalf("seed %d %s n=%d: junk above the diagonal changed w[%d]", testSeed, c.name, n, i)
			}
			if i > 0 && w1[i] < w1[i-1] {
				t.Fatalf("seed %d %s n=%d: eigenvalues not ascending at %d", testSeed, c.name, n, i)
			}
		}
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				if toC(a1[i+j*lda]) != toC(a2[i+j*lda]) {
					t.Fatalf("seed %d %s n=%d: junk above the diagonal changed the eigenvectors", testSeed, c.name, n)
				}
			}
		}
		V := denseOf(n, n, a1, lda)
		L := newDense(n, n)
		for i := 0; i < n; i++ {
			L.set(i, i, complex(float64(w1[i]), 0))
		}
		anorm := fnorm(A)
		if anorm == 0 {
			anorm = 1
		}
		res := fnorm(sub(mul(A, V), mul(V, L))) / anorm
		orth := fnorm(sub(mul(adjoint(V), V), eye(n)))
		maxRes = max(maxRes, res/float64(n))
		maxOrth = max(maxOrth, orth/float64(n))
		resTol, orthTol := 1e-12*float64(n), 1e-10*float64(n)
		if single {
			resTol, orthTol = 1e-5*float64(n), 1e-4*float64(n)
		}
		if !(res <= resTol) || !(orth <= orthTol) {
			t.Errorf("seed %d %s n=%d: ‖AV−VΛ‖/‖A‖ = %.3g (tol %.3g), ‖VᴴV−I‖ = %.3g (tol %.3g)",
				testSeed, c.name, n, res, resTol, orth, orthTol)
		}
		// Reference eigenvalues.
		ref := refEigenvalues(A, isComplexT[T]())
		var dv float64
		for i := range ref {
			dv = max(dv, math.Abs(float64(w1[i])-ref[i]))
		}
		dv /= anorm
		maxVal = max(maxVal, dv)
		valTol := 1e-12 * float64(n)
		if single {
			valTol = 1e-6
		}
		if !(dv <= valTol) {
			t.Errorf("seed %d %s n=%d: max|λ−λref|/‖A‖ = %.3g", testSeed, c.name, n, dv)
		}
		// Values only.
		a3 := store[T](A, lda, &junkNaN)
		w3 := make([]R, n)
		if err := Syevd(n, a3, lda, w3, false); err != nil {
			t.Fatalf("seed %d %s n=%d values only: %v", testSeed, c.name, n, err)
		}
		var dvo float64
		for i := range w3 {
			dvo = max(dvo, math.Abs(float64(w3[i]-w1[i])))
		}
		dvo /= anorm
		maxValsOnly = max(maxValsOnly, dvo)
		if !(dvo <= valTol) {
			t.Errorf("seed %d %s n=%d: values-only differs from with-vectors by %.3g·‖A‖", testSeed, c.name, n, dvo)
		}
	}
	t.Logf("%s accuracy: ‖AV−VΛ‖/(‖A‖·n) ≤ %.2g, ‖VᴴV−I‖/n ≤ %.2g, |λ−λref|/‖A‖ ≤ %.2g, values-only vs vectors ≤ %.2g",
		dtName[T](), maxRes, maxOrth, maxVal, maxValsOnly)
}

func TestSyevdSmallExact(t *testing.T) {
	// 2×2 complex Hermitian [[2, i],[−i, 2]] has eigenvalues 1 and 3.
	a := []complex128{2, -1i, 99, 2}
	w := make([]float64, 2)
	if err := Syevd(2, a, 2, w, true); err != nil {
		t.Fatal(err)
	}
	if math.Abs(w[0]-1) > 1e-15 || math.Abs(w[1]-3) > 1e-15 {
		t.Fatalf("w = %v, want [1 3]", w)
	}
	// 1×1 with an imaginary part on the diagonal (ignored).
	b := []complex64{complex(5, 7)}
	wf := make([]float32, 1)
	if err := Syevd(1, b, 1, wf, true); err != nil || wf[0] != 5 || b[0] != 1 {
		t.Fatalf("1×1: err %v, w %v, v %v", err, wf, b)
	}
	// n = 0.
	if err := Syevd(0, []float64(nil), 1, []float64(nil), true); err != nil {
		t.Fatal(err)
	}
}

func TestSyevdTypeMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for float32 eigenvalues of a float64 matrix")
		}
	}()
	_ = Syevd(2, make([]float64, 4), 2, make([]float32, 2), false)
}

// Defined types over the dtypes work like the dtypes themselves.
type myFloat float64
type myComplex complex64

func TestDefinedTypes(t *testing.T) {
	a := []myFloat{4, 2, 0, 3}
	if err := Potrf(2, a, 2); err != nil {
		t.Fatal(err)
	}
	if a[0] != 2 || a[1] != 1 || a[2] != 0 || math.Abs(float64(a[3])-math.Sqrt(2)) > 1e-15 {
		t.Fatalf("L = %v", a)
	}
	c := []myComplex{2, -1i, 0, 2}
	w := make([]float32, 2)
	if err := Syevd(2, c, 2, w, false); err != nil || math.Abs(float64(w[0])-1) > 1e-6 || math.Abs(float64(w[1])-3) > 1e-6 {
		t.Fatalf("w = %v, err %v", w, err)
	}
}

func TestSyevdExtremeScaling(t *testing.T) {
	rnd := newRand(t, 9)
	for _, cplx := range []bool{false, true} {
		n := 60
		m := randDense(rnd, n, n, cplx)
		h := newDense(n, n)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				h.set(i, j, (m.at(i, j)+cmplx.Conj(m.at(j, i)))/2)
			}
		}
		ref := refEigenvalues(h, cplx)
		// 1e-130 and 1e-200: below gonum dsterf's scaling threshold (≈1e-122),
		// where the values-only path used to panic.
		for _, s := range []float64{1e300, 1e-130, 1e-200, 1e-300, 1e-310} {
			for _, vectors := range []bool{true, false} {
				hs := newDense(n, n)
				for i, v := range h.v {
					hs.v[i] = v * complex(s, 0)
				}
				w := make([]float64, n)
				var err error
				var V dense
				if cplx {
					a := store[complex128](hs, n, nil)
					err = Syevd(n, a, n, w, vectors)
					V = denseOf(n, n, a, n)
				} else {
					a := store[float64](hs, n, nil)
					err = Syevd(n, a, n, w, vectors)
					V = denseOf(n, n, a, n)
				}
				if err != nil {
					t.Fatalf("scale %g vectors %v: %v", s, vectors, err)
				}
				tol := 1e-13
				if s < 1e-300 {
					tol = 1e-6 // subnormal inputs carry fewer digits
				}
				for i := range w {
					if math.Abs(w[i]/s-ref[i]) > tol*math.Abs(ref[n-1]) {
						t.Fatalf("seed %d complex=%v scale %g vectors %v: λ[%d]/s = %v, want %v", testSeed, cplx, s, vectors, i, w[i]/s, ref[i])
					}
				}
				if !vectors {
					continue
				}
				if orth := fnorm(sub(mul(adjoint(V), V), eye(n))); !(orth < 1e-12) {
					t.Fatalf("seed %d complex=%v scale %g: ‖VᴴV−I‖ = %g", testSeed, cplx, s, orth)
				}
			}
		}
	}
}

// TestSyevdSubnormalEntries: off-diagonal entries below 1/MaxFloat64, given
// or made by Syevd's own scaling, leave the eigenvalues as LAPACK's (the
// reductions' 2-norm took their reciprocal, which overflowed: no
// convergence, or Inf vectors).
func TestSyevdSubnormalEntries(t *testing.T) {
	cases := []struct {
		a    []complex128 // 3×3, column-major, lower triangle read
		want []float64
	}{
		{[]complex128{1, 0, 1e-310, 0, 2, 0, 0, 0, 3}, []float64{1, 2, 3}},
		{[]complex128{1, 0, 5e-324, 0, 2, 0, 0, 0, 3}, []float64{1, 2, 3}},
		{[]complex128{1, 0, 1e-310i, 0, 2, 0, 0, 0, 3}, []float64{1, 2, 3}},
		{[]complex128{1e300, 0, 1e-160, 0, 1, 0, 0, 0, 2}, []float64{1, 2, 1e300}}, // scaled into subnormals
		{[]complex128{1e300, 0, 1e-160i, 0, 1, 0, 0, 0, 2}, []float64{1, 2, 1e300}},
	}
	for _, c := range cases {
		for _, vectors := range []bool{false, true} {
			w := make([]float64, 3)
			var err error
			if cplx := imag(c.a[2]) != 0; cplx {
				a := append([]complex128(nil), c.a...)
				err = Syevd(3, a, 3, w, vectors)
			} else {
				a := make([]float64, 9)
				for i, v := range c.a {
					a[i] = real(v)
				}
				err = Syevd(3, a, 3, w, vectors)
				if err == nil && vectors {
					for _, v := range a {
						if v-v != 0 {
							t.Errorf("%v: eigenvectors %v", c.a, a)
							break
						}
					}
				}
			}
			if err != nil {
				t.Errorf("%v vectors %v: %v", c.a, vectors, err)
				continue
			}
			for i := range w {
				if math.Abs(w[i]-c.want[i]) > 1e-15*c.want[i] {
					t.Errorf("%v vectors %v: w = %v, want %v", c.a, vectors, w, c.want)
					break
				}
			}
		}
	}
}

// TestSyevdImaginaryDiagonal: the imaginary parts of the diagonal are
// ignored, large ones included (they used to set the scaling, which pushed
// entries of 1e-170 into underflow: eigenvalues 0).
func TestSyevdImaginaryDiagonal(t *testing.T) {
	for _, s := range []float64{1, 1e-170, 1e-10, 1e200} {
		for _, vectors := range []bool{false, true} {
			solve := func(imagDiag float64) []float64 {
				a := []complex128{complex(2*s, imagDiag), complex(s, s), 0, complex(3*s, -imagDiag)}
				w := make([]float64, 2)
				if err := Syevd(2, a, 2, w, vectors); err != nil {
					t.Fatalf("scale %g, imaginary diagonal %g: %v", s, imagDiag, err)
				}
				return w
			}
			want := solve(0)
			for _, im := range []float64{1e300, 1e-300, math.MaxFloat64} {
				got := solve(im)
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-14*math.Abs(want[i]) {
						t.Errorf("scale %g vectors %v, imaginary diagonal %g: w = %v, want %v", s, vectors, im, got, want)
						break
					}
				}
			}
		}
	}
}

// TestSyevdTinyBlock: a matrix of ordinary scale with a decoupled 2×2 block
// of entries near 1e-130, eigenvalues only (the block alone is below gonum
// dsterf's scaling threshold, where the values-only path used to panic).
func TestSyevdTinyBlock(t *testing.T) {
	const n = 3
	a := []float64{1, 0, 0, 0, 1e-130, 1e-131, 0, 1e-131, 2e-130} // column-major, lower triangle read
	w := make([]float64, n)
	if err := Syevd(n, a, n, w, false); err != nil {
		t.Fatal(err)
	}
	// The block's eigenvalues: (3 ± √(1 + 4·0.01))/2 · 1e-130.
	r := math.Sqrt(1 + 4*0.01)
	want := []float64{(3 - r) / 2 * 1e-130, (3 + r) / 2 * 1e-130, 1}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-14*math.Abs(want[i]) {
			t.Fatalf("w = %v, want %v", w, want)
		}
	}
}

// TestSyevdLarge covers the code paths that only start at larger orders:
// the parallel symmetric matrix–vector product, the concurrent halves of the
// divide and conquer and several blocked panels. Checks use Gemm.
func TestSyevdLarge(t *testing.T) {
	rnd := newRand(t, 10)
	n := 520
	if testing.Short() {
		n = 410
	}
	a0 := make([]float64, n*n)
	for j := 0; j < n; j++ {
		for i := j; i < n; i++ {
			v := rnd.NormFloat64()
			a0[i+j*n] = v
			a0[j+i*n] = v
		}
	}
	a := append([]float64(nil), a0...)
	w := make([]float64, n)
	if err := Syevd(n, a, n, w, true); err != nil {
		t.Fatal(err)
	}
	r := make([]float64, n*n)
	Gemm(false, false, n, n, n, 1, a0, n, a, n, 0, r, n) // A·V
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			r[i+j*n] -= a[i+j*n] * w[j]
		}
	}
	g := make([]float64, n*n)
	Gemm(true, false, n, n, n, 1, a, n, a, n, 0, g, n) // VᵀV
	for i := 0; i < n; i++ {
		g[i+i*n] -= 1
	}
	fn := func(x []float64) float64 {
		var s float64
		for _, v := range x {
			s += v * v
		}
		return math.Sqrt(s)
	}
	res := fn(r) / fn(a0)
	orth := fn(g)
	t.Logf("n=%d: ‖AV−VΛ‖/‖A‖ = %.3g, ‖VᵀV−I‖ = %.3g", n, res, orth)
	if !(res <= 1e-12*float64(n)) || !(orth <= 1e-10*float64(n)) {
		t.Fatalf("seed %d: res %.3g orth %.3g", testSeed, res, orth)
	}
	// Complex at a size where the parallel Hermitian product is used.
	nc := 300
	ac0 := randHerm(nc, testSeed)
	ac := append([]complex128(nil), ac0...)
	wc := make([]float64, nc)
	if err := Syevd(nc, ac, nc, wc, true); err != nil {
		t.Fatal(err)
	}
	rc := make([]complex128, nc*nc)
	Gemm(false, false, nc, nc, nc, 1, ac0, nc, ac, nc, 0, rc, nc)
	for j := 0; j < nc; j++ {
		for i := 0; i < nc; i++ {
			rc[i+j*nc] -= ac[i+j*nc] * complex(wc[j], 0)
		}
	}
	gc := make([]complex128, nc*nc)
	Gemm(true, false, nc, nc, nc, 1, ac, nc, ac, nc, 0, gc, nc)
	for i := 0; i < nc; i++ {
		gc[i+i*nc] -= 1
	}
	resc := fn(parts[float64](rc)) / fn(parts[float64](ac0))
	orthc := fn(parts[float64](gc))
	t.Logf("complex n=%d: ‖AV−VΛ‖/‖A‖ = %.3g, ‖VᴴV−I‖ = %.3g", nc, resc, orthc)
	if !(resc <= 1e-12*float64(nc)) || !(orthc <= 1e-10*float64(nc)) {
		t.Fatalf("seed %d: complex res %.3g orth %.3g", testSeed, resc, orthc)
	}
}

// Eigenvalues alone of diag(s·C, t·C), C = [[2, 1], [1, 3]], with s·C below
// 1e-122 (dsteqr scales such a block): gonum's dsteqr kept that block's
// scale for the next, whose eigenvalues came back times 1e122, or beyond
// the range (a false ErrNonFinite). Both paths, float64 and complex128.
func TestSyevdTinyLeadingBlock(t *testing.T) {
	lambda := [2]float64{(5 - math.Sqrt(5)) / 2, (5 + math.Sqrt(5)) / 2}
	for _, st := range [][2]float64{{1e-130, 1}, {1e-125, 1e-120}, {1e-130, 1e200}, {1, 1e-130}, {1e-200, 1e-160}} {
		s, u := st[0], st[1]
		a := []float64{2 * s, s, 0, 0, s, 3 * s, 0, 0, 0, 0, 2 * u, u, 0, 0, u, 3 * u}
		want := []float64{lambda[0] * s, lambda[1] * s, lambda[0] * u, lambda[1] * u}
		sort.Float64s(want)
		for _, vectors := range []bool{false, true} {
			w := make([]float64, 4)
			err := Syevd(4, append([]float64(nil), a...), 4, w, vectors)
			ac := make([]complex128, len(a))
			for i, v := range a {
				ac[i] = complex(v, 0)
			}
			wc := make([]float64, 4)
			errc := Syevd(4, ac, 4, wc, vectors)
			for i := range want {
				if err != nil || math.Abs(w[i]-want[i]) > 1e-14*math.Abs(want[i]) {
					t.Fatalf("s = %g, t = %g, vectors %v: w = %v, %v; want %v", s, u, vectors, w, err, want)
				}
				if errc != nil || math.Abs(wc[i]-want[i]) > 1e-14*math.Abs(want[i]) {
					t.Fatalf("complex128, s = %g, t = %g, vectors %v: w = %v, %v; want %v", s, u, vectors, wc, errc, want)
				}
			}
		}
	}
}

// A tiny block joined to a normal one by an entry that Dstedc's scaling of
// the whole block rounds to 0, so that its leaf's dsteqr found a split that
// Dstedc had not: gonum's dsteqr carried the tiny block's scale into the
// normal one, with eigenvectors too (eigenvalues times 1e122). The
// tridiagonal (d, e) is the matrix itself; the three largest eigenvalues
// are those of the normal block, c·{2 − √3, 2, 2 + √3}.
func TestSyevdTinyBlockJoined(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     []float64
		e     []float64 // the imaginary parts, but the join's real
		join  float64
		scale float64
	}{
		{"a subnormal join", []float64{1e-130, 2e-130, 0, 1, 2, 3}, []float64{1e-130, 1e-130, 0, 1, 1}, 5e-324, 1},
		{"no subnormal", []float64{1e15, 2e15, 0, 1e145, 2e145, 3e145}, []float64{1e15, 1e15, 0, 1e145, 1e145}, 1e-180, 1e145},
	} {
		const n = 6
		a := make([]complex128, n*n)
		ar := make([]float64, n*n)
		for i := range n {
			a[i+i*n], ar[i+i*n] = complex(c.d[i], 0), c.d[i]
			if i < n-1 {
				a[i+1+i*n], ar[i+1+i*n] = complex(0, c.e[i]), c.e[i]
			}
		}
		a[3+2*n], ar[3+2*n] = complex(c.join, 0), c.join
		want := []float64{(2 - math.Sqrt(3)) * c.scale, 2 * c.scale, (2 + math.Sqrt(3)) * c.scale}
		for _, vectors := range []bool{false, true} {
			w, wr := make([]float64, n), make([]float64, n)
			err := Syevd(n, append([]complex128(nil), a...), n, w, vectors)
			errr := Syevd(n, append([]float64(nil), ar...), n, wr, vectors)
			for i, x := range want {
				if err != nil || math.Abs(w[3+i]-x) > 1e-14*c.scale {
					t.Fatalf("%s, complex128, vectors %v: %v, %v; want the largest %v", c.name, vectors, w, err, want)
				}
				if errr != nil || math.Abs(wr[3+i]-x) > 1e-14*c.scale {
					t.Fatalf("%s, float64, vectors %v: %v, %v; want the largest %v", c.name, vectors, wr, errr, want)
				}
			}
		}
	}
}
