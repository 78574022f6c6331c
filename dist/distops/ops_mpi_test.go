//go:build mpi

package distops_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var world *mpi.Comm

func TestMain(m *testing.M) {
	w, err := mpi.World(mpi.WithTimeout(60 * time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpi.World:", err)
		os.Exit(1)
	}
	world = w
	code := m.Run()
	if err := mpi.Finalize(); err != nil {
		code = max(code, 1)
	}
	os.Exit(code)
}

// grids are the P×Q grids of the world: every factorisation of its size
// (1×1; 1×2, 2×1; 1×3, 3×1; 1×4, 2×2, 4×1).
func grids(t *testing.T) []*dist.Grid {
	var gs []*dist.Grid
	size := world.Size()
	for p := 1; p <= size; p++ {
		if size%p != 0 {
			continue
		}
		g, err := dist.NewGrid(world, p, size/p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		gs = append(gs, g)
	}
	return gs
}

func gridName(g *dist.Grid) string {
	p, q := g.Shape()
	return fmt.Sprintf("%d×%d", p, q)
}

// seed is a seed that every rank agrees on (rank 0's clock, broadcast),
// logged so that a failure can be repeated.
func seed(t *testing.T) uint64 {
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := []float64{float64(uint64(time.Now().UnixNano()) & (1<<52 - 1))}
	m, err := dist.FromRoot(g, 0, 1, 1, 1, s)
	if err != nil {
		t.Fatal(err)
	}
	full, err := m.Gather(-1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d", uint64(full[0]))
	return uint64(full[0])
}

type scalar interface {
	float32 | float64 | complex64 | complex128
}

func dtypeOf[T scalar]() tensor.Dtype { return tensor.Dtype{Type: reflect.TypeOf(*new(T))} }

// random is a uniform entry in [−1, 1) (both parts for complex T).
func random[T scalar](rng *rand.Rand) T {
	return fromComplex[T](complex(rng.Float64()*2-1, rng.Float64()*2-1))
}

func fromFloat[T scalar](x float64) T { return fromComplex[T](complex(x, 0)) }

// fromComplex is z as a T (its real part for real T).
func fromComplex[T scalar](z complex128) T {
	var out T
	switch p := any(&out).(type) {
	case *float32:
		*p = float32(real(z))
	case *float64:
		*p = real(z)
	case *complex64:
		*p = complex64(z)
	case *complex128:
		*p = z
	}
	return out
}

func conj[T scalar](x T) T {
	switch v := any(x).(type) {
	case complex64:
		return any(complex64(cmplx.Conj(complex128(v)))).(T)
	case complex128:
		return any(cmplx.Conj(v)).(T)
	}
	return x
}

// matrix is an r×c row-major matrix of random entries.
func matrix[T scalar](rng *rand.Rand, r, c int) *tensor.Dense {
	d := make([]T, r*c)
	for i := range d {
		d[i] = random[T](rng)
	}
	return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(d))
}

// spd is M·Mᴴ/n + I for a random M: Hermitian positive definite, with
// well separated eigenvalues (almost surely).
func spd[T scalar](rng *rand.Rand, n int) *tensor.Dense {
	m := matrix[T](rng, n, n).Data().([]T)
	a := make([]T, n*n)
	for i := range n {
		for j := range n {
			for k := range n {
				a[i*n+j] += m[i*n+k] * conj(m[j*n+k]) / fromFloat[T](float64(n))
			}
		}
		a[i*n+i]++
	}
	return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))
}

// lower is a random lower triangular factor with a diagonal in [1, 2).
func lower[T scalar](rng *rand.Rand, n int) *tensor.Dense {
	l := matrix[T](rng, n, n)
	d := l.Data().([]T)
	for i := range n {
		for j := i + 1; j < n; j++ {
			d[i*n+j] = 0
		}
		d[i*n+i] = fromFloat[T](1.5 + (rng.Float64()-0.5)/2)
	}
	return l
}

// operands are a Hermitian positive definite A, a lower triangular L and
// an n×k B (a length-n vector for k = 0).
func operands[T scalar](rng *rand.Rand, n, k int) (a, l, b *tensor.Dense) {
	a, l, b = spd[T](rng, n), lower[T](rng, n), matrix[T](rng, n, max(k, 1))
	if k == 0 {
		b.Reshape(n)
	}
	return a, l, b
}

// c128 is a value's data (a scalar or a slice of any float dtype) as
// complex128s.
func c128(v G.Value) []complex128 {
	d := reflect.ValueOf(v.Data())
	if d.Kind() != reflect.Slice {
		d = reflect.Append(reflect.MakeSlice(reflect.SliceOf(d.Type()), 0, 1), d)
	}
	out := make([]complex128, d.Len())
	for i := range out {
		switch x := d.Index(i); x.Kind() {
		case reflect.Complex64, reflect.Complex128:
			out[i] = x.Complex()
		default:
			out[i] = complex(x.Float(), 0)
		}
	}
	return out
}

// tolerance is the relative accuracy to expect of dtype dt.
func tolerance(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		return 2e-3
	}
	return 1e-9
}

// near reports whether got and want agree within tol relative to want's
// largest entry (at least 1).
func near(got, want []complex128, tol float64) (bool, int) {
	if len(got) != len(want) {
		return false, -1
	}
	scale := 1.0
	for _, w := range want {
		scale = max(scale, cmplx.Abs(w))
	}
	for i := range want {
		if cmplx.Abs(got[i]-want[i]) > tol*scale {
			return false, i
		}
	}
	return true, 0
}

// builder makes the graph builder of run with the given options.
type builder func(opts ...mgla.Option) func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error)

