//go:build mpi

package distops_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	"github.com/mgla/mgla/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// kernelBuilder is one of mgla's kernel matrix builders.
type kernelBuilder func(x, ell, sig, noise *G.Node, opts ...mgla.Option) (*G.Node, error)

var kernelFamilies = []struct {
	name  string
	build kernelBuilder
}{{"SquaredExponential", mgla.SquaredExponential}, {"Matern32", mgla.Matern32}, {"Matern52", mgla.Matern52}}

// kernelCase is a kernel matrix test: n points of dimension d (a vector
// of points for d = 1 when vec), blocks of nb, ARD length scales, a noise
// input.
type kernelCase struct {
	n, d, nb   int
	vec        bool
	ard, noise bool
}

func (c kernelCase) String() string {
	return fmt.Sprintf("n=%d d=%d nb=%d vec=%t ard=%t noise=%t", c.n, c.d, c.nb, c.vec, c.ard, c.noise)
}

// kernelValues are a kernel case's operands: the points (n×d, or n for a
// vector), ℓ (a scalar, or d for ARD), σ², σₙ², and the weights W (n×n)
// and targets y (n) of the cost.
type kernelValues struct {
	x, ell, w, y     *tensor.Dense
	xs               *tensor.Dense // new points for predictions (3 of them)
	sig, noise       float64
	dt               tensor.Dtype
	withNoise, isARD bool
}

func newKernelValues[T float32 | float64](rng *rand.Rand, c kernelCase) kernelValues {
	v := kernelValues{dt: dtypeOf[T](), withNoise: c.noise, isARD: c.ard}
	xs := make([]T, c.n*c.d)
	for i := range xs {
		xs[i] = T(2 * rng.NormFloat64())
	}
	if c.vec {
		v.x = tensor.New(tensor.WithShape(c.n), tensor.WithBacking(xs))
	} else {
		v.x = tensor.New(tensor.WithShape(c.n, c.d), tensor.WithBacking(xs))
	}
	ells := []T{T(0.7 + 1.5*rng.Float64())}
	if c.ard {
		ells = make([]T, c.d)
		for i := range ells {
			ells[i] = T(0.7 + 1.5*rng.Float64())
		}
	}
	v.ell = tensor.New(tensor.WithShape(len(ells)), tensor.WithBacking(ells))
	v.sig, v.noise = 0.5+rng.Float64(), 0.1+0.2*rng.Float64()
	v.w, v.y = matrix[T](rng, c.n, c.n), matrix[T](rng, c.n, 1)
	v.y.Reshape(c.n)
	fresh := make([]T, 3*c.d)
	for i := range fresh {
		fresh[i] = T(2 * rng.NormFloat64())
	}
	if c.vec {
		v.xs = tensor.New(tensor.WithShape(3), tensor.WithBacking(fresh))
	} else {
		v.xs = tensor.New(tensor.WithShape(3, c.d), tensor.WithBacking(fresh))
	}
	return v
}

// nodes are the operands as input nodes of g: x, ℓ, σ², σₙ² (nil without
// noise), with their deltas h added to σ² and to ℓ's first element (for
// finite differences).
func (v kernelValues) nodes(g *G.ExprGraph, hEll, hSig float64) (x, ell, sig, noise *G.Node) {
	ell, sig, noise = v.params(g, hEll, hSig)
	return input(g, "x", v.x), ell, sig, noise
}

// params are nodes' parameters alone.
func (v kernelValues) params(g *G.ExprGraph, hEll, hSig float64) (ell, sig, noise *G.Node) {
	scalar := func(name string, f float64) *G.Node {
		if v.dt == tensor.Float32 {
			return G.NewScalar(g, v.dt, G.WithName(name), G.WithValue(float32(f)))
		}
		return G.NewScalar(g, v.dt, G.WithName(name), G.WithValue(f))
	}
	e := v.ell.Clone().(*tensor.Dense)
	switch d := e.Data().(type) {
	case []float64:
		d[0] += hEll
	case []float32:
		d[0] += float32(hEll)
	}
	if v.isARD {
		ell = G.NodeFromAny(g, e, G.WithName("ell"))
	} else {
		f, _ := e.At(0)
		ell = scalar("ell", float64(floatOf(f)))
	}
	sig = scalar("sig", v.sig+hSig)
	if v.withNoise {
		noise = scalar("noise", v.noise)
	}
	return ell, sig, noise
}

