//go:build mpi

package distops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var world *mpi.Comm

func TestMain(m *testing.M) {
	w, err := mpi.World(mpi.WithTimeout(20 * time.Second))
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

// cost builds Σ W∘Potrs(A, B) + LogDet(A) with the given builders, runs it
// with its gradient and returns the cost, Ā and B̄ (row-major).
func cost(a, b, w, v *tensor.Dense, potrs func(a, b *G.Node) (*G.Node, error), logDet, potri func(a *G.Node) (*G.Node, error)) (float64, []float64, []float64, error) {
	g := G.NewGraph()
	an := G.NewMatrix(g, tensor.Float64, G.WithShape(a.Shape()...), G.WithValue(a.Clone()), G.WithName("A"))
	bn := G.NewMatrix(g, tensor.Float64, G.WithShape(b.Shape()...), G.WithValue(b.Clone()), G.WithName("B"))
	wn := G.NewConstant(w.Clone(), G.WithName("W"))
	x, err := potrs(an, bn)
	if err != nil {
		return 0, nil, nil, err
	}
	ld, err := logDet(an)
	if err != nil {
		return 0, nil, nil, err
	}
	inv, err := potri(an)
	if err != nil {
		return 0, nil, nil, err
	}
	vn := G.NewConstant(v.Clone(), G.WithName("V"))
	c := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(x, wn)))), ld))
	c = G.Must(G.Add(c, G.Must(G.Sum(G.Must(G.HadamardProd(inv, vn))))))
	if _, err := G.Grad(c, an, bn); err != nil {
		return 0, nil, nil, err
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, nil, nil, err
	}
	ag, _ := an.Grad()
	bg, _ := bn.Grad()
	return c.Value().Data().(float64), append([]float64(nil), ag.Data().([]float64)...), append([]float64(nil), bg.Data().([]float64)...), nil
}

// TestAgainstRootBuilders compares the graph ops and their gradients on
// every grid with the root package's single-process builders (mgla.Potrs,
// mgla.LogDet on the CPU mesh).
func TestAgainstRootBuilders(t *testing.T) {
	seed := uint64(time.Now().UnixNano()) // the data must agree: every rank derives it from a Bcast below
	s := []float64{float64(seed & (1<<52 - 1))}
	grid0, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	one, err := dist.FromRoot(grid0, 0, 1, 1, 1, s)
	if err != nil {
		t.Fatal(err)
	}
	full, err := one.Gather(-1)
	if err != nil {
		t.Fatal(err)
	}
	grid0.Close()
	seed = uint64(full[0])
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 41))
	size := world.Size()
	for p := 1; p <= size; p++ {
		if size%p != 0 {
			continue
		}
		g, err := dist.NewGrid(world, p, size/p)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range []struct{ n, k, nb int }{{1, 1, 1}, {7, 3, 2}, {12, 2, 5}} {
			n, k := sh.n, sh.k
			m := make([]float64, n*n)
			for i := range m {
				m[i] = rng.Float64()*2 - 1
			}
			a := make([]float64, n*n)
			for i := range n {
				for j := range n {
					for q := range n {
						a[i*n+j] += m[i*n+q] * m[j*n+q] / float64(n)
					}
				}
				a[i*n+i]++
			}
			b, w := make([]float64, n*k), make([]float64, n*k)
			for i := range b {
				b[i], w[i] = rng.Float64()*2-1, rng.Float64()*2-1
			}
			at := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))
			bt := tensor.New(tensor.WithShape(n, k), tensor.WithBacking(b))
			wt := tensor.New(tensor.WithShape(n, k), tensor.WithBacking(w))
			v := make([]float64, n*n)
			for i := range v {
				v[i] = rng.Float64()*2 - 1
			}
			vt := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(v))
			got, ga, gb, err := cost(at, bt, wt, vt,
				func(a, b *G.Node) (*G.Node, error) { return distops.Potrs(a, b, g, sh.nb) },
				func(a *G.Node) (*G.Node, error) { return distops.LogDet(a, g, sh.nb) },
				func(a *G.Node) (*G.Node, error) { return distops.Potri(a, g, sh.nb) })
			if err != nil {
				t.Fatal(err)
			}
			want, wa, wb, err := cost(at, bt, wt, vt,
				func(a, b *G.Node) (*G.Node, error) { return mgla.Potrs(a, b) },
				func(a *G.Node) (*G.Node, error) { return mgla.LogDet(a) },
				func(a *G.Node) (*G.Node, error) { return mgla.Potri(a) })
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%d×%d n=%d nb=%d", p, size/p, n, sh.nb)
			if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
				t.Errorf("%s: cost %v, root builders %v", name, got, want)
			}
			for _, c := range []struct {
				what      string
				got, want []float64
			}{{"Ā", ga, wa}, {"B̄", gb, wb}} {
				for i := range c.want {
					if math.Abs(c.got[i]-c.want[i]) > 1e-9*max(1, math.Abs(c.want[i])) {
						t.Errorf("%s: %s[%d] = %v, root builders %v", name, c.what, i, c.got[i], c.want[i])
						break
					}
				}
			}
		}
		g.Close()
	}
}

// TestCholesky compares the forward Cholesky node with mgla.Cholesky and
// checks that differentiating through it is an error on every rank.
func TestCholesky(t *testing.T) {
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	n := 5
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			a[i*n+j] = 1 / float64(1+i+j) // Hilbert-like, plus the diagonal
		}
		a[i*n+i] += 1
	}
	run := func(chol func(*G.Node) (*G.Node, error)) []float64 {
		gr := G.NewGraph()
		an := G.NewMatrix(gr, tensor.Float64, G.WithShape(n, n), G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(append([]float64(nil), a...)))))
		l, err := chol(an)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(gr)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), l.Value().Data().([]float64)...)
	}
	got := run(func(a *G.Node) (*G.Node, error) { return distops.Cholesky(a, g, 2) })
	want := run(func(a *G.Node) (*G.Node, error) { return mgla.Cholesky(a) })
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("L[%d] = %v, mgla.Cholesky %v", i, got[i], want[i])
		}
	}
	gr := G.NewGraph()
	an := G.NewMatrix(gr, tensor.Float64, G.WithShape(n, n), G.WithName("A"))
	l, err := distops.Cholesky(an, g, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(G.Must(G.Sum(l)), an); err == nil {
		t.Fatal("gradient through distops.Cholesky: no error")
	}
}
