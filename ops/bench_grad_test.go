package ops_test

import (
	"flag"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/internal/benchpair"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkPotrsBackward times, on the same graph, a forward-only run
// (cost = Σ w∘Potrs(A, y), N = 1000, float64, one-device CPU mesh) and a
// forward+backward run (gorgonia.Grad wrt A and y, TapeMachine). The backward
// pass reuses the forward factor (B̄ = CholSolve(L, X̄), Ā = −½(B̄Xᵀ + XB̄ᵀ)),
// so it costs O(N²) next to the forward's O(N³) factorisation.
//
// Metrics (medians over the iterations): bwd/fwd is the backward pass alone over the forward pass,
// ((fwd+bwd) − fwd)/fwd; fwd+bwd/fwd is the whole gradient run over the
// forward run (a refactorisation in the backward pass would make it ≈ 2).
func BenchmarkPotrsBackward(b *testing.B) {
	mesh, g, an, yn, w := backwardInputs(b, false)
	n := *backwardN
	wn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(w))))
	x, err := mgla.Potrs(an, yn, mgla.WithMesh(mesh))
	if err != nil {
		b.Fatal(err)
	}
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(x, wn))))
	if _, err := G.Grad(cost, an, yn); err != nil {
		b.Fatal(err)
	}
	benchBackward(b, g, cost)
}

// BenchmarkCholeskyBackward: the same for cost = Σ w∘L, L = Cholesky(A)
// (N = 1000, float64): the backward pass is two triangular solves with N
// right-hand sides and a triangular product, about the forward's flops
// three times over.
func BenchmarkCholeskyBackward(b *testing.B) {
	mesh, g, an, _, w := backwardInputs(b, true)
	n := *backwardN
	wn := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(w))))
	l, err := mgla.Cholesky(an, mgla.WithMesh(mesh))
	if err != nil {
		b.Fatal(err)
	}
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(l, wn))))
	if _, err := G.Grad(cost, an); err != nil {
		b.Fatal(err)
	}
	benchBackward(b, g, cost)
}

// benchBackward times the forward nodes of g (those cost depends on) and
// the whole graph with its gradients, in turns, and reports their medians
// and ratios.
func benchBackward(b *testing.B, g *G.ExprGraph, cost *G.Node) {
	fwd := G.NewTapeMachine(g.SubgraphRoots(cost)) // the forward nodes of the same graph
	defer fwd.Close()
	full := G.NewTapeMachine(g)
	defer full.Close()
	run := func(m G.VM) time.Duration {
		m.Reset()
		t0 := time.Now()
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	run(fwd) // warm up: allocate the ops' reused buffers
	run(full)
	// Medians over the iterations: the machine may be shared, and a burst
	// of load during one run should not decide the ratio.
	tf := make([]time.Duration, 0, b.N)
	tfb := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		tf = append(tf, run(fwd))
		tfb = append(tfb, run(full))
	}
	mf, mfb := benchpair.Median(tf), benchpair.Median(tfb)
	b.ReportMetric(mf.Seconds()*1e3, "fwd-ms")
	b.ReportMetric(mfb.Seconds()*1e3, "fwd+bwd-ms")
	b.ReportMetric(float64(mfb-mf)/float64(mf), "bwd/fwd")
	b.ReportMetric(float64(mfb)/float64(mf), "fwd+bwd/fwd")
}

// diagonallyDominant is a row-major n×n symmetric matrix with entries in
// [-1, 1) off the diagonal and n on it: positive definite.
func diagonallyDominant(rng *rand.Rand, n int) []float64 {
	a := make([]float64, n*n)
	for i := range n {
		for j := range i {
			v := rng.Float64()*2 - 1
			a[i*n+j], a[j*n+i] = v, v
		}
		a[i*n+i] = float64(n)
	}
	return a
}