// onAndOffGrid evaluates build's graph with WithGrid(grid) in blocks of nb
// on machine m and without the grid on a TapeMachine (the single-process
// reference); each result is the outputs' values followed by the
// gradients'.
func onAndOffGrid(t *testing.T, name string, m machine, grid *dist.Grid, nb int, build builder) (got, want []G.Value) {
	t.Helper()
	outs, grads, err := run(m, build(mgla.WithGrid(distops.On(grid)), mgla.WithTile(nb)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got = append(outs, grads...)
	if outs, grads, err = run(tape, build()); err != nil {
		t.Fatalf("%s: without the grid: %v", name, err)
	}
	return got, append(outs, grads...)
}

func input(g *G.ExprGraph, name string, v *tensor.Dense) *G.Node {
	return G.NodeFromAny(g, v.Clone().(*tensor.Dense), G.WithName(name))
}

// shapes are the sizes tested: n×n matrices, k right-hand sides (0: a
// vector), blocks nb; n not a multiple of nb, and n = 1.
var shapes = []struct{ n, k, nb int }{{1, 1, 1}, {7, 3, 2}, {12, 0, 5}, {10, 2, 3}}

// TestForward compares every builder with WithGrid with the same builder
// without it (the single-process CPU op), for every dtype, grid and shape.
// Eigenvectors are compared up to a phase per column.
func TestForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 17))
	for _, g := range grids(t) {
		for _, sh := range shapes {
			for _, aboveDiagonal := range []bool{false, true} {
				forward[float32](t, rng, g, sh.n, sh.k, sh.nb, aboveDiagonal)
				forward[float64](t, rng, g, sh.n, sh.k, sh.nb, aboveDiagonal)
				forward[complex64](t, rng, g, sh.n, sh.k, sh.nb, aboveDiagonal)
				forward[complex128](t, rng, g, sh.n, sh.k, sh.nb, aboveDiagonal)
			}
		}
	}
}

// forward compares the builders on the grid and off it. With
// nonFiniteAbove, A and L hold NaN and Inf above their diagonals, which no
// op reads: on the grid as on one process, they change nothing (the grid
// used to refuse them as ErrNonFinite).
func forward[T scalar](t *testing.T, rng *rand.Rand, grid *dist.Grid, n, k, nb int, nonFiniteAbove bool) {
	dt := dtypeOf[T]()
	name := fmt.Sprintf("%s %v n=%d k=%d nb=%d", gridName(grid), dt, n, k, nb)
	a, l, b := operands[T](rng, n, k)
	if nonFiniteAbove {
		name += " NaN/Inf above the diagonal"
		for _, m := range []*tensor.Dense{a, l} {
			data := m.Data().([]T)
			for i := range n {
				for j := i + 1; j < n; j++ {
					data[i*n+j] = fromFloat[T](math.NaN())
					if (i+j)%2 == 0 {
						data[i*n+j] = fromFloat[T](math.Inf(1))
					}
				}
			}
		}
	}
	build := func(opts ...mgla.Option) func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
		return func(g *G.ExprGraph) (outs, _ []*G.Node, _ *G.Node, err error) {
			an, ln, bn := input(g, "A", a), input(g, "L", l), input(g, "B", b)
			for _, f := range []func() (*G.Node, error){
				func() (*G.Node, error) { return mgla.Cholesky(an, opts...) },
				func() (*G.Node, error) { return mgla.CholSolve(ln, bn, opts...) },
				func() (*G.Node, error) { return mgla.Potrs(an, bn, opts...) },
				func() (*G.Node, error) { return mgla.Potri(an, opts...) },
				func() (*G.Node, error) { return mgla.LogDet(an, opts...) },
				func() (*G.Node, error) {
					w, _, err := mgla.Syevd(an, append(opts, mgla.EigenvaluesOnly())...)
					return w, err
				},
			} {
				x, err := f()
				if err != nil {
					return nil, nil, nil, err
				}
				outs = append(outs, x)
			}
			w, v, err := mgla.Syevd(an, opts...)
			return append(outs, w, v), nil, nil, err
		}
	}
	got, want := onAndOffGrid(t, name, tape, grid, nb, build)
	compareForward(t, name, dt, n, got, want)
}

// compareForward compares the outputs of forward's graph, got on the grid
// and want without: Cholesky, CholSolve, Potrs, Potri, LogDet, Syevd
// values only, Syevd w and V (up to a phase per column).
func compareForward(t *testing.T, name string, dt tensor.Dtype, n int, got, want []G.Value) {
	t.Helper()
	what := []string{"Cholesky", "CholSolve", "Potrs", "Potri", "LogDet", "Syevd values only", "Syevd w", "Syevd V"}
	for i := range want {
		if !got[i].Shape().Eq(want[i].Shape()) || got[i].Dtype() != want[i].Dtype() {
			t.Errorf("%s: %s is %v %v, want %v %v", name, what[i], got[i].Shape(), got[i].Dtype(), want[i].Shape(), want[i].Dtype())
			continue
		}
		g, w := c128(got[i]), c128(want[i])
		if what[i] == "Syevd V" {
			g = phased(g, w, n)
		}
		if ok, j := near(g, w, tolerance(dt)); !ok {
			t.Errorf("%s: %s[%d] = %v, without the grid %v", name, what[i], j, g[j], w[j])
		}
	}
}

// phased is the n×n row-major eigenvectors v with each column multiplied by
// the phase that best aligns it with the same column of ref.
func phased(v, ref []complex128, n int) []complex128 {
	out := append([]complex128(nil), v...)
	for j := range n {
		var dot complex128
		for i := range n {
			dot += cmplx.Conj(v[i*n+j]) * ref[i*n+j]
		}
		if dot == 0 {
			continue
		}
		ph := dot / complex(cmplx.Abs(dot), 0)
		for i := range n {
			out[i*n+j] *= ph
		}
	}
	return out
}