func floatOf(f any) float64 {
	switch x := f.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// kernelGraph is the graph of a kernel case: K by build (on the grid with
// on, else on the default mesh), gathered; and the cost Σ W∘K plus, with
// noise, the GP's ½·yᵀK⁻¹y + ½·log det K (Potrs and LogDet sharing K's
// factor, so that K's gradient arrives from three ops) and its
// predictions at the new points xs: Σ C·K⁻¹y + Σ diag(C·K⁻¹·Cᵀ), C =
// CrossKernel(K, xs). Gradients with respect to x, ℓ, σ², σₙ² and xs.
func kernelGraph(v kernelValues, build kernelBuilder, on *distops.Ops, nb int, hEll, hSig float64) func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
	return func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		x, ell, sig, noise := v.nodes(g, hEll, hSig)
		var opts []mgla.Option
		gather := ops.Gather
		if on != nil {
			opts = []mgla.Option{mgla.WithGrid(on), mgla.WithTile(nb)}
			gather = func(n *G.Node) (*G.Node, error) { return on.Gather(n, -1) }
		}
		k, err := build(x, ell, sig, noise, opts...)
		if err != nil {
			return nil, nil, nil, err
		}
		kh := G.Must(gather(k))
		cost = G.Must(G.Sum(G.Must(G.HadamardProd(kh, G.NewConstant(v.w.Clone())))))
		wrt = []*G.Node{x, ell, sig}
		if noise != nil {
			yn := input(g, "y", v.y)
			sol := G.Must(mgla.Potrs(k, yn, opts...))
			if on != nil {
				sol = G.Must(on.Gather(sol, -1))
			}
			ld := G.Must(mgla.LogDet(k, opts...))
			cost = G.Must(G.Add(cost, gpCost(k, sol, yn, ld)))
			xs := input(g, "xs", v.xs)
			cross := G.Must(mgla.CrossKernel(k, xs))
			mean := G.Must(G.Mul(cross, sol))
			ct := G.Must(G.Transpose(cross))
			kc := G.Must(mgla.Potrs(k, ct, opts...))
			if on != nil {
				kc = G.Must(on.Gather(kc, -1))
			}
			spread := G.Must(G.Sum(G.Must(G.HadamardProd(ct, kc))))
			cost = G.Must(G.Add(cost, G.Must(G.Add(G.Must(G.Sum(mean)), spread))))
			wrt = append(wrt, noise, xs)
		}
		return []*G.Node{kh, cost}, wrt, cost, nil
	}
}

// TestGridKernelMatrix builds the kernel matrices with WithGrid and
// compares them with the single-process builders' on a mesh: K bit for
// bit, and the cost Σ W∘K (+ the GP's terms) and its gradients with
// respect to the points and every parameter, on both machines, float32
// and float64, one length scale and ARD, every grid of the world.
func TestGridKernelMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 47))
	cases := []kernelCase{
		{n: 1, d: 1, nb: 1, vec: true, noise: true},
		{n: 7, d: 2, nb: 2, ard: true, noise: true},
		{n: 12, d: 1, nb: 5, vec: true},
		{n: 10, d: 3, nb: 3, ard: true},
		{n: 9, d: 2, nb: 4, noise: true},
	}
	for _, grid := range grids(t) {
		on := distops.On(grid)
		for i, c := range cases {
			f := kernelFamilies[i%len(kernelFamilies)]
			for _, m := range []machine{tape, lisp} {
				if m == lisp && c.n == 1 {
					continue // Gorgonia's LispMachine and one-element values (README, Limitations)
				}
				gridKernel(t, grid, on, f.name, f.build, c, newKernelValues[float64](rng, c), m)
				gridKernel(t, grid, on, f.name, f.build, c, newKernelValues[float32](rng, c), m)
			}
		}
	}
}