// BenchmarkBackwardAll is benchBackward for a graph with every op's
// gradient on one factor (float64, N = 1000, one CPU device): cost =
// Σ CholSolve(L, y)² + LogDet(A) + Σ Potri(A) + Σ W∘L with L = Cholesky(A).
// Their backward computations take n×n temporaries (bwd/fwd shows what
// they cost on top of the forward ops).
func BenchmarkBackwardAll(b *testing.B) {
	mesh, g, an, yn, w := backwardInputs(b, true)
	n := *backwardN
	wn := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("W"),
		G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(w))))
	must := func(x *G.Node, err error) *G.Node {
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	l := must(mgla.Cholesky(an, mgla.WithMesh(mesh)))
	x := must(mgla.CholSolve(l, yn, mgla.WithMesh(mesh)))
	ld := must(mgla.LogDet(an, mgla.WithMesh(mesh)))
	inv := must(mgla.Potri(an, mgla.WithMesh(mesh)))
	cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.Square(x)))), ld))
	cost = G.Must(G.Add(cost, G.Must(G.Sum(inv))))
	cost = G.Must(G.Add(cost, G.Must(G.Sum(G.Must(G.HadamardProd(l, wn))))))
	if _, err := G.Grad(cost, an, yn); err != nil {
		b.Fatal(err)
	}
	benchBackward(b, g, cost)
}

// BenchmarkGPBackward is benchBackward for a Gaussian process's negative
// log marginal likelihood up to constants, cost = ½·yᵀA⁻¹y + ½·log det A
// (Potrs and LogDet on the same A; float64, N = 1000, one CPU device), with
// the gradient wrt A: what training a GP's kernel takes per step, A built
// on the host.
func BenchmarkGPBackward(b *testing.B) {
	mesh, g, an, yn, _ := backwardInputs(b, false)
	x, err := mgla.Potrs(an, yn, mgla.WithMesh(mesh))
	if err != nil {
		b.Fatal(err)
	}
	ld, err := mgla.LogDet(an, mgla.WithMesh(mesh))
	if err != nil {
		b.Fatal(err)
	}
	fit := G.Must(G.Sum(G.Must(G.HadamardProd(yn, x))))
	cost := G.Must(G.Mul(G.NewConstant(0.5), G.Must(G.Add(fit, ld))))
	if _, err := G.Grad(cost, an); err != nil {
		b.Fatal(err)
	}
	benchBackward(b, g, cost)
}

// BenchmarkGPDensityBackward is BenchmarkGPBackward's cost written with
// GaussianLogDensity: −GaussianLogDensity(A, y) is ½·yᵀA⁻¹y + ½·log det A
// plus a constant, and A's gradient is one N×N computation where Potrs and
// LogDet make two that Gorgonia adds on the host.
func BenchmarkGPDensityBackward(b *testing.B) {
	mesh, g, an, yn, _ := backwardInputs(b, false)
	ld, err := mgla.GaussianLogDensity(an, yn, mgla.WithMesh(mesh))
	if err != nil {
		b.Fatal(err)
	}
	cost := G.Must(G.Neg(ld))
	if _, err := G.Grad(cost, an); err != nil {
		b.Fatal(err)
	}
	benchBackward(b, g, cost)
}

// BenchmarkGPKernelBackward is a Gaussian process's training step from
// its points: K = SquaredExponential(x; ℓ, σ², σₙ²) made on the mesh from N
// points of dimension 3 (uniform in [0, 10)³), cost = −GaussianLogDensity(K,
// y), and the gradient wrt θ = (log ℓ, log σ², log σₙ²) at ℓ = 1, σ² = 1,
// σₙ² = 0.1. Only x, y and θ are host values; K and its gradient stay on the
// mesh (float64, N = -ops.backward-n).
func BenchmarkGPKernelBackward(b *testing.B) { gpKernelBackward(b, false) }

// BenchmarkGPKernelBackwardARD is BenchmarkGPKernelBackward with a length
// scale per dimension: θ = (log ℓ₁, log ℓ₂, log ℓ₃, log σ², log σₙ²), the ℓₖ
// at 1.
func BenchmarkGPKernelBackwardARD(b *testing.B) { gpKernelBackward(b, true) }

