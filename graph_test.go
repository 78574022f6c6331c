package mgla_test

// Graph-level tests: each example's graph (package examples/builders) at a
// small size. The random seed is fresh on every run and logged (go test -v);
// set MGLA_GRAPH_SEED to replay one.

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/examples/builders"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func graphSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MGLA_GRAPH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "MGLA_GRAPH_SEED")
		seed = v
	}
	t.Logf("seed %d (replay with MGLA_GRAPH_SEED=%d)", seed, seed)
	return seed
}

// gpMeshes are the meshes the GP graph runs on: the default and a 3-device
// CPU mesh whose tile does not divide N.
func gpMeshes(t *testing.T) map[string][]mgla.Option {
	m3, err := testMesh(t, 3)
	require.NoError(t, err)
	return map[string][]mgla.Option{
		"default": nil,
		"cpu3_T7": {onMesh(m3), mgla.WithTile(7)},
	}
}

func smallGP(t *testing.T, seed uint64) *builders.GPData {
	return smallGPOf(t, seed, sharding.SquaredExp)
}

// smallGPOf is smallGP's data drawn from a GP of kernel family f.
func smallGPOf(t *testing.T, seed uint64, f sharding.KernelFamily) *builders.GPData {
	t.Helper()
	data, err := builders.SynthesizeGP(builders.GPDataConfig{
		N: 40, M: 60, Paths: 3, Domain: 8, // 60 test points: with 10, 1 seed in 100 failed TestGPPredictiveMean
		True: builders.GPParams{LengthScale: 0.7, SignalVar: 1.5, NoiseVar: 0.2, Family: f},
		Seed: seed,
	})
	require.NoError(t, err, "seed %d", seed)
	return data
}

func TestGPGraphLossDecreases(t *testing.T) {
	seed := graphSeed(t)
	data := smallGP(t, seed)
	init := builders.GPParams{LengthScale: 2, SignalVar: 0.5, NoiseVar: 1}
	var first []float64
	for name, opts := range gpMeshes(t) {
		t.Run(name, func(t *testing.T) {
			model, err := builders.NewGPModel(data.X, data.Y, init, opts...)
			require.NoError(t, err)
			defer model.Close()
			var losses []float64
			_, _, err = model.Fit(init, builders.FitConfig{
				Iters: 6, LR: 0.05, Every: 1,
				Progress: func(_ int, nll float64, _ builders.GPParams) { losses = append(losses, nll) },
			})
			require.NoError(t, err, "seed %d", seed)
			require.Len(t, losses, 7)
			for i := 1; i < len(losses); i++ {
				require.Less(t, losses[i], losses[i-1], "step %d did not decrease the loss %v (seed %d)", i, losses, seed)
			}
			if first == nil {
				first = losses
				return
			}
			for i := range losses { // the mesh and tile do not change the numbers
				require.InDelta(t, first[i], losses[i], 1e-9*math.Abs(first[i]), "seed %d", seed)
			}
		})
	}
}

func TestGPGraphGradientMatchesFiniteDifferences(t *testing.T) {
	seed := graphSeed(t)
	for _, f := range []sharding.KernelFamily{sharding.SquaredExp, sharding.Matern32, sharding.Matern52} {
		gpGradientMatchesFiniteDifferences(t, seed, f)
	}
}

func gpGradientMatchesFiniteDifferences(t *testing.T, seed uint64, f sharding.KernelFamily) {
	data := smallGPOf(t, seed, f)
	init := builders.GPParams{LengthScale: 1.3, SignalVar: 0.8, NoiseVar: 0.5, Family: f}
	for name, opts := range gpMeshes(t) {
		t.Run(fmt.Sprintf("%v/%s", f, name), func(t *testing.T) {
			model, err := builders.NewGPModel(data.X, data.Y, init, opts...)
			require.NoError(t, err)
			defer model.Close()
			theta := init.Log()
			nll, grad, err := model.Eval(theta)
			require.NoError(t, err)
			require.False(t, math.IsNaN(nll))
			f := func(th [3]float64) float64 {
				v, _, err := model.Eval(th)
				require.NoError(t, err)
				return v
			}
			for i := range theta {
				// Central differences with one Richardson step: error O(h⁴).
				d := func(h float64) float64 {
					p, m := theta, theta
					p[i] += h
					m[i] -= h
					return (f(p) - f(m)) / (2 * h)
				}
				const h = 1e-3
				fd := (4*d(h/2) - d(h)) / 3
				rel := math.Abs(grad[i]-fd) / math.Max(math.Abs(fd), 1e-8)
				t.Logf("θ%d: graph %.12g, finite differences %.12g, relative difference %.1e", i, grad[i], fd, rel)
				require.Less(t, rel, 1e-6, "θ%d seed %d", i, seed)
			}
			// Eval left the machine at the last θ it ran; running θ again
			// gives the same numbers.
			nll2, grad2, err := model.Eval(theta)
			require.NoError(t, err)
			require.Equal(t, nll, nll2)
			require.Equal(t, grad, grad2)
		})
	}
}