// TestGradients compares the gradients of a cost through every builder
// with WithGrid with those without (float32 and float64): Ā, B̄ and L̄ of
//
//	Σ W₁∘Cholesky(A) + Σ W₂∘CholSolve(L, B) + Σ W₃∘Potrs(A, B) + Σ W₄∘Potri(A)
//	+ LogDet(A) + Σ w₅∘eigenvalues(A) + Σ W₆∘V∘V + Σ w₇∘(values only)
//
// (V∘V: the eigenvectors' signs do not matter), on the grid run by the
// TapeMachine and by the LispMachine (the ops' DoDiff).
func TestGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 23))
	for _, g := range grids(t) {
		for _, sh := range shapes {
			for _, m := range []machine{tape, lisp} {
				gradients[float32](t, rng, g, sh.n, sh.k, sh.nb, m)
				gradients[float64](t, rng, g, sh.n, sh.k, sh.nb, m)
			}
		}
	}
}

func gradients[T float32 | float64](t *testing.T, rng *rand.Rand, grid *dist.Grid, n, k, nb int, m machine) {
	dt := dtypeOf[T]()
	name := fmt.Sprintf("%s %v n=%d k=%d nb=%d %v", gridName(grid), dt, n, k, nb, m)
	a, l, b := operands[T](rng, n, k)
	ws := make([]*tensor.Dense, 7)
	for i := range ws {
		switch i {
		case 1, 2:
			ws[i] = b.Clone().(*tensor.Dense)
			copy(ws[i].Data().([]T), matrix[T](rng, n, max(k, 1)).Data().([]T))
		case 4, 6:
			ws[i] = tensor.New(tensor.WithShape(n), tensor.WithBacking(matrix[T](rng, n, 1).Data()))
		default:
			ws[i] = matrix[T](rng, n, n)
		}
	}
	build := func(opts ...mgla.Option) func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
		return func(g *G.ExprGraph) (_, wrt []*G.Node, cost *G.Node, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			an, ln, bn := input(g, "A", a), input(g, "L", l), input(g, "B", b)
			ch := G.Must(mgla.Cholesky(an, opts...))
			cs := G.Must(mgla.CholSolve(ln, bn, opts...))
			x := G.Must(mgla.Potrs(an, bn, opts...))
			inv := G.Must(mgla.Potri(an, opts...))
			ld := G.Must(mgla.LogDet(an, opts...))
			w, v, err := mgla.Syevd(an, opts...)
			if err != nil {
				return nil, nil, nil, err
			}
			wo, _, err := mgla.Syevd(an, append(opts, mgla.EigenvaluesOnly())...)
			if err != nil {
				return nil, nil, nil, err
			}
			cost = ld
			for i, x := range []*G.Node{ch, cs, x, inv, w, G.Must(G.HadamardProd(v, v)), wo} {
				term := G.Must(G.Sum(G.Must(G.HadamardProd(x, G.NewConstant(ws[i].Clone(), G.WithName(fmt.Sprintf("W%d", i+1)))))))
				cost = G.Must(G.Add(cost, term))
			}
			return nil, []*G.Node{an, bn, ln}, cost, nil
		}
	}
	got, want := onAndOffGrid(t, name, m, grid, nb, build)
	// The eigenvector term amplifies rounding by 1/(w_j − w_i).
	tol := 50 * tolerance(dt)
	for i, what := range []string{"Ā", "B̄", "L̄"} {
		g, w := c128(got[i]), c128(want[i])
		if ok, j := near(g, w, tol); !ok {
			if j < 0 {
				t.Errorf("%s: %s has %d entries, want %d", name, what, len(g), len(w))
				continue
			}
			t.Errorf("%s: %s[%d] = %v, without the grid %v", name, what, j, g[j], w[j])
		}
	}
}

