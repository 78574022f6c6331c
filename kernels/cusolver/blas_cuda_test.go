//go:build mglacuda

package cusolver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"gorgonia.org/tensor"
)

// rmat is a real column-major rows×cols matrix with leading dimension ld.
type rmat struct {
	rows, cols, ld int
	d              []float64
}

func randReal(rng *rand.Rand, rows, cols, ld int) *rmat {
	m := &rmat{rows, cols, ld, make([]float64, ld*cols)}
	for i := range m.d {
		m.d[i] = rng.NormFloat64()
	}
	return m
}

func (m *rmat) at(i, j int) float64 { return m.d[i+j*m.ld] }

// op is element (i, j) of m or, when trans, of mᵀ.
func (m *rmat) op(trans bool, i, j int) float64 {
	if trans {
		return m.at(j, i)
	}
	return m.at(i, j)
}

// blasDev is a device copy of an rmat in precision p.
type blasDev struct {
	t   *testing.T
	p   prec
	ptr uintptr
	m   *rmat
}

func upload(t *testing.T, p prec, m *rmat) *blasDev {
	t.Helper()
	v := make([]complex128, len(m.d))
	for i, x := range m.d {
		v[i] = complex(x, 0)
	}
	b := encode(p.dt, v)
	ptr, err := Malloc(0, len(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Free(0, ptr) })
	if err := MemcpyHtoD(0, ptr, unsafe.Pointer(&b[0]), len(b)); err != nil {
		t.Fatal(err)
	}
	return &blasDev{t, p, ptr, m}
}

// get returns the device values (after Sync).
func (d *blasDev) get(b *Blas) *rmat {
	d.t.Helper()
	if err := b.Sync(); err != nil {
		d.t.Fatal(err)
	}
	buf := make([]byte, len(d.m.d)*ElemSize(d.p.dt))
	if err := MemcpyDtoH(0, unsafe.Pointer(&buf[0]), d.ptr, len(buf)); err != nil {
		d.t.Fatal(err)
	}
	out := &rmat{d.m.rows, d.m.cols, d.m.ld, make([]float64, len(d.m.d))}
	for i, v := range decode(d.p.dt, buf) {
		out.d[i] = real(v)
	}
	return out
}

// near checks got against want entry by entry within rows×cols, relative to
// scale (the sum of the magnitudes of a dot product's terms) and k terms;
// skip, when set, leaves an entry out (it is checked otherwise).
func near(t *testing.T, what string, p prec, got *rmat, want func(i, j int) (v, scale float64), k int, skip func(i, j int) bool) {
	t.Helper()
	for j := range got.cols {
		for i := range got.rows {
			if skip != nil && skip(i, j) {
				continue
			}
			w, s := want(i, j)
			if e := math.Abs(got.at(i, j) - w); !(e <= 4*float64(k+2)*p.eps*(s+math.Abs(w))) {
				t.Fatalf("%s: [%d,%d] = %v, want %v (scale %v)", what, i, j, got.at(i, j), w, s)
			}
		}
	}
}

// opShape is the shape of a rows×cols matrix, or of its transpose.
func opShape(trans bool, rows, cols int) (int, int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}

// The reference results of the level-3 routines that TestBlas and TestXt
// check, element (i, j) with the sum of its terms' magnitudes (near's
// scale).

// gemmWant is alpha·op(A)·op(B) + beta·C, op(A) with k columns.
func gemmWant(a, b, c *rmat, ta, tb bool, k int, alpha, beta float64) func(i, j int) (float64, float64) {
	return func(i, j int) (float64, float64) {
		v, s := beta*c.at(i, j), math.Abs(beta*c.at(i, j))
		for l := range k {
			x := alpha * a.op(ta, i, l) * b.op(tb, l, j)
			v, s = v+x, s+math.Abs(x)
		}
		return v, s
	}
}

// syrkxWant is the lower triangle of alpha·A·Bᵀ + beta·C (with twice,
// alpha·(A·Bᵀ + B·Aᵀ) + beta·C), A and B with k columns; above it, C
// untouched.
func syrkxWant(a, b, c *rmat, k int, alpha, beta float64, twice bool) func(i, j int) (float64, float64) {
	return func(i, j int) (float64, float64) {
		if i < j {
			return c.at(i, j), 0
		}
		v, s := beta*c.at(i, j), math.Abs(beta*c.at(i, j))
		for l := range k {
			x := alpha * a.at(i, l) * b.at(j, l)
			if twice {
				x += alpha * b.at(i, l) * a.at(j, l)
			}
			v, s = v+x, s+math.Abs(x)
		}
		return v, s
	}
}

