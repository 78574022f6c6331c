//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/kernels"
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
var shapes = []struct{ n, nb int }{{1, 1}, {5, 2}, {6, 4}, {7, 3}, {13, 4}, {24, 5}, {3, 64}, {9, 64}, {33, 64}}

func TestOps(t *testing.T) {
	eachDtype(t, "", testOps[float32], testOps[float64], testOps[complex64], testOps[complex128])
}

// eachDtype runs the float32, float64, complex64 and complex128 instances
// of a generic test as subtests named prefix + dtype.
func eachDtype(t *testing.T, prefix string, f32, f64, c64, c128 func(*testing.T)) {
	t.Run(prefix+"float32", f32)
	t.Run(prefix+"float64", f64)
	t.Run(prefix+"complex64", c64)
	t.Run(prefix+"complex128", c128)
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
			own := da.Clone()
			if lp, err := dist.CholeskyInPlace(own); err != nil || lp != own || !sameBits(lp.Local, l.Local) {
				t.Errorf("%s CholeskyInPlace: %v; returned its input %v; the same elements as Cholesky's %v", name, err, lp == own, err == nil && sameBits(lp.Local, l.Local))
			}
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
			x, err = dist.PotrsFromFactor(l, db)
			if err != nil {
				t.Fatal(name, err)
			}
			check("PotrsFromFactor", gather(x), want)
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
			if ldl, err := dist.LogDetFromFactor(l); err != nil || ldl != ld {
				t.Errorf("%s LogDetFromFactor = %v, %v; LogDet %v", name, ldl, err, ld)
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

// TestDataInOut checks FromRoot, FromRowBlocks and Gather against
// FromReplicated and the full matrix, element for element, and their
// row-major variants (and FromReplicatedRowMajor) against the same, from
// and into the row-major copy of the matrix, and RowBlock against the
// bands, through each way of moving the data (the sum over MPI, p?gemr2d
// and the rule's choice), for every dtype, with bands that are the block
// split of the rows (which p?gemr2d takes) and bands that are not (which
// reband turns into it first, and back), ranks with no rows among them.
func TestDataInOut(t *testing.T) {
	for _, mv := range []struct {
		name string
		m    dist.Moves
	}{{"sum", dist.SumMoves}, {"gemr2d", dist.Gemr2dMoves}, {"auto", dist.AutoMoves}} {
		restore := dist.SetMoves(mv.m)
		eachDtype(t, mv.name+"/", testDataInOut[float32], testDataInOut[float64], testDataInOut[complex64], testDataInOut[complex128])
		restore()
	}
}

// transpose is the rows×cols column-major cm in row-major order.
func transpose[T any](cm []T, rows, cols int) []T {
	rm := make([]T, len(cm))
	for i := range rows {
		for j := range cols {
			rm[i*cols+j] = cm[i+j*rows]
		}
	}
	return rm
}

// inOut are the ways in and out of the distribution in one storage order:
// the column-major functions, or the row-major ones.
type inOut[T dist.Scalar] struct {
	order          string
	fromReplicated func(g *dist.Grid, rows, cols, nb int, full []T) (*dist.Matrix[T], error)
	fromRoot       func(g *dist.Grid, root, rows, cols, nb int, full []T) (*dist.Matrix[T], error)
	fromRowBlocks  func(g *dist.Grid, cols, nb int, rows int, band []T) (*dist.Matrix[T], error)
	gather         func(m *dist.Matrix[T], root int) ([]T, error)
	// band is rows r0 to r1 of the rows×cols matrix whole (in this order)
	// in this order.
	band func(whole []T, rows, cols, r0, r1 int) []T
}

func inOuts[T dist.Scalar]() []inOut[T] {
	return []inOut[T]{{
		order:          "column-major",
		fromReplicated: dist.FromReplicated[T],
		fromRoot:       dist.FromRoot[T],
		fromRowBlocks:  dist.FromRowBlocks[T],
		gather:         (*dist.Matrix[T]).Gather,
		band: func(whole []T, rows, cols, r0, r1 int) []T {
			band := make([]T, (r1-r0)*cols)
			for j := range cols {
				copy(band[j*(r1-r0):], whole[r0+j*rows:r1+j*rows])
			}
			return band
		},
	}, {
		order:          "row-major",
		fromReplicated: dist.FromReplicatedRowMajor[T],
		fromRoot:       dist.FromRootRowMajor[T],
		fromRowBlocks:  dist.FromRowBlocksRowMajor[T],
		gather:         (*dist.Matrix[T]).GatherRowMajor,
		band: func(whole []T, rows, cols, r0, r1 int) []T {
			return slices.Clone(whole[r0*cols : r1*cols])
		},
	}}
}

func testDataInOut[T dist.Scalar](t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 23))
	me, size := world.Rank(), world.Size()
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		// And blocks larger than copyTransposed's tiles.
		for _, s := range append(shapes, struct{ n, nb int }{70, 40}) {
			rows, cols := s.n+size, s.n
			cm := conv[T](randomDense[T](rng, rows, cols))
			// Negative zeros, which a float sum of the parts turned into +0.
			negZero := conv[T]([]complex128{complex(math.Copysign(0, -1), math.Copysign(0, -1))})[0]
			for i := 0; i < len(cm); i += 5 {
				cm[i] = negZero
			}
			ref, err := dist.FromReplicated(g, rows, cols, s.nb, cm)
			if err != nil {
				t.Fatal(err)
			}
			for _, io := range inOuts[T]() {
				name := fmt.Sprintf("%dx%d %dx%d nb=%d %s seed=%d", pq[0], pq[1], rows, cols, s.nb, io.order, seed)
				full := cm
				if io.order == "row-major" {
					full = transpose(cm, rows, cols)
				}
				same := func(what string, m *dist.Matrix[T]) {
					t.Helper()
					for i := range ref.Local {
						if !identical(m.Local[i], ref.Local[i]) {
							t.Fatalf("%s %s: local element %d = %v, want %v", name, what, i, m.Local[i], ref.Local[i])
						}
					}
				}
				m, err := io.fromReplicated(g, rows, cols, s.nb, full)
				if err != nil {
					t.Fatal(name, err)
				}
				same("FromReplicated", m)
				for _, root := range []int{0, size - 1} {
					var mine []T
					if me == root {
						mine = full
					}
					m, err := io.fromRoot(g, root, rows, cols, s.nb, mine)
					if err != nil {
						t.Fatal(name, err)
					}
					same(fmt.Sprintf("FromRoot(%d)", root), m)
				}
				for _, bands := range bandSplits(rows, size) {
					r0, r1 := bands.start(me), bands.start(me+1)
					m, err := io.fromRowBlocks(g, cols, s.nb, r1-r0, io.band(full, rows, cols, r0, r1))
					if err != nil {
						t.Fatal(name, err)
					}
					same("FromRowBlocks, "+bands.what, m)
					if io.order != "column-major" {
						continue
					}
					// And back: RowBlock gives column-major bands.
					back, err := ref.RowBlock(r1 - r0)
					if err != nil {
						t.Fatal(name, err)
					}
					if want := io.band(full, rows, cols, r0, r1); !slices.EqualFunc(back, want, identical[T]) {
						t.Fatalf("%s: RowBlock, %s: rank %d got %v, want %v", name, bands.what, me, back, want)
					}
				}
				for _, root := range []int{0, size - 1, -1} {
					back, err := io.gather(ref, root)
					if err != nil {
						t.Fatal(name, err)
					}
					if (me == root || root < 0) != (back != nil) {
						t.Fatalf("%s: Gather(%d) on rank %d returned %d elements", name, root, me, len(back))
					}
					for i := range back {
						if !identical(back[i], full[i]) {
							t.Fatalf("%s: Gather(%d) element %d = %v, want %v", name, root, i, back[i], full[i])
						}
					}
				}
			}
		}
	}
}

