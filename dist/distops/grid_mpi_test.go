//go:build mpi

package distops_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	"github.com/mgla/mgla/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// band is this rank's rows [r0, r1) of n in the split used by the grid
// tests: every rank at least one row, the first ranks one more (not the
// block split of FromRowBlocks' p?gemr2d path unless the counts happen to
// be) when even, the block split of ⌈n/size⌉ rows when odd.
func band(n int, even bool) (r0, r1 int) {
	size, r := world.Size(), world.Rank()
	if !even {
		per := (n + size - 1) / size
		return min(r*per, n), min((r+1)*per, n)
	}
	q, rem := n/size, n%size
	r0 = r*q + min(r, rem)
	r1 = r0 + q
	if r < rem {
		r1++
	}
	return r0, r1
}

// rowsOf is rows [r0, r1) of the row-major matrix (or vector) d, a copy.
func rowsOf(d *tensor.Dense, r0, r1 int) *tensor.Dense {
	s := d.Shape()
	c := 1
	if len(s) == 2 {
		c = s[1]
	}
	src := reflect.ValueOf(d.Data())
	rows := reflect.MakeSlice(src.Type(), (r1-r0)*c, (r1-r0)*c)
	reflect.Copy(rows, src.Slice(r0*c, r1*c))
	shape := []int{r1 - r0, c}
	if len(s) == 1 {
		shape = shape[:1]
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(rows.Interface()))
}

// inputs is how the grid tests put a host matrix on the grid.
type placement int

const (
	rowBlocks  placement = iota // FromRowBlocks of each rank's band (even split)
	blockSplit                  // FromRowBlocks of the block split
	replicated                  // Distribute of every rank's copy
	gridInput                   // an input node holding a grid value
)

var placements = []placement{rowBlocks, blockSplit, replicated, gridInput}

func (p placement) String() string {
	return [...]string{"row blocks", "block split", "replicated", "grid input"}[p]
}

// onGrid is the node of the host matrix d put on the grid as p says, and
// the node that gradients are taken with respect to (the band, the host
// node or the grid input).
func onGrid(t *testing.T, on *distops.Ops, g *G.ExprGraph, grid *dist.Grid, name string, d *tensor.Dense, nb int, p placement) (x, wrt *G.Node) {
	t.Helper()
	n := d.Shape()[0]
	var err error
	switch {
	case p == gridInput:
		v := gridValue(t, grid, d, nb)
		wrt = distops.Input(g, v, name)
		return wrt, wrt
	case p == replicated || n < world.Size():
		wrt = input(g, name, d)
		x, err = on.Distribute(wrt, nb)
	default:
		r0, r1 := band(n, p == rowBlocks)
		if r1 == r0 { // the block split of few rows leaves this rank none
			wrt = input(g, name, d)
			x, err = on.Distribute(wrt, nb)
			break
		}
		wrt = input(g, name, rowsOf(d, r0, r1))
		x, err = on.FromRowBlocks(wrt, n, nb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x, wrt
}

// gridValue is the row-major host matrix (or vector) d as a grid value.
func gridValue(t *testing.T, grid *dist.Grid, d *tensor.Dense, nb int) *distops.Value {
	t.Helper()
	var v *distops.Value
	var err error
	switch x := d.Data().(type) {
	case []float32:
		v, err = valueOf(grid, d.Shape(), x, nb)
	case []float64:
		v, err = valueOf(grid, d.Shape(), x, nb)
	case []complex64:
		v, err = valueOf(grid, d.Shape(), x, nb)
	case []complex128:
		v, err = valueOf(grid, d.Shape(), x, nb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func valueOf[T scalar](grid *dist.Grid, shape tensor.Shape, rm []T, nb int) (*distops.Value, error) {
	r, c := shape[0], 1
	if len(shape) == 2 {
		c = shape[1]
	}
	cm := make([]T, r*c)
	for i := range r {
		for j := range c {
			cm[i+j*r] = rm[i*c+j]
		}
	}
	m, err := dist.FromReplicated(grid, r, c, nb, cm)
	if err != nil {
		return nil, err
	}
	return distops.NewValue(m, shape...)
}

// hostOf is a grid value brought to every rank as a row-major dense, or a
// host value as it is.
func hostOf(v G.Value) (G.Value, error) {
	gv, ok := v.(*distops.Value)
	if !ok {
		return v, nil
	}
	var d *tensor.Dense
	var err error
	switch gv.Dtype() {
	case tensor.Float32:
		d, err = gathered[float32](gv)
	case tensor.Float64:
		d, err = gathered[float64](gv)
	case tensor.Complex64:
		d, err = gathered[complex64](gv)
	default:
		d, err = gathered[complex128](gv)
	}
	return d, err
}

func gathered[T scalar](v *distops.Value) (*tensor.Dense, error) {
	m, ok := distops.MatrixOf[T](v)
	if !ok {
		return nil, fmt.Errorf("no %T matrix in %v", *new(T), v)
	}
	full, err := m.Gather(-1)
	if err != nil {
		return nil, err
	}
	r, c := m.Layout.Rows, m.Layout.Cols
	rm := make([]T, r*c)
	for i := range r {
		for j := range c {
			rm[i*c+j] = full[i+j*r]
		}
	}
	return tensor.New(tensor.WithShape(v.Shape()...), tensor.WithBacking(rm)), nil
}

// TestGridForward runs the six ops on grid values (A and L from row
// blocks, the block split, every rank's copy or a grid input node; B
// distributed), gathers the matrix results with Ops.Gather, and compares
// everything with the single-process ops, for every dtype, grid and shape.
func TestGridForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 31))
	for _, g := range grids(t) {
		for i, sh := range shapes {
			p := placements[i%len(placements)]
			gridForward[float32](t, rng, g, sh.n, sh.k, sh.nb, p)
			gridForward[float64](t, rng, g, sh.n, sh.k, sh.nb, p)
			gridForward[complex64](t, rng, g, sh.n, sh.k, sh.nb, p)
			gridForward[complex128](t, rng, g, sh.n, sh.k, sh.nb, p)
		}
	}
}

func gridForward[T scalar](t *testing.T, rng *rand.Rand, grid *dist.Grid, n, k, nb int, p placement) {
	dt := dtypeOf[T]()
	name := fmt.Sprintf("%s %v n=%d k=%d nb=%d A from %v", gridName(grid), dt, n, k, nb, p)
	a, l, b := operands[T](rng, n, k)
	on := distops.On(grid)
	var got []G.Value
	_, _, err := run(tape, func(g *G.ExprGraph) (outs, _ []*G.Node, _ *G.Node, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		an, _ := onGrid(t, on, g, grid, "A", a, nb, p)
		ln, _ := onGrid(t, on, g, grid, "L", l, nb, p)
		bn := input(g, "B", b) // a host B next to a grid A: distributed by the op
		back := func(x *G.Node) *G.Node { return G.Must(on.Gather(x, -1)) }
		wo, _ := must2(on.Syevd(an, 0, false))
		w, v := must2(on.Syevd(an, 0, true))
		outs = []*G.Node{back(G.Must(on.Cholesky(an, 0))), back(G.Must(on.CholSolve(ln, bn, 0))),
			back(G.Must(mgla.Potrs(an, bn, mgla.WithGrid(on)))), // the root builder takes grid values too
			back(G.Must(on.Potri(an, 0))), G.Must(on.LogDet(an, 0)), wo, w, back(v)}
		got = make([]G.Value, len(outs))
		for i, o := range outs {
			G.Read(o, &got[i])
		}
		return outs, nil, nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, _, err := run(tape, func(g *G.ExprGraph) (outs, _ []*G.Node, _ *G.Node, err error) {
		an, ln, bn := input(g, "A", a), input(g, "L", l), input(g, "B", b)
		wo, _, err := mgla.Syevd(an, mgla.EigenvaluesOnly())
		if err != nil {
			return nil, nil, nil, err
		}
		w, v, err := mgla.Syevd(an)
		if err != nil {
			return nil, nil, nil, err
		}
		return []*G.Node{G.Must(mgla.Cholesky(an)), G.Must(mgla.CholSolve(ln, bn)), G.Must(mgla.Potrs(an, bn)),
			G.Must(mgla.Potri(an)), G.Must(mgla.LogDet(an)), wo, w, v}, nil, nil, nil
	})
	if err != nil {
		t.Fatalf("%s: without the grid: %v", name, err)
	}
	compareForward(t, name, dt, n, got, want)
}

// machine names the Gorgonia machine a grid test runs.
type machine int

const (
	tape machine = iota
	lisp
)

func (m machine) String() string { return [...]string{"TapeMachine", "LispMachine"}[m] }

// run builds a graph with build, runs it on machine m with the gradients
// of cost (when not nil) with respect to wrt (gorgonia.Grad for the
// TapeMachine, copied out with G.Read; dual values for the LispMachine),
// and returns the outputs' values and the gradients, grid values brought
// to every rank.
func run(m machine, build func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error)) (outs, grads []G.Value, err error) {
	g := G.NewGraph()
	on, wrt, cost, err := build(g)
	if err != nil {
		return nil, nil, err
	}
	var vals []G.Value
	if m == lisp {
		vm := G.NewLispMachine(g)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			return nil, nil, mgla.Cause(err)
		}
		for _, n := range on {
			vals = append(vals, n.Value())
		}
		for _, n := range wrt {
			d, err := n.Grad()
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, d)
		}
	} else {
		var gn G.Nodes
		if cost != nil {
			if gn, err = G.Grad(cost, wrt...); err != nil {
				return nil, nil, mgla.Cause(err)
			}
		}
		all := append(append([]*G.Node(nil), on...), gn...)
		vals = make([]G.Value, len(all))
		for i, n := range all {
			G.Read(n, &vals[i])
		}
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			return nil, nil, mgla.Cause(err)
		}
	}
	for i := range vals {
		if vals[i], err = hostOf(vals[i]); err != nil {
			return nil, nil, err
		}
	}
	return vals[:len(on)], vals[len(on):], nil
}

