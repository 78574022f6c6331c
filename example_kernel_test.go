package mgla_test

import (
	"fmt"
	"log"
	"math"

	"github.com/mgla/mgla"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExampleSquaredExponential is a Gaussian process's negative log marginal
// likelihood from its points, and its gradient with respect to the
// log-parameters θ = (log ℓ, log σ², log σₙ²): K(θ) is made on the mesh
// (the default: one CPU device; on a GPU mesh K and its gradient never
// visit the host), and −GaussianLogDensity(K, y) is the cost. Matern32 and
// Matern52 take the same operands.
func ExampleSquaredExponential() {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(5), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 0.5, 1.2, 2, 3.1}))))
	y := G.NewVector(g, tensor.Float64, G.WithShape(5), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{0.1, 0.6, 0.9, 0.7, -0.2}))))
	var theta, positive [3]*G.Node
	for i, name := range []string{"logLengthScale", "logSignalVar", "logNoiseVar"} {
		// Named: Gorgonia merges unnamed input nodes of one type and shape.
		theta[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue([]float64{0, 0, -3}[i]))
		positive[i] = G.Must(G.Exp(theta[i]))
	}
	k, err := mgla.SquaredExponential(x, positive[0], positive[1], positive[2])
	if err != nil {
		log.Fatal(err)
	}
	logp, err := mgla.GaussianLogDensity(k, y)
	if err != nil {
		log.Fatal(err)
	}
	nll := G.Must(G.Neg(logp))
	grads, err := G.Grad(nll, theta[:]...)
	if err != nil {
		log.Fatal(err)
	}
	// A graph with gradients: copy the results out as they are computed
	// (the TapeMachine may reuse a value's memory once nothing reads it).
	var nllValue G.Value
	var gradValues [3]G.Value
	G.Read(nll, &nllValue)
	for i := range grads {
		G.Read(grads[i], &gradValues[i])
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(mgla.Cause(err))
	}
	fmt.Printf("nll = %.4f\n", nllValue.Data())
	for i, name := range []string{"log ℓ", "log σ²", "log σₙ²"} {
		fmt.Printf("d nll / d %-7s = %+.4f\n", name, gradValues[i].Data())
	}
	// Output:
	// nll = 3.5537
	// d nll / d log ℓ   = -2.0719
	// d nll / d log σ²  = +1.3678
	// d nll / d log σₙ² = +0.4982
}

// ExampleCrossKernel is a Gaussian process's prediction at new points x*:
// the posterior mean C·K⁻¹·y and variance σ² − diag(C·K⁻¹·Cᵀ), C =
// CrossKernel(K, x*) the kernel between x* and the training points, from
// Potrs on K and Gorgonia's own ops on C. Far from the data (x* = 6) the
// mean falls back to 0 and the variance to σ².
func ExampleCrossKernel() {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(5), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 0.5, 1.2, 2, 3.1}))))
	y := G.NewVector(g, tensor.Float64, G.WithShape(5), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{0.1, 0.6, 0.9, 0.7, -0.2}))))
	xStar := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("xStar"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{0.25, 1.6, 6}))))
	ell := G.NewScalar(g, tensor.Float64, G.WithName("lengthScale"), G.WithValue(0.8))
	signal := G.NewScalar(g, tensor.Float64, G.WithName("signalVar"), G.WithValue(0.5))
	noise := G.NewScalar(g, tensor.Float64, G.WithName("noiseVar"), G.WithValue(0.01))
	k, err := mgla.SquaredExponential(x, ell, signal, noise)
	if err != nil {
		log.Fatal(err)
	}
	c, err := mgla.CrossKernel(k, xStar) // 3×5, on the host
	if err != nil {
		log.Fatal(err)
	}
	alpha, err := mgla.Potrs(k, y) // K⁻¹·y
	if err != nil {
		log.Fatal(err)
	}
	mean := G.Must(G.Mul(c, alpha))
	ct := G.Must(G.Transpose(c))
	kinvCt, err := mgla.Potrs(k, ct) // K⁻¹·Cᵀ, 5×3
	if err != nil {
		log.Fatal(err)
	}
	explained := G.Must(G.Sum(G.Must(G.HadamardProd(ct, kinvCt)), 0)) // diag(C·K⁻¹·Cᵀ)
	variance := G.Must(G.Sub(signal, explained))                      // σ² − diag(C·K⁻¹·Cᵀ)
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(mgla.Cause(err))
	}
	mu, v := mean.Value().Data().([]float64), variance.Value().Data().([]float64)
	for i, at := range []float64{0.25, 1.6, 6} {
		fmt.Printf("x* = %.2f: mean %+.4f, variance %.4f\n", at, mu[i], v[i])
	}
	// Output:
	// x* = 0.25: mean +0.3496, variance 0.0069
	// x* = 1.60: mean +0.8665, variance 0.0127
	// x* = 6.00: mean -0.0007, variance 0.5000
}