// randLower is a random m×m matrix whose lower triangle is well
// conditioned (junk stays above it), and its op(L) by element: zero above
// the diagonal of L, or below it for the transpose.
func randLower(rng *rand.Rand, m int) (*rmat, func(trans bool) func(i, j int) float64) {
	lower := randReal(rng, m, m, m+2)
	for i := range m {
		lower.d[i+i*lower.ld] = 2 + math.Abs(lower.d[i+i*lower.ld])
		for j := range i {
			lower.d[i+j*lower.ld] /= float64(m)
		}
	}
	return lower, func(trans bool) func(i, j int) float64 {
		return func(i, j int) float64 {
			if trans {
				i, j = j, i
			}
			if j > i {
				return 0
			}
			return lower.at(i, j)
		}
	}
}

// trmmWant is alpha·op(L)·B, L m×m.
func trmmWant(l func(i, j int) float64, b *rmat, m int, alpha float64) func(i, j int) (float64, float64) {
	return func(i, j int) (float64, float64) {
		var v, s float64
		for q := range m {
			x := alpha * l(i, q) * b.at(q, j)
			v, s = v+x, s+math.Abs(x)
		}
		return v, s
	}
}

// trsmResidual is the residual op(L)·X − alpha·B of the solution X, to
// check against zero: near on an m×n matrix of zeros.
func trsmResidual(l func(i, j int) float64, x, b *rmat, m int, alpha float64) func(i, j int) (float64, float64) {
	return func(i, j int) (float64, float64) {
		var v, s float64
		for q := range m {
			y := l(i, q) * x.at(q, j)
			v, s = v+y, s+math.Abs(y)
		}
		return v - alpha*b.at(i, j), s + math.Abs(alpha*b.at(i, j))
	}
}