// gpCost is the GP case: ½·Σ Y∘Potrs(A, Y) + ½·LogDet(A) on one A (one
// factorisation shared by the two ops).
func gpCost(a, x, y, ld *G.Node) *G.Node {
	half := G.NewConstant(0.5)
	if a.Dtype() == tensor.Float32 {
		half = G.NewConstant(float32(0.5))
	}
	quad := G.Must(G.Sum(G.Must(G.HadamardProd(y, x))))
	return G.Must(G.Add(G.Must(G.Mul(half, quad)), G.Must(G.Mul(half, ld))))
}

// TestGridGP checks the gradients of the GP cost ½·Σ Y∘Potrs(A, Y) +
// ½·LogDet(A) with A a grid value (from row blocks, the block split,
// every rank's copy or a grid input node: A has three consumers, the
// factor, Potrs and LogDet, whose gradients meet on the grid) against the
// single-process graph: each rank's band of Ā, or all of it, and Ȳ; on the
// TapeMachine and the LispMachine, float32 and float64.
func TestGridGP(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 37))
	for _, g := range grids(t) {
		for i, sh := range shapes {
			for _, p := range placements {
				for _, m := range []machine{tape, lisp} {
					gridGP[float64](t, rng, g, sh.n, sh.k, sh.nb+i%2, p, m)
					gridGP[float32](t, rng, g, sh.n, sh.k, sh.nb, p, m)
				}
			}
		}
	}
}

func gridGP[T float32 | float64](t *testing.T, rng *rand.Rand, grid *dist.Grid, n, k, nb int, p placement, m machine) {
	dt := dtypeOf[T]()
	name := fmt.Sprintf("%s %v n=%d k=%d nb=%d A from %v, %v", gridName(grid), dt, n, k, nb, p, m)
	a, _, y := operands[T](rng, n, k)
	on := distops.On(grid)
	got, grads, err := run(m, func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		an, aw := onGrid(t, on, g, grid, "A", a, nb, p)
		yn := input(g, "Y", y)
		x := G.Must(on.Gather(G.Must(on.Potrs(an, yn, 0)), -1))
		cost = gpCost(an, x, yn, G.Must(on.LogDet(an, 0)))
		return []*G.Node{cost}, []*G.Node{aw, yn}, cost, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, wgrads, err := run(tape, func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
		an, yn := input(g, "A", a), input(g, "Y", y)
		cost = gpCost(an, G.Must(mgla.Potrs(an, yn)), yn, G.Must(mgla.LogDet(an)))
		return []*G.Node{cost}, []*G.Node{an, yn}, cost, nil
	})
	if err != nil {
		t.Fatalf("%s: without the grid: %v", name, err)
	}
	// The band's gradient is the band of the whole one.
	abar := wgrads[0].(*tensor.Dense)
	if p != replicated && p != gridInput && !grads[0].Shape().Eq(abar.Shape()) {
		r0, r1 := band(n, p == rowBlocks)
		abar = rowsOf(abar, r0, r1)
	}
	tol := 10 * tolerance(dt)
	for i, c := range []struct {
		what      string
		got, want G.Value
	}{{"cost", got[0], want[0]}, {"Ā", grads[0], abar}, {"Ȳ", grads[1], wgrads[1]}} {
		if !c.got.Shape().Eq(c.want.Shape()) {
			t.Errorf("%s: %s has shape %v, want %v", name, c.what, c.got.Shape(), c.want.Shape())
			continue
		}
		if ok, j := near(c128(c.got), c128(c.want), tol); !ok {
			t.Errorf("%s: %s[%d] = %v, without the grid %v (%d)", name, c.what, j, c128(c.got)[j], c128(c.want)[j], i)
		}
	}
}

