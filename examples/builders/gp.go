package builders

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GPParams are a GP's kernel family and its hyperparameters: for the
// squared-exponential (RBF) kernel, the zero Family,
//
//	k(x, x') = SignalVar·exp(−(x−x')²/(2·LengthScale²)) + NoiseVar·[x = x'],
//
// and for the Matérn kernels (sharding.Matern32, Matern52) the same
// parameters in their profiles (mgla.Matern32, Matern52).
type GPParams struct {
	LengthScale, SignalVar, NoiseVar float64
	Family                           sharding.KernelFamily
}

// kernelBuilder is the mgla builder of the kernel matrix of family f.
func kernelBuilder(f sharding.KernelFamily) (func(x, ell, sig, noise *G.Node, opts ...mgla.Option) (*G.Node, error), error) {
	switch f {
	case sharding.SquaredExp:
		return mgla.SquaredExponential, nil
	case sharding.Matern32:
		return mgla.Matern32, nil
	case sharding.Matern52:
		return mgla.Matern52, nil
	}
	return nil, fmt.Errorf("gp: unknown kernel family %v", f)
}

// KernelFamilyNamed is the family a -kernel flag names: se (the squared
// exponential), matern32 or matern52.
func KernelFamilyNamed(name string) (sharding.KernelFamily, error) {
	switch name {
	case "se":
		return sharding.SquaredExp, nil
	case "matern32":
		return sharding.Matern32, nil
	case "matern52":
		return sharding.Matern52, nil
	}
	return 0, fmt.Errorf("kernel %q: want se, matern32 or matern52", name)
}

// Log returns (log ℓ, log σ², log σₙ²), the unconstrained coordinates the
// optimiser works in.
func (p GPParams) Log() [3]float64 {
	return [3]float64{math.Log(p.LengthScale), math.Log(p.SignalVar), math.Log(p.NoiseVar)}
}

// ParamsFromLog is the inverse of Log, for the squared exponential.
func ParamsFromLog(t [3]float64) GPParams {
	return GPParams{LengthScale: math.Exp(t[0]), SignalVar: math.Exp(t[1]), NoiseVar: math.Exp(t[2])}
}

// withLog is p's family with the parameters of θ = (log ℓ, log σ², log σₙ²).
func (p GPParams) withLog(t [3]float64) GPParams {
	q := ParamsFromLog(t)
	q.Family = p.Family
	return q
}

func (p GPParams) String() string {
	s := fmt.Sprintf("ℓ=%.4f σ²=%.4f σₙ²=%.4f", p.LengthScale, p.SignalVar, p.NoiseVar)
	if p.Family != sharding.SquaredExp {
		s = p.Family.String() + " " + s
	}
	return s
}

// MaxRelErr is the largest relative error of p's three parameters against
// want.
func (p GPParams) MaxRelErr(want GPParams) float64 {
	return max(math.Abs(p.LengthScale/want.LengthScale-1),
		math.Abs(p.SignalVar/want.SignalVar-1),
		math.Abs(p.NoiseVar/want.NoiseVar-1))
}

// GPDemo is the problem and training schedule of examples/gp.
// DefaultGPDemo returns the values of its flag defaults, which is the run
// `make demo` does; graph_test.go checks that this run recovers the true
// parameters within 10%.
type GPDemo struct {
	Data  GPDataConfig
	Init  GPParams // where Adam starts
	Iters int      // Adam steps
	LR    float64  // initial step size, cosine-decayed to LR/100
}

// DefaultGPDemo is the default run of examples/gp: 300 training and 100
// held-out inputs on [0, 40) with 64 sample paths of a GP with ℓ = 0.5,
// σ² = 2, σₙ² = 0.1, and 250 Adam steps from ℓ = σ² = σₙ² = 1. It learns
// all three within 1%. With one sample path (-paths 1) the signal variance
// comes out 10.6% high at seed 1 (see GPDataConfig), so the default keeps
// 64 paths.
func DefaultGPDemo() GPDemo {
	return GPDemo{
		Data: GPDataConfig{
			N: 300, M: 100, Paths: 64, Domain: 40,
			True: GPParams{LengthScale: 0.5, SignalVar: 2, NoiseVar: 0.1},
			Seed: 1,
		},
		Init:  GPParams{LengthScale: 1, SignalVar: 1, NoiseVar: 1},
		Iters: 250,
		LR:    0.1,
	}
}