// TestFiniteDifferences checks the gradients of Potrs, Potri, LogDet and
// Syevd (values and vectors) on the grid against central differences of
// the same graph along a random symmetric direction E, float64.
func TestFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 29))
	const n, k, nb = 6, 2, 4
	for _, g := range grids(t) {
		opts := []mgla.Option{mgla.WithGrid(distops.On(g)), mgla.WithTile(nb)}
		a, b, w, wk, e := fdOperands(rng, n, k)
		for _, c := range []struct {
			name string
			f    func(a *G.Node) (*G.Node, error)
		}{
			{"Potrs", func(a *G.Node) (*G.Node, error) {
				x, err := mgla.Potrs(a, input(a.Graph(), "B", b), opts...)
				if err != nil {
					return nil, err
				}
				return G.Sum(G.Must(G.HadamardProd(x, G.NewConstant(wk.Clone()))))
			}},
			{"Potri", func(a *G.Node) (*G.Node, error) {
				c, err := mgla.Potri(a, opts...)
				if err != nil {
					return nil, err
				}
				return G.Sum(G.Must(G.HadamardProd(c, G.NewConstant(w.Clone()))))
			}},
			{"LogDet", func(a *G.Node) (*G.Node, error) { return mgla.LogDet(a, opts...) }},
			{"Syevd", func(a *G.Node) (*G.Node, error) {
				ev, v, err := mgla.Syevd(a, opts...)
				if err != nil {
					return nil, err
				}
				vv := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.HadamardProd(v, v)), G.NewConstant(w.Clone())))))
				return G.Add(vv, G.Must(G.Sum(G.Must(G.HadamardProd(ev, ev)))))
			}},
		} {
			// at is the cost at A + hE and, for h = 0, its gradient Ā.
			at := func(h float64) (float64, []float64, error) {
				ah := a.Clone().(*tensor.Dense)
				d := ah.Data().([]float64)
				for i := range d {
					d[i] += h * e[i]
				}
				outs, grads, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
					an := input(g, "A", ah)
					cost, err := c.f(an)
					if err != nil || h != 0 {
						return []*G.Node{cost}, nil, nil, err
					}
					return []*G.Node{cost}, []*G.Node{an}, cost, nil
				})
				if err != nil {
					return 0, nil, err
				}
				var grad []float64
				if len(grads) > 0 {
					grad = grads[0].Data().([]float64)
				}
				return outs[0].Data().(float64), grad, nil
			}
			_, abar, err := at(0)
			if err != nil {
				t.Fatalf("%s %s: %v", gridName(g), c.name, err)
			}
			fd := derivative(func(h float64) float64 {
				f, _, err := at(h)
				if err != nil {
					t.Fatal(err)
				}
				return f
			})
			an := 0.0
			for i := range e {
				an += abar[i] * e[i]
			}
			if math.Abs(fd-an) > 1e-6*max(1, math.Abs(fd)) {
				t.Errorf("%s %s: ⟨Ā, E⟩ = %v, finite differences %v", gridName(g), c.name, an, fd)
			}
			if world.Rank() == 0 {
				t.Logf("%s %s: ⟨Ā, E⟩ = %v, finite differences %v", gridName(g), c.name, an, fd)
			}
		}
	}
}

// derivative is f'(0) by the fourth-order central difference
// (8(f(h) − f(−h)) − (f(2h) − f(−2h))) / 12h with h = 1e-3. Its error is
// about h⁴·f⁽⁵⁾/30 from the stencil and ε·|f|/h from rounding. The
// second-order difference needs h ≈ 1e-6 for the eigenvector terms, and its
// rounding part ε·|f|/h then reaches 1e-6 for Syevd's cost (|f| ≈ 3000):
// it failed the 1e-6 tolerance for some seeds.
func derivative(f func(h float64) float64) float64 {
	const h = 1e-3
	return (8*(f(h)-f(-h)) - (f(2*h) - f(-2*h))) / (12 * h)
}

// fdOperands are the operands of the finite-difference tests: an n×n
// symmetric positive definite a with well separated eigenvalues (for
// Syevd's vectors), an n×k b, weights w (n×n) and wk (n×k), and a random
// symmetric direction e (row-major).
func fdOperands(rng *rand.Rand, n, k int) (a, b, w, wk *tensor.Dense, e []float64) {
	a = spd[float64](rng, n)
	for i := range n {
		a.Data().([]float64)[i*n+i] += 3 * float64(i)
	}
	b = matrix[float64](rng, n, k)
	w, wk = matrix[float64](rng, n, n), matrix[float64](rng, n, k)
	e = matrix[float64](rng, n, n).Data().([]float64)
	for i := range n {
		for j := range i {
			e[j*n+i] = e[i*n+j]
		}
	}
	return a, b, w, wk, e
}

// TestNotPositiveDefinite checks that a matrix that is not positive
// definite gives ErrNotPositiveDefinite through mgla.Cause on every rank,
// with the order of the failing minor, for every op that factors, and that
// CholSolve with a zero on L's diagonal does too, as on one process.
func TestNotPositiveDefinite(t *testing.T) {
	const n = 7
	for _, g := range grids(t) {
		opts := []mgla.Option{mgla.WithGrid(distops.On(g)), mgla.WithTile(2)}
		a := make([]float64, n*n)
		for i := range n {
			a[i*n+i] = 1
		}
		a[4*n+4] = -1 // the leading minor of order 5 fails
		at := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))
		bt := tensor.New(tensor.WithShape(n, 2), tensor.WithBacking(make([]float64, 2*n)))
		for _, c := range []struct {
			name  string
			order int
			f     func(a, b *G.Node) (*G.Node, error)
		}{
			{"Cholesky", 5, func(a, b *G.Node) (*G.Node, error) { return mgla.Cholesky(a, opts...) }},
			{"Potrs", 5, func(a, b *G.Node) (*G.Node, error) { return mgla.Potrs(a, b, opts...) }},
			{"Potri", 5, func(a, b *G.Node) (*G.Node, error) { return mgla.Potri(a, opts...) }},
			{"LogDet", 5, func(a, b *G.Node) (*G.Node, error) { return mgla.LogDet(a, opts...) }},
			{"CholSolve", 5, func(l, b *G.Node) (*G.Node, error) {
				z := G.Must(G.HadamardProd(l, G.NewConstant(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(zeroAt(n, 4))))))
				return mgla.CholSolve(z, b, opts...)
			}},
		} {
			_, _, err := run(tape, func(gr *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				x, err := c.f(input(gr, "A", at), input(gr, "B", bt))
				return []*G.Node{x}, nil, nil, err
			})
			var npd *kernels.NotPositiveDefiniteError
			switch {
			case !errors.Is(err, mgla.ErrNotPositiveDefinite):
				t.Errorf("rank %d, %s %s: %v, want ErrNotPositiveDefinite", world.Rank(), gridName(g), c.name, err)
			case !errors.As(err, &npd) || npd.Order != c.order:
				t.Errorf("rank %d, %s %s: %v, want the minor of order %d", world.Rank(), gridName(g), c.name, err, c.order)
			}
		}
	}
}