// TestGridFiniteDifferences checks the gradient that reaches the row
// blocks through the GP cost, and through Potri, CholSolve (A's lower
// triangle as the factor), Cholesky and Syevd on the grid, against central
// differences along a random symmetric direction E (float64): Σ over
// ranks of ⟨band of Ā, band of E⟩ against (f(A + hE) − f(A − hE))/2h, on
// both machines.
func TestGridFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 41))
	// n = 10: the bands (5+5, 4+3+3, 3+3+2+2 rows) are not the block
	// split on 3 and 4 processes, so on 4, where the rule takes p?gemr2d,
	// the band and its gradient move through dist's reband.
	const n, k, nb = 10, 2, 3
	for _, grid := range grids(t) {
		on := distops.On(grid)
		a, y, w, wk, e := fdOperands(rng, n, k)
		gather := func(x *G.Node) *G.Node { return G.Must(on.Gather(x, -1)) }
		weighted := func(x *G.Node) *G.Node {
			return G.Must(G.Sum(G.Must(G.HadamardProd(gather(x), G.NewConstant(w.Clone())))))
		}
		for _, c := range []struct {
			name string
			f    func(a *G.Node) *G.Node
		}{
			{"GP", func(a *G.Node) *G.Node {
				yn := input(a.Graph(), "Y", y)
				return gpCost(a, gather(G.Must(on.Potrs(a, yn, 0))), yn, G.Must(on.LogDet(a, 0)))
			}},
			{"Potri", func(a *G.Node) *G.Node { return weighted(G.Must(on.Potri(a, 0))) }},
			{"CholSolve", func(a *G.Node) *G.Node { // a's lower triangle as the factor
				x := gather(G.Must(on.CholSolve(a, input(a.Graph(), "B", y), 0)))
				return G.Must(G.Sum(G.Must(G.HadamardProd(x, G.NewConstant(wk.Clone())))))
			}},
			{"Cholesky", func(a *G.Node) *G.Node { return weighted(G.Must(on.Cholesky(a, 0))) }},
			{"Syevd", func(a *G.Node) *G.Node {
				ev, v := must2(on.Syevd(a, 0, true))
				vv := G.Must(G.HadamardProd(gather(v), gather(v)))
				return G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(vv, G.NewConstant(w.Clone()))))),
					G.Must(G.Sum(G.Must(G.HadamardProd(ev, ev))))))
			}},
		} {
			for _, m := range []machine{tape, lisp} {
				r0, r1 := band(n, true)
				at := func(h float64, grad bool) (float64, []float64) {
					ah := a.Clone().(*tensor.Dense)
					d := ah.Data().([]float64)
					for i := range d {
						d[i] += h * e[i]
					}
					mm := m
					if !grad {
						mm = tape
					}
					outs, grads, err := run(mm, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
						an, aw := onGrid(t, on, g, grid, "A", ah, nb, rowBlocks)
						cost := c.f(an)
						if !grad {
							return []*G.Node{cost}, nil, nil, nil
						}
						return []*G.Node{cost}, []*G.Node{aw}, cost, nil
					})
					if err != nil {
						t.Fatalf("%s %s %v: %v", gridName(grid), c.name, m, err)
					}
					if !grad {
						return outs[0].Data().(float64), nil
					}
					return outs[0].Data().(float64), grads[0].Data().([]float64)
				}
				_, abar := at(0, true)
				local := 0.0
				for i := r0; i < r1; i++ {
					for j := range n {
						local += abar[(i-r0)*n+j] * e[i*n+j]
					}
				}
				an := sumOverRanks(t, grid, local)
				fd := derivative(func(h float64) float64 { f, _ := at(h, false); return f })
				if math.Abs(fd-an) > 1e-6*max(1, math.Abs(fd)) {
					t.Errorf("%s %s %v: ⟨Ā, E⟩ = %v, finite differences %v", gridName(grid), c.name, m, an, fd)
				}
				if world.Rank() == 0 {
					t.Logf("%s %s %v: ⟨Ā, E⟩ = %v, finite differences %v", gridName(grid), c.name, m, an, fd)
				}
			}
		}
	}
}

// sumOverRanks is Σ x over the ranks, on every rank (through dist: each
// rank one row of a matrix, gathered).
func sumOverRanks(t *testing.T, grid *dist.Grid, x float64) float64 {
	t.Helper()
	m, err := dist.FromRowBlocks(grid, 1, 1, 1, []float64{x})
	if err != nil {
		t.Fatal(err)
	}
	all, err := m.Gather(-1)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for _, v := range all {
		s += v
	}
	return s
}

