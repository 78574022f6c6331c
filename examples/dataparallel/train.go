package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The synthetic data: y = X·trueWeights + trueBias + noise.
var (
	trueWeights = []float64{1.5, -2, 0.5}
	trueBias    = 0.3
)

// Config is a training run.
type Config struct {
	Samples  int       // in the whole data set, split over the ranks
	Steps    int       // full-batch gradient steps
	Rate     float64   // learning rate
	Seed     uint64    // of the data (the same on every rank)
	Every    int       // progress every so many steps
	Progress io.Writer // nil: quiet
}

func defaultConfig() Config {
	return Config{Samples: 1003, Steps: 300, Rate: 0.1, Seed: 1, Every: 50, Progress: os.Stdout}
}

// data returns rows [lo, hi) of the data set: X with a last column of ones
// (the bias), and y.
func data(cfg Config, lo, hi int) (x, y []float64) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	d := len(trueWeights) + 1
	for i := range cfg.Samples {
		row := make([]float64, d)
		t := trueBias
		for j, w := range trueWeights {
			row[j] = rng.NormFloat64()
			t += w * row[j]
		}
		row[d-1] = 1
		t += 0.1 * rng.NormFloat64()
		if i >= lo && i < hi {
			x = append(x, row...)
			y = append(y, t)
		}
	}
	return x, y
}

// Train fits the weights and the bias by full-batch gradient descent on
// this rank's shard of the samples (rows split as evenly as possible), the
// gradient summed over the ranks by an AllReduce node. Every rank returns
// the same parameters (weights, then bias).
func Train(comm collective.Comm, cfg Config) ([]float64, error) {
	size, rank := comm.Size(), comm.LocalRanks()[0]
	// Checks that every rank makes alike, before any collective.
	switch {
	case cfg.Steps < 0:
		return nil, fmt.Errorf("%d steps: want 0 or more", cfg.Steps)
	case !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 0):
		return nil, fmt.Errorf("learning rate %v: want a positive number", cfg.Rate)
	case cfg.Samples < size:
		return nil, fmt.Errorf("%d samples on %d ranks: every rank needs at least one", cfg.Samples, size)
	}
	lo, hi := cyclic.BlockStart(cfg.Samples, size, rank), cyclic.BlockStart(cfg.Samples, size, rank+1)
	xs, ys := data(cfg, lo, hi)
	d := len(trueWeights) + 1

	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(hi-lo, d), G.WithName("X"), G.WithValue(tensor.New(tensor.WithShape(hi-lo, d), tensor.WithBacking(xs))))
	y := G.NewVector(g, tensor.Float64, G.WithShape(hi-lo), G.WithName("y"), G.WithValue(tensor.New(tensor.WithShape(hi-lo), tensor.WithBacking(ys))))
	params := make([]float64, d)
	w := G.NewVector(g, tensor.Float64, G.WithShape(d), G.WithName("w"), G.WithValue(tensor.New(tensor.WithShape(d), tensor.WithBacking(params))))
	// This rank's part of the mean squared error over all the samples: the
	// parts sum to the loss, their gradients to its gradient.
	residual := G.Must(G.Sub(G.Must(G.Mul(x, w)), y))
	part := G.Must(G.Mul(G.Must(G.Sum(G.Must(G.Square(residual)))), G.NewConstant(1/float64(cfg.Samples))))
	grads, err := G.Grad(part, w)
	if err != nil {
		return nil, err
	}
	grad, err := collective.AllReduceNode(grads[0], comm, collective.Sum, collective.WithName("gradient sum"))
	if err != nil {
		return nil, err
	}
	loss, err := collective.AllReduceNode(part, comm, collective.Sum, collective.WithName("loss sum")) // a scalar
	if err != nil {
		return nil, err
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	for step := range cfg.Steps + 1 {
		if err := vm.RunAll(); err != nil {
			return nil, err
		}
		lv := loss.Value().Data().(float64)
		if cfg.Progress != nil && (step%cfg.Every == 0 || step == cfg.Steps) {
			fmt.Fprintf(cfg.Progress, "step %4d  loss %.6f\n", step, lv)
		}
		// The summed loss is the same on every rank: so is this verdict.
		if math.IsNaN(lv) || math.IsInf(lv, 0) {
			return nil, fmt.Errorf("step %d: the loss is %v: training diverged (try a smaller -rate)", step, lv)
		}
		if step == cfg.Steps {
			break
		}
		gv := grad.Value().Data().([]float64)
		for j := range params {
			params[j] -= cfg.Rate * gv[j]
		}
		vm.Reset()
	}
	return append([]float64(nil), params...), nil
}