func TestGPPredictiveMean(t *testing.T) {
	seed := graphSeed(t)
	for _, f := range []sharding.KernelFamily{sharding.SquaredExp, sharding.Matern32, sharding.Matern52} {
		data := smallGPOf(t, seed, f)
		mean, err := builders.PredictGP(data.X, data.Y, data.XTest, data.True)
		require.NoError(t, err)
		require.Equal(t, data.FTest.Shape(), mean.Shape())
		// The predictive mean is closer to the function than the prior mean 0.
		require.Less(t, builders.RMSE(mean, data.FTest), 0.8*builders.RMSE(tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(mean.Shape()...)), data.FTest), "%v seed %d", f, seed)
	}
}

// TestGPKernelFlag: examples/gp's -kernel names a family, which the data,
// the model and the learned parameters carry.
func TestGPKernelFlag(t *testing.T) {
	for name, want := range map[string]sharding.KernelFamily{"se": sharding.SquaredExp, "matern32": sharding.Matern32, "matern52": sharding.Matern52} {
		f, err := builders.KernelFamilyNamed(name)
		require.NoError(t, err)
		require.Equal(t, want, f)
	}
	_, err := builders.KernelFamilyNamed("rbf")
	require.ErrorContains(t, err, "want se, matern32 or matern52")
	seed := graphSeed(t)
	data := smallGPOf(t, seed, sharding.Matern32)
	init := builders.GPParams{LengthScale: 1, SignalVar: 1, NoiseVar: 1, Family: sharding.Matern32}
	model, err := builders.NewGPModel(data.X, data.Y, init)
	require.NoError(t, err)
	defer model.Close()
	learned, _, err := model.Fit(init, builders.FitConfig{Iters: 2, LR: 0.05})
	require.NoError(t, err)
	require.Equal(t, sharding.Matern32, learned.Family)
	require.Contains(t, learned.String(), "Matérn 3/2")
}

// TestGPDefaultRunRecoversTruth runs what `make demo` runs (examples/gp
// with no flags: builders.DefaultGPDemo on the default mesh) and checks that
// it learns each true hyperparameter within 10%. The issue asks for this run
// to take under 30 s on a 2-core machine without a GPU; there it takes about
// 5 s (4 s with -tags openblas), and up to 10 s while other work loads it.
func TestGPDefaultRunRecoversTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("the full default GP run (several seconds); run without -short")
	}
	for _, f := range []sharding.KernelFamily{sharding.SquaredExp, sharding.Matern32, sharding.Matern52} {
		t.Run(f.String(), func(t *testing.T) { gpDefaultRunRecoversTruth(t, f) })
	}
}

// gpDefaultRunRecoversTruth is the default run with data and model of
// kernel family f (examples/gp -kernel).
func gpDefaultRunRecoversTruth(t *testing.T, f sharding.KernelFamily) {
	demo := builders.DefaultGPDemo()
	demo.Data.True.Family, demo.Init.Family = f, f
	start := time.Now()
	res, err := demo.Run(nil, 0)
	elapsed := time.Since(start)
	require.NoError(t, err)
	truth, got := demo.Data.True, res.Learned
	t.Logf("default GP run (N=%d, %d paths, %d steps) took %.2fs: learned %v, true %v, largest relative error %.2f%%",
		demo.Data.N, demo.Data.Paths, demo.Iters, elapsed.Seconds(), got, truth, 100*got.MaxRelErr(truth))
	for _, p := range []struct {
		name       string
		got, truth float64
	}{
		{"length scale ℓ", got.LengthScale, truth.LengthScale},
		{"signal variance σ²", got.SignalVar, truth.SignalVar},
		{"noise variance σₙ²", got.NoiseVar, truth.NoiseVar},
	} {
		rel := math.Abs(p.got/p.truth - 1)
		require.LessOrEqual(t, rel, 0.10, "%s: learned %g, true %g", p.name, p.got, p.truth)
	}
	if elapsed > 30*time.Second {
		t.Logf("the default run took %.1fs, over the 30 s target of `make demo`", elapsed.Seconds())
	}
}