// TestGridBadInput checks the build-time errors of grid values: each is
// dist.ErrBadInput and leaves the graph as it was.
func TestGridBadInput(t *testing.T) {
	gs := grids(t)
	grid := gs[0]
	on := distops.On(grid)
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	v := gridValue(t, grid, tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16))), 2)
	ga := distops.Input(g, v, "gridA")
	wide := G.NewMatrix(g, tensor.Float64, G.WithShape(5, 4), G.WithName("wide"))
	ints := G.NewMatrix(g, tensor.Int, G.WithShape(2, 4), G.WithName("ints"))
	other, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, c := range []struct {
		name  string
		build func() error
	}{
		{"band taller than n", func() error { _, err := on.FromRowBlocks(wide, 4, 2); return err }},
		{"no rows", func() error { _, err := on.FromRowBlocks(a, 0, 2); return err }},
		{"int band", func() error { _, err := on.FromRowBlocks(ints, 4, 2); return err }},
		{"band on the grid", func() error { _, err := on.FromRowBlocks(ga, 4, 2); return err }},
		{"distribute a grid value", func() error { _, err := on.Distribute(ga, 2); return err }},
		{"gather a host node", func() error { _, err := on.Gather(a, 0); return err }},
		{"gather to a missing rank", func() error { _, err := on.Gather(ga, world.Size()); return err }},
		{"other blocks", func() error { _, err := on.Potrs(ga, a, 3); return err }},
		{"other grid", func() error { _, err := distops.On(other).LogDet(ga, 0); return err }},
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

// TestGridRunErrors checks the run-time errors on grid values: bands that
// do not add up to the node's rows, empty matrices (which the root
// builders reject at build time, but the ops called directly reach at run
// time: an error on every rank, no panic), and a matrix that is not
// positive definite (with the order of the failing minor) or a CholSolve
// factor with a zero on its diagonal, on every rank.
func TestGridRunErrors(t *testing.T) {
	const n = 7
	for _, grid := range grids(t) {
		on := distops.On(grid)
		a := make([]float64, n*n)
		for i := range n {
			a[i*n+i] = 1
		}
		a[4*n+4] = -1 // the leading minor of order 5 fails
		l := zeroAt(n, 4)
		for i := range n {
			for j := i + 1; j < n; j++ {
				l[i*n+j] = 0
			}
		}
		at := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))
		lt := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(l))
		bt := tensor.New(tensor.WithShape(n, 2), tensor.WithBacking(make([]float64, 2*n)))
		empty := func(r, c int) *tensor.Dense {
			return tensor.New(tensor.WithShape(r, c), tensor.WithBacking([]float64{}))
		}
		for _, c := range []struct {
			name  string
			order int
			f     func(g *G.ExprGraph) (*G.Node, error)
		}{
			{"Potrs", 5, func(g *G.ExprGraph) (*G.Node, error) {
				an, _ := onGrid(t, on, g, grid, "A", at, 2, rowBlocks)
				return on.Potrs(an, input(g, "B", bt), 0)
			}},
			{"CholSolve", 5, func(g *G.ExprGraph) (*G.Node, error) {
				ln, _ := onGrid(t, on, g, grid, "L", lt, 2, blockSplit)
				return on.CholSolve(ln, input(g, "B", bt), 0)
			}},
			{"rows", 0, func(g *G.ExprGraph) (*G.Node, error) {
				return on.FromRowBlocks(input(g, "band", bt), n+world.Size(), 2)
			}},
			{"LogDet 0×0", 0, func(g *G.ExprGraph) (*G.Node, error) {
				return on.LogDet(input(g, "A", empty(0, 0)), 2)
			}},
			{"Syevd 0×0", 0, func(g *G.ExprGraph) (*G.Node, error) {
				w, _, err := on.Syevd(input(g, "A", empty(0, 0)), 0, false)
				return w, err
			}},
			{"Distribute n×0", 0, func(g *G.ExprGraph) (*G.Node, error) {
				return on.Distribute(input(g, "B", empty(n, 0)), 2)
			}},
			{"empty bands", 0, func(g *G.ExprGraph) (*G.Node, error) {
				return on.FromRowBlocks(input(g, "band", empty(0, 2)), n, 2)
			}},
		} {
			_, _, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				x, err := c.f(g)
				return []*G.Node{x}, nil, nil, err
			})
			if c.order == 0 {
				if !errors.Is(err, dist.ErrBadInput) {
					t.Errorf("rank %d, %s %s: %v, want dist.ErrBadInput", world.Rank(), gridName(grid), c.name, err)
				}
				continue
			}
			var npd *kernels.NotPositiveDefiniteError
			if !errors.Is(err, mgla.ErrNotPositiveDefinite) || !errors.As(err, &npd) || npd.Order != c.order {
				t.Errorf("rank %d, %s %s: %v, want ErrNotPositiveDefinite of order %d", world.Rank(), gridName(grid), c.name, err, c.order)
			}
		}
	}
}

// must2 is gorgonia.Must for builders with two results.
func must2(a, b *G.Node, err error) (*G.Node, *G.Node) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// TestGridRerun runs one TapeMachine twice, the second time on another A
// (gorgonia.Let), and checks both runs' grid result (read with G.Read,
// which copies into the value it read last time) and gathered result
// against the single-process ops: the ops' reused buffers and outputs
// carry nothing over from one run to the next.
func TestGridRerun(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 43))
	const n, k, nb = 9, 2, 4
	for _, grid := range grids(t) {
		on := distops.On(grid)
		g := G.NewGraph()
		a0, _, b := operands[float64](rng, n, k)
		an, bn := input(g, "A", a0), input(g, "B", b)
		x := G.Must(on.Potrs(G.Must(on.Distribute(an, nb)), bn, 0))
		var xv, xg G.Value
		G.Read(x, &xv)
		G.Read(G.Must(on.Gather(x, -1)), &xg)
		vm := G.NewTapeMachine(g)
		for pass := range 3 {
			a := a0
			if pass >= 1 {
				a = spd[float64](rng, n)
				if err := G.Let(an, a.Clone()); err != nil {
					t.Fatal(err)
				}
			}
			if pass == 2 { // B bound column-major (tensor.AsFortran): read in its logical order
				bd := b.Data().([]float64)
				cm := make([]float64, n*k)
				for i := range n {
					for j := range k {
						cm[i+j*n] = bd[i*k+j]
					}
				}
				if err := G.Let(bn, tensor.New(tensor.WithShape(n, k), tensor.WithBacking(cm), tensor.AsFortran(nil))); err != nil {
					t.Fatal(err)
				}
			}
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatalf("%s run %d: %v", gridName(grid), pass, err)
			}
			want, _, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				x, err := mgla.Potrs(input(g, "A", a), input(g, "B", b))
				return []*G.Node{x}, nil, nil, err
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := hostOf(xv)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range []G.Value{got, xg} {
				if ok, j := near(c128(v), c128(want[0]), tolerance(tensor.Float64)); !ok {
					t.Errorf("%s run %d: X (%s)[%d] = %v, without the grid %v", gridName(grid), pass, [...]string{"grid value read", "gathered"}[i], j, c128(v)[j], c128(want[0])[j])
				}
			}
		}
		vm.Close()
	}
}