func gridKernel(t *testing.T, grid *dist.Grid, on *distops.Ops, family string, build kernelBuilder, c kernelCase, v kernelValues, m machine) {
	name := fmt.Sprintf("%s %s %v %v %v", gridName(grid), family, c, v.dt, m)
	outs, grads, err := run(m, kernelGraph(v, build, on, c.nb, 0, 0))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	wouts, wgrads, err := run(tape, kernelGraph(v, build, nil, c.nb, 0, 0))
	if err != nil {
		t.Fatalf("%s: on a mesh: %v", name, err)
	}
	if !slices.Equal(c128(outs[0]), c128(wouts[0])) {
		t.Errorf("%s: K on the grid is not the mesh's bit for bit", name)
	}
	tol := 10 * tolerance(v.dt)
	whats := []string{"cost", "x̄", "ℓ̄", "σ̄²", "σ̄ₙ²", "x̄s"}
	got, want := append(outs[1:], grads...), append(wouts[1:], wgrads...)
	for i := range want {
		if !got[i].Shape().Eq(want[i].Shape()) {
			t.Errorf("%s: %s has shape %v, want %v", name, whats[i], got[i].Shape(), want[i].Shape())
			continue
		}
		if ok, j := near(c128(got[i]), c128(want[i]), tol); !ok {
			t.Errorf("%s: %s[%d] = %v, on a mesh %v", name, whats[i], j, c128(got[i])[j], c128(want[i])[j])
		}
	}
}

// TestGridKernelFiniteDifferences checks the gradients of the kernel
// matrix on the grid against central differences of the cost computed on
// the grid (float64, both machines): with respect to σ², ℓ (its first
// element for ARD) and, through a direction along all of x, the points.
func TestGridKernelFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 53))
	cases := []kernelCase{{n: 8, d: 2, nb: 3, noise: true}, {n: 7, d: 3, nb: 2, ard: true, noise: true}}
	for _, grid := range grids(t) {
		on := distops.On(grid)
		for i, c := range cases {
			f := kernelFamilies[(i+world.Size())%len(kernelFamilies)]
			v := newKernelValues[float64](rng, c)
			dir := matrix[float64](rng, c.n, c.d).Data().([]float64)
			for _, m := range []machine{tape, lisp} {
				name := fmt.Sprintf("%s %s %v %v", gridName(grid), f.name, c, m)
				_, grads, err := run(m, kernelGraph(v, f.build, on, c.nb, 0, 0))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				cost := func(hx, hEll, hSig float64) float64 {
					w := v
					w.x = v.x.Clone().(*tensor.Dense)
					for i, d := range dir {
						w.x.Data().([]float64)[i] += hx * d
					}
					outs, _, err := run(tape, kernelGraph(w, f.build, on, c.nb, hEll, hSig))
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return outs[1].Data().(float64)
				}
				xdir := 0.0
				for i, g := range grads[0].Data().([]float64) {
					xdir += g * dir[i]
				}
				ellbar := c128(grads[1])[0]
				for _, chk := range []struct {
					what string
					got  float64
					fd   float64
				}{
					{"⟨x̄, dir⟩", xdir, derivative(func(h float64) float64 { return cost(h, 0, 0) })},
					{"ℓ̄[0]", real(ellbar), derivative(func(h float64) float64 { return cost(0, h, 0) })},
					{"σ̄²", floatOf(grads[2].Data()), derivative(func(h float64) float64 { return cost(0, 0, h) })},
				} {
					if math.Abs(chk.got-chk.fd) > 1e-6*max(1, math.Abs(chk.fd)) {
						t.Errorf("%s: %s = %v, finite differences %v", name, chk.what, chk.got, chk.fd)
					}
				}
			}
		}
	}
}