// ExampleSquaredExponential_ard trains a Gaussian process with a length
// scale per dimension (automatic relevance determination): y depends on
// the first of two input dimensions only, and 150 Adam steps on −log p(y)
// (Gorgonia's solver on the log-parameters) grow the second dimension's
// length scale, which switches it off. The machine runs once per step;
// gorgonia.BindDualValues keeps the gradients for the solver.
func ExampleSquaredExponential_ard() {
	const n = 40
	xs, ys := make([]float64, 2*n), make([]float64, n)
	for i := range n {
		x1, x2 := 2*math.Sin(float64(i)), 2*math.Cos(1.7*float64(i))
		xs[2*i], xs[2*i+1] = x1, x2
		ys[i] = math.Sin(1.5 * x1)
	}
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(n, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(n, 2), tensor.WithBacking(xs))))
	y := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithBacking(ys))))
	logEll := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("logLengthScales"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 0}))))
	logSignal := G.NewScalar(g, tensor.Float64, G.WithName("logSignalVar"), G.WithValue(0.0))
	logNoise := G.NewScalar(g, tensor.Float64, G.WithName("logNoiseVar"), G.WithValue(-3.0))
	k, err := mgla.SquaredExponential(x, G.Must(G.Exp(logEll)), G.Must(G.Exp(logSignal)), G.Must(G.Exp(logNoise)))
	if err != nil {
		log.Fatal(err)
	}
	logp, err := mgla.GaussianLogDensity(k, y)
	if err != nil {
		log.Fatal(err)
	}
	nll := G.Must(G.Neg(logp))
	params := G.Nodes{logEll, logSignal, logNoise}
	if _, err := G.Grad(nll, params...); err != nil {
		log.Fatal(err)
	}
	var nllValue G.Value
	G.Read(nll, &nllValue)
	m := G.NewTapeMachine(g, G.BindDualValues(params...))
	defer m.Close()
	solver := G.NewAdamSolver(G.WithLearnRate(0.05))
	for step := range 150 {
		if err := m.RunAll(); err != nil {
			log.Fatal(mgla.Cause(err))
		}
		if step == 0 {
			fmt.Printf("nll at the start: %.1f\n", nllValue.Data())
		}
		if err := solver.Step(G.NodesToValueGrads(params)); err != nil {
			log.Fatal(err)
		}
		m.Reset()
	}
	if err := m.RunAll(); err != nil { // −log p(y) at the trained parameters
		log.Fatal(mgla.Cause(err))
	}
	ell := logEll.Value().Data().([]float64)
	fmt.Printf("nll after 150 steps: %.1f\n", nllValue.Data())
	fmt.Printf("length scales: %.1f and %.0f\n", math.Exp(ell[0]), math.Exp(ell[1]))
	// Output:
	// nll at the start: 12.5
	// nll after 150 steps: -135.5
	// length scales: 1.5 and 131
}