// bandSplit is a way of splitting the rows into bands: rank r's band
// starts at row start(r), start(size) is the number of rows.
type bandSplit struct {
	what  string
	start func(int) int
}

// bandSplits are ways of splitting rows over size ranks into bands, each
// by the first row of rank r's band (r = 0 … size): the block split of
// FromRowBlocks' p?gemr2d path (⌈rows/size⌉ each, the last ranks fewer or
// none) and ones that are not: a data loader's (sizes differing by one,
// the first ranks larger), rank r holding r+1 rows (the last the rest),
// none on rank 0, and all on the last rank.
func bandSplits(rows, size int) []bandSplit {
	return []bandSplit{
		{"block split", func(r int) int { return min(rows, r*(rows/size+1)) }},
		{"loader", func(r int) int { return r*(rows/size) + min(r, rows%size) }},
		{"uneven", func(r int) int {
			if r == size {
				return rows
			}
			return min(rows, r*(r+1)/2)
		}},
		{"none on rank 0", func(r int) int {
			if size == 1 {
				return r * rows
			}
			return max(0, r-1) * rows / (size - 1)
		}},
		{"all on the last rank", func(r int) int {
			if r == size {
				return rows
			}
			return 0
		}},
	}
}

// TestDataInNonFinite checks that NaN or Inf in the input of FromReplicated,
// FromRoot and FromRowBlocks, column- or row-major, in the part one rank
// holds or owns (every element in turn for a small matrix), fails with
// ErrNonFinite on every rank, through each way of moving the data, and
// leaves the input as it was.
func TestDataInNonFinite(t *testing.T) {
	for _, mv := range []struct {
		name string
		m    dist.Moves
	}{{"sum", dist.SumMoves}, {"gemr2d", dist.Gemr2dMoves}} {
		restore := dist.SetMoves(mv.m)
		eachDtype(t, mv.name+"/", testDataInNonFinite[float32], testDataInNonFinite[float64],
			testDataInNonFinite[complex64], testDataInNonFinite[complex128])
		restore()
	}
}

func testDataInNonFinite[T dist.Scalar](t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 47))
	me, size := world.Rank(), world.Size()
	rows, cols, nb := 5+size, 4, 2
	good := conv[T](randomDense[T](rng, rows, cols))
	bads := conv[T]([]complex128{complex(math.NaN(), 0), complex(math.Inf(-1), 0)})
	if isComplex[T]() {
		bads = append(bads, conv[T]([]complex128{complex(1, math.Inf(1))})...)
	}
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, io := range inOuts[T]() {
			for pos := range good {
				bad := bads[pos%len(bads)]
				full := slices.Clone(good)
				full[pos] = bad
				r := pos % rows // the bad element's row, for either order
				if io.order == "row-major" {
					r = pos / cols
				}
				before := slices.Clone(full)
				name := fmt.Sprintf("%dx%d %s, %v at %d seed=%d", pq[0], pq[1], io.order, bad, pos, seed)
				check := func(what string, err error, input []T, was []T) {
					t.Helper()
					errorsAgree(t, err)
					if !errors.Is(err, dist.ErrNonFinite) {
						t.Errorf("%s %s: %v", name, what, err)
					}
					if !sameBits(input, was) {
						t.Errorf("%s %s: the input changed", name, what)
					}
				}
				_, err := io.fromReplicated(g, rows, cols, nb, full)
				check("FromReplicated", err, full, before)
				root := pos % size
				var mine []T
				if me == root {
					mine = full
				}
				_, err = io.fromRoot(g, root, rows, cols, nb, mine)
				check(fmt.Sprintf("FromRoot(%d)", root), err, full, before)
				// The block split of the rows; the bad row on one rank.
				per := (rows + size - 1) / size
				r0, r1 := min(rows, me*per), min(rows, (me+1)*per)
				band := io.band(full, rows, cols, r0, r1)
				was := slices.Clone(band)
				_, err = io.fromRowBlocks(g, cols, nb, r1-r0, band)
				check(fmt.Sprintf("FromRowBlocks (row %d on rank %d)", r, r/per), err, band, was)
			}
		}
	}
}