// TestGridEmptyBand runs FromRowBlocks with no rows on rank 0 (dist counts
// an empty band) under LogDet and its gradient, twice on one TapeMachine:
// each run gives every rank its band of the single-process gradient, the
// empty one too (the second run reuses the empty output, which
// tensor.Dense's Data cannot read).
func TestGridEmptyBand(t *testing.T) {
	if world.Size() < 2 {
		t.Skip("needs a rank beside the empty one")
	}
	rng := rand.New(rand.NewPCG(seed(t), 47))
	const n = 5
	a := spd[float64](rng, n)
	_, want, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
		an := input(g, "A", a)
		ld, err := mgla.LogDet(an)
		return []*G.Node{ld}, []*G.Node{an}, ld, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rank 0 none, the others the block split of n rows.
	r0, r1 := 0, 0
	if r := world.Rank(); r > 0 {
		per := (n + world.Size() - 2) / (world.Size() - 1)
		r0, r1 = min((r-1)*per, n), min(r*per, n)
	}
	wantBand := rowsOf(want[0].(*tensor.Dense), r0, r1)
	for _, grid := range grids(t) {
		on := distops.On(grid)
		g := G.NewGraph()
		band := input(g, "band", rowsOf(a, r0, r1))
		ld := G.Must(on.LogDet(G.Must(on.FromRowBlocks(band, n, 2)), 0))
		grads, err := G.Grad(ld, band)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		for pass := range 2 {
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatalf("rank %d, %s run %d: %v", world.Rank(), gridName(grid), pass, err)
			}
			got := grads[0].Value()
			switch {
			case !got.Shape().Eq(wantBand.Shape()):
				t.Errorf("rank %d, %s run %d: the band's gradient has shape %v, want %v", world.Rank(), gridName(grid), pass, got.Shape(), wantBand.Shape())
			case r1 > r0:
				if ok, j := near(c128(got), c128(wantBand), tolerance(tensor.Float64)); !ok {
					t.Errorf("rank %d, %s run %d: band gradient[%d] = %v, without the grid %v", world.Rank(), gridName(grid), pass, j, c128(got)[j], c128(wantBand)[j])
				}
			}
		}
		vm.Close()
	}
}

// TestOneRowBandRebound: a band of one row rebound with Let to a Slice of
// the full matrix, which Gorgonia gives the shape (c) and Let takes for the
// (1, c) node: the same log det as the first run. The (c) value was read
// as c rows of one column: a false "ranks disagree on shapes".
func TestOneRowBandRebound(t *testing.T) {
	size, rank := world.Size(), world.Rank()
	if size < 2 {
		t.Skip("needs a rank with one row: 2 ranks")
	}
	n := size + 1 // rank 0 two rows, the others one
	grid, err := dist.NewGrid(world, 1, size)
	if err != nil {
		t.Fatal(err)
	}
	defer grid.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	full := spd[float64](rng, n)
	r0, r1 := 0, 2
	if rank > 0 {
		r0, r1 = rank+1, rank+2
	}
	g := G.NewGraph()
	band := G.NewMatrix(g, tensor.Float64, G.WithShape(r1-r0, n), G.WithName("band"), G.WithValue(rowsOf(full, r0, r1)))
	k, err := distops.On(grid).FromRowBlocks(band, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := mgla.LogDet(k, mgla.WithGrid(distops.On(grid)))
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	var first float64
	for run := 1; run <= 2; run++ {
		if run == 2 {
			v, err := full.Slice(tensor.S(r0, r1))
			if err != nil {
				t.Fatal(err)
			}
			if err := G.Let(band, v); err != nil {
				t.Fatal(err)
			}
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatalf("rank %d, run %d: %v", rank, run, mgla.Cause(err))
		}
		got := ld.Value().Data().(float64)
		if run == 1 {
			first = got
		} else if math.Abs(got-first) > 1e-12*math.Abs(first) {
			t.Errorf("rank %d: log det %v after Let, %v before", rank, got, first)
		}
	}
}

// TestOneRowRightHandSideRebound: a host right-hand side of one row that
// Let rebinds to a (k) Slice, which Gorgonia takes for the (1, k) node: on
// the grid the same x as on one process (the value was read as k rows of
// one column: "bad shapes on some rank").
func TestOneRowRightHandSideRebound(t *testing.T) {
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer grid.Close()
	for _, onGrid := range []bool{false, true} {
		g := G.NewGraph()
		a := G.NodeFromAny(g, tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{2})), G.WithName("A"))
		b := G.NodeFromAny(g, tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float64{2, 4, 6})), G.WithName("B"))
		var opts []mgla.Option
		if onGrid {
			opts = []mgla.Option{mgla.WithGrid(distops.On(grid))}
		}
		x, err := mgla.Potrs(a, b, opts...)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		row, err := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{9, 9, 9, 4, 8, 12})).Slice(tensor.S(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := G.Let(b, row); err != nil { // shape (3), taken for the (1, 3) node
			t.Fatal(err)
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Errorf("rank %d, grid %v, after Let: %v", world.Rank(), onGrid, mgla.Cause(err))
		} else if got := x.Value().Data().([]float64); math.Abs(got[0]-2)+math.Abs(got[1]-4)+math.Abs(got[2]-6) > 1e-12 {
			t.Errorf("rank %d, grid %v, after Let: x = %v, want [2 4 6]", world.Rank(), onGrid, got)
		}
		vm.Close()
	}
}

