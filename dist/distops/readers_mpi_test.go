//go:build mpi

package distops_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/dist/distops"
	G "gorgonia.org/gorgonia"
)

// TestGridInputGatheredAndRead: a grid input node read by Gather and by
// another op (LogDet) has one GridInput node, whose gradient sums theirs:
// ∂(log det A + Σ A)/∂A = A⁻¹ + 1 on both machines. Gather made a second
// GridInput node, whose two grid gradients Gorgonia's Add was given (a
// Gorgonia error, then an ErrBadInput naming Gather).
func TestGridInputGatheredAndRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 79))
	const n, nb = 5, 2
	a := spd[float64](rng, n)
	_, inv, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
		an := input(g, "A", a)
		ld, err := mgla.LogDet(an)
		return []*G.Node{ld}, []*G.Node{an}, ld, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := c128(inv[0])
	for i := range want {
		want[i]++
	}
	for _, grid := range grids(t) {
		on := distops.On(grid)
		for _, m := range []machine{tape, lisp} {
			name := fmt.Sprintf("%s %v", gridName(grid), m)
			_, grads, err := run(m, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
				x := distops.Input(g, gridValue(t, grid, a, nb), "x")
				ld, err := on.LogDet(x, nb)
				if err != nil {
					return nil, nil, nil, err
				}
				h, err := on.Gather(x, -1)
				if err != nil {
					return nil, nil, nil, err
				}
				cost := G.Must(G.Add(ld, G.Must(G.Sum(h))))
				return []*G.Node{cost}, []*G.Node{x}, cost, nil
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if ok, j := near(c128(grads[0]), want, 1e-9); !ok {
				t.Errorf("%s: Ā[%d] = %v, want A⁻¹ + 1 = %v", name, j, c128(grads[0])[j], want[j])
			}
		}
	}
}

// TestGorgoniaReaderOnSomeRanks: a rank that gives a grid value to one of
// Gorgonia's ops where the others do not (their graphs differ) makes the
// run fail on every rank (the refusal joins the ranks' barrier), and the
// next run, the same on every rank, is right. The refusing rank used to
// return before the barrier, which the others' paired with its next run.
func TestGorgoniaReaderOnSomeRanks(t *testing.T) {
	if world.Size() == 1 {
		t.Skip("one rank builds one graph")
	}
	rng := rand.New(rand.NewPCG(seed(t), 83))
	const n, nb = 5, 2
	a := spd[float64](rng, n)
	want, _, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
		ld, err := mgla.LogDet(input(g, "A", a))
		return []*G.Node{ld}, nil, nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	grid := grids(t)[0]
	on := distops.On(grid)
	for i, extra := range []bool{world.Rank() == 0, false} {
		outs, _, err := run(tape, func(g *G.ExprGraph) ([]*G.Node, []*G.Node, *G.Node, error) {
			k, err := on.Distribute(input(g, "A", a), nb)
			if err != nil {
				return nil, nil, nil, err
			}
			ld, err := on.LogDet(k, nb)
			if err != nil {
				return nil, nil, nil, err
			}
			if extra {
				G.Must(G.Sum(k))
			}
			return []*G.Node{ld}, nil, nil, nil
		})
		switch {
		case i == 0 && !errors.Is(err, dist.ErrMismatch):
			t.Errorf("run 0 (a reader on rank 0 only): %v, want ErrMismatch on every rank", err)
		case i == 1 && err != nil:
			t.Errorf("run 1: %v", err)
		case i == 1:
			if ok, _ := near(c128(outs[0]), c128(want[0]), 1e-12); !ok {
				t.Errorf("run 1: log det %v, on one process %v", outs[0], want[0])
			}
		}
	}
}