// TestGridKernelErrors: bad operands are build-time dist.ErrBadInput;
// bad values are run-time errors on every rank (ErrBadInput, ErrNonFinite),
// and ranks whose parameters differ get ErrMismatch; each time the next
// good run is right.
func TestGridKernelErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 59))
	grid := grids(t)[0]
	on := distops.On(grid)
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("x"))
	ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"))
	sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"))
	xc := G.NewMatrix(g, tensor.Complex128, G.WithShape(4, 2), G.WithName("xc"))
	for _, c := range []struct {
		name string
		err  error
	}{
		{"nil points", func() error { _, err := on.KernelMatrix(0, nil, ell, sig, nil, 0); return err }()},
		{"unknown family", func() error { _, err := on.KernelMatrix(7, x, ell, sig, nil, 0); return err }()},
		{"negative block", func() error { _, err := on.KernelMatrix(0, x, ell, sig, nil, -1); return err }()},
		{"complex points", func() error { _, err := on.KernelMatrix(0, xc, ell, sig, nil, 0); return err }()},
		{"ℓ is σ²", func() error { _, err := on.KernelMatrix(0, x, sig, sig, nil, 0); return err }()},
		{"ℓ of another dimension", func() error {
			_, err := on.KernelMatrix(0, x, G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("ell3")), sig, nil, 0)
			return err
		}()},
		{"no grid", func() error { _, err := (&distops.Ops{}).KernelMatrix(0, x, ell, sig, nil, 0); return err }()},
	} {
		if !errors.Is(c.err, dist.ErrBadInput) || !errors.Is(c.err, mgla.ErrBadInput) {
			t.Errorf("%s: %v, want dist.ErrBadInput", c.name, c.err)
		}
	}

	// Run time, on every grid: each bad value, then a good run.
	c := kernelCase{n: 6, d: 2, nb: 2, noise: true}
	for _, grid := range grids(t) {
		on := distops.On(grid)
		good := newKernelValues[float64](rng, c)
		for _, bad := range []struct {
			name   string
			change func(v *kernelValues)
			want   error
			text   string
		}{
			{"zero length scale", func(v *kernelValues) { v.ell = tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0})) }, mgla.ErrBadInput, "length scale"},
			{"NaN point", func(v *kernelValues) {
				v.x = v.x.Clone().(*tensor.Dense)
				v.x.Data().([]float64)[2*c.d+1] = math.NaN()
			}, mgla.ErrNonFinite, "point 2"},
			{"negative signal variance", func(v *kernelValues) { v.sig = -1 }, mgla.ErrBadInput, "variance"},
			// Every rank passes its own σ²: the ranks' values hash apart.
			{"σ² by rank", func(v *kernelValues) { v.sig += float64(world.Rank()) }, dist.ErrMismatch, "values"},
			// One coordinate of one rank's points differs: every point is
			// hashed (a sample of 4096 missed most of them past 8192).
			{"a point by rank", func(v *kernelValues) {
				v.x = v.x.Clone().(*tensor.Dense)
				v.x.Data().([]float64)[c.n*c.d-1] += 1e-9 * float64(world.Rank())
			}, dist.ErrMismatch, "values"},
			// A NaN weight: K̄'s distribution finds it (dist's
			// KernelMatrixGrad has its own test).
			{"NaN gradient", func(v *kernelValues) {
				v.w = v.w.Clone().(*tensor.Dense)
				v.w.Data().([]float64)[c.n*c.n-1] = math.NaN()
			}, mgla.ErrNonFinite, "NaN"},
		} {
			if strings.HasSuffix(bad.name, "by rank") && world.Size() == 1 {
				continue
			}
			v := good
			bad.change(&v)
			for _, m := range errorMachines() {
				name := fmt.Sprintf("%s %s %v", gridName(grid), bad.name, m)
				_, _, err := run(m, kernelGraph(v, mgla.SquaredExponential, on, c.nb, 0, 0))
				if !errors.Is(err, bad.want) || !containsText(err, bad.text) {
					t.Errorf("%s: %v, want %v with %q", name, err, bad.want, bad.text)
				}
				outs, _, err := run(m, kernelGraph(good, mgla.SquaredExponential, on, c.nb, 0, 0))
				if err != nil {
					t.Fatalf("%s: the next good run: %v", name, err)
				}
				wouts, _, err := run(tape, kernelGraph(good, mgla.SquaredExponential, nil, c.nb, 0, 0))
				if err != nil {
					t.Fatal(err)
				}
				if ok, j := near(c128(outs[1]), c128(wouts[1]), 1e-9); !ok {
					t.Errorf("%s: the next good run's cost %v, on a mesh %v (%d)", name, outs[1], wouts[1], j)
				}
			}
		}
	}
}