// TestRightHandSideReboundGradient: the gradient of Potrs after Let bound a
// (3) value to a (1, 3) B, and x for a (1, 3) value bound to a (3) b: the
// same on the grid as on one process (the gradient ops read the (3) X as
// three rows; the grid read the (1, 3) b as one row).
func TestRightHandSideReboundGradient(t *testing.T) {
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer grid.Close()
	dense := func(shape []int, v ...float64) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	var want [][]float64
	for _, onGrid := range []bool{false, true} {
		var opts []mgla.Option
		if onGrid {
			opts = []mgla.Option{mgla.WithGrid(distops.On(grid))}
		}
		g := G.NewGraph()
		a := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 1), G.WithName("A"), G.WithValue(dense([]int{1, 1}, 2)))
		b := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 3), G.WithName("B"), G.WithValue(dense([]int{1, 3}, 2, 4, 6)))
		xbar := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 3), G.WithName("Xbar"), G.WithValue(dense([]int{1, 3}, 1, 10, 100)))
		x, err := mgla.Potrs(a, b, opts...)
		if err != nil {
			t.Fatal(err)
		}
		grads, err := G.Backpropagate(G.Nodes{x}, G.Nodes{xbar}, G.Nodes{a, b})
		if err != nil {
			t.Fatal(err)
		}
		row, _ := dense([]int{2, 3}, 9, 9, 9, 2, 4, 6).Slice(tensor.S(1))
		if err := G.Let(b, row); err != nil {
			t.Fatal(err)
		}
		// A vector right-hand side bound to a (1, 3) value.
		a3 := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A3"), G.WithValue(dense([]int{3, 3}, 2, 0, 0, 0, 2, 0, 0, 0, 2)))
		v := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("v"), G.WithValue(dense([]int{3}, 0, 0, 0)))
		y, err := mgla.Potrs(a3, v, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := G.Let(v, dense([]int{1, 3}, 2, 4, 6)); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatalf("rank %d, grid %v: %v", world.Rank(), onGrid, mgla.Cause(err))
		}
		got := [][]float64{
			slices.Clone(grads[0].Value().Data().([]float64)),
			slices.Clone(grads[1].Value().Data().([]float64)),
			slices.Clone(y.Value().Data().([]float64)),
		}
		vm.Close()
		if !onGrid {
			want = got
			continue
		}
		for i := range got {
			for j := range got[i] {
				if math.Abs(got[i][j]-want[i][j]) > 1e-12*(1+math.Abs(want[i][j])) {
					t.Errorf("rank %d: result %d on the grid %v, on one process %v", world.Rank(), i, got[i], want[i])
					break
				}
			}
		}
	}
}

// TestDistributeRebound: Distribute, then Gather and Potrs, of a node that
// Let bound to a value of an equivalent shape: the node's shape and values
// come back ((1, 3) for a (3) node failed after hostMatrix read it as a
// column while the output kept the value's shape).
func TestDistributeRebound(t *testing.T) {
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer grid.Close()
	on := distops.On(grid)
	for _, c := range []struct{ node, bound []int }{
		{[]int{3}, []int{1, 3}}, {[]int{3}, []int{3, 1}}, {[]int{1, 3}, []int{3}}, {[]int{3, 1}, []int{3}},
	} {
		name := fmt.Sprintf("node %v bound %v", c.node, c.bound)
		g := G.NewGraph()
		v := G.NewTensor(g, tensor.Float64, len(c.node), G.WithShape(c.node...), G.WithName("v"),
			G.WithValue(tensor.New(tensor.WithShape(c.node...), tensor.WithBacking([]float64{0, 0, 0}))))
		d, err := on.Distribute(v, 2)
		if err != nil {
			t.Fatal(err)
		}
		back, err := on.Gather(d, -1)
		if err != nil {
			t.Fatal(err)
		}
		var x *G.Node
		if c.node[0] == 3 {
			a := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A"),
				G.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{2, 0, 0, 0, 2, 0, 0, 0, 2}))))
			if x, err = on.Potrs(a, d, 2); err != nil {
				t.Fatal(err)
			}
			if x, err = on.Gather(x, -1); err != nil {
				t.Fatal(err)
			}
		}
		if err := G.Let(v, tensor.New(tensor.WithShape(c.bound...), tensor.WithBacking([]float64{2, 4, 6}))); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Errorf("rank %d, %s: %v", world.Rank(), name, mgla.Cause(err))
		} else {
			if got := back.Value(); !got.Shape().Eq(tensor.Shape(c.node)) || fmt.Sprint(got.Data()) != "[2 4 6]" {
				t.Errorf("rank %d, %s: Gather gave %v %v", world.Rank(), name, got.Shape(), got.Data())
			}
			if x != nil {
				if got := x.Value().Data().([]float64); math.Abs(got[0]-1)+math.Abs(got[1]-2)+math.Abs(got[2]-3) > 1e-12 {
					t.Errorf("rank %d, %s: Potrs gave %v, want [1 2 3]", world.Rank(), name, got)
				}
			}
		}
		vm.Close()
	}
}

// TestConstantRightHandSideOnGrid: on every grid, b passed as a
// gorgonia.NewConstant joins A's graph, through the root builder with
// WithGrid and through distops itself: x and A's gradient are those of b as
// a node. A constant alone is ErrBadInput and leaves the graph as it was.
func TestConstantRightHandSideOnGrid(t *testing.T) {
	aData := []float64{4, 1, 0, 1, 3, 1, 0, 1, 2}
	bData := []float64{1, -2, 0.5}
	for _, grid := range grids(t) {
		for _, viaRoot := range []bool{true, false} {
			var got [2][]float64
			for k, constant := range []bool{false, true} {
				g := G.NewGraph()
				a := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A"),
					G.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), aData...)))))
				bt := tensor.New(tensor.WithShape(3, 1), tensor.WithBacking(append([]float64(nil), bData...)))
				b := G.NewConstant(bt)
				if !constant {
					b = G.NewMatrix(g, tensor.Float64, G.WithShape(3, 1), G.WithName("b"), G.WithValue(bt))
				}
				var x *G.Node
				var err error
				if viaRoot {
					x, err = mgla.Potrs(a, b, mgla.WithGrid(distops.On(grid)))
				} else {
					x, err = distops.On(grid).Potrs(a, b, 0)
				}
				if err != nil {
					t.Fatalf("%s root=%v constant=%v: %v", gridName(grid), viaRoot, constant, err)
				}
				cost := G.Must(G.Sum(x))
				if _, err := G.Grad(cost, a); err != nil {
					t.Fatal(err)
				}
				m := G.NewTapeMachine(g)
				if err := m.RunAll(); err != nil {
					t.Fatalf("%s root=%v constant=%v: %v", gridName(grid), viaRoot, constant, err)
				}
				ga, err := a.Grad()
				if err != nil {
					t.Fatal(err)
				}
				got[k] = append(append([]float64(nil), x.Value().Data().([]float64)...), ga.Data().([]float64)...)
				m.Close()
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("%s root=%v: x and A's gradient %v with b a node, %v with b a constant", gridName(grid), viaRoot, got[0], got[1])
			}
		}
		g := G.NewGraph()
		n := len(g.AllNodes())
		constA := G.NewConstant(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), aData...))))
		if _, err := distops.On(grid).LogDet(constA, 0); !errors.Is(err, dist.ErrBadInput) {
			t.Errorf("%s: LogDet of a constant alone: %v, want dist.ErrBadInput", gridName(grid), err)
		}
		if m := len(g.AllNodes()); m != n {
			t.Errorf("%s: the graph grew from %d to %d nodes", gridName(grid), n, m)
		}
		// A call the grid refuses (b in 2×2 blocks, the call asks for 3)
		// leaves the graph as it was, through the root builder too (it
		// brought the constant in before the grid's checks).
		b := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 1), G.WithName("b"),
			G.WithValue(tensor.New(tensor.WithShape(3, 1), tensor.WithBacking(append([]float64(nil), bData...)))))
		bg, err := distops.On(grid).Distribute(b, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, viaRoot := range []bool{true, false} {
			n := len(g.AllNodes())
			if viaRoot {
				_, err = mgla.Potrs(constA, bg, mgla.WithGrid(distops.On(grid)), mgla.WithTile(3))
			} else {
				_, err = distops.On(grid).Potrs(constA, bg, 3)
			}
			if err == nil {
				t.Errorf("%s root=%v: other blocks accepted", gridName(grid), viaRoot)
			}
			if m := len(g.AllNodes()); m != n {
				t.Errorf("%s root=%v: a refused call grew the graph from %d to %d nodes", gridName(grid), viaRoot, n, m)
			}
		}
	}
}

