// Command gp is Gaussian-process regression that learns its hyperparameters
// with mgla: the exact negative log marginal likelihood
//
//	½·tr(Yᵀ·K⁻¹·Y) + (R/2)·log det K + (N·R/2)·log 2π
//
// of R sample paths Y at N inputs is one Gorgonia graph, −mgla.GaussianLogDensity
// of Y under N(0, K(θ)), K(θ) = σ²·exp(−D/(2ℓ²)) + σₙ²·I (or a Matérn
// kernel: -kernel matern32, matern52), and its gradient by gorgonia.Grad. Adam
// runs over θ = (log ℓ, log σ², log σₙ²), re-running one TapeMachine per
// step. The data are drawn in the program from a GP with known parameters,
// so the output compares what was learned with the truth, and the
// predictive mean with held-out points.
//
//	go run ./examples/gp                           # the embedded default: one CPU device
//	go run ./examples/gp -mesh cpu:4 -tile 64      # four virtual CPU devices
//	go run -tags mglacuda ./examples/gp -mesh gpu  # every GPU
//	go run ./examples/gp -kernel matern52          # data and model of the Matérn 5/2 kernel
//
// Its graphs are built in examples/builders; it may import that, mgla and
// sharding (the meshes) only.
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
	def := builders.DefaultGPDemo()
	var (
		n      = flag.Int("n", def.Data.N, "training points")
		m      = flag.Int("test", def.Data.M, "held-out points")
		paths  = flag.Int("paths", def.Data.Paths, "independent sample paths observed at the same inputs (1: classic single-output GP; fewer paths, less accurate parameters)")
		iters  = flag.Int("iters", def.Iters, "Adam steps")
		lr     = flag.Float64("lr", def.LR, "initial Adam step size (log-parameter units), cosine-decayed to 1/100 of it")
		every  = flag.Int("every", 25, "print progress every this many steps")
		seed   = flag.Uint64("seed", def.Data.Seed, "random seed of the synthetic data")
		mesh   = flag.String("mesh", "default", builders.MeshUsage)
		tile   = flag.Int("tile", 0, "tile width of the block-cyclic layout (0: mgla.DefaultTile)")
		domain = flag.Float64("domain", def.Data.Domain, "inputs are uniform on [0, domain)")
		kernel = flag.String("kernel", "se", "kernel family of the data and the model: se (squared exponential), matern32 or matern52")
	)
	flag.Parse()
	family, err := builders.KernelFamilyNamed(*kernel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gp:", err)
		os.Exit(2)
	}
	demo := def
	demo.Data.True.Family, demo.Init.Family = family, family
	demo.Data.N, demo.Data.M, demo.Data.Paths, demo.Data.Seed, demo.Data.Domain = *n, *m, *paths, *seed, *domain
	demo.Iters, demo.LR = *iters, *lr
	if err := run(demo, *every, *mesh, *tile); err != nil {
		fmt.Fprintln(os.Stderr, "gp:", err)
		if errors.Is(err, mgla.ErrNotPositiveDefinite) {
			fmt.Fprintln(os.Stderr, "gp: K(θ) lost positive definiteness; try a smaller -lr")
		}
		os.Exit(1)
	}
}

func run(demo builders.GPDemo, every int, meshSpec string, tile int) error {
	start := time.Now()
	mesh, err := builders.ParseMesh(meshSpec)
	if err != nil {
		return err
	}
	opts := []mgla.Option{mgla.WithMesh(mesh)}
	if tile != 0 {
		opts = append(opts, mgla.WithTile(tile))
	}
	cfg, truth := demo.Data, demo.Data.True
	shownTile := tile
	if shownTile == 0 {
		shownTile = mgla.DefaultTile(mesh, cfg.N)
	}
	fmt.Printf("GP regression: %d inputs on [0, %g), %d sample paths, %d held-out inputs, seed %d\n", cfg.N, cfg.Domain, cfg.Paths, cfg.M, cfg.Seed)
	fmt.Printf("mesh %v, tile %d; true %v\n", mesh, shownTile, truth)

	t0 := time.Now()
	res, err := demo.Run(func(it int, nll float64, p builders.GPParams) {
		fmt.Printf("iter %4d  nll %12.4f  %v  %6.2fs\n", it, nll, p, time.Since(t0).Seconds())
	}, every, opts...)
	if err != nil {
		return err
	}
	learned, data := res.Learned, res.Data
	fmt.Printf("learned %v  (nll %.4f after %d steps; %.2fs with the data synthesis)\n", learned, res.NLL, demo.Iters, time.Since(t0).Seconds())
	fmt.Printf("true    %v\n", truth)
	fmt.Printf("relative error: ℓ %+.1f%%  σ² %+.1f%%  σₙ² %+.1f%%  (largest %.1f%%)\n",
		100*(learned.LengthScale/truth.LengthScale-1), 100*(learned.SignalVar/truth.SignalVar-1), 100*(learned.NoiseVar/truth.NoiseVar-1),
		100*learned.MaxRelErr(truth))

	if cfg.M > 0 {
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