// TestCholSolveHostFactorDiffersOnOneRank: a host L whose last rank's copy
// alone has a zero on its diagonal (against the rule that a host value is
// the same on every rank) gets one verdict on every rank, and the ranks stay
// in step: the next op runs. CholSolve checked each rank's own copy before
// any collective, so that rank returned at once while the others went on
// into the distribution, and the next op failed (ErrMismatch on one rank, a
// timeout on the other).
func TestCholSolveHostFactorDiffersOnOneRank(t *testing.T) {
	const n = 7
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range grids(t) {
		opts := []mgla.Option{mgla.WithGrid(distops.On(g)), mgla.WithTile(2)}
		a, l, b := operands[float64](rng, n, 2)
		if world.Rank() == world.Size()-1 {
			l.Data().([]float64)[n*n-1] = 0
		}
		_, _, err := run(tape, func(gr *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
			x, err := mgla.CholSolve(input(gr, "L", l), input(gr, "B", b), opts...)
			return []*G.Node{x}, nil, nil, err
		})
		// Every rank the same verdict: an error on all or on none.
		failed := 0.0
		if err != nil {
			failed = 1
		}
		got := []float64{0, 0}
		if e := world.Do(allReduceCall(collective.Max, []float64{failed, -failed}, got)); e != nil {
			t.Fatal(e)
		}
		if got[0] != -got[1] {
			t.Errorf("rank %d, %s: CholSolve's verdict differs between ranks (here %v)", world.Rank(), gridName(g), err)
		}
		_, _, err = run(tape, func(gr *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
			x, err := mgla.Potrs(input(gr, "A", a), input(gr, "B", b), opts...)
			return []*G.Node{x}, nil, nil, err
		})
		if err != nil {
			t.Errorf("rank %d, %s: the op after CholSolve: %v", world.Rank(), gridName(g), err)
		}
	}
}

// allReduceCall is a float64 AllReduce on host slices.
func allReduceCall(op collective.ReduceOp, send, recv []float64) *collective.Call {
	sb, _ := sharding.NewHostBuffer(send)
	rb, _ := sharding.NewHostBuffer(recv)
	return &collective.Call{Kind: collective.AllReduce, Op: op, Dtype: tensor.Float64, Count: len(send),
		Send: []sharding.Buffer{sb}, Recv: []sharding.Buffer{rb}}
}

// zeroAt is the n×n row-major matrix of ones with a zero at (i, i).
func zeroAt(n, i int) []float64 {
	m := make([]float64, n*n)
	for j := range m {
		m[j] = 1
	}
	m[i*n+i] = 0
	return m
}

// TestComplexGradient checks that differentiating through a complex op on
// the grid is ErrComplexGradient, as on one process.
func TestComplexGradient(t *testing.T) {
	g := grids(t)[0]
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []tensor.Dtype{tensor.Complex64, tensor.Complex128} {
		a := spd[complex128](rng, 3)
		if dt == tensor.Complex64 {
			a = spd[complex64](rng, 3)
		}
		gr := G.NewGraph()
		an := input(gr, "A", a)
		ld, err := mgla.LogDet(an, mgla.WithGrid(distops.On(g)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := G.Grad(ld, an); !errors.Is(mgla.Cause(err), mgla.ErrComplexGradient) {
			t.Errorf("%v: gradient of LogDet on the grid: %v, want ErrComplexGradient", dt, err)
		}
	}
}

// TestBadInput checks the build-time errors of the ops called directly
// (the root builders check their inputs before): each is ErrBadInput and
// leaves the graph as it was.
func TestBadInput(t *testing.T) {
	grid := grids(t)[0]
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	rect := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 3), G.WithName("rect"))
	b5 := G.NewMatrix(g, tensor.Float64, G.WithShape(5, 2), G.WithName("B5"))
	b32 := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 2), G.WithName("B32"))
	ints := G.NewMatrix(g, tensor.Int, G.WithShape(4, 4), G.WithName("ints"))
	other := G.NewMatrix(G.NewGraph(), tensor.Float64, G.WithShape(4, 2), G.WithName("other"))
	on := distops.On(grid)
	for _, c := range []struct {
		name  string
		build func() error
	}{
		{"no grid", func() error { _, err := distops.On(nil).Potri(a, 0); return err }},
		{"negative block", func() error { _, err := on.LogDet(a, -1); return err }},
		{"not square", func() error { _, err := on.Cholesky(rect, 2); return err }},
		{"nil", func() error { _, err := on.Potrs(a, nil, 2); return err }},
		{"rows", func() error { _, err := on.CholSolve(a, b5, 2); return err }},
		{"dtypes", func() error { _, err := on.Potrs(a, b32, 2); return err }},
		{"int dtype", func() error { _, _, err := on.Syevd(ints, 2, true); return err }},
		{"graphs", func() error { _, err := on.CholSolve(a, other, 2); return err }},
	} {
		n := len(g.AllNodes())
		if err := c.build(); !errors.Is(err, dist.ErrBadInput) {
			t.Errorf("%s: %v, want dist.ErrBadInput", c.name, err)
		}
		if m := len(g.AllNodes()); m != n {
			t.Errorf("%s: the graph grew from %d to %d nodes", c.name, n, m)
		}
	}
}

