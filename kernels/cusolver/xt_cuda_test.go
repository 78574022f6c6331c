//go:build mglacuda

package cusolver

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/mgla/mgla/internal/benchpair"
	"gorgonia.org/tensor"
)

// xtHost is m's data as a host slice of p's type.
func xtHost(p prec, m *rmat) any {
	if p.dt.Size() == 4 {
		s := make([]float32, len(m.d))
		for i, v := range m.d {
			s[i] = float32(v)
		}
		return s
	}
	return append([]float64(nil), m.d...)
}

// xtBack is a host slice of xtHost read back as an rmat shaped like m.
func xtBack(m *rmat, data any) *rmat {
	out := &rmat{m.rows, m.cols, m.ld, make([]float64, len(m.d))}
	switch s := data.(type) {
	case []float32:
		for i, v := range s {
			out.d[i] = float64(v)
		}
	case []float64:
		copy(out.d, s)
	}
	return out
}

// Every Xt routine against host loops in both real precisions, over every
// GPU of the machine, with tiles (7 and 16) smaller than the matrices so
// that each call cuts them up and the tiles at the edges are partial: sizes
// that are not square, leading dimensions larger than the rows, every
// transposition the routines take; Syrkx leaves the strict upper triangle
// alone.
func TestXt(t *testing.T) {
	ngpu := gpus(t)
	x, err := NewXt(seq(ngpu)...)
	if err != nil {
		t.Fatalf("NewXt: %v", err)
	}
	defer func() {
		if err := x.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	rng := newRNG(t)
	const m, n, k = 37, 23, 11
	for _, dim := range []int{7, 16} {
		if err := x.SetBlockDim(dim); err != nil {
			t.Fatal(err)
		}
		for _, p := range precs[:2] {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					what := fmt.Sprintf("tile %d, %s gemm %t %t", dim, p.name, ta, tb)
					ar, ac := opShape(ta, m, k)
					br, bc := opShape(tb, k, n)
					a, bm, c := randReal(rng, ar, ac, ar+3), randReal(rng, br, bc, br+2), randReal(rng, m, n, m+1)
					hc := xtHost(p, c)
					if err := x.Gemm(ta, tb, m, n, k, 0.75, xtHost(p, a), a.ld, xtHost(p, bm), bm.ld, -0.5, hc, c.ld); err != nil {
						t.Fatal(what, err)
					}
					near(t, what, p, xtBack(c, hc), gemmWant(a, bm, c, ta, tb, k, 0.75, -0.5), k, nil)
				}
			}
			{
				what := fmt.Sprintf("tile %d, %s syrkx", dim, p.name)
				a, bm, c := randReal(rng, m, k, m+2), randReal(rng, m, k, m+1), randReal(rng, m, m, m+3)
				hc := xtHost(p, c)
				if err := x.Syrkx(m, k, 1.5, xtHost(p, a), a.ld, xtHost(p, bm), bm.ld, 0.25, hc, c.ld); err != nil {
					t.Fatal(what, err)
				}
				near(t, what, p, xtBack(c, hc), syrkxWant(a, bm, c, k, 1.5, 0.25, false), k, nil)
			}
			lower, opL := randLower(rng, m)
			hl := xtHost(p, lower)
			for _, trans := range []bool{false, true} {
				l := opL(trans)
				what := fmt.Sprintf("tile %d, %s trmm %t", dim, p.name, trans)
				bm, c := randReal(rng, m, n, m+1), randReal(rng, m, n, m+4)
				hc := xtHost(p, c)
				if err := x.TrmmLowerLeft(trans, m, n, -2, hl, lower.ld, xtHost(p, bm), bm.ld, hc, c.ld); err != nil {
					t.Fatal(what, err)
				}
				near(t, what, p, xtBack(c, hc), trmmWant(l, bm, m, -2), m, nil)
				what = fmt.Sprintf("tile %d, %s trsm %t", dim, p.name, trans)
				bm = randReal(rng, m, n, m+3)
				hb := xtHost(p, bm)
				if err := x.TrsmLowerLeft(trans, m, n, 0.5, hl, lower.ld, hb, bm.ld); err != nil {
					t.Fatal(what, err)
				}
				near(t, what, p, &rmat{m, n, m, make([]float64, m*n)}, trsmResidual(l, xtBack(bm, hb), bm, m, 0.5), 4*m, nil)
			}
		}
	}
}