func containsText(err error, text string) bool {
	return err != nil && strings.Contains(err.Error(), text)
}

// TestGridKernelConstantPoints: points given as a constant (of no graph)
// join the parameters' graph on the grid as on a mesh (they were refused
// on the grid), with the same cost and parameters' gradients.
func TestGridKernelConstantPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 67))
	c := kernelCase{n: 5, d: 2, nb: 2, noise: true}
	v := newKernelValues[float64](rng, c)
	for _, grid := range grids(t) {
		on := distops.On(grid)
		for _, m := range []machine{tape, lisp} {
			build := func(on *distops.Ops) func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				return func(g *G.ExprGraph) (outs, wrt []*G.Node, cost *G.Node, err error) {
					ell, sig, noise := v.params(g, 0, 0)
					x := G.NewConstant(v.x.Clone())
					var opts []mgla.Option
					gather := ops.Gather
					if on != nil {
						opts = []mgla.Option{mgla.WithGrid(on), mgla.WithTile(c.nb)}
						gather = func(n *G.Node) (*G.Node, error) { return on.Gather(n, -1) }
					}
					k, err := mgla.Matern32(x, ell, sig, noise, opts...)
					if err != nil {
						return nil, nil, nil, err
					}
					cost = G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(gather(k)), G.NewConstant(v.w.Clone())))))
					return []*G.Node{cost}, []*G.Node{ell, sig, noise}, cost, nil
				}
			}
			name := fmt.Sprintf("%s %v", gridName(grid), m)
			got, grads, err := run(m, build(on))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want, wgrads, err := run(tape, build(nil))
			if err != nil {
				t.Fatalf("%s: on a mesh: %v", name, err)
			}
			for i, c := range [][2]G.Value{{got[0], want[0]}, {grads[0], wgrads[0]}, {grads[1], wgrads[1]}, {grads[2], wgrads[2]}} {
				if ok, j := near(c128(c[0]), c128(c[1]), 1e-9); !ok {
					t.Errorf("%s: value %d [%d] = %v, on a mesh %v", name, i, j, c128(c[0])[j], c128(c[1])[j])
				}
			}
		}
	}
}