// TestRootBadInput checks that the build-time errors of the ops reached
// through the root builders with WithGrid match mgla.ErrBadInput, as the
// root builders' own do, as well as dist.ErrBadInput, and leave the graph
// as it was.
func TestRootBadInput(t *testing.T) {
	grid := grids(t)[0]
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("B"))
	v := gridValue(t, grid, tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16))), 2)
	ga := distops.Input(g, v, "gridA")
	other, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	noGrid := mgla.WithGrid(distops.On(nil))
	for _, c := range []struct {
		name  string
		build func() error
	}{
		{"Potrs, no grid", func() error { _, err := mgla.Potrs(a, b, noGrid); return err }},
		{"CholSolve, no grid", func() error { _, err := mgla.CholSolve(a, b, noGrid); return err }},
		{"Cholesky, no grid", func() error { _, err := mgla.Cholesky(a, noGrid); return err }},
		{"Potri, no grid", func() error { _, err := mgla.Potri(a, noGrid); return err }},
		{"LogDet, no grid", func() error { _, err := mgla.LogDet(a, noGrid); return err }},
		{"Syevd, no grid", func() error { _, _, err := mgla.Syevd(a, noGrid); return err }},
		{"other blocks", func() error {
			_, err := mgla.Potrs(ga, b, mgla.WithGrid(distops.On(grid)), mgla.WithTile(3))
			return err
		}},
		{"other grid", func() error { _, err := mgla.LogDet(ga, mgla.WithGrid(distops.On(other))); return err }},
	} {
		n := len(g.AllNodes())
		err := c.build()
		if !errors.Is(mgla.Cause(err), mgla.ErrBadInput) || !errors.Is(err, dist.ErrBadInput) {
			t.Errorf("%s: %v, want mgla.ErrBadInput and dist.ErrBadInput", c.name, err)
		}
		if m := len(g.AllNodes()); m != n {
			t.Errorf("%s: the graph grew from %d to %d nodes", c.name, n, m)
		}
	}
}

// TestGradientOnOneRank: a graph whose gradient only the last rank builds
// (its cost alone reaches the op) is ErrMismatch on every rank at the
// forward op, and the next graph, alike on every rank, runs. The last
// rank's gradient calls on the grid used to pair with the others' next op:
// an error there, none on the others, and the next graph failed.
func TestGradientOnOneRank(t *testing.T) {
	if world.Size() < 2 {
		t.Skip("needs 2 ranks")
	}
	const n = 7
	rng := rand.New(rand.NewPCG(seed(t), 61))
	last := world.Rank() == world.Size()-1
	for _, g := range grids(t) {
		opts := []mgla.Option{mgla.WithGrid(distops.On(g)), mgla.WithTile(2)}
		a, _, b := operands[float64](rng, n, 2)
		for _, op := range []struct {
			name  string
			build func(a, b *G.Node) (*G.Node, error)
		}{
			{"Potrs", func(a, b *G.Node) (*G.Node, error) { return mgla.Potrs(a, b, opts...) }},
			{"LogDet", func(a, _ *G.Node) (*G.Node, error) { return mgla.LogDet(a, opts...) }},
		} {
			_, _, err := run(tape, func(gr *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				an := input(gr, "A", a)
				x, err := op.build(an, input(gr, "B", b))
				if err != nil || !last {
					return []*G.Node{x}, nil, nil, err
				}
				return []*G.Node{x}, []*G.Node{an}, G.Must(G.Sum(x)), nil
			})
			if !errors.Is(err, mgla.ErrMismatch) {
				t.Errorf("rank %d, %s %s with the gradient on the last rank only: %v, want ErrMismatch", world.Rank(), gridName(g), op.name, err)
			}
			_, _, err = run(tape, func(gr *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				x, err := mgla.Potrs(input(gr, "A", a), input(gr, "B", b), opts...)
				return []*G.Node{x}, nil, nil, err
			})
			if err != nil {
				t.Errorf("rank %d, %s: the graph after %s: %v", world.Rank(), gridName(g), op.name, err)
			}
		}
	}
}

// TestGridValueWithoutWithGrid: a grid value (an Input, or the grid output
// of an op) given to a root builder without WithGrid is ErrBadInput at
// build time, and the graph is left as it was (it used to build, and fail
// at run time with an error matching no sentinel).
func TestGridValueWithoutWithGrid(t *testing.T) {
	grid := grids(t)[0]
	g := G.NewGraph()
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("B"))
	v := gridValue(t, grid, tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16))), 2)
	ga := distops.Input(g, v, "gridA")
	full := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	made, err := distops.On(grid).Distribute(full, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*G.Node{ga, made} {
		for _, c := range []struct {
			name  string
			build func() error
		}{
			{"Potrs", func() error { _, err := mgla.Potrs(x, b); return err }},
			{"Potrs (B)", func() error { _, err := mgla.Potrs(full, x); return err }},
			{"CholSolve", func() error { _, err := mgla.CholSolve(x, b); return err }},
			{"Cholesky", func() error { _, err := mgla.Cholesky(x); return err }},
			{"Potri", func() error { _, err := mgla.Potri(x); return err }},
			{"LogDet", func() error { _, err := mgla.LogDet(x); return err }},
			{"Syevd", func() error { _, _, err := mgla.Syevd(x); return err }},
		} {
			n := len(g.AllNodes())
			err := c.build()
			if !errors.Is(err, mgla.ErrBadInput) || !strings.Contains(err.Error(), "WithGrid") {
				t.Errorf("%s of %v without WithGrid: %v, want ErrBadInput saying to pass WithGrid", c.name, x.Name(), err)
			}
			if m := len(g.AllNodes()); m != n {
				t.Errorf("%s: the graph grew from %d to %d nodes", c.name, n, m)
			}
		}
	}
	// A grid value bound with Let to the input of an op built without
	// WithGrid fails at run time saying so (it said "unsupported value").
	g2 := G.NewGraph()
	a2 := G.NewMatrix(g2, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	if _, err := mgla.LogDet(a2); err != nil {
		t.Fatal(err)
	}
	if err := G.Let(a2, v); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g2)
	defer vm.Close()
	if err := vm.RunAll(); !errors.Is(mgla.Cause(err), mgla.ErrBadInput) || !strings.Contains(err.Error(), "grid value") || !strings.Contains(err.Error(), "WithGrid") {
		t.Errorf("a grid value bound with Let to an op without WithGrid: %v, want ErrBadInput saying to build it with WithGrid", err)
	}
}