// Bad calls are errors that say what is wrong, before anything runs, and
// leave the output alone.
func TestXtBadCalls(t *testing.T) {
	ngpu := gpus(t)
	for _, ids := range [][]int{nil, {0, 0}, {ngpu}, {-1}} {
		if _, err := NewXt(ids...); err == nil {
			t.Errorf("NewXt(%v): no error", ids)
		}
	}
	x, err := NewXt(0)
	if err != nil {
		t.Fatalf("NewXt: %v", err)
	}
	c := []float64{1, 2, 3, 4}
	for _, cs := range []struct {
		what string
		err  error
	}{
		{"complex", x.Gemm(false, false, 2, 2, 2, 1, []complex128{1, 2, 3, 4}, 2, []complex128{1, 2, 3, 4}, 2, 0, []complex128{0, 0, 0, 0}, 2)},
		{"mixed types", x.Gemm(false, false, 2, 2, 2, 1, []float32{1, 2, 3, 4}, 2, []float64{1, 2, 3, 4}, 2, 0, c, 2)},
		{"short A", x.Gemm(false, false, 2, 2, 2, 1, []float64{1, 2, 3}, 2, []float64{1, 2, 3, 4}, 2, 0, c, 2)},
		{"short transposed A", x.Gemm(true, false, 2, 2, 3, 1, []float64{1, 2, 3, 4}, 3, []float64{1, 2, 3, 4, 5, 6}, 3, 0, c, 2)},
		{"lda below the rows", x.Gemm(false, false, 2, 2, 2, 1, []float64{1, 2, 3, 4}, 1, []float64{1, 2, 3, 4}, 2, 0, c, 2)},
		{"short C of syrkx", x.Syrkx(2, 1, 1, []float64{1, 2}, 2, []float64{1, 2}, 2, 0, c[:3], 2)},
		{"short L of trsm", x.TrsmLowerLeft(false, 2, 2, 1, []float64{1, 2, 3}, 2, c, 2)},
		{"nil C of trmm", x.TrmmLowerLeft(false, 2, 2, 1, []float64{1, 2, 3, 4}, 2, []float64{1, 2, 3, 4}, 2, nil, 2)},
		{"negative size", x.Syrkx(-1, 1, 1, []float64{1}, 1, []float64{1}, 1, 0, c, 1)},
		{"tile 0", x.SetBlockDim(0)},
	} {
		if cs.err == nil {
			t.Errorf("%s: no error", cs.what)
		}
	}
	for i, v := range []float64{1, 2, 3, 4} {
		if c[i] != v {
			t.Fatalf("C written: %v", c)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := x.Gemm(false, false, 2, 2, 2, 1, c, 2, c, 2, 0, make([]float64, 4), 2); err == nil {
		t.Error("Gemm after Close: no error")
	}
}

var (
	xtBenchN      = flag.Int("cusolver.xt-n", 8192, "matrix order of BenchmarkXt")
	xtBenchBlocks = flag.String("cusolver.xt-blocks", "1024,2048,4096", "BenchmarkXt's tile sides, comma separated")
	xtBenchGPUs   = flag.Int("cusolver.xt-gpus", 1, "GPUs of BenchmarkXt's handle")
)

// BenchmarkXt times Xt's Gemm (N×N×N) and TrsmLowerLeft (N×N) on host
// float64 matrices (N = -cusolver.xt-n) over -cusolver.xt-gpus GPUs, for
// each tile side of -cusolver.xt-blocks, page-locked by cuBLASXt per call
// or not, in turns with the same routine on the first GPU through Blas on
// matrices already there (the anchor: the device's own speed, no copies).
// Metrics: ms, the Xt call's median; x-device, the median ratio of the two.
func BenchmarkXt(b *testing.B) {
	if err := Load(); err != nil {
		b.Fatal(err)
	}
	n := *xtBenchN
	x, err := NewXt(seq(*xtBenchGPUs)...)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	dev, err := NewBlas(0)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	host := func() []float64 {
		m := make([]float64, n*n)
		for i := range m {
			m[i] = rng.NormFloat64()
		}
		return m
	}
	a, bm, c := host(), host(), host()
	for j := range n { // a well-conditioned lower triangle for trsm
		a[j+j*n] = 2 + math.Abs(a[j+j*n])
		for i := j + 1; i < n; i++ {
			a[i+j*n] /= float64(n)
		}
	}
	bytes := n * n * 8
	var dptr [3]uintptr
	for i, m := range [][]float64{a, bm, c} {
		if dptr[i], err = Malloc(0, bytes); err != nil {
			b.Fatal(err)
		}
		defer Free(0, dptr[i])
		if err := MemcpyHtoD(0, dptr[i], unsafe.Pointer(&m[0]), bytes); err != nil {
			b.Fatal(err)
		}
	}
	routines := []struct {
		name     string
		xt, blas func() error
	}{
		{"gemm", func() error { return x.Gemm(false, false, n, n, n, 1, a, n, bm, n, 0, c, n) },
			func() error {
				return errors.Join(dev.Gemm(tensor.Float64, false, false, n, n, n, 1, dptr[0], n, dptr[1], n, 0, dptr[2], n), dev.Sync())
			}},
		{"trsm", func() error { return x.TrsmLowerLeft(false, n, n, 1, a, n, c, n) },
			func() error {
				return errors.Join(dev.TrsmLowerLeft(tensor.Float64, false, n, n, 1, dptr[0], n, dptr[2], n), dev.Sync())
			}},
	}
	for _, blk := range strings.Split(*xtBenchBlocks, ",") {
		dim, err := strconv.Atoi(blk)
		if err != nil {
			b.Fatal(err)
		}
		if err := x.SetBlockDim(dim); err != nil {
			b.Fatal(err)
		}
		for _, pin := range []bool{false, true} {
			if err := x.SetPinning(pin); err != nil {
				b.Fatal(err)
			}
			for _, r := range routines {
				b.Run(fmt.Sprintf("%s/tile=%d/pinned=%t", r.name, dim, pin), func(b *testing.B) {
					call := func(f func() error) func() {
						return func() {
							if err := f(); err != nil {
								b.Fatal(err)
							}
						}
					}
					call(r.xt)()
					var p benchpair.Pairs
					for range b.N {
						p.Time(call(r.xt), call(r.blas))
					}
					b.ReportMetric(float64(benchpair.Median(p.Wall[0]))/1e6, "ms")
					b.ReportMetric(p.MedianRatio(), "x-device")
				})
			}
		}
	}
}

// The checks of Xt's arguments, which run before any CUDA call (so this
// test needs no GPU): a leading dimension so large that the span of the
// matrix overflows int is refused like a short slice; an update with no
// terms (k = 0) scales C on the host, as BLAS defines it (beta = 0 zeroes
// C, Syrkx its lower triangle only).
func TestXtArguments(t *testing.T) {
	closed := &Xt{closed: true}
	one, six, huge := []float64{1}, make([]float64, 6), 1<<62
	for _, cs := range []struct {
		what string
		err  error
	}{
		{"gemm, A 1×3 in 1 element", closed.Gemm(false, false, 1, 2, 3, 1, one, huge, six, 3, 0, make([]float64, 2), 1)},
		{"syrkx, C 3×3 in 1 element", closed.Syrkx(3, 1, 1, six, 3, six, 3, 0, one, huge)},
		{"trsm, B 1×3 in 1 element", closed.TrsmLowerLeft(false, 1, 3, 1, one, 1, one, huge)},
		{"trmm, C 1×3 in 1 element", closed.TrmmLowerLeft(false, 1, 3, 1, one, 1, six, 1, one, huge)},
	} {
		if cs.err == nil || !strings.Contains(cs.err.Error(), "fewer than") {
			t.Errorf("%s: %v, want the length refused", cs.what, cs.err)
		}
	}
	open := &Xt{} // no handle: a call that reached cuBLASXt would crash
	c := []float64{1, 2, 3, 4, 5, 6}
	if err := open.Gemm(false, false, 2, 2, 0, 1, []float64(nil), 2, []float64(nil), 1, 0.5, c, 3); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.5, 1, 3, 2, 2.5, 6}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("gemm k = 0: C = %v, want %v", c, want)
	}
	s := []float32{1, 2, 3, 4}
	if err := open.Syrkx(2, 0, 1, []float32{}, 2, []float32{}, 2, 0, s, 2); err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 0, 3, 0}; fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("syrkx k = 0: C = %v, want %v", s, want)
	}
}