// TestFromReplicatedLower: NaN or Inf strictly above the diagonal is not an
// error (that triangle is not read) and the distributed matrix holds zeros
// there; on or below the diagonal it is ErrNonFinite on every rank. Both
// orders; the input is left as it was.
func TestFromReplicatedLower(t *testing.T) {
	eachDtype(t, "", testFromReplicatedLower[float32], testFromReplicatedLower[float64],
		testFromReplicatedLower[complex64], testFromReplicatedLower[complex128])
}

func testFromReplicatedLower[T dist.Scalar](t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 53))
	n, nb := 7, 2
	good := conv[T](randomHPD[T](rng, n)) // column-major
	lowerOf := slices.Clone(good)
	for c := range n {
		clear(lowerOf[c*n : c*n+c])
	}
	bad := conv[T]([]complex128{complex(math.NaN(), 0)})[0]
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, o := range []struct {
			order string
			from  func(g *dist.Grid, n, nb int, full []T) (*dist.Matrix[T], error)
			index func(r, c int) int
		}{
			{"column-major", dist.FromReplicatedLower[T], func(r, c int) int { return r + c*n }},
			{"row-major", dist.FromReplicatedLowerRowMajor[T], func(r, c int) int { return r*n + c }},
		} {
			stored := make([]T, n*n) // good in o's order
			for r := range n {
				for c := range n {
					stored[o.index(r, c)] = good[r+c*n]
				}
			}
			for pos := -1; pos < n*n; pos++ { // −1: no bad element
				full := slices.Clone(stored)
				r, c := -1, -1
				if pos >= 0 {
					r, c = pos%n, pos/n
					full[o.index(r, c)] = bad
				}
				before := slices.Clone(full)
				name := fmt.Sprintf("%dx%d %s, NaN at (%d,%d) seed=%d", pq[0], pq[1], o.order, r, c, seed)
				m, err := o.from(g, n, nb, full)
				errorsAgree(t, err)
				if !sameBits(full, before) {
					t.Errorf("%s: the input changed", name)
				}
				if r >= c && pos >= 0 {
					if !errors.Is(err, dist.ErrNonFinite) {
						t.Errorf("%s: %v, want ErrNonFinite", name, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				got, err := m.Gather(0)
				if err != nil {
					t.Fatal(err)
				}
				if world.Rank() == 0 && !sameBits(got, lowerOf) {
					t.Errorf("%s: not the lower triangle with zeros above it", name)
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
	// p·q that wraps round to the size in Go's int, with p or q beyond a
	// C int: BLACS aborted the job.
	for _, pq := range [][2]int{{0x6DB6DB6DB6DB6DB7 * size, 7}, {7, 0x6DB6DB6DB6DB6DB7 * size}} {
		_, err := dist.NewGrid(world, pq[0], pq[1])
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrBadInput) {
			t.Errorf("NewGrid(%d, %d), whose product wraps to %d: %v", pq[0], pq[1], pq[0]*pq[1], err)
		}
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
			{"CholeskyInPlace", func() error { _, err := dist.CholeskyInPlace(da.Clone()); return err }},
			{"Potri", func() error { _, err := dist.Potri(da); return err }},
			{"LogDet", func() error { _, err := dist.LogDet(da); return err }},
		} {
			op, err := c.op, c.run()
			errorsAgree(t, err)
			if !errors.Is(err, dist.ErrNotPositiveDefinite) || !containsOrder(err, 6) {
				t.Errorf("%s %s of a matrix failing at order 6: %v", name, op, err)
			}
		}

		// NaN on one rank's part only, in the lower triangle (which is read).
		nan, err := dist.FromReplicated(g, n, n, nb, conv[float64](a))
		if err != nil {
			t.Fatal(err)
		}
		if holder, at := lastPlace(t, nan, func(r, c int) bool { return r >= c }); holder {
			nan.Local[at] = math.NaN()
		}
		_, err = dist.Cholesky(nan)
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrNonFinite) {
			t.Errorf("%s Cholesky with a NaN: %v", name, err)
		}

		// Ranks disagree on the block size.
		_, err = dist.FromReplicated(g, n, n, nb+me%2, conv[float64](a))
		errorsAgree(t, err)
		if want := fmt.Sprintf("ranks disagree on the block size (from %d to %d)", nb, nb+1); size > 1 && (!errors.Is(err, dist.ErrMismatch) || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s FromReplicated with different block sizes: %v, want ErrMismatch saying %q", name, err, want)
		}
		// Ranks disagree on the element type.
		if me%2 == 0 {
			_, err = dist.FromReplicated(g, n, n, nb, conv[float64](a))
		} else {
			_, err = dist.FromReplicated(g, n, n, nb, conv[float32](a))
		}
		errorsAgree(t, err)
		if want := "ranks disagree on the element type (from float32 to float64)"; size > 1 && (!errors.Is(err, dist.ErrMismatch) || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s FromReplicated with different element types: %v, want ErrMismatch saying %q", name, err, want)
		}

		// A block size beyond ScaLAPACK's C int (2³²+3 was cut to 3 there,
		// while the Go layout kept every column on one process column).
		for _, huge := range []int{1<<32 + 3, math.MaxInt32 + 1} {
			_, err = dist.FromReplicated(g, n, n, huge, conv[float64](a))
			errorsAgree(t, err)
			if !errors.Is(err, dist.ErrBadInput) {
				t.Errorf("%s FromReplicated with block size %d: %v", name, huge, err)
			}
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

// TestRowBandErrors checks that bad band counts in FromRowBlocks and
// RowBlock (a band's length not its rows·cols, a negative count, counts
// that do not add up to the matrix's rows, no rows at all) fail with
// ErrBadInput on every rank, through each way of moving the data, and
// change neither the band nor the matrix.
func TestRowBandErrors(t *testing.T) {
	me, size := world.Rank(), world.Size()
	rows, cols, nb := 7, 3, 2
	for _, mv := range []struct {
		name string
		m    dist.Moves
	}{{"sum", dist.SumMoves}, {"gemr2d", dist.Gemr2dMoves}} {
		restore := dist.SetMoves(mv.m)
		for _, pq := range grids() {
			g := newGrid(t, pq[0], pq[1])
			full := make([]float64, rows*cols)
			for i := range full {
				full[i] = float64(i + 1)
			}
			m, err := dist.FromReplicated(g, rows, cols, nb, full)
			if err != nil {
				t.Fatal(err)
			}
			was := slices.Clone(m.Local)
			// The loader split: uneven, so the band moves through reband.
			r0, r1 := me*(rows/size)+min(me, rows%size), (me+1)*(rows/size)+min(me+1, rows%size)
			band := make([]float64, (r1-r0)*cols)
			for i := range band {
				band[i] = float64(-i)
			}
			before := slices.Clone(band)
			last := me == size-1
			for _, c := range []struct {
				what string
				run  func() error
			}{
				{"FromRowBlocks, a band one element short on the last rank", func() error {
					b := band
					if last {
						b = band[:len(band)-1]
					}
					_, err := dist.FromRowBlocks(g, cols, nb, r1-r0, b)
					return err
				}},
				{"FromRowBlocks, -1 rows on the last rank", func() error {
					n := r1 - r0
					if last {
						n = -1
					}
					_, err := dist.FromRowBlocksRowMajor(g, cols, nb, n, band[:max(n, 0)*cols])
					return err
				}},
				{"FromRowBlocks, no rows at all", func() error {
					_, err := dist.FromRowBlocks[float64](g, cols, nb, 0, nil)
					return err
				}},
				{"RowBlock, one row too many on the last rank", func() error {
					n := r1 - r0
					if last {
						n++
					}
					_, err := m.RowBlock(n)
					return err
				}},
				{"RowBlock, -1 rows on rank 0", func() error {
					n := r1 - r0
					if me == 0 {
						n = -1
					}
					_, err := m.RowBlock(n)
					return err
				}},
			} {
				err := c.run()
				name := fmt.Sprintf("%s %dx%d %s", mv.name, pq[0], pq[1], c.what)
				errorsAgree(t, err)
				if !errors.Is(err, dist.ErrBadInput) {
					t.Errorf("%s: %v", name, err)
				}
				if !slices.Equal(band, before) || !slices.Equal(m.Local, was) {
					t.Errorf("%s: the band or the matrix changed", name)
				}
			}
		}
		restore()
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

// TestScratch checks the grid's scratch array: results stay right, inputs
// untouched and earlier results unchanged while the ops reuse it across
// shapes (smaller, larger) and element types; Close drops it, and a closed
// grid's operations fail alike on every rank.
func TestScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 31))
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type kept struct {
		check func() // fails unless an earlier result is still what it was
	}
	var earlier []kept
	steps := []struct {
		dtype string
		n, nb int
	}{{"float64", 13, 4}, {"float64", 7, 3}, {"float64", 24, 5}, {"complex128", 9, 2}, {"float64", 11, 3}, {"float32", 6, 4}}
	for _, s := range steps {
		name := fmt.Sprintf("%s n=%d nb=%d seed=%d", s.dtype, s.n, s.nb, seed)
		var check func()
		switch s.dtype {
		case "float32":
			check = scratchStep[float32](t, rng, g, name, s.n, s.nb)
		case "float64":
			check = scratchStep[float64](t, rng, g, name, s.n, s.nb)
		default:
			check = scratchStep[complex128](t, rng, g, name, s.n, s.nb)
		}
		for _, k := range earlier {
			k.check()
		}
		earlier = append(earlier, kept{check})
	}
	a, err := dist.FromReplicated(g, 3, 3, 2, []float64{2, 0, 0, 0, 2, 0, 0, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n := dist.ScratchLen[float32](g); n != -1 {
		t.Errorf("after Close the grid still holds a scratch array of %d elements", n)
	}
	for _, c := range []struct {
		op  string
		run func() error
	}{
		{"Potrs", func() error { _, err := dist.Potrs(a, a); return err }},
		{"LogDet", func() error { _, err := dist.LogDet(a); return err }},
		{"Gather", func() error { _, err := a.Gather(-1); return err }},
		{"NewMatrix", func() error { _, err := dist.NewMatrix[float64](g, 2, 2, 1); return err }},
	} {
		err := c.run()
		errorsAgree(t, err)
		if !errors.Is(err, dist.ErrBadInput) || !strings.Contains(err.Error(), "closed") {
			t.Errorf("%s on a closed grid: %v", c.op, err)
		}
	}
}

// scratchStep runs Potrs, LogDet and Potri on a random n×n input on g,
// checks them, the input and the scratch array's size, and returns a check
// that the results are unchanged later.
func scratchStep[T dist.Scalar](t *testing.T, rng *rand.Rand, g *dist.Grid, name string, n, nb int) func() {
	t.Helper()
	tol := tolerance[T]()
	a := randomHPD[T](rng, n)
	b := randomDense[T](rng, n, 2)
	da, err := dist.FromReplicated(g, n, n, nb, conv[T](a))
	if err != nil {
		t.Fatal(name, err)
	}
	db, err := dist.FromReplicated(g, n, 2, nb, conv[T](b))
	if err != nil {
		t.Fatal(name, err)
	}
	before := slices.Clone(da.Local)
	prev := dist.ScratchLen[T](g)
	x, err := dist.Potrs(da, db)
	if err != nil {
		t.Fatal(name, err)
	}
	// A rank that holds nothing of a needs no scratch array.
	if got := dist.ScratchLen[T](g); len(da.Local) > 0 && (got < len(da.Local) || (prev >= len(da.Local) && got != prev)) {
		t.Errorf("%s: scratch array of %d elements after Potrs (before: %d) for %d local elements", name, got, prev, len(da.Local))
	}
	inv, err := dist.Potri(da)
	if err != nil {
		t.Fatal(name, err)
	}
	ld, err := dist.LogDet(da)
	if err != nil {
		t.Fatal(name, err)
	}
	if !slices.Equal(before, da.Local) {
		t.Fatalf("%s: the input changed", name)
	}
	lr, wantLD := refCholesky(a, n), 0.0
	for i := range n {
		wantLD += 2 * math.Log(real(lr[i+i*n]))
	}
	if d := math.Abs(ld - wantLD); !(d <= tol*max(1, math.Abs(wantLD))) {
		t.Errorf("%s: LogDet = %v, want %v", name, ld, wantLD)
	}
	wantX, wantInv := refSolve(a, n, b, 2), refSolve(a, n, identity(n), n)
	xs, invs := slices.Clone(x.Local), slices.Clone(inv.Local)
	check := func() {
		t.Helper()
		if !slices.Equal(xs, x.Local) || !slices.Equal(invs, inv.Local) {
			t.Fatalf("%s: a later op changed this result", name)
		}
		for _, r := range []struct {
			what string
			got  *dist.Matrix[T]
			want []complex128
		}{{"Potrs", x, wantX}, {"Potri", inv, wantInv}} {
			full, err := r.got.Gather(-1)
			if err != nil {
				t.Fatal(name, err)
			}
			if e := relErr(widen(full), r.want); !(e <= tol) {
				t.Errorf("%s %s: relative error %.3g > %.3g", name, r.what, e, tol)
			}
		}
	}
	check()
	return check
}

// TestNonFinite checks that a NaN or Inf in one rank's part of either
// operand, for every dtype, makes every op fail with ErrNonFinite on every
// rank and leaves the operands as they were.
func TestNonFinite(t *testing.T) {
	eachDtype(t, "", testNonFinite[float32], testNonFinite[float64], testNonFinite[complex64], testNonFinite[complex128])
}

func testNonFinite[T dist.Scalar](t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 37))
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		n, nb := 9, 2
		a := conv[T](randomHPD[T](rng, n))
		b := conv[T](randomDense[T](rng, n, 3))
		da, err := dist.FromReplicated(g, n, n, nb, a)
		if err != nil {
			t.Fatal(err)
		}
		db, err := dist.FromReplicated(g, n, 3, nb, b)
		if err != nil {
			t.Fatal(err)
		}
		l, err := dist.Cholesky(da)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			op    string
			bad   *dist.Matrix[T]
			lower bool // only bad's lower triangle is read
			run   func() ([]T, error)
		}{
			{"Cholesky", da, true, func() ([]T, error) { return whole(dist.Cholesky(da)) }},
			{"CholeskyInPlace", da, true, func() ([]T, error) {
				x := da.Clone()
				r, err := dist.CholeskyInPlace(x)
				if err != nil && !sameBits(x.Local, da.Local) {
					t.Errorf("CholeskyInPlace changed its input with %v", err)
				}
				return whole(r, err)
			}},
			{"Potrs (A)", da, true, func() ([]T, error) { return whole(dist.Potrs(da, db)) }},
			{"Potrs (B)", db, false, func() ([]T, error) { return whole(dist.Potrs(da, db)) }},
			{"CholSolve (L)", l, true, func() ([]T, error) { return whole(dist.CholSolve(l, db)) }},
			{"CholSolve (B)", db, false, func() ([]T, error) { return whole(dist.CholSolve(l, db)) }},
			{"InverseFromFactor", l, true, func() ([]T, error) { return whole(dist.InverseFromFactor(l)) }},
			{"LogDet", da, true, func() ([]T, error) { d, err := dist.LogDet(da); return conv[T]([]complex128{complex(d, 0)}), err }},
			{"Potri", da, true, func() ([]T, error) { return whole(dist.Potri(da)) }},
			{"Syevd", da, true, func() ([]T, error) {
				w, z, err := dist.Syevd(da, true)
				v, err := whole(z, err)
				return append(conv[T](widen(w)), v...), err
			}},
		} {
			clean, err := c.run()
			if err != nil {
				t.Fatalf("%dx%d %s: %v", pq[0], pq[1], c.op, err)
			}
			for _, bad := range []complex128{complex(math.NaN(), 0), complex(math.Inf(1), 0), complex(0, math.Inf(-1))} {
				if imag(bad) != 0 && !isComplex[T]() {
					continue
				}
				// Where the bad entry goes: anywhere in a general operand; in
				// an operand read by its lower triangle, below the diagonal
				// (an error) or above it (not read: the clean result).
				places := map[bool][]string{false: {"anywhere"}, true: {"below", "above"}}[c.lower]
				for _, place := range places {
					name := fmt.Sprintf("%dx%d %s with %v %s the diagonal, seed=%d", pq[0], pq[1], c.op, bad, place, seed)
					holder, at := lastPlace(t, c.bad, func(r, col int) bool {
						return place == "anywhere" || place == "below" && r > col || place == "above" && r < col
					})
					var old T
					if holder {
						old = c.bad.Local[at]
						c.bad.Local[at] = conv[T]([]complex128{bad})[0]
					}
					before := [][]T{slices.Clone(da.Local), slices.Clone(db.Local), slices.Clone(l.Local)}
					got, err := c.run()
					errorsAgree(t, err)
					if place == "above" {
						if err != nil {
							t.Errorf("%s: %v", name, err)
						} else if e := relErr(widen(got), widen(clean)); e > tolerance[T]() {
							t.Errorf("%s: the result is %.2g away from that without it", name, e)
						}
					} else if !errors.Is(err, dist.ErrNonFinite) {
						t.Errorf("%s: %v, want ErrNonFinite", name, err)
					}
					if !sameBits(before[0], da.Local) || !sameBits(before[1], db.Local) || !sameBits(before[2], l.Local) {
						t.Errorf("%s: an operand changed", name)
					}
					if holder {
						c.bad.Local[at] = old
					}
				}
			}
		}
	}
}

// whole is m gathered on rank 0 (nil on the others), and err.
func whole[T dist.Scalar](m *dist.Matrix[T], err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return m.Gather(0)
}

// lastPlace reports whether this rank is the highest that holds an element
// of m at a global (row, column) that at accepts, and that element's local
// index. The test fails if no rank holds one.
func lastPlace[T dist.Scalar](t *testing.T, m *dist.Matrix[T], at func(r, c int) bool) (holder bool, local int) {
	t.Helper()
	prow, pcol := m.Grid.Coords()
	p, q := m.Grid.Shape()
	lr, lc := m.LocalShape()
	local = -1
	for j := range lc {
		for i := range lr {
			if at(cyclic.IndexGlobal(i, m.Layout.MB, prow, p), cyclic.IndexGlobal(j, m.Layout.NB, pcol, q)) {
				local = i + j*m.LLD()
			}
		}
	}
	r, got := -1.0, []float64{0}
	if local >= 0 {
		r = float64(world.Rank())
	}
	if err := world.Do(call(collective.AllReduce, collective.Max, []float64{r}, got)); err != nil {
		t.Fatal(err)
	}
	if got[0] < 0 {
		t.Fatal("no rank holds such an element")
	}
	return int(got[0]) == world.Rank(), local
}

// sameBits reports whether xs and ys hold the same values, NaN matching NaN.
// identical reports whether x and y have the same bits (−0 is not +0).
func identical[T dist.Scalar](x, y T) bool {
	bx := unsafe.Slice((*byte)(unsafe.Pointer(&x)), unsafe.Sizeof(x))
	by := unsafe.Slice((*byte)(unsafe.Pointer(&y)), unsafe.Sizeof(y))
	return string(bx) == string(by)
}

func sameBits[T dist.Scalar](xs, ys []T) bool {
	return slices.EqualFunc(xs, ys, func(x, y T) bool { return x == y || (x != x && y != y) })
}

// TestResultsBeyondRange: finite inputs whose result leaves the dtype's
// range (a solution of a right-hand side near the largest value, the
// inverse of a matrix with a subnormal pivot, eigenvalues of entries near
// the largest value) fail with ErrNonFinite on every rank, never a silent Inf.
func TestResultsBeyondRange(t *testing.T) {
	eachDtype(t, "", testResultsBeyondRange[float32], testResultsBeyondRange[float64], testResultsBeyondRange[complex64], testResultsBeyondRange[complex128])
}

func testResultsBeyondRange[T dist.Scalar](t *testing.T) {
	const n, nb = 5, 2
	huge := 1.7e308
	var zero T
	single := false
	switch any(zero).(type) {
	case float32, complex64:
		huge, single = 3e38, true
	}
	diag := func(d0 complex128) []complex128 {
		a := make([]complex128, n*n)
		for i := range n {
			a[i*n+i] = 1
		}
		a[0] = d0
		return a
	}
	full := make([]complex128, n*n)
	for i := range full {
		full[i] = complex(huge, 0)
	}
	rhs := make([]complex128, n)
	rhs[0] = complex(huge, 0)
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		matrix := func(rows, cols int, xs []complex128) *dist.Matrix[T] {
			m, err := dist.FromReplicated(g, rows, cols, nb, conv[T](xs))
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		cases := []struct {
			op  string
			run func() error
		}{
			{"Potrs", func() error { _, err := dist.Potrs(matrix(n, n, diag(0.5)), matrix(n, 1, rhs)); return err }},
			{"CholSolve", func() error {
				l, err := dist.Cholesky(matrix(n, n, diag(0.25)))
				if err != nil {
					return err
				}
				_, err = dist.CholSolve(l, matrix(n, 1, rhs))
				return err
			}},
			{"Syevd", func() error { _, _, err := dist.Syevd(matrix(n, n, full), false); return err }},
		}
		if !single {
			cases = append(cases, struct {
				op  string
				run func() error
			}{"Potri", func() error { _, err := dist.Potri(matrix(n, n, diag(1e-310))); return err }})
		}
		for _, c := range cases {
			err := c.run()
			errorsAgree(t, err)
			if !errors.Is(err, dist.ErrNonFinite) {
				t.Errorf("%dx%d %s: %v, want ErrNonFinite", pq[0], pq[1], c.op, err)
			}
		}
	}
}

// TestCholSolveSingularFactor: a zero on a given factor's diagonal is not
// positive definite with its order on every rank, as InverseFromFactor says
// (the solve used to run and report its Inf result as beyond the range).
func TestCholSolveSingularFactor(t *testing.T) {
	g := newGrid(t, 0, 0)
	l, err := dist.FromReplicated(g, 3, 3, 1, []float64{1, 0, 0, 0, 0, 0, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := dist.FromReplicated(g, 3, 1, 1, []float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct { // in the same order on every rank
		name string
		run  func() error
	}{
		{"CholSolve", func() error { _, err := dist.CholSolve(l, b); return err }},
		{"PotrsFromFactor", func() error { _, err := dist.PotrsFromFactor(l, b); return err }},
	} {
		name, err := c.name, c.run()
		errorsAgree(t, err)
		var npd *kernels.NotPositiveDefiniteError
		if !errors.As(err, &npd) || npd.Order != 2 {
			t.Errorf("%s: %v, want not positive definite at order 2", name, err)
		}
	}
}

// TestDifferentOps: ranks in different operations on matrices of the same
// shapes (rank 0 inverts, the others decompose or factor) get ErrMismatch
// naming both, on every rank, before ScaLAPACK pairs the two routines
// (they hung there, or ScaLAPACK refused its arguments); the grid works
// afterwards.
func TestDifferentOps(t *testing.T) {
	if world.Size() < 2 {
		t.Skip("needs 2 ranks")
	}
	rng := rand.New(rand.NewPCG(seed, 59))
	n, nb := 12, 4
	a := conv[float64](randomHPD[float64](rng, n))
	b := conv[float64](randomDense[float64](rng, n, 1))
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		da, err := dist.FromReplicated(g, n, n, nb, a)
		if err != nil {
			t.Fatal(err)
		}
		db, err := dist.FromReplicated(g, n, 1, nb, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, others := range []struct {
			name string
			run  func() error
		}{
			{"Syevd", func() error { _, _, err := dist.Syevd(da, true); return err }},
			{"Cholesky", func() error { _, err := dist.Cholesky(da); return err }},
			{"LogDet", func() error { _, err := dist.LogDet(da); return err }},
		} {
			var err error
			if world.Rank() == 0 {
				_, err = dist.Potri(da)
			} else {
				err = others.run()
			}
			// Each rank's text starts with its own op; the sentinel is the same.
			name := fmt.Sprintf("%dx%d Potri on rank 0, %s on the others", pq[0], pq[1], others.name)
			if !errors.Is(err, dist.ErrMismatch) || !strings.Contains(err.Error(), "Potri") || !strings.Contains(err.Error(), others.name) {
				t.Errorf("%s: %v, want ErrMismatch naming both", name, err)
			}
			if _, err := dist.Potrs(da, db); err != nil {
				t.Errorf("%s: the next Potrs: %v", name, err)
			}
		}
	}
}

// TestTwoGridsTwoGoroutines: two grids used from two goroutines at once
// (on a communicator each, or both on one) never crash or hang: a call
// either gives the right answer or, where the ranks' goroutines took their
// grids in different orders, fails with ErrTimeout, ErrMismatch or (on a
// grid whose communicator such a failure broke) ErrClosed. BLACS and
// ScaLAPACK are not thread-safe: the two crashed in pdpotrf or waited there
// for ever; and grids on one communicator paired their agreements and
// waited in each other's pdpotrf.
func TestTwoGridsTwoGoroutines(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("one communicator=%v", shared), func(t *testing.T) { twoGridsTwoGoroutines(t, shared) })
	}
}

func twoGridsTwoGoroutines(t *testing.T, shared bool) {
	const n, nb, rounds = 24, 4, 12
	// The ranks leave a crossed run at different times (a timeout here, an
	// ErrClosed there): meet on the world, whose timeout is long, before the
	// 2 s views split it (a Split timing out would break the world).
	if err := world.Do(&collective.Call{Kind: collective.Barrier, Name: "two grids"}); err != nil {
		t.Fatal(err)
	}
	var grids [2]*dist.Grid
	var comm *mpi.Comm
	for i := range grids {
		if comm == nil || !shared {
			view, err := mpi.World(mpi.WithTimeout(2 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			cs, err := view.Split(func(int) int { return 0 }, func(r int) int { return r })
			if err != nil {
				t.Fatal(err)
			}
			c := cs[0].(*mpi.Comm)
			t.Cleanup(func() { c.Close(); view.Close() })
			comm = c
		}
		var err error
		if grids[i], err = dist.NewGrid(comm, 0, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { grids[i].Close() })
	}
	rng := rand.New(rand.NewPCG(seed, 67))
	a := conv[float64](randomHPD[float64](rng, n))
	want, err := dist.FromReplicated(grids[0], n, n, nb, a)
	if err != nil {
		t.Fatal(err)
	}
	logDet, err := dist.LogDet(want)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok, failed [2]int
	for i, g := range grids {
		wg.Go(func() {
			if (i == 0) != (world.Rank() == 0) { // rank 0 starts with grid 0, the others with grid 1
				time.Sleep(200 * time.Millisecond)
			}
			for range rounds {
				m, err := dist.FromReplicated(g, n, n, nb, a)
				var got float64
				if err == nil {
					got, err = dist.LogDet(m)
				}
				switch {
				case err == nil && math.Abs(got-logDet) > 1e-9*math.Abs(logDet):
					t.Errorf("grid %d: log det %v, want %v", i, got, logDet)
				case err == nil:
					ok[i]++
				case errors.Is(err, collective.ErrTimeout), errors.Is(err, collective.ErrMismatch), errors.Is(err, collective.ErrClosed):
					failed[i]++
				default:
					t.Errorf("grid %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("rank %d: right answers %v, timeouts or mismatches %v", world.Rank(), ok, failed)
}

// TestParentClosedBeforeGrid: a grid works on after the caller closes the
// communicator it was made from (the grid's agreements and BLACS run on a
// Split of its own); through p?gemr2d, whose contexts are made on first
// use, it crashed (SIGSEGV in Cblacs_gridmap) once the grid agreed on its
// own communicator but kept BLACS on the caller's. Many grids made and
// closed keep working (the handles are freed).
func TestParentClosedBeforeGrid(t *testing.T) {
	restore := dist.SetMoves(dist.Gemr2dMoves)
	defer restore()
	const n, nb = 12, 4
	rng := rand.New(rand.NewPCG(seed, 73))
	a := conv[float64](randomHPD[float64](rng, n))
	for round := range 30 {
		cs, err := world.Split(func(int) int { return 0 }, func(r int) int { return r })
		if err != nil {
			t.Fatal(err)
		}
		parent := cs[0].(*mpi.Comm)
		g, err := dist.NewGrid(parent, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		parent.Close()
		var root []float64
		if world.Rank() == 0 {
			root = a
		}
		m, err := dist.FromRoot(g, 0, n, n, nb, root)
		if err != nil {
			t.Fatalf("round %d: FromRoot after the parent was closed: %v", round, err)
		}
		back, err := m.Gather(0)
		if err != nil {
			t.Fatalf("round %d: Gather: %v", round, err)
		}
		if world.Rank() == 0 && !slices.Equal(back, a) {
			t.Fatalf("round %d: the matrix came back changed", round)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMeet: Grid.Meet is nil where every rank meets in the same op, and
// ErrMismatch on every rank where the ranks name different ops or differ
// on whether the gradient was built; on two grids of one communicator each
// grid meets on its own (distops' barrier ran on the caller's communicator,
// where two grids' barriers could pair); a closed grid is ErrBadInput.
func TestMeet(t *testing.T) {
	a, b := newGrid(t, 0, 0), newGrid(t, 0, 0)
	if err := a.Meet("op", false); err != nil {
		t.Fatal(err)
	}
	if err := b.Meet("op", true); err != nil {
		t.Fatal(err)
	}
	last := world.Rank() == world.Size()-1
	for _, c := range []struct {
		name           string
		differentiated bool
	}{{"other op", false}, {"op", true}} {
		name, diff := "op", false
		if last {
			name, diff = c.name, c.differentiated
		}
		err := a.Meet(name, diff)
		if world.Size() > 1 && !errors.Is(err, dist.ErrMismatch) {
			t.Errorf("rank %d: %s on the last rank: %v, want ErrMismatch", world.Rank(), c.name, err)
		}
		if world.Size() == 1 && err != nil {
			t.Error(err)
		}
	}
	if err := b.Meet("op", false); err != nil { // the other grid is untouched
		t.Errorf("the other grid: %v", err)
	}
	b.Close()
	if err := b.Meet("op", false); !errors.Is(err, dist.ErrBadInput) {
		t.Errorf("a closed grid: %v, want ErrBadInput", err)
	}
}

// TestManyGridsAlive: with 25 grids alive and 17 of them closed, the rest
// still make their p?gemr2d contexts and move data. BLACS compacts its
// table of system handles when many are freed, which renumbered the live
// ones: a grid that had stored its handle's index aborted the job ("No
// system context corresponding to BLACS system context handle").
func TestManyGridsAlive(t *testing.T) {
	restore := dist.SetMoves(dist.Gemr2dMoves)
	defer restore()
	const alive, closeFirst, n, nb = 25, 17, 8, 2
	a := make([]float64, n*n)
	for i := range a {
		a[i] = float64(i + 1)
	}
	var grids []*dist.Grid
	for range alive {
		grids = append(grids, newGrid(t, 0, 0))
	}
	for _, g := range grids[:closeFirst] {
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range grids[closeFirst:] {
		var root []float64
		if world.Rank() == 0 {
			root = a
		}
		m, err := dist.FromRoot(g, 0, n, n, nb, root)
		if err != nil {
			t.Fatalf("grid %d: %v", closeFirst+i, err)
		}
		back, err := m.Gather(0)
		if err != nil {
			t.Fatalf("grid %d: %v", closeFirst+i, err)
		}
		if world.Rank() == 0 && !slices.Equal(back, a) {
			t.Fatalf("grid %d: the matrix came back changed", closeFirst+i)
		}
	}
}