// GPDemoResult is what GPDemo.Run learned.
type GPDemoResult struct {
	Data    *GPData
	Learned GPParams
	NLL     float64 // the loss at Learned
}

// Run synthesizes the data, builds the GPModel and fits it with Adam;
// progress and every are passed on to FitConfig, opts to the mgla ops.
func (d GPDemo) Run(progress func(iter int, nll float64, p GPParams), every int, opts ...mgla.Option) (*GPDemoResult, error) {
	data, err := SynthesizeGP(d.Data, opts...)
	if err != nil {
		return nil, err
	}
	model, err := NewGPModel(data.X, data.Y, d.Init, opts...)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	learned, nll, err := model.Fit(d.Init, FitConfig{Iters: d.Iters, LR: d.LR, Every: every, Progress: progress})
	if err != nil {
		return nil, err
	}
	return &GPDemoResult{Data: data, Learned: learned, NLL: nll}, nil
}

// GPDataConfig describes a synthetic regression problem: Paths independent
// sample paths of a zero-mean GP with kernel True, observed with noise at N
// training inputs and M held-out inputs drawn uniformly from [0, Domain).
//
// Several paths at the same inputs are what makes the signal variance
// learnable to a few percent: one path carries information about σ² only
// through the roughly Domain/LengthScale independent stretches it spans
// (its maximum-likelihood estimate has a relative spread of about 20% for
// Domain/LengthScale = 80), and R paths divide that spread by √R.
type GPDataConfig struct {
	N, M, Paths int
	Domain      float64
	True        GPParams
	Seed        uint64
}

// GPData is a synthetic regression problem (see GPDataConfig).
type GPData struct {
	X, XTest []float64     // training and held-out inputs
	Y, YTest *tensor.Dense // N×Paths and M×Paths noisy observations
	FTest    *tensor.Dense // M×Paths noise-free function values at XTest
	True     GPParams
}

// SynthesizeGP draws a GP data set. The sample paths are f = L·z for z
// standard normal and L the Cholesky factor of the kernel matrix of all N+M
// inputs (plus a 10⁻⁶·σ² jitter), computed with mgla.Cholesky on the mesh
// the options name.
func SynthesizeGP(cfg GPDataConfig, opts ...mgla.Option) (data *GPData, err error) {
	if cfg.N < 1 || cfg.M < 0 || cfg.Paths < 1 || !(cfg.Domain > 0) {
		return nil, fmt.Errorf("gp data: need N ≥ 1, M ≥ 0, Paths ≥ 1 and Domain > 0, got %+v", cfg)
	}
	p := cfg.True
	if !(p.LengthScale > 0 && p.SignalVar > 0 && p.NoiseVar > 0) {
		return nil, fmt.Errorf("gp data: the kernel parameters must be positive, got %v", p)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6770))
	n, m, r := cfg.N, cfg.M, cfg.Paths
	all := make([]float64, n+m)
	for i := range all {
		all[i] = cfg.Domain * rng.Float64()
	}
	z := make([]float64, (n+m)*r)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	k, err := sharding.CrossKernel(all, n+m, all, n+m, 1, sharding.KernelParams{Family: p.Family, LengthScale: p.LengthScale, SignalVar: p.SignalVar})
	if err != nil {
		return nil, fmt.Errorf("gp data: %w", err)
	}
	for i := range n + m {
		k[i*(n+m)+i] += 1e-6 * p.SignalVar
	}

	defer catch(&err)
	g := G.NewGraph()
	kn := G.NewMatrix(g, tensor.Float64, G.WithShape(n+m, n+m), G.WithName("Kall"), G.WithValue(dense(k, n+m, n+m)))
	zn := G.NewMatrix(g, tensor.Float64, G.WithShape(n+m, r), G.WithName("Z"), G.WithValue(dense(z, n+m, r)))
	l := G.Must(mgla.Cholesky(kn, opts...))
	f := G.Must(G.Mul(l, zn)) // f = L·z has covariance L·Lᵀ = K
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, mgla.Cause(err)
	}
	fv := f.Value().Data().([]float64)

	y := make([]float64, n*r)
	for i := range y {
		y[i] = fv[i] + math.Sqrt(p.NoiseVar)*rng.NormFloat64()
	}
	ft := append([]float64(nil), fv[n*r:]...)
	yt := make([]float64, m*r)
	for i := range yt {
		yt[i] = ft[i] + math.Sqrt(p.NoiseVar)*rng.NormFloat64()
	}
	data = &GPData{X: all[:n], XTest: all[n:], Y: dense(y, n, r), True: p}
	if m > 0 {
		data.YTest, data.FTest = dense(yt, m, r), dense(ft, m, r)
	}
	return data, nil
}

