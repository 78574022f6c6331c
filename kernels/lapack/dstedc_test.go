package lapack

import (
	"math"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// refTridiagEigenvalues returns the eigenvalues of the symmetric tridiagonal
// (d, e), ascending, from gonum's EigenSym on the dense matrix.
func refTridiagEigenvalues(d, e []float64) []float64 {
	n := len(d)
	s := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		s.SetSym(i, i, d[i])
		if i+1 < n {
			s.SetSym(i, i+1, e[i])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		panic("EigenSym failed")
	}
	return es.Values(nil)
}

// checkDstedc runs Dstedc on (d, e) with z of leading dimension n+2 (padding
// rows junk) and checks T·v = λv, ZᵀZ = I, ascending eigenvalues that match
// gonum's and the untouched padding.
func checkDstedc(t *testing.T, name string, d0, e0 []float64) {
	t.Helper()
	n := len(d0)
	ldz := n + 2
	d := slices.Clone(d0)
	e := slices.Clone(e0)
	z := make([]float64, ldz*n)
	for i := range z {
		z[i] = real(junk) // NaN: the padding stays NaN, compared bitwise below
	}
	if !Dstedc(n, d, e, z, ldz) {
		t.Fatalf("seed %d %s n=%d: Dstedc did not converge", testSeed, name, n)
	}
	for j := 0; j < n; j++ {
		for i := n; i < ldz; i++ {
			if math.Float64bits(z[i+j*ldz]) != math.Float64bits(real(junk)) {
				t.Fatalf("%s n=%d: Dstedc wrote z[%d, %d] in the padding", name, n, i, j)
			}
		}
	}
	if !slices.IsSorted(d) {
		t.Errorf("seed %d %s n=%d: eigenvalues not ascending", testSeed, name, n)
	}
	res, orth := tridiagResidual(d0, e0, d, z, ldz)
	if !(res <= 1e-14) || !(orth <= 1e-13) {
		t.Errorf("seed %d %s n=%d: ‖TZ−ZΛ‖/(‖T‖·n) = %.3g, ‖ZᵀZ−I‖/n = %.3g", testSeed, name, n, res, orth)
	}
	ref := refTridiagEigenvalues(d0, e0)
	tn := 0.0 // ‖T‖_F²
	for i := range d0 {
		tn += d0[i] * d0[i]
		if i < n-1 {
			tn += 2 * e0[i] * e0[i]
		}
	}
	for i := range ref {
		if math.Abs(ref[i]-d[i]) > 1e-13*float64(n)*math.Sqrt(tn) {
			t.Errorf("seed %d %s n=%d: λ[%d] = %v, gonum %v", testSeed, name, n, i, d[i], ref[i])
			break
		}
	}
}

// TestDstedc checks Dstedc against the definition and gonum's eigenvalues
// on random tridiagonal matrices of orders around the leaf size (25), odd
// orders and one beyond the size at which the halves run concurrently (400).
func TestDstedc(t *testing.T) {
	rnd := newRand(t, 1)
	for _, n := range []int{0, 1, 2, 3, 24, 25, 26, 51, 127, 401} {
		d := make([]float64, n)
		e := make([]float64, max(0, n-1))
		for i := range d {
			d[i] = rnd.NormFloat64()
		}
		for i := range e {
			e[i] = rnd.NormFloat64()
		}
		if n == 0 {
			if !Dstedc(0, d, e, nil, 1) {
				t.Fatal("Dstedc(0) reported no convergence")
			}
			continue
		}
		checkDstedc(t, "random", d, e)
	}
}

// TestTridiagDivideAndConquer runs Dstedc on hard spectra: glued Wilkinson
// matrices (very close pairs), constant diagonals (huge deflation), graded
// off-diagonals and the 1-D Laplacian.
func TestTridiagDivideAndConquer(t *testing.T) {
	rnd := newRand(t, 5)
	for _, n := range []int{26, 51, 100, 333} {
		d := make([]float64, n)
		e := make([]float64, n-1)
		for i := range d {
			d[i] = math.Abs(float64(i%21) - 10)
		}
		for i := range e {
			e[i] = 1
			if i%21 == 20 {
				e[i] = 1e-9
			}
		}
		checkDstedc(t, "glued-wilkinson", d, e)
		for i := range d {
			d[i] = 1
		}
		for i := range e {
			e[i] = 1e-10 * rnd.NormFloat64()
		}
		checkDstedc(t, "constant+tiny", d, e)
		for i := range d {
			d[i] = math.Pow(10, -12*float64(i)/float64(n))
		}
		for i := range e {
			e[i] = math.Sqrt(d[i]*d[i+1]) * 0.5
		}
		checkDstedc(t, "graded", d, e)
		for i := range d {
			d[i] = 2
		}
		for i := range e {
			e[i] = -1
		}
		checkDstedc(t, "laplacian", d, e)
	}
}

// TestDstedcReusesWorkspace: a second call of the same order takes its
// workspace (about four n×n matrices at the top merge) from the first
// call's, allocating less than a quarter of an n×n matrix (the merges' vectors), and gives the same
// result. With one processor (the halves solved one after the other, on one
// workspace): sync.Pool hands a goroutine on another processor a workspace
// of its own when the one put back sits in another's private slot.
func TestDstedcReusesWorkspace(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops workspaces at random")
	}
	const n = 600
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	d0, e0 := make([]float64, n), make([]float64, n-1)
	for i := range d0 {
		d0[i] = math.Sin(float64(i))
	}
	for i := range e0 {
		e0[i] = 0.5 + 0.25*math.Cos(float64(3*i))
	}
	run := func() ([]float64, []float64, uint64) {
		d, e, z := slices.Clone(d0), slices.Clone(e0), make([]float64, n*n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if !Dstedc(n, d, e, z, n) {
			t.Fatal("Dstedc did not converge")
		}
		runtime.ReadMemStats(&after)
		return d, z, after.TotalAlloc - before.TotalAlloc
	}
	d1, z1, _ := run()
	d2, z2, bytes := run()
	if !slices.Equal(d1, d2) || !slices.Equal(z1, z2) {
		t.Fatal("the second call's result differs from the first's")
	}
	if limit := uint64(n * n * 8 / 4); bytes > limit {
		t.Fatalf("the second call allocated %d bytes, more than a quarter of a %d×%d matrix (%d)", bytes, n, n, limit)
	}
	t.Logf("the second call allocated %d bytes (%.2f matrices)", bytes, float64(bytes)/(n*n*8))
}

// TestDstedcWorkspaceSize: a call of order n, its workspace made afresh,
// allocates less than 2.5 n×n matrices (the gathered nonzero blocks of the
// old eigenvectors and the secular matrix U, grown merge by merge; the new
// vectors are written into z itself). It allocated about five: a copy of
// the new vectors, the gathered columns whole and a regrouped copy of U.
func TestDstedcWorkspaceSize(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one workspace
	rnd := newRand(t, 5)
	for _, n := range []int{500, 1001} {
		// The tridiagonal of a random dense symmetric matrix: its
		// eigenvectors spread (a random tridiagonal's are localized, and
		// most of their coordinates deflate).
		a := make([]float64, n*n)
		for j := range n {
			for i := j; i < n; i++ {
				a[i+j*n] = rnd.NormFloat64()
			}
		}
		d, e, tau, z := make([]float64, n), make([]float64, n-1), make([]float64, n-1), make([]float64, n*n)
		Dsytrd(n, a, n, d, e, tau)
		w := dcWorkPool.Get().(*dcWork)
		*w = dcWork{} // start from nothing
		dcWorkPool.Put(w)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if !Dstedc(n, d, e, z, n) {
			t.Fatal("Dstedc did not converge")
		}
		runtime.ReadMemStats(&after)
		got := float64(after.TotalAlloc-before.TotalAlloc) / float64(n*n*8)
		t.Logf("n = %d: %.2f matrices allocated", n, got)
		if got > 2.5 {
			t.Errorf("n = %d: Dstedc allocated %.2f n×n matrices", n, got)
		}
	}
}
