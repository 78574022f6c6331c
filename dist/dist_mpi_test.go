//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/dist"
)

func TestLayoutMatchesScaLAPACK(t *testing.T) {
	for n := 0; n <= 30; n++ {
		for nb := 1; nb <= 6; nb++ {
			for np := 1; np <= 5; np++ {
				for p := range np {
					for g := range n {
						count, owner, local := dist.ScaLAPACKIndex(n, nb, p, np, g)
						if c := cyclic.NumLocal(n, nb, p, np); c != count {
							t.Fatalf("NumLocal(%d,%d,%d,%d) = %d, NUMROC says %d", n, nb, p, np, c, count)
						}
						if o := cyclic.IndexOwner(g, nb, np); o != owner {
							t.Fatalf("IndexOwner(%d,%d,%d) = %d, INDXG2P says %d", g, nb, np, o, owner)
						}
						if l := cyclic.IndexLocal(g, nb, np); l != local {
							t.Fatalf("IndexLocal(%d,%d,%d) = %d, INDXG2L says %d", g, nb, np, l, local)
						}
					}
				}
			}
		}
	}
}

// shapes are the sizes and block sizes: odd, not multiples of the block,
// smaller than the grid.
var shapes = []struct{ n, nb int }{{1, 1}, {5, 2}, {6, 4}, {7, 3}, {13, 4}, {24, 5}}

func TestOps(t *testing.T) {
	t.Run("float32", testOps[float32])
	t.Run("float64", testOps[float64])
	t.Run("complex64", testOps[complex64])
	t.Run("complex128", testOps[complex128])
}

func testOps[T dist.Scalar](t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 17))
	tol := tolerance[T]()
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, s := range shapes {
			n, k := s.n, 3
			a := randomHPD[T](rng, n)
			b := randomDense[T](rng, n, k)
			name := fmt.Sprintf("%dx%d n=%d nb=%d seed=%d", pq[0], pq[1], n, s.nb, seed)
			da, err := dist.FromReplicated(g, n, n, s.nb, conv[T](a))
			if err != nil {
				t.Fatal(name, err)
			}
			db, err := dist.FromReplicated(g, n, k, s.nb, conv[T](b))
			if err != nil {
				t.Fatal(name, err)
			}
			before := append([]T(nil), da.Local...)
			gather := func(m *dist.Matrix[T]) []complex128 {
				full, err := m.Gather(-1)
				if err != nil {
					t.Fatal(name, err)
				}
				return widen(full)
			}
			check := func(op string, got, want []complex128) {
				if e := relErr(got, want); !(e <= tol) {
					t.Errorf("%s %s: relative error %.3g > %.3g", name, op, e, tol)
				}
			}

			l, err := dist.Cholesky(da)
			if err != nil {
				t.Fatal(name, err)
			}
			check("Cholesky", gather(l), refCholesky(a, n))
			x, err := dist.Potrs(da, db)
			if err != nil {
				t.Fatal(name, err)
			}
			want := refSolve(a, n, b, k)
			check("Potrs", gather(x), want)
			x, err = dist.CholSolve(l, db)
			if err != nil {
				t.Fatal(name, err)
			}
			check("CholSolve", gather(x), want)
			inv, err := dist.Potri(da)
			if err != nil {
				t.Fatal(name, err)
			}
			check("Potri", gather(inv), refSolve(a, n, identity(n), n))
			ld, err := dist.LogDet(da)
			if err != nil {
				t.Fatal(name, err)
			}
			lr, wantLD := refCholesky(a, n), 0.0
			for i := range n {
				wantLD += 2 * math.Log(real(lr[i+i*n]))
			}
			if d := math.Abs(ld - wantLD); !(d <= tol*max(1, math.Abs(wantLD))) {
				t.Errorf("%s LogDet = %v, want %v", name, ld, wantLD)
			}
			w, z, err := dist.Syevd(da, true)
			if err != nil {
				t.Fatal(name, err)
			}
			checkEigen(t, name, a, n, w, gather(z), tol)
			w2, z2, err := dist.Syevd(da, false)
			if err != nil || z2 != nil {
				t.Fatal(name, "values only:", err, z2 != nil)
			}
			for i := range w {
				if math.Abs(w[i]-w2[i]) > tol*max(1, math.Abs(w[i])) {
					t.Errorf("%s Syevd values only: w[%d] = %v, with vectors %v", name, i, w2[i], w[i])
				}
			}
			sameOnEveryRank(t, name+" Syevd", w)
			for i := range before {
				if before[i] != da.Local[i] {
					t.Fatalf("%s: the input changed", name)
				}
			}
		}
	}
}

