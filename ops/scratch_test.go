package ops_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// build adds an op on the host matrix a to g.
type build func(g *G.ExprGraph, a *G.Node, mesh mgla.Option) (*G.Node, error)

// one is the build of a builder of one operand.
func one(f func(*G.Node, ...mgla.Option) (*G.Node, error)) build {
	return func(_ *G.ExprGraph, a *G.Node, mesh mgla.Option) (*G.Node, error) { return f(a, mesh) }
}

// gradientGraph is a graph of op on a random n×n positive definite host
// matrix A, its sum (or its value, when a scalar) and the gradient wrt A.
func gradientGraph(t *testing.T, rng *rand.Rand, n int, op build, opt mgla.Option) *G.ExprGraph {
	t.Helper()
	g := G.NewGraph()
	an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
		G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(diagonallyDominant(rng, n)))))
	out, err := op(g, an, opt)
	require.NoError(t, err)
	cost := out
	if len(out.Shape()) > 0 {
		cost = G.Must(G.Sum(out))
	}
	_, err = G.Grad(cost, an)
	require.NoError(t, err)
	return g
}

// TestScratchPeak pins the scratch memory of each op's forward and
// backward run (the buffers the host kernels and the gradients borrow from
// ops' pool, at their high-water mark), in n×n matrices, float64, on a
// one-device and a three-device CPU mesh.
func TestScratchPeak(t *testing.T) {
	const n = 150
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	potrs := func(g *G.ExprGraph, a *G.Node, mesh mgla.Option) (*G.Node, error) {
		b := G.NewMatrix(g, tensor.Float64, G.WithShape(n, 3), G.WithName("B"), G.WithInit(G.Gaussian(0, 1)))
		return mgla.Potrs(a, b, mesh)
	}
	cholSolve := func(g *G.ExprGraph, a *G.Node, mesh mgla.Option) (*G.Node, error) {
		l, err := mgla.Cholesky(a, mesh)
		if err != nil {
			return nil, err
		}
		b := G.NewMatrix(g, tensor.Float64, G.WithShape(n, 3), G.WithName("B"), G.WithInit(G.Gaussian(0, 1)))
		return mgla.CholSolve(l, b, mesh)
	}
	syevd := func(_ *G.ExprGraph, a *G.Node, mesh mgla.Option) (*G.Node, error) {
		w, v, err := mgla.Syevd(a, mesh)
		if err != nil {
			return nil, err
		}
		return G.Add(G.Must(G.Sum(w)), G.Must(G.Sum(G.Must(G.Square(v)))))
	}
	values := func(_ *G.ExprGraph, a *G.Node, mesh mgla.Option) (*G.Node, error) {
		w, _, err := mgla.Syevd(a, mesh, mgla.EigenvaluesOnly())
		return w, err
	}
	for _, c := range []struct {
		op   string
		out  build
		mesh int
		want float64 // matrices
	}{
		{"CholSolve", cholSolve, 1, 1.04},
		{"Syevd", syevd, 1, 2},
		{"SyevdValues", values, 1, 1},
		{"CholSolve", cholSolve, 3, 3},
		{"Syevd", syevd, 3, 4},
		{"SyevdValues", values, 3, 2},
		{"Cholesky", one(mgla.Cholesky), 1, 1},
		{"Potri", one(mgla.Potri), 1, 1},
		{"LogDet", one(mgla.LogDet), 1, 0},
		{"Potrs", potrs, 1, 0},
		{"Cholesky", one(mgla.Cholesky), 3, 3},
		{"Potri", one(mgla.Potri), 3, 3},
		{"LogDet", one(mgla.LogDet), 3, 1},
		{"Potrs", potrs, 3, 1.02},
	} {
		t.Run(fmt.Sprintf("%s/%d-devices", c.op, c.mesh), func(t *testing.T) {
			mesh, err := sharding.CPUMesh(c.mesh)
			require.NoError(t, err)
			g := gradientGraph(t, rng, n, c.out, mgla.WithMesh(mesh))
			m := G.NewTapeMachine(g)
			defer m.Close()
			require.NoError(t, m.RunAll()) // the ops' own buffers
			m.Reset()
			before := ops.ResetLentPeak() // what an earlier test may have left lent
			require.NoError(t, m.RunAll())
			got := float64(ops.LentPeak()-before) / (n * n * 8)
			t.Logf("%s on %d devices: scratch peak %.2f matrices", c.op, c.mesh, got)
			require.LessOrEqual(t, got, c.want+0.01, "scratch peak of %s, forward and backward", c.op)
		})
	}
}

// TestHostGradientOfShard: the gradient of a sharded op's operand that is
// a host node's Shard is written straight to the host (the gradient op is
// "→host"), not into a sharded tensor that Shard's gradient then gathers.
func TestHostGradientOfShard(t *testing.T) {
	const n = 40
	rng := rand.New(rand.NewPCG(1, 9))
	for _, devices := range []int{1, 3} {
		mesh, err := sharding.CPUMesh(devices)
		require.NoError(t, err)
		for name, f := range map[string]func(*G.Node, ...mgla.Option) (*G.Node, error){
			"Cholesky": mgla.Cholesky, "Potri": mgla.Potri, "LogDet": mgla.LogDet,
		} {
			g := gradientGraph(t, rng, n, one(f), mgla.WithMesh(mesh))
			grads := 0
			for _, x := range g.AllNodes() {
				if op := x.Op(); op != nil && strings.Contains(op.String(), "Grad") {
					grads++
					require.True(t, strings.HasSuffix(op.String(), "→host"), "%s on %d devices: %s", name, devices, op)
				}
			}
			require.Equal(t, 1, grads, "%s on %d devices", name, devices)
		}
	}
}