// Every Blas routine against host loops in both real precisions: sizes that
// are not square, leading dimensions larger than the rows, every
// transposition the routines take; the symmetric updates leave the strict
// upper triangle alone and trmm works in place as well.
func TestBlas(t *testing.T) {
	gpus(t)
	b, err := NewBlas(0)
	if err != nil {
		t.Fatalf("NewBlas: %v", err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	rng := newRNG(t)
	const m, n, k = 37, 23, 11
	for _, p := range precs[:2] {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				what := fmt.Sprintf("%s gemm %t %t", p.name, ta, tb)
				ar, ac := opShape(ta, m, k)
				br, bc := opShape(tb, k, n)
				a, bm, c := randReal(rng, ar, ac, ar+3), randReal(rng, br, bc, br+2), randReal(rng, m, n, m+1)
				da, db, dc := upload(t, p, a), upload(t, p, bm), upload(t, p, c)
				if err := b.Gemm(p.dt, ta, tb, m, n, k, 0.75, da.ptr, a.ld, db.ptr, bm.ld, -0.5, dc.ptr, c.ld); err != nil {
					t.Fatal(what, err)
				}
				near(t, what, p, dc.get(b), gemmWant(a, bm, c, ta, tb, k, 0.75, -0.5), k, nil)
			}
		}
		for _, twice := range []bool{false, true} {
			what := fmt.Sprintf("%s syrkx/syr2k %t", p.name, twice)
			a, bm, c := randReal(rng, n, k, n+2), randReal(rng, n, k, n+1), randReal(rng, n, n, n+3)
			da, db, dc := upload(t, p, a), upload(t, p, bm), upload(t, p, c)
			if twice {
				err = b.Syr2k(p.dt, n, k, 1.5, da.ptr, a.ld, db.ptr, bm.ld, 0.25, dc.ptr, c.ld)
			} else {
				err = b.Syrkx(p.dt, n, k, 1.5, da.ptr, a.ld, db.ptr, bm.ld, 0.25, dc.ptr, c.ld)
			}
			if err != nil {
				t.Fatal(what, err)
			}
			near(t, what, p, dc.get(b), syrkxWant(a, bm, c, k, 1.5, 0.25, twice), 2*k, nil)
		}
		lower, opL := randLower(rng, m)
		dl := upload(t, p, lower)
		for _, trans := range []bool{false, true} {
			l := opL(trans)
			for _, inPlace := range []bool{false, true} {
				what := fmt.Sprintf("%s trmm %t in place %t", p.name, trans, inPlace)
				bm, c := randReal(rng, m, n, m+1), randReal(rng, m, n, m+4)
				db, dc := upload(t, p, bm), upload(t, p, c)
				out := dc
				if inPlace {
					out = db
				}
				if err := b.TrmmLowerLeft(p.dt, trans, m, n, -2, dl.ptr, lower.ld, db.ptr, bm.ld, out.ptr, out.m.ld); err != nil {
					t.Fatal(what, err)
				}
				near(t, what, p, out.get(b), trmmWant(l, bm, m, -2), m, nil)
			}
			what := fmt.Sprintf("%s trsm %t", p.name, trans)
			bm := randReal(rng, m, n, m+3)
			db := upload(t, p, bm)
			if err := b.TrsmLowerLeft(p.dt, trans, m, n, 0.5, dl.ptr, lower.ld, db.ptr, bm.ld); err != nil {
				t.Fatal(what, err)
			}
			near(t, what, p, &rmat{m, n, m, make([]float64, m*n)}, trsmResidual(l, db.get(b), bm, m, 0.5), 4*m, nil)
		}
		for _, tt := range [][2]bool{{false, false}, {false, true}, {true, false}} {
			what := fmt.Sprintf("%s geam %v", p.name, tt)
			ar, ac := m, n
			if tt[0] {
				ar, ac = n, m
			}
			br, bc := m, n
			if tt[1] {
				br, bc = n, m
			}
			a, bm, c := randReal(rng, ar, ac, ar+1), randReal(rng, br, bc, br+2), randReal(rng, m, n, m+3)
			da, db, dc := upload(t, p, a), upload(t, p, bm), upload(t, p, c)
			if err := b.Geam(p.dt, tt[0], tt[1], m, n, 0.5, da.ptr, a.ld, -3, db.ptr, bm.ld, dc.ptr, c.ld); err != nil {
				t.Fatal(what, err)
			}
			near(t, what, p, dc.get(b), func(i, j int) (float64, float64) {
				x, y := 0.5*a.op(tt[0], i, j), -3*bm.op(tt[1], i, j)
				return x + y, math.Abs(x) + math.Abs(y)
			}, 1, nil)
		}
		{
			what := p.name + " dgmm"
			a, x, c := randReal(rng, m, n, m+2), randReal(rng, n, 1, n), randReal(rng, m, n, m)
			da, dx, dc := upload(t, p, a), upload(t, p, x), upload(t, p, c)
			if err := b.DgmmRight(p.dt, m, n, da.ptr, a.ld, dx.ptr, dc.ptr, c.ld); err != nil {
				t.Fatal(what, err)
			}
			near(t, what, p, dc.get(b), func(i, j int) (float64, float64) {
				v := a.at(i, j) * x.d[j]
				return v, math.Abs(v)
			}, 1, nil)
		}
		{
			what := p.name + " scal of a diagonal"
			a := randReal(rng, n, n, n)
			da := upload(t, p, a)
			if err := b.Scal(p.dt, n, 0.5, da.ptr, n+1); err != nil {
				t.Fatal(what, err)
			}
			near(t, what, p, da.get(b), func(i, j int) (float64, float64) {
				v := a.at(i, j)
				if i == j {
					v /= 2
				}
				return v, math.Abs(v)
			}, 1, nil)
		}
	}
}

// Bad calls are errors that say what is wrong, before anything runs.
func TestBlasBadCalls(t *testing.T) {
	gpus(t)
	b, err := NewBlas(0)
	if err != nil {
		t.Fatalf("NewBlas: %v", err)
	}
	for _, c := range []struct {
		what string
		err  error
	}{
		{"complex dtype", b.Gemm(tensor.Complex128, false, false, 2, 2, 2, 1, 0, 2, 0, 2, 0, 0, 2)},
		{"lda below the rows", b.Gemm(tensor.Float64, false, false, 4, 2, 2, 1, 0, 3, 0, 2, 0, 0, 4)},
		{"transposed lda below k", b.Gemm(tensor.Float64, true, false, 4, 2, 5, 1, 0, 4, 0, 5, 0, 0, 4)},
		{"negative order", b.Syrkx(tensor.Float64, -1, 2, 1, 0, 1, 0, 1, 0, 0, 1)},
		{"stride 0", b.Scal(tensor.Float32, 3, 1, 0, 0)},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.what)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Scal(tensor.Float64, 1, 1, 1, 1); err == nil {
		t.Error("a closed Blas ran a call")
	}
}