// checkEigen checks A·Z = Z·diag(w), Zᴴ·Z = I and w ascending.
func checkEigen(t *testing.T, name string, a []complex128, n int, w []float64, z []complex128, tol float64) {
	t.Helper()
	az, zw, zz := make([]complex128, n*n), make([]complex128, n*n), make([]complex128, n*n)
	for j := range n {
		if j > 0 && w[j] < w[j-1] {
			t.Errorf("%s Syevd: eigenvalues not ascending: %v", name, w)
		}
		for i := range n {
			zw[i+j*n] = z[i+j*n] * complex(w[j], 0)
			for k := range n {
				az[i+j*n] += a[i+k*n] * z[k+j*n]
				zz[i+j*n] += cmplx.Conj(z[k+i*n]) * z[k+j*n]
			}
		}
	}
	if e := relErr(az, zw); !(e <= 10*tol) {
		t.Errorf("%s Syevd: |A·Z − Z·diag(w)| = %.3g", name, e)
	}
	if e := relErr(zz, identity(n)); !(e <= 10*tol) {
		t.Errorf("%s Syevd: |Zᴴ·Z − I| = %.3g", name, e)
	}
}

func TestDataInOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 23))
	me, size := world.Rank(), world.Size()
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, s := range shapes {
			rows, cols := s.n+size, s.n
			full := conv[float64](randomDense[float64](rng, rows, cols))
			name := fmt.Sprintf("%dx%d %dx%d nb=%d", pq[0], pq[1], rows, cols, s.nb)
			ref, err := dist.FromReplicated(g, rows, cols, s.nb, full)
			if err != nil {
				t.Fatal(name, err)
			}
			root := size - 1
			var mine []float64
			if me == root {
				mine = full
			}
			fromRoot, err := dist.FromRoot(g, root, rows, cols, s.nb, mine)
			if err != nil {
				t.Fatal(name, err)
			}
			// Uneven bands: rank r holds rows [start(r), start(r+1)); the
			// last rank none when there are enough ranks.
			start := func(r int) int { return min(rows, r*(rows/size+1)) }
			r0, r1 := start(me), start(me+1)
			band := make([]float64, (r1-r0)*cols)
			for j := range cols {
				copy(band[j*(r1-r0):], full[r0+j*rows:r1+j*rows])
			}
			fromBands, err := dist.FromRowBlocks(g, cols, s.nb, r1-r0, band)
			if err != nil {
				t.Fatal(name, err)
			}
			for i := range ref.Local {
				if fromRoot.Local[i] != ref.Local[i] || fromBands.Local[i] != ref.Local[i] {
					t.Fatalf("%s: local element %d: from root %v, from row blocks %v, want %v", name, i, fromRoot.Local[i], fromBands.Local[i], ref.Local[i])
				}
			}
			back, err := fromBands.Gather(0)
			if err != nil {
				t.Fatal(name, err)
			}
			if (me == 0) != (back != nil) {
				t.Fatalf("%s: Gather(0) on rank %d returned %d elements", name, me, len(back))
			}
			for i := range back {
				if back[i] != full[i] {
					t.Fatalf("%s: Gather(0) element %d = %v, want %v", name, i, back[i], full[i])
				}
			}
		}
	}
}

func TestErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 29))
	me, size := world.Rank(), world.Size()
	_, err := dist.NewGrid(world, size+1, 1)
	errorsAgree(t, err)
	if !errors.Is(err, dist.ErrBadInput) {
		t.Errorf("NewGrid(%d, 1) on %d ranks: %v", size+1, size, err)
	}
	_, err = dist.NewGrid(world, 1+me%2, size)
	errorsAgree(t, err)
	if size > 1 && !errors.Is(err, dist.ErrMismatch) {
		t.Errorf("NewGrid with different grids per rank: %v", err)
	}
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		n, nb := 9, 2
		a := randomHPD[float64](rng, n)
		name := fmt.Sprintf("%dx%d", pq[0], pq[1])

		// Not positive definite from row 6 on (order 6 fails).
		bad := append([]complex128(nil), a...)
		bad[5+5*n] = -1
		da, err := dist.FromReplicated(g, n, n, nb, conv[float64](bad))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			op  string
			run func() error
		}{
			{"Cholesky", func() error { _, err := dist.Cholesky(da); return err }},
			{"Potri", func() error { _, err := dist.Potri(da); return err }},
			{"LogDet", func() error { _, err := dist.LogDet(da); return err }},
		} {
			op, err := c.op, c.run()
			errorsAgree(t, err)
			if !errors.Is(err, dist.ErrNotPositiveDefinite) || !containsOrder(err, 6) {
				t.Errorf("%s %s of a matrix failing at order 6: %v", name, op, err)
			}
		}

		// NaN on one rank's part only.
		nan, err := dist.FromReplicated(g, n, n, nb, conv[float64](a))
		if err != nil {
			t.Fatal(err)
		}
		if me == size-1 && len(nan.Local) > 0 {
			nan.Local[len(nan.Local)-1] = math.NaN()
		}
		_, err = dist.Cholesky(nan)
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrNonFinite) {
			t.Errorf("%s Cholesky with a NaN: %v", name, err)
		}

		// Ranks disagree on the block size.
		_, err = dist.FromReplicated(g, n, n, nb+me%2, conv[float64](a))
		errorsAgree(t, err)
		if size > 1 && !errors.Is(err, dist.ErrMismatch) {
			t.Errorf("%s FromReplicated with different block sizes: %v", name, err)
		}

		// Wrong right-hand side.
		good, _ := dist.FromReplicated(g, n, n, nb, conv[float64](a))
		rhs, _ := dist.FromReplicated(g, n+1, 2, nb, make([]float64, (n+1)*2))
		_, err = dist.Potrs(good, rhs)
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrBadInput) {
			t.Errorf("%s Potrs with %d rows for %d: %v", name, n+1, n, err)
		}
	}
}

// containsOrder says whether err names the failing minor of order k.
func containsOrder(err error, k int) bool {
	return err != nil && strings.Contains(err.Error(), fmt.Sprintf("order %d ", k))
}

func TestFillSumDot(t *testing.T) {
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, s := range shapes {
			rows, cols := s.n+2, s.n
			name := fmt.Sprintf("%dx%d %dx%d nb=%d", pq[0], pq[1], rows, cols, s.nb)
			m, err := dist.NewMatrix[complex128](g, rows, cols, s.nb)
			if err != nil {
				t.Fatal(name, err)
			}
			m.Fill(func(r, c int) complex128 { return complex(float64(r), float64(c)) })
			full, err := m.Gather(-1)
			if err != nil {
				t.Fatal(name, err)
			}
			wantSum, wantDot := 0.0, 0.0
			for c := range cols {
				for r := range rows {
					if full[r+c*rows] != complex(float64(r), float64(c)) {
						t.Fatalf("%s: element (%d,%d) = %v after Fill", name, r, c, full[r+c*rows])
					}
					wantSum += float64(r * c)
					wantDot += float64(r*r + c*c)
				}
			}
			sum, err := m.Sum(func(r, c int, v complex128) float64 { return real(v) * imag(v) })
			if err != nil || sum != wantSum {
				t.Errorf("%s: Sum = %v, %v; want %v", name, sum, err, wantSum)
			}
			dot, err := dist.Dot(m, m)
			if err != nil || dot != wantDot {
				t.Errorf("%s: Dot = %v, %v; want %v", name, dot, err, wantDot)
			}
		}
	}
}