// TestScalarBoundOnGrid: a Go number bound with gorgonia.Let (which Let
// does not check) to an operand of a grid op built by mgla's WithGrid is
// refused at run time on every rank with an error that matches mgla's
// ErrBadInput as the mesh ops' does, beside dist.ErrBadInput (it matched
// dist.ErrBadInput alone).
func TestScalarBoundOnGrid(t *testing.T) {
	for _, grid := range grids(t) {
		for _, bound := range []string{"A", "b"} {
			g := G.NewGraph()
			a := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A"),
				G.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{4, 1, 0, 1, 3, 1, 0, 1, 2}))))
			b := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 1), G.WithName("b"),
				G.WithValue(tensor.New(tensor.WithShape(3, 1), tensor.WithBacking([]float64{1, 2, 3}))))
			x, err := mgla.Potrs(a, b, mgla.WithGrid(distops.On(grid)))
			if err != nil {
				t.Fatal(err)
			}
			if err := G.Let(map[string]*G.Node{"A": a, "b": b}[bound], 3.0); err != nil {
				t.Fatal(err)
			}
			m := G.NewTapeMachine(g)
			err = mgla.Cause(m.RunAll())
			m.Close()
			if !errors.Is(err, mgla.ErrBadInput) || !errors.Is(err, dist.ErrBadInput) || x.Value() != nil {
				t.Errorf("%s, a number bound to %s: %v (output %v), want mgla's and dist's ErrBadInput and no output", gridName(grid), bound, err, x.Value())
			}
		}
	}
}

// TestGridGaussianLogDensity compares mgla.GaussianLogDensity with WithGrid
// (built from the grid's Potrs and LogDet) with the fused op on a CPU mesh:
// the value and the gradients of A and Y, on both machines, float32 and
// float64, every grid and shape; and a complex or grid-resident operand is
// ErrBadInput.
func TestGridGaussianLogDensity(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 43))
	for _, grid := range grids(t) {
		on := distops.On(grid)
		for _, sh := range shapes {
			for _, m := range []machine{tape, lisp} {
				if m == lisp && sh.n == 1 {
					// Gorgonia's LispMachine gets gradients through
					// one-element values wrong (README, Limitations):
					// the grid's composition is Gorgonia's Sum and
					// HadamardProd.
					continue
				}
				gridDensity[float64](t, rng, on, grid, sh.n, sh.k, sh.nb, m)
				gridDensity[float32](t, rng, on, grid, sh.n, sh.k, sh.nb, m)
			}
		}
		g := G.NewGraph()
		ac, _, yc := operands[complex128](rng, 4, 1)
		_, err := mgla.GaussianLogDensity(input(g, "A", ac), input(g, "Y", yc), mgla.WithGrid(on))
		if !errors.Is(err, mgla.ErrBadInput) {
			t.Errorf("%s: complex128 on a grid: %v, want ErrBadInput", gridName(grid), err)
		}
		// A grid K (row blocks, a grid input node), against the mesh: the
		// density and the gradients of the band (or K) and y. A grid y is
		// ErrBadInput.
		a, _, y := operands[float64](rng, 5, 2)
		for _, p := range []placement{rowBlocks, gridInput} {
			name := fmt.Sprintf("%s: K from %v", gridName(grid), p)
			got, grads, err := run(tape, func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
				an, aw := onGrid(t, on, g, grid, "A", a, 2, p)
				yn := input(g, "Y", y)
				d, err := mgla.GaussianLogDensity(an, yn, mgla.WithGrid(on))
				return []*G.Node{d}, []*G.Node{aw, yn}, d, err
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want, wgrads, err := run(tape, func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
				an, yn := input(g, "A", a), input(g, "Y", y)
				d, err := mgla.GaussianLogDensity(an, yn)
				return []*G.Node{d}, []*G.Node{an, yn}, d, err
			})
			if err != nil {
				t.Fatal(err)
			}
			abar := wgrads[0].(*tensor.Dense)
			if p == rowBlocks {
				r0, r1 := band(5, true)
				abar = rowsOf(abar, r0, r1)
			}
			for i, c := range [][2]G.Value{{got[0], want[0]}, {grads[0], abar}, {grads[1], wgrads[1]}} {
				if ok, j := near(c128(c[0]), c128(c[1]), 1e-9); !ok {
					t.Errorf("%s: value %d [%d] = %v, on a mesh %v", name, i, j, c128(c[0])[j], c128(c[1])[j])
				}
			}
		}
		yg, _ := onGrid(t, on, g, grid, "Yg", y, 2, replicated)
		if _, err := mgla.GaussianLogDensity(input(g, "Ag", a), yg, mgla.WithGrid(on)); !errors.Is(err, mgla.ErrBadInput) {
			t.Errorf("%s: a grid y: %v, want ErrBadInput", gridName(grid), err)
		}
		// A constant K (of no graph) beside a y node, as the mesh op takes
		// it (the composition called LogDet on the constant itself, which
		// had no graph to join, and left Potrs's nodes behind).
		kc := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{2, 0, 0, 2}))
		yc1 := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 1}))
		var vals [2]float64
		for i, opts := range [][]mgla.Option{{mgla.WithGrid(on)}, nil} {
			got, _, err := run(tape, func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
				d, err := mgla.GaussianLogDensity(G.NewConstant(kc.Clone()), input(g, "y", yc1), opts...)
				return []*G.Node{d}, nil, nil, err
			})
			if err != nil {
				t.Fatalf("%s: a constant K, WithGrid %v: %v", gridName(grid), i == 0, err)
			}
			vals[i] = got[0].Data().(float64)
		}
		if math.Abs(vals[0]-vals[1]) > 1e-12 {
			t.Errorf("%s: a constant K: %v on the grid, %v on a mesh", gridName(grid), vals[0], vals[1])
		}
		// float32, K = I₄, y = (v, v, v, v): −2v² − 2·log 2π fits at v =
		// 1e19, whose y∘x sums to 4e38 (a silent −Inf once, a review's
		// finding), and is ErrNonFinite at 2e19.
		for _, v := range []float32{1e19, 2e19} {
			eye := tensor.New(tensor.WithShape(4, 4), tensor.WithBacking([]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}))
			yv := tensor.New(tensor.WithShape(4), tensor.WithBacking([]float32{v, v, v, v}))
			got, _, err := run(tape, func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
				d, err := mgla.GaussianLogDensity(input(g, "K", eye), input(g, "y", yv), mgla.WithGrid(on))
				return []*G.Node{d}, nil, nil, err
			})
			switch {
			case v == 2e19 && !errors.Is(err, mgla.ErrNonFinite):
				t.Errorf("%s: v = %g: %v, want ErrNonFinite", gridName(grid), v, err)
			case v == 1e19 && err != nil:
				t.Errorf("%s: v = %g: %v", gridName(grid), v, err)
			case v == 1e19 && math.Abs(float64(got[0].Data().(float32))+2e38) > 1e32:
				t.Errorf("%s: v = %g: %v, want −2e38", gridName(grid), v, got[0])
			}
		}
	}
}