// SquaredDistances is the row-major len(a)×len(b) matrix of (a_i − b_j)².
func SquaredDistances(a, b []float64) []float64 {
	d := make([]float64, len(a)*len(b))
	for i, x := range a {
		for j, y := range b {
			d[i*len(b)+j] = (x - y) * (x - y)
		}
	}
	return d
}

func dense(data []float64, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

func identity(n int) *tensor.Dense { return IdentityRows(n, 0, n) }

// rbf is σ²·exp(−½·D·exp(−2·log ℓ)) for a matrix D of squared distances,
// built from the log parameters with ordinary Gorgonia ops, so that
// gorgonia.Grad differentiates it.
func rbf(d, logEll, logSignal *G.Node) *G.Node {
	invEll2 := G.Must(G.Exp(G.Must(G.Mul(G.NewConstant(-2.0), logEll)))) // ℓ⁻²
	arg := G.Must(G.Mul(d, G.Must(G.Mul(G.NewConstant(-0.5), invEll2)))) // −D/(2ℓ²)
	return G.Must(G.Mul(G.Must(G.Exp(arg)), G.Must(G.Exp(logSignal))))   // σ²·exp(…)
}

// withNoise is K + exp(log σₙ²)·I.
func withNoise(k, eye, logNoise *G.Node) *G.Node {
	return G.Must(G.Add(k, G.Must(G.Mul(eye, G.Must(G.Exp(logNoise))))))
}

// KernelMatrix is the node K(θ) = σ²·exp(−D/(2ℓ²)) + σₙ²·I of GPModel
// from the squared distances d and the identity eye, or from the same
// rows of both (a band of K, as examples/distributed builds on each rank),
// and the log parameters (log ℓ, log σ², log σₙ²), with ordinary Gorgonia
// ops, so that gorgonia.Grad differentiates it. It panics on nodes that do
// not fit (use it under catch).
func KernelMatrix(d, eye *G.Node, params [3]*G.Node) *G.Node {
	return withNoise(rbf(d, params[0], params[1]), eye, params[2])
}

// IdentityRows is rows [r0, r1) of the n×n identity, row-major.
func IdentityRows(n, r0, r1 int) *tensor.Dense {
	d := make([]float64, (r1-r0)*n)
	for i := r0; i < r1; i++ {
		d[(i-r0)*n+i] = 1
	}
	return dense(d, r1-r0, n)
}

// GPModel is the negative log marginal likelihood of a GP with an RBF
// kernel, as one Gorgonia graph with its gradient, run by one TapeMachine
// that is built once and re-run for every new value of the parameters.
//
// For R sample paths Y (N×R) at inputs x,
//
//	NLL(θ) = ½·tr(Yᵀ·K⁻¹·Y) + (R/2)·log det K + (N·R/2)·log 2π,
//	K(θ)   = σ²·exp(−(x_i − x_j)²/(2ℓ²)) + σₙ²·[i = j],
//
// with θ = (log ℓ, log σ², log σₙ²) (for the initial parameters' Family;
// the Matérn kernels use mgla.Matern32 and Matern52). K is
// mgla.SquaredExponential of x and
// the parameters: made on the mesh, never on the host (or on a process
// grid with mgla.WithGrid, each process its blocks). The NLL is
// −mgla.GaussianLogDensity(K, Y), whose gradient of K is one N×N
// computation from the forward factor, which stays on the mesh too: the
// gradient of θ that comes back is three numbers.
type GPModel struct {
	Graph *G.ExprGraph
	// Params are the scalar input nodes log ℓ, log σ², log σₙ².
	Params [3]*G.Node
	// K is the N×N kernel matrix, a sharded node (ops.Gather brings it to
	// the host), or with WithGrid a grid value (distops.Ops.Gather).
	K *G.Node
	// NLL is the loss and Grads its derivatives with respect to Params.
	NLL   *G.Node
	Grads G.Nodes

	vm       G.VM
	nllValue G.Value
	grads    [3]G.Value
}

// NewGPModel builds the graph and its machine for training inputs x and
// observations y (N×R, or a length-N vector for one path), starting at
// init. The options choose the mesh and tile width of the mgla ops, or
// WithGrid's process grid and its block size.
func NewGPModel(x []float64, y *tensor.Dense, init GPParams, opts ...mgla.Option) (model *GPModel, err error) {
	n := len(x)
	if y == nil || y.Dims() < 1 || y.Dims() > 2 || y.Shape()[0] != n || y.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("gp model: y must be a float64 N×R matrix or length-N vector with N = len(x) = %d", n)
	}
	defer catch(&err)
	g := G.NewGraph()
	m := &GPModel{Graph: g}
	var positive [3]*G.Node // ℓ, σ², σₙ²
	for i, name := range []string{"logLengthScale", "logSignalVar", "logNoiseVar"} {
		m.Params[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue(init.Log()[i]))
		positive[i] = G.Must(G.Exp(m.Params[i]))
	}
	xn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("x"), G.WithValue(dense(append([]float64(nil), x...), n)))
	yn := G.NodeFromAny(g, y.Clone().(*tensor.Dense), G.WithName("Y"))

	build, err := kernelBuilder(init.Family)
	if err != nil {
		return nil, err
	}
	m.K = G.Must(build(xn, positive[0], positive[1], positive[2], opts...))
	m.NLL = G.Must(G.Neg(G.Must(mgla.GaussianLogDensity(m.K, yn, opts...))))
	if m.Grads, err = G.Grad(m.NLL, m.Params[:]...); err != nil {
		return nil, fmt.Errorf("gp model: gradient: %w", err)
	}
	// A TapeMachine may reuse the memory of a value once nothing reads it any
	// more; Read copies the values we want out as they are computed.
	G.Read(m.NLL, &m.nllValue)
	for i, gn := range m.Grads {
		G.Read(gn, &m.grads[i])
	}
	m.vm = G.NewTapeMachine(g)
	return m, nil
}