func gpKernelBackward(b *testing.B, ard bool) {
	mesh, g, _, yn, _ := backwardInputs(b, false)
	n := *backwardN
	rng := rand.New(rand.NewPCG(3, 4))
	pts := make([]float64, 3*n)
	for i := range pts {
		pts[i] = 10 * rng.Float64()
	}
	xn := G.NewMatrix(g, tensor.Float64, G.WithShape(n, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(n, 3), tensor.WithBacking(pts))))
	var theta, positive [3]*G.Node
	for i, v := range []float64{0, 0, math.Log(0.1)} {
		// Named: Gorgonia merges unnamed input nodes of one type and shape.
		theta[i] = G.NewScalar(g, tensor.Float64, G.WithName([]string{"logEll", "logSignal", "logNoise"}[i]), G.WithValue(v))
		if i == 0 && ard {
			theta[i] = G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("logEll"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 0, 0}))))
		}
		positive[i] = G.Must(G.Exp(theta[i]))
	}
	k, err := mgla.SquaredExponential(xn, positive[0], positive[1], positive[2], mgla.WithMesh(mesh))
	if err != nil {
		b.Fatal(err)
	}
	ld, err := mgla.GaussianLogDensity(k, yn, mgla.WithMesh(mesh), backwardDispatch(b))
	if err != nil {
		b.Fatal(err)
	}
	cost := G.Must(G.Neg(ld))
	if _, err := G.Grad(cost, theta[:]...); err != nil {
		b.Fatal(err)
	}
	benchBackward(b, g, cost)
}

// The backward benchmarks run at N = 1000 on a one-device CPU mesh; on a GPU
// machine (mglacuda build) -ops.backward-mesh gpu runs them on every visible
// GPU, at -ops.backward-n.
var (
	backwardMesh = flag.String("ops.backward-mesh", "cpu", "mesh of the backward benchmarks: cpu (one device) or gpu (every visible GPU)")
	backwardN    = flag.Int("ops.backward-n", 1000, "matrix order of the backward benchmarks")
	backwardDisp = flag.String("ops.backward-dispatch", "auto", "BenchmarkGPKernelBackward's dispatch on a GPU mesh of several devices: auto, mesh or single")
)

// backwardDispatch is -ops.backward-dispatch as an option.
func backwardDispatch(b *testing.B) mgla.Option {
	d, ok := map[string]mgla.Dispatch{"auto": mgla.DispatchAuto, "mesh": mgla.DispatchMesh, "single": mgla.DispatchSingle}[*backwardDisp]
	if !ok {
		b.Fatalf("-ops.backward-dispatch %q: want auto, mesh or single", *backwardDisp)
	}
	return mgla.WithDispatch(d)
}

// backwardInputs starts a backward benchmark: its mesh (-ops.backward-mesh),
// a new graph with A (n×n, diagonally dominant; n = -ops.backward-n) and y
// (length n) as nodes, and weights normal entries for the cost, n or n·n of
// them (square).
func backwardInputs(b *testing.B, square bool) (mesh *sharding.Mesh, g *G.ExprGraph, an, yn *G.Node, w []float64) {
	var err error
	switch *backwardMesh {
	case "cpu":
		mesh, err = sharding.CPUMesh(1)
	case "gpu":
		mesh, err = sharding.GPUMesh()
	default:
		b.Fatalf("-ops.backward-mesh %q: want cpu or gpu", *backwardMesh)
	}
	if err != nil {
		b.Fatal(err)
	}
	n, weights := *backwardN, *backwardN
	if square {
		weights *= n
	}
	b.Logf("mesh %v, N = %d", mesh, n)
	rng := rand.New(rand.NewPCG(1, 2))
	a := diagonallyDominant(rng, n)
	y := make([]float64, n)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	w = make([]float64, weights)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	g = G.NewGraph()
	an = G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
		G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))))
	yn = G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(y))))
	return mesh, g, an, yn, w
}