// TestSkippedRun: a rank that skips a run of a machine whose input changes
// from run to run (gorgonia.Let) gets ErrMismatch with the others at its
// next run, on every rank; its runs used to pair with the others' runs
// before, on the other matrix, and return a log-determinant of neither.
// So do ranks that pass different host matrices (A + rank·I) at the first
// run. (The ops compare a hash of a sample of their replicated inputs.)
func TestSkippedRun(t *testing.T) {
	if world.Size() < 2 {
		t.Skip("needs 2 ranks")
	}
	const n = 6
	last := world.Rank() == world.Size()-1
	for _, g := range grids(t) {
		aOf := func(run int) *tensor.Dense { // (1 + 10·run)·I
			d := make([]float64, n*n)
			for i := range n {
				d[i*n+i] = 1 + 10*float64(run)
			}
			return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(d))
		}
		gr := G.NewGraph()
		a := G.NewMatrix(gr, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(aOf(0)))
		ld, err := mgla.LogDet(a, mgla.WithGrid(distops.On(g)), mgla.WithTile(2))
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(gr)
		for run := range 3 {
			if run == 1 && last {
				continue // its data did not load, say
			}
			if err := G.Let(a, aOf(run)); err != nil {
				t.Fatal(err)
			}
			vm.Reset()
			err := vm.RunAll()
			if run == 0 {
				if err != nil || math.Abs(ld.Value().Data().(float64)) > 1e-12 {
					t.Fatalf("rank %d, %s run 0: log det %v, %v; want 0", world.Rank(), gridName(g), ld.Value(), err)
				}
				continue
			}
			if last || run == 1 {
				// The first run after the skip on each side: the last rank's
				// run 2 met the others' run 1.
				if !errors.Is(mgla.Cause(err), mgla.ErrMismatch) || !strings.Contains(err.Error(), "different matrices") {
					t.Errorf("rank %d, %s run %d: log det %v, %v; want ErrMismatch", world.Rank(), gridName(g), run, ld.Value(), err)
				}
				break
			}
		}
		vm.Close()

		own := aOf(0)
		own.Data().([]float64)[0] += float64(world.Rank())
		gr = G.NewGraph()
		a = G.NewMatrix(gr, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(own))
		b := G.NewMatrix(gr, tensor.Float64, G.WithShape(n, 1), G.WithName("B"), G.WithValue(tensor.New(tensor.WithShape(n, 1), tensor.WithBacking(make([]float64, n)))))
		if _, err := mgla.Potrs(a, b, mgla.WithGrid(distops.On(g)), mgla.WithTile(2)); err != nil {
			t.Fatal(err)
		}
		vm = G.NewTapeMachine(gr)
		if err := vm.RunAll(); !errors.Is(mgla.Cause(err), mgla.ErrMismatch) {
			t.Errorf("rank %d, %s: Potrs of A + rank·e₁e₁ᵀ: %v, want ErrMismatch", world.Rank(), gridName(g), err)
		} else if world.Rank() == 0 {
			t.Logf("%v", err)
		}
		vm.Close()
	}
}