func gridDensity[T float32 | float64](t *testing.T, rng *rand.Rand, on *distops.Ops, grid *dist.Grid, n, k, nb int, m machine) {
	dt := dtypeOf[T]()
	name := fmt.Sprintf("%s %v n=%d k=%d nb=%d %v", gridName(grid), dt, n, k, nb, m)
	a, _, y := operands[T](rng, n, k)
	build := func(opts ...mgla.Option) func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
		return func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
			an, yn := input(g, "A", a), input(g, "Y", y)
			if cost, err = mgla.GaussianLogDensity(an, yn, opts...); err != nil {
				return nil, nil, nil, err
			}
			return []*G.Node{cost}, []*G.Node{an, yn}, cost, nil
		}
	}
	got, grads, err := run(m, build(mgla.WithGrid(on), mgla.WithTile(nb)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, wgrads, err := run(tape, build())
	if err != nil {
		t.Fatalf("%s: on a mesh: %v", name, err)
	}
	tol := 10 * tolerance(dt)
	for _, c := range []struct {
		what      string
		got, want G.Value
	}{{"value", got[0], want[0]}, {"Ā", grads[0], wgrads[0]}, {"Ȳ", grads[1], wgrads[1]}} {
		if !c.got.Shape().Eq(c.want.Shape()) {
			t.Errorf("%s: %s has shape %v, want %v", name, c.what, c.got.Shape(), c.want.Shape())
			continue
		}
		if ok, j := near(c128(c.got), c128(c.want), tol); !ok {
			t.Errorf("%s: %s[%d] = %v, on a mesh %v", name, c.what, j, c128(c.got)[j], c128(c.want)[j])
		}
	}
}

// TestLispErrorThenNewGraph: a LispMachine run that fails (K not positive
// definite, on every rank alike) and then, as README says, a new graph
// (on the TapeMachine or a new LispMachine): the failed run's backward
// pass, which Gorgonia goes on with on its own goroutine, stops at its
// first op here instead of making grid calls that paired with the new
// graph's on the other ranks (ErrMismatch on some ranks, a timeout on
// the others, at 3 and 4 ranks within a few repetitions).
func TestLispErrorThenNewGraph(t *testing.T) {
	if raceEnabled {
		t.Skip("a LispMachine error races in Gorgonia itself, which the race detector reports; the MPI step without it runs this test")
	}
	const n, nb = 37, 8
	grid := grids(t)[0]
	on := distops.On(grid)
	r0, r1 := band(n, true)
	run := func(bad, lisp bool) error {
		k := make([]float64, (r1-r0)*n) // rows r0..r1 of 0.5 + 2·I
		for i := r0; i < r1; i++ {
			for j := range n {
				k[(i-r0)*n+j] = 0.5
			}
			k[(i-r0)*n+i] = 2
			if bad && i == 30 {
				k[(i-r0)*n+i] = -1e4
			}
		}
		y := make([]float64, n)
		for i := range y {
			y[i] = float64(i%3) - 1
		}
		g := G.NewGraph()
		kb := input(g, "K band", tensor.New(tensor.WithShape(r1-r0, n), tensor.WithBacking(k)))
		yn := input(g, "y", tensor.New(tensor.WithShape(n), tensor.WithBacking(y)))
		kg := G.Must(on.FromRowBlocks(kb, n, nb))
		x := G.Must(on.Gather(G.Must(mgla.Potrs(kg, yn, mgla.WithGrid(on))), -1))
		ld := G.Must(mgla.LogDet(kg, mgla.WithGrid(on)))
		cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(yn, x)))), ld))
		var vm G.VM = G.NewLispMachine(g)
		if !lisp {
			if _, err := G.Grad(cost, kb, yn); err != nil {
				return err
			}
			vm = G.NewTapeMachine(g)
		}
		defer vm.Close()
		return mgla.Cause(vm.RunAll())
	}
	for rep := range 12 {
		if err := run(true, true); !errors.Is(err, mgla.ErrNotPositiveDefinite) {
			t.Fatalf("rank %d, repetition %d: the bad graph: %v, want ErrNotPositiveDefinite", world.Rank(), rep, err)
		}
		if err := run(false, rep%2 == 0); err != nil {
			t.Fatalf("rank %d, repetition %d: the new graph after a failed LispMachine run: %v", world.Rank(), rep, err)
		}
	}
}