func TestShardedPipelineMatchesHostPipeline(t *testing.T) {
	seed := graphSeed(t)
	const n = 23
	a := builders.ExpKernelSPD(n, seed)
	rhs := []*tensor.Dense{builders.RandomMatrix(n, 0, seed, 1), builders.RandomMatrix(n, 3, seed, 2)}
	mesh, err := testMesh(t, 3)
	require.NoError(t, err)

	sharded, err := builders.NewShardedPipeline(a, rhs, mesh, 4)
	require.NoError(t, err)
	stages, err := sharded.TimeStages() // runs the whole pipeline last
	require.NoError(t, err, "seed %d", seed)
	require.Len(t, stages, 5)
	host, err := builders.NewHostPipeline(a, rhs)
	require.NoError(t, err)
	require.NoError(t, host.Run(), "seed %d", seed)

	// A is placed on the mesh once and factored once.
	count := func(prefix string) int {
		c := 0
		for _, nd := range sharded.Graph.AllNodes() {
			if nd.Op() != nil && strings.HasPrefix(nd.Op().String(), prefix) {
				c++
			}
		}
		return c
	}
	require.Equal(t, 1+len(rhs), count("Shard"), "one placement of A and one per right-hand side")
	require.Equal(t, 1, count("Cholesky"))

	val := func(n *G.Node) *tensor.Dense { return n.Value().(*tensor.Dense) }
	for i := range rhs {
		require.Less(t, builders.RelDiff(val(sharded.X[i]), val(host.X[i])), 1e-12, "Potrs %d seed %d", i, seed)
		require.Less(t, builders.SolveResidual(a, val(sharded.X[i]), rhs[i]), 1e-12, "seed %d", seed)
	}
	require.Less(t, builders.RelDiff(val(sharded.Inverse), val(host.Inverse)), 1e-12, "Potri seed %d", seed)
	require.Less(t, builders.RelDiff(val(sharded.Values), val(host.Values)), 1e-12, "eigenvalues seed %d", seed)
	// Eigenvectors agree up to the sign of each column.
	sv, hv := val(sharded.Vectors).Data().([]float64), val(host.Vectors).Data().([]float64)
	for j := range n {
		var dot float64
		for i := range n {
			dot += sv[i*n+j] * hv[i*n+j]
		}
		sign := math.Copysign(1, dot)
		for i := range n {
			require.InDelta(t, hv[i*n+j], sign*sv[i*n+j], 1e-9, "eigenvector %d seed %d", j, seed)
		}
	}
}

func TestEigenExampleOrthonormal(t *testing.T) {
	seed := graphSeed(t)
	ring := builders.RingOfCliques{Cliques: 5, Size: 8, PIn: 1, Bridges: 2, Seed: seed}
	lap, group, err := ring.Laplacian()
	require.NoError(t, err)
	n := lap.Shape()[0]
	m2, err := testMesh(t, 2)
	require.NoError(t, err)
	for name, opts := range map[string][]mgla.Option{"default": nil, "cpu2_T5": {onMesh(m2), mgla.WithTile(5)}} {
		t.Run(name, func(t *testing.T) {
			s, err := builders.SpectralDecomposition(lap, opts...)
			require.NoError(t, err, "seed %d", seed)
			require.Less(t, builders.OffIdentity(s.Gram), 1e-12, "VᵀV from the graph, seed %d", seed)
			require.Less(t, builders.Orthogonality(s.Vectors, nil), 1e-12, "VᵀV on the host, seed %d", seed)
			all := make([]int, n)
			for j := range all {
				all[j] = j
			}
			require.Less(t, builders.EigenResidual(lap, s.Values, s.Vectors, all), 1e-12, "seed %d", seed)
			w := s.Values.Data().([]float64)
			require.InDelta(t, 0, w[0], 1e-10*w[n-1], "a Laplacian has the eigenvalue 0")
			require.Greater(t, w[ring.Cliques], 5*w[ring.Cliques-1], "spectral gap after %d eigenvalues: %v", ring.Cliques, w[:ring.Cliques+1])
			k, ratio := builders.Eigengap(w, ring.Cliques+3)
			require.Equal(t, ring.Cliques, k, "the eigengap's cluster count, ratio %v: %v", ratio, w[:ring.Cliques+3])
			require.True(t, builders.RingOrder(builders.EmbeddingAngles(s, 1, 2, group)), "seed %d", seed)
		})
	}
}