// TestReplicatedInputsCompared: the ranks' replicated host inputs are
// compared by value, so that equal matrices in other memory forms on one
// rank (a strided view, a column-major tensor, -0 for +0) run, a NaN of any
// payload is ErrNonFinite on every rank, and a skipped run with a view as
// its input is ErrMismatch (views were not compared, column-major tensors
// were compared in memory order: a false ErrMismatch).
func TestReplicatedInputsCompared(t *testing.T) {
	if world.Size() < 2 {
		t.Skip("needs 2 ranks")
	}
	const n = 6
	first := world.Rank() == 0
	spd := func(d0 float64) []float64 { // row-major diag(d0, 2, …) + 0.5 off the diagonal
		a := make([]float64, n*n)
		for i := range n {
			for j := range n {
				a[i*n+j] = 0.5
			}
			a[i*n+i] = float64(i + 2)
		}
		a[0] = d0
		return a
	}
	plain := func(a []float64) *tensor.Dense { return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a)) }
	view := func(a []float64) *tensor.Dense { // columns 0..n-1 of an n×(n+1) matrix
		wide := make([]float64, n*(n+1))
		for i := range n {
			copy(wide[i*(n+1):], a[i*n:i*n+n])
		}
		v, err := tensor.New(tensor.WithShape(n, n+1), tensor.WithBacking(wide)).Slice(nil, G.S(0, n))
		if err != nil {
			t.Fatal(err)
		}
		return v.(*tensor.Dense)
	}
	fortran := func(a []float64) *tensor.Dense {
		cm := make([]float64, n*n)
		for i := range n {
			for j := range n {
				cm[j*n+i] = a[i*n+j]
			}
		}
		return tensor.New(tensor.WithShape(n, n), tensor.AsFortran(cm))
	}
	negZero := func(a []float64) *tensor.Dense {
		a[1], a[n] = 0, 0
		if first {
			a[1], a[n] = math.Copysign(0, -1), math.Copysign(0, -1)
		}
		return plain(a)
	}
	nan := func(a []float64) *tensor.Dense {
		a[0] = math.NaN()
		if first {
			a[0] = math.Float64frombits(0x7ff8000000000123)
		}
		return plain(a)
	}
	for _, g := range grids(t) {
		for _, c := range []struct {
			name  string
			value func(a []float64) *tensor.Dense // rank 0's form
			want  error
		}{
			{"a strided view on rank 0", func(a []float64) *tensor.Dense {
				if first {
					return view(a)
				}
				return plain(a)
			}, nil},
			{"a column-major tensor on rank 0", func(a []float64) *tensor.Dense {
				if first {
					return fortran(a)
				}
				return plain(a)
			}, nil},
			{"-0 for +0 on rank 0", negZero, nil},
			{"another NaN payload on rank 0", nan, mgla.ErrNonFinite},
		} {
			gr := G.NewGraph()
			a := G.NewMatrix(gr, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(c.value(spd(3))))
			ld, err := mgla.LogDet(a, mgla.WithGrid(distops.On(g)), mgla.WithTile(2))
			if err != nil {
				t.Fatal(err)
			}
			vm := G.NewTapeMachine(gr)
			err = vm.RunAll()
			vm.Close()
			switch {
			case c.want == nil && (err != nil || math.IsNaN(ld.Value().Data().(float64))):
				t.Errorf("rank %d, %s, %s: %v, %v", world.Rank(), gridName(g), c.name, ld.Value(), err)
			case c.want != nil && !errors.Is(mgla.Cause(err), c.want):
				t.Errorf("rank %d, %s, %s: %v, want %v", world.Rank(), gridName(g), c.name, err, c.want)
			}
		}

		// A skipped run whose input is a view.
		gr := G.NewGraph()
		a := G.NewMatrix(gr, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(view(spd(1))))
		if _, err := mgla.LogDet(a, mgla.WithGrid(distops.On(g)), mgla.WithTile(2)); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(gr)
		last := world.Rank() == world.Size()-1
		for run := range 3 {
			if run == 1 && last {
				continue
			}
			if err := G.Let(a, view(spd(1+10*float64(run)))); err != nil {
				t.Fatal(err)
			}
			vm.Reset()
			err := vm.RunAll()
			if run == 0 {
				if err != nil {
					t.Fatalf("rank %d, %s run 0: %v", world.Rank(), gridName(g), err)
				}
				continue
			}
			if !errors.Is(mgla.Cause(err), mgla.ErrMismatch) {
				t.Errorf("rank %d, %s, a view skipped on the last rank, run %d: %v, want ErrMismatch", world.Rank(), gridName(g), run, err)
			}
			break
		}
		vm.Close()
	}
}

// TestShapesDisagree: ranks whose graphs give an op inputs of other shapes
// or another dtype get ErrMismatch on every rank, whose message names each
// side's shapes or dtype (it read as different matrices before).
func TestShapesDisagree(t *testing.T) {
	if world.Size() < 2 {
		t.Skip("needs 2 ranks")
	}
	last := world.Rank() == world.Size()-1
	for _, g := range grids(t) {
		for _, c := range []struct {
			name        string
			n           int
			dt          tensor.Dtype
			want, want2 string
		}{
			{"shape", 6, tensor.Float64, "6x6", "7x7"},
			{"dtype", 6, tensor.Float64, "float64", "float32"},
		} {
			n, dt := c.n, c.dt
			if last {
				if c.name == "shape" {
					n++
				} else {
					dt = tensor.Float32
				}
			}
			eye := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
			for i := range n {
				var two any = 2.0
				if dt == tensor.Float32 {
					two = float32(2)
				}
				if err := eye.SetAt(two, i, i); err != nil {
					t.Fatal(err)
				}
			}
			gr := G.NewGraph()
			a := G.NewMatrix(gr, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(eye))
			if _, err := mgla.LogDet(a, mgla.WithGrid(distops.On(g)), mgla.WithTile(2)); err != nil {
				t.Fatal(err)
			}
			vm := G.NewTapeMachine(gr)
			err := vm.RunAll()
			vm.Close()
			if !errors.Is(mgla.Cause(err), mgla.ErrMismatch) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.want2) {
				t.Errorf("rank %d, %s, %s differing on the last rank: %v; want ErrMismatch naming %s and %s", world.Rank(), gridName(g), c.name, err, c.want, c.want2)
			}
		}

		// A second input's shape, within the 48 bytes a message shows even
		// for orders of 1000 (it was cut after the op's name).
		k := 100
		if last {
			k = 101
		}
		gr := G.NewGraph()
		a := G.NewMatrix(gr, tensor.Float64, G.WithShape(1000, 1000), G.WithName("A"))
		b := G.NewMatrix(gr, tensor.Float64, G.WithShape(1000, k), G.WithName("B"))
		if _, err := mgla.Potrs(a, b, mgla.WithGrid(distops.On(g))); err != nil {
			t.Fatal(err)
		}
		d := make([]float64, 1000*1000)
		for i := range 1000 {
			d[i*1000+i] = 2
		}
		if err := G.Let(a, tensor.New(tensor.WithShape(1000, 1000), tensor.WithBacking(d))); err != nil {
			t.Fatal(err)
		}
		if err := G.Let(b, tensor.New(tensor.WithShape(1000, k), tensor.WithBacking(make([]float64, 1000*k)))); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(gr)
		err := vm.RunAll()
		vm.Close()
		if !errors.Is(mgla.Cause(err), mgla.ErrMismatch) || !strings.Contains(err.Error(), "1000x1000,1000x100;") || !strings.Contains(err.Error(), "1000x1000,1000x101;") {
			t.Errorf("rank %d, %s, B's columns differing on the last rank: %v; want ErrMismatch naming both shapes", world.Rank(), gridName(g), err)
		}
	}
}