// TestGridKernelRanksDisagree: ranks that build K of different families,
// or from points of which one coordinate among many differs, get
// ErrMismatch on every rank (both ran silently: the family was not in the
// ranks' comparison, and only a sample of 4096 coordinates was).
func TestGridKernelRanksDisagree(t *testing.T) {
	if world.Size() == 1 {
		t.Skip("one rank agrees with itself")
	}
	rng := rand.New(rand.NewPCG(seed(t), 71))
	grid := grids(t)[0]
	on := distops.On(grid)
	c := kernelCase{n: 2731, d: 3, nb: 64}
	v := newKernelValues[float64](rng, c)
	v.w = tensor.New(tensor.WithShape(c.n, c.n), tensor.WithBacking(make([]float64, c.n*c.n)))
	build := mgla.SquaredExponential
	if world.Rank() == 1 {
		build = mgla.Matern32
	}
	_, _, err := run(tape, kernelGraph(v, build, on, c.nb, 0, 0))
	if !errors.Is(err, dist.ErrMismatch) || !containsText(err, "Matérn 3/2") {
		t.Errorf("families by rank: %v, want ErrMismatch naming the family", err)
	}
	w := v
	w.x = v.x.Clone().(*tensor.Dense)
	if world.Rank() == 1 {
		w.x.Data().([]float64)[3001] += 0.05
	}
	_, _, err = run(tape, kernelGraph(w, mgla.SquaredExponential, on, c.nb, 0, 0))
	if !errors.Is(err, dist.ErrMismatch) {
		t.Errorf("coordinate 3001 by rank: %v, want ErrMismatch", err)
	}
}

// TestGridValueFeedsGorgoniaOp: a grid value (a kernel matrix, a solve, a
// band put on the grid) given to one of Gorgonia's own ops is ErrBadInput
// of the run on every rank, naming the grid's Gather; the process used to
// panic in Gorgonia ("*distops.Value is not tensor.Tensor").
func TestGridValueFeedsGorgoniaOp(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 73))
	c := kernelCase{n: 5, d: 1, nb: 2, vec: true, noise: true}
	v := newKernelValues[float64](rng, c)
	for _, grid := range grids(t) {
		on := distops.On(grid)
		opts := mgla.Options(mgla.WithGrid(on), mgla.WithTile(c.nb))
		for _, bad := range []struct {
			name  string
			build func(g *G.ExprGraph) (*G.Node, error)
		}{
			{"Sum of K", func(g *G.ExprGraph) (*G.Node, error) {
				x, ell, sig, noise := v.nodes(g, 0, 0)
				k, err := mgla.SquaredExponential(x, ell, sig, noise, opts)
				if err != nil {
					return nil, err
				}
				return G.Sum(k)
			}},
			{"C times a grid solve", func(g *G.ExprGraph) (*G.Node, error) {
				x, ell, sig, noise := v.nodes(g, 0, 0)
				k, err := mgla.SquaredExponential(x, ell, sig, noise, opts)
				if err != nil {
					return nil, err
				}
				alpha, err := mgla.Potrs(k, input(g, "y", v.y), opts)
				if err != nil {
					return nil, err
				}
				return G.Sum(G.Must(G.Mul(G.Must(mgla.CrossKernel(k, input(g, "xs", v.xs))), alpha)))
			}},
			{"Exp of a band on the grid", func(g *G.ExprGraph) (*G.Node, error) {
				r0, r1 := band(c.n, true)
				rows, err := on.FromRowBlocks(input(g, "band", rowsOf(v.w, r0, r1)), c.n, c.nb)
				if err != nil {
					return nil, err
				}
				return G.Sum(G.Must(G.Exp(rows)))
			}},
		} {
			for _, m := range errorMachines() {
				name := fmt.Sprintf("%s %s %v", gridName(grid), bad.name, m)
				_, _, err := run(m, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
					out, err := bad.build(g)
					if err != nil {
						return nil, nil, nil, err
					}
					return []*G.Node{out}, nil, nil, nil
				})
				if !errors.Is(err, mgla.ErrBadInput) || !errors.Is(err, dist.ErrBadInput) || !containsText(err, "Gather") {
					t.Errorf("%s: %v, want ErrBadInput naming Gather", name, err)
				}
			}
		}
	}
}

// errorMachines are the machines a test of run-time errors runs: the
// LispMachine only without the race detector, which reports Gorgonia's
// own race after a LispMachine error (raceEnabled).
func errorMachines() []machine {
	if raceEnabled {
		return []machine{tape}
	}
	return []machine{tape, lisp}
}