// Eval runs the graph at θ = (log ℓ, log σ², log σₙ²) and returns the loss
// and its gradient. A matrix K that is not positive definite gives an error
// matching mgla.ErrNotPositiveDefinite.
func (m *GPModel) Eval(theta [3]float64) (nll float64, grad [3]float64, err error) {
	if err := RunAt(m.vm, m.Params, theta); err != nil {
		return 0, grad, err
	}
	nll, err = scalar("nll", m.nllValue)
	for i, v := range m.grads {
		if err == nil {
			grad[i], err = scalar(m.Params[i].Name()+" gradient", v)
		}
	}
	return nll, grad, err
}

// RunAt binds the parameter nodes params to θ and runs the machine vm once
// (a graph like GPModel's); errors of the mgla ops come through
// mgla.Cause.
func RunAt(vm G.VM, params [3]*G.Node, theta [3]float64) error {
	for i, p := range params {
		if err := G.Let(p, G.NewF64(theta[i])); err != nil {
			return err
		}
	}
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		return mgla.Cause(err)
	}
	return nil
}

// Close releases the machine.
func (m *GPModel) Close() { m.vm.Close() }

func scalar(name string, val G.Value) (float64, error) {
	if val == nil {
		return 0, fmt.Errorf("%s: no value", name)
	}
	switch v := val.Data().(type) {
	case float64:
		return v, nil
	case []float64:
		if len(v) == 1 {
			return v[0], nil
		}
	}
	return 0, fmt.Errorf("%s: want a float64 scalar, got %v", name, val)
}

// Adam is the Adam optimiser (Kingma & Ba, 2015) for a few float64
// parameters.
type Adam struct {
	Beta1, Beta2, Eps float64
	m, v              []float64
	t                 int
}

// NewAdam returns Adam with the usual β₁ = 0.9, β₂ = 0.999, ε = 10⁻⁸.
func NewAdam() *Adam { return &Adam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// Step moves x against the gradient g with step size lr.
func (a *Adam) Step(x, g []float64, lr float64) {
	if a.m == nil {
		a.m, a.v = make([]float64, len(x)), make([]float64, len(x))
	}
	a.t++
	c1 := 1 - math.Pow(a.Beta1, float64(a.t))
	c2 := 1 - math.Pow(a.Beta2, float64(a.t))
	for i := range x {
		a.m[i] = a.Beta1*a.m[i] + (1-a.Beta1)*g[i]
		a.v[i] = a.Beta2*a.v[i] + (1-a.Beta2)*g[i]*g[i]
		x[i] -= lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + a.Eps)
	}
}

