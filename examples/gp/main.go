// Command gp is Gaussian-process regression that learns its hyperparameters
// with mgla: the exact negative log marginal likelihood
//
//	½·tr(Yᵀ·K⁻¹·Y) + (R/2)·log det K + (N·R/2)·log 2π
//
// of R sample paths Y at N inputs is one Gorgonia graph, with K⁻¹Y from
// mgla.Potrs and log det K from mgla.LogDet sharing one Cholesky factor of
// K(θ) = σ²·exp(−D/(2ℓ²)) + σₙ²·I, and its gradient by gorgonia.Grad. Adam
// runs over θ = (log ℓ, log σ², log σₙ²), re-running one TapeMachine per
// step. The data are drawn in the program from a GP with known parameters,
// so the output compares what was learned with the truth, and the
// predictive mean with held-out points.
//
//	go run ./examples/gp                           # the embedded default: one CPU device
//	go run ./examples/gp -mesh cpu:4 -tile 64      # four virtual CPU devices
//	go run -tags mglacuda ./examples/gp -mesh gpu  # every GPU
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/examples/builders"
)

func main() {
	var (
		n      = flag.Int("n", 300, "training points")
		m      = flag.Int("test", 100, "held-out points")
		paths  = flag.Int("paths", 64, "independent sample paths observed at the same inputs (1: classic single-output GP)")
		iters  = flag.Int("iters", 250, "Adam steps")
		lr     = flag.Float64("lr", 0.1, "initial Adam step size (log-parameter units), cosine-decayed to 1/100 of it")
		every  = flag.Int("every", 25, "print progress every this many steps")
		seed   = flag.Uint64("seed", 1, "random seed of the synthetic data")
		mesh   = flag.String("mesh", "default", builders.MeshUsage)
		tile   = flag.Int("tile", 0, "tile width of the block-cyclic layout (0: mgla.DefaultTile)")
		domain = flag.Float64("domain", 40, "inputs are uniform on [0, domain)")
	)
	flag.Parse()
	if err := run(*n, *m, *paths, *iters, *lr, *every, *seed, *mesh, *tile, *domain); err != nil {
		fmt.Fprintln(os.Stderr, "gp:", err)
		if errors.Is(err, mgla.ErrNotPositiveDefinite) {
			fmt.Fprintln(os.Stderr, "gp: K(θ) lost positive definiteness; try a smaller -lr")
		}
		os.Exit(1)
	}
}

func run(n, m, paths, iters int, lr float64, every int, seed uint64, meshSpec string, tile int, domain float64) error {
	start := time.Now()
	mesh, err := builders.ParseMesh(meshSpec)
	if err != nil {
		return err
	}
	opts := []mgla.Option{mgla.WithMesh(mesh)}
	if tile != 0 {
		opts = append(opts, mgla.WithTile(tile))
	}
	truth := builders.GPParams{LengthScale: 0.5, SignalVar: 2, NoiseVar: 0.1}
	data, err := builders.SynthesizeGP(builders.GPDataConfig{N: n, M: m, Paths: paths, Domain: domain, True: truth, Seed: seed}, opts...)
	if err != nil {
		return err
	}
	shownTile := tile
	if shownTile == 0 {
		shownTile = mgla.DefaultTile(mesh, n)
	}
	fmt.Printf("GP regression: %d inputs on [0, %g), %d sample paths, %d held-out inputs, seed %d\n", n, domain, paths, m, seed)
	fmt.Printf("mesh %v, tile %d; true %v\n", mesh, shownTile, truth)

	init := builders.GPParams{LengthScale: 1, SignalVar: 1, NoiseVar: 1}
	model, err := builders.NewGPModel(data.X, data.Y, init, opts...)
	if err != nil {
		return err
	}
	defer model.Close()
	t0 := time.Now()
	learned, nll, err := model.Fit(init, builders.FitConfig{
		Iters: iters, LR: lr, Every: every,
		Progress: func(it int, nll float64, p builders.GPParams) {
			fmt.Printf("iter %4d  nll %12.4f  %v  %6.2fs\n", it, nll, p, time.Since(t0).Seconds())
		},
	})
	if err != nil {
		return err
	}
	fmt.Printf("learned %v  (nll %.4f, %d steps in %.2fs)\n", learned, nll, iters, time.Since(t0).Seconds())
	fmt.Printf("true    %v\n", truth)
	fmt.Printf("relative error: ℓ %+.1f%%  σ² %+.1f%%  σₙ² %+.1f%%\n",
		100*(learned.LengthScale/truth.LengthScale-1), 100*(learned.SignalVar/truth.SignalVar-1), 100*(learned.NoiseVar/truth.NoiseVar-1))

	if m > 0 {
		mean, err := builders.PredictGP(data.X, data.Y, data.XTest, learned, opts...)
		if err != nil {
			return err
		}
		best, err := builders.PredictGP(data.X, data.Y, data.XTest, truth, opts...)
		if err != nil {
			return err
		}
		fmt.Printf("held-out RMSE of the predictive mean: %.4f against the noisy targets (noise std %.4f),\n", builders.RMSE(mean, data.YTest), math.Sqrt(truth.NoiseVar))
		fmt.Printf("  %.4f against the noise-free function (%.4f with the true parameters)\n", builders.RMSE(mean, data.FTest), builders.RMSE(best, data.FTest))
	}
	fmt.Printf("total %.2fs\n", time.Since(start).Seconds())
	return nil
}
