package cyclic

import (
	"fmt"
	"math"
	"testing"
)

// dealt is the reference 1-D distribution, written by dealing the blocks
// out one after the other: for every global index its owner and local index,
// and the count each process ends up with.
func dealt(n, nb, nprocs int) (owner, local, count []int) {
	owner, local, count = make([]int, n), make([]int, n), make([]int, nprocs)
	for g := 0; g < n; g += nb {
		p := (g / nb) % nprocs
		for i := g; i < min(g+nb, n); i++ {
			owner[i], local[i] = p, count[p]
			count[p]++
		}
	}
	return owner, local, count
}

func TestIndexMapsExhaustive(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for nb := 1; nb <= 7; nb++ {
			for np := 1; np <= 5; np++ {
				owner, local, count := dealt(n, nb, np)
				for p := range np {
					if got := NumLocal(n, nb, p, np); got != count[p] {
						t.Fatalf("NumLocal(%d, %d, %d, %d) = %d, want %d", n, nb, p, np, got, count[p])
					}
				}
				for g := range n {
					if o, l := IndexOwner(g, nb, np), IndexLocal(g, nb, np); o != owner[g] || l != local[g] {
						t.Fatalf("n=%d nb=%d np=%d g=%d: owner %d local %d, want %d %d", n, nb, np, g, o, l, owner[g], local[g])
					}
					if back := IndexGlobal(local[g], nb, owner[g], np); back != g {
						t.Fatalf("IndexGlobal(%d, %d, %d, %d) = %d, want %d", local[g], nb, owner[g], np, back, g)
					}
				}
			}
		}
	}
}

// checkBlockCyclic2D checks that the blocks of every process tile its local
// array exactly once, agree with Owner and Local element by element, and
// that Extract then Insert on every process rebuilds the matrix.
func checkBlockCyclic2D(d BlockCyclic2D) error {
	global := make([]int, d.Rows*d.Cols)
	for i := range global {
		global[i] = i + 1
	}
	rebuilt := make([]int, len(global))
	covered := 0
	for prow := range d.P {
		for pcol := range d.Q {
			lr, lc := d.LocalShape(prow, pcol)
			lld := d.LeadingDim(prow)
			if lld < 1 || lld < lr {
				return fmt.Errorf("%+v (%d,%d): leading dimension %d for %d rows", d, prow, pcol, lld, lr)
			}
			hits := make([]int, lld*lc)
			for _, b := range d.Blocks(prow, pcol) {
				if b.Dev != prow*d.Q+pcol {
					return fmt.Errorf("%+v: block %+v on rank %d", d, b, prow*d.Q+pcol)
				}
				for j := range b.Cols {
					for i := range b.Rows {
						r, c := b.Row+i, b.Col+j
						if or, oc := d.Owner(r, c); or != prow || oc != pcol {
							return fmt.Errorf("%+v: element (%d,%d) listed on (%d,%d), owner (%d,%d)", d, r, c, prow, pcol, or, oc)
						}
						if xr, xc := d.Local(r, c); xr != b.LocalRow+i || xc != b.LocalCol+j {
							return fmt.Errorf("%+v: element (%d,%d) at local (%d,%d), Local says (%d,%d)", d, r, c, b.LocalRow+i, b.LocalCol+j, xr, xc)
						}
						hits[b.LocalRow+i+(b.LocalCol+j)*lld]++
					}
				}
			}
			for j := range lc {
				for i := range lr {
					if h := hits[i+j*lld]; h != 1 {
						return fmt.Errorf("%+v (%d,%d): local (%d,%d) covered %d times", d, prow, pcol, i, j, h)
					}
				}
			}
			covered += lr * lc
			local := make([]int, lld*lc)
			Extract(d, prow, pcol, global, max(1, d.Rows), local)
			Insert(d, prow, pcol, local, rebuilt, max(1, d.Rows))
		}
	}
	if covered != d.Rows*d.Cols {
		return fmt.Errorf("%+v: processes hold %d elements, want %d", d, covered, d.Rows*d.Cols)
	}
	for i := range global {
		if rebuilt[i] != global[i] {
			return fmt.Errorf("%+v: element %d rebuilt as %d, want %d", d, i, rebuilt[i], global[i])
		}
	}
	return nil
}

func TestBlockCyclic2DExhaustive(t *testing.T) {
	for rows := 0; rows <= 13; rows++ {
		for cols := 0; cols <= 11; cols += 1 + cols/4 {
			for mb := 1; mb <= 5; mb++ {
				for nb := 1; nb <= 4; nb++ {
					for p := 1; p <= 3; p++ {
						for q := 1; q <= 4; q++ {
							d := BlockCyclic2D{Rows: rows, Cols: cols, MB: mb, NB: nb, P: p, Q: q}
							if err := d.Validate(); err != nil {
								t.Fatal(err)
							}
							if err := checkBlockCyclic2D(d); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
			}
		}
	}
}

func TestBlockCyclic2DValidate(t *testing.T) {
	for _, d := range []BlockCyclic2D{
		{Rows: -1, Cols: 3, MB: 1, NB: 1, P: 1, Q: 1},
		{Rows: 3, Cols: 3, MB: 0, NB: 1, P: 1, Q: 1},
		{Rows: 3, Cols: 3, MB: 1, NB: 1, P: 0, Q: 1},
		{Rows: 3, Cols: 3, MB: 1, NB: 1, P: 1, Q: -2},
		{Rows: 10, Cols: 10, MB: 1 << 62, NB: 1, P: 4, Q: 1}, // MB·P overflows
		{Rows: 10, Cols: 10, MB: 1, NB: math.MaxInt, P: 1, Q: 2},
	} {
		if d.Validate() == nil {
			t.Errorf("%+v: no error", d)
		}
	}
}

func TestNearSquareGrid(t *testing.T) {
	for n := 1; n <= 64; n++ {
		p, q := NearSquareGrid(n)
		if p*q != n || p > q {
			t.Fatalf("NearSquareGrid(%d) = %d×%d", n, p, q)
		}
		for f := p + 1; f*f <= n; f++ {
			if n%f == 0 {
				t.Fatalf("NearSquareGrid(%d) = %d×%d, but %d divides it", n, p, q, f)
			}
		}
	}
}