// FitConfig sets up GPModel.Fit.
type FitConfig struct {
	Iters int     // optimiser steps
	LR    float64 // initial Adam step size in log-parameter units
	// FinalLR is the step size the cosine schedule ends at (default LR/100):
	// a large step finds the basin fast, a small one settles in it.
	FinalLR float64
	// Progress, when set, is called before step 0, every Every steps and
	// after the last step.
	Progress func(iter int, nll float64, p GPParams)
	Every    int
}

// Fit minimises the NLL with Adam over the log-parameters from init and
// returns the parameters and loss after the last step.
func (m *GPModel) Fit(init GPParams, cfg FitConfig) (GPParams, float64, error) {
	return FitLoop(init, cfg, m.Eval)
}

// FitLoop is the Adam loop of GPModel.Fit around any evaluation of the loss
// and its gradient at θ = (log ℓ, log σ², log σₙ²) (examples/distributed
// evaluates it across processes).
func FitLoop(init GPParams, cfg FitConfig, eval func(theta [3]float64) (float64, [3]float64, error)) (GPParams, float64, error) {
	if cfg.Iters < 0 || !(cfg.LR > 0) {
		return init, 0, errors.New("gp fit: need Iters ≥ 0 and LR > 0")
	}
	final := cfg.FinalLR
	if final <= 0 {
		final = cfg.LR / 100
	}
	theta := init.Log()
	opt := NewAdam()
	for it := 0; ; it++ {
		nll, grad, err := eval(theta)
		if err != nil {
			return init.withLog(theta), nll, fmt.Errorf("gp fit: step %d at %v: %w", it, init.withLog(theta), err)
		}
		if cfg.Progress != nil && (it == 0 || it == cfg.Iters || (cfg.Every > 0 && it%cfg.Every == 0)) {
			cfg.Progress(it, nll, init.withLog(theta))
		}
		if it == cfg.Iters {
			return init.withLog(theta), nll, nil
		}
		frac := float64(it) / float64(max(cfg.Iters-1, 1))
		lr := final + (cfg.LR-final)*(1+math.Cos(math.Pi*frac))/2
		opt.Step(theta[:], grad[:], lr)
	}
}

// PredictGP is the predictive mean K(x*, x)·K⁻¹·Y of a GP with parameters
// p (and p's family) at the inputs xTest, from a second small graph: K
// from mgla.SquaredExponential (or p's Matérn builder) on the mesh,
// K(x*, x) from mgla.CrossKernel, mgla.Potrs and a matrix product.
func PredictGP(x []float64, y *tensor.Dense, xTest []float64, p GPParams, opts ...mgla.Option) (mean *tensor.Dense, err error) {
	n, m := len(x), len(xTest)
	if y == nil || y.Shape()[0] != n {
		return nil, fmt.Errorf("gp predict: y must have len(x) = %d rows", n)
	}
	if m == 0 {
		return nil, errors.New("gp predict: no test inputs")
	}
	defer catch(&err)
	g := G.NewGraph()
	var positive [3]*G.Node
	for i, name := range []string{"lengthScale", "signalVar", "noiseVar"} {
		positive[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue([]float64{p.LengthScale, p.SignalVar, p.NoiseVar}[i]))
	}
	xn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("x"), G.WithValue(dense(append([]float64(nil), x...), n)))
	xs := G.NewVector(g, tensor.Float64, G.WithShape(m), G.WithName("xTest"), G.WithValue(dense(append([]float64(nil), xTest...), m)))
	yn := G.NodeFromAny(g, y.Clone().(*tensor.Dense), G.WithName("Y"))
	build, err := kernelBuilder(p.Family)
	if err != nil {
		return nil, err
	}
	k := G.Must(build(xn, positive[0], positive[1], positive[2], opts...))
	alpha := G.Must(mgla.Potrs(k, yn, opts...))
	mu := G.Must(G.Mul(G.Must(mgla.CrossKernel(k, xs)), alpha)) // K*·K⁻¹Y
	var out G.Value
	G.Read(mu, &out)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, mgla.Cause(err)
	}
	return out.(*tensor.Dense), nil
}

// RMSE is the root-mean-square difference of two tensors of one shape.
func RMSE(a, b *tensor.Dense) float64 {
	av, bv := a.Data().([]float64), b.Data().([]float64)
	var s float64
	for i := range av {
		s += (av[i] - bv[i]) * (av[i] - bv[i])
	}
	return math.Sqrt(s / float64(len(av)))
}
