package mgla_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gpReference is the Gaussian process's cost ½·tr(YᵀK⁻¹Y) + (R/2)·log det K
// + (N·R/2)·log 2π for K = σ²·v(r) + σₙ²·I of family f in r = ‖xᵢ − xⱼ‖/ℓ
// (the closed forms), θ = (log ℓ, log σ², log σₙ²), in float64 with gonum.
func gpReference(t *testing.T, f sharding.KernelFamily, x grMat, y grMat, theta [3]float64, logEll []float64) float64 {
	n := x.rows
	k := kernelReference(f, x, theta, logEll)
	var chol mat.Cholesky
	require.True(t, chol.Factorize(k), "reference K not positive definite")
	r := max(1, y.cols)
	ym := mat.NewDense(n, r, append([]float64(nil), y.data...))
	var alpha mat.Dense
	require.NoError(t, chol.SolveTo(&alpha, ym))
	quad := 0.0
	for i := range n {
		for j := range r {
			quad += ym.At(i, j) * alpha.At(i, j)
		}
	}
	return 0.5*quad + float64(r)/2*chol.LogDet() + float64(n*r)/2*math.Log(2*math.Pi)
}

// crossReference is the kernel of family f between the rows of a and b
// in r = ‖aᵢ − bⱼ‖/ℓ (the closed forms), θ = (log ℓ, log σ², log σₙ²),
// without the noise; with logEll, r² = Σₖ (aᵢₖ − bⱼₖ)²/ℓₖ², ℓₖ =
// exp(logEll[k]) (ARD), and θ's ℓ unused.
func crossReference(f sharding.KernelFamily, a, b grMat, theta [3]float64, logEll []float64) *mat.Dense {
	d := max(1, a.cols)
	sig := math.Exp(theta[1])
	ell := make([]float64, d)
	for m := range ell {
		ell[m] = math.Exp(theta[0])
		if logEll != nil {
			ell[m] = math.Exp(logEll[m])
		}
	}
	c := mat.NewDense(a.rows, b.rows, nil)
	for i := range a.rows {
		for j := range b.rows {
			r2 := 0.0
			for m := range d {
				diff := (a.data[i*d+m] - b.data[j*d+m]) / ell[m]
				r2 += diff * diff
			}
			r := math.Sqrt(r2)
			var v float64
			switch f {
			case sharding.SquaredExp:
				v = sig * math.Exp(-r*r/2)
			case sharding.Matern32:
				v = sig * (1 + math.Sqrt(3)*r) * math.Exp(-math.Sqrt(3)*r)
			case sharding.Matern52:
				v = sig * (1 + math.Sqrt(5)*r + 5*r*r/3) * math.Exp(-math.Sqrt(5)*r)
			}
			c.Set(i, j, v)
		}
	}
	return c
}

// kernelReference is the kernel matrix of family f of the rows of x, its
// noise σₙ² on the diagonal.
func kernelReference(f sharding.KernelFamily, x grMat, theta [3]float64, logEll []float64) *mat.SymDense {
	c := crossReference(f, x, x, theta, logEll)
	k := mat.NewSymDense(x.rows, nil)
	for i := range x.rows {
		for j := range i {
			k.SetSym(i, j, c.At(i, j))
		}
		k.SetSym(i, i, c.At(i, i)+math.Exp(theta[2]))
	}
	return k
}

// gpKernelGraph is the same cost with K from mgla.SquaredExponential, as
// −GaussianLogDensity or, with potrsLogDet, as ½·Σ y∘Potrs(K, y) + ½·R·LogDet(K)
// + const (two consumers of K, whose gradients Gorgonia sums on the host).
func gpKernelGraph(t *testing.T, f sharding.KernelFamily, dt tensor.Dtype, x, y grMat, theta [3]float64, noise, potrsLogDet bool, opts []mgla.Option) (*G.ExprGraph, *G.Node, [3]*G.Node, *G.Node) {
	g := G.NewGraph()
	xn := x.node(g, dt, "x")
	yn := y.node(g, dt, "y")
	var th [3]*G.Node
	for i, name := range []string{"logLen", "logSignal", "logNoise"} {
		th[i] = G.NewScalar(g, dt, G.WithName(name), G.WithValue(grScalar(dt, theta[i])))
	}
	ell, sig := G.Must(G.Exp(th[0])), G.Must(G.Exp(th[1]))
	var nv *G.Node
	if noise {
		nv = G.Must(G.Exp(th[2]))
	}
	k, err := kernelBuilders[f](xn, ell, sig, nv, opts...)
	require.NoError(t, err)
	require.True(t, ops.IsSharded(k))
	if !potrsLogDet {
		ll := must(mgla.GaussianLogDensity(k, yn, opts...))
		return g, xn, th, G.Must(G.Neg(ll))
	}
	sol := must(mgla.Potrs(k, yn, opts...))
	ld := must(mgla.LogDet(k, opts...))
	r, n := float64(max(1, y.cols)), float64(y.rows)
	half := G.NewConstant(grScalar(dt, 0.5).(any))
	quad := G.Must(G.Mul(half, G.Must(G.Sum(G.Must(G.HadamardProd(yn, sol))))))
	pen := G.Must(G.Mul(G.NewConstant(grScalar(dt, r/2)), ld))
	c := G.Must(G.Add(quad, pen))
	return g, xn, th, G.Must(G.Add(c, G.NewConstant(grScalar(dt, n*r/2*math.Log(2*math.Pi)))))
}

// kernelBuilders are the kernel matrices' builders by family.
var kernelBuilders = map[sharding.KernelFamily]func(x, ell, sig, noise *G.Node, opts ...mgla.Option) (*G.Node, error){
	sharding.SquaredExp: mgla.SquaredExponential, sharding.Matern32: mgla.Matern32, sharding.Matern52: mgla.Matern52,
}

// TestKernelMatrixGP: a Gaussian process's cost with K made on the
// mesh (every family), its value and its gradients with respect to the
// log-parameters and to the points against float64 finite differences of
// the reference, with both machines, every K consumer form, 1 to 3
// devices, float32 and float64.
func TestKernelMatrixGP(t *testing.T) {
	rng := grRNG(t, 40)
	for _, c := range []struct {
		family                 sharding.KernelFamily
		devices, tile, n, d, r int
		noise, potrsLogDet     bool
	}{
		{sharding.SquaredExp, 1, 4, 9, 1, 0, true, false},
		{sharding.SquaredExp, 3, 4, 13, 2, 2, true, false},
		{sharding.SquaredExp, 3, 3, 10, 3, 0, false, false},
		{sharding.SquaredExp, 2, 5, 11, 2, 0, true, true},
		{sharding.Matern32, 3, 4, 13, 2, 2, true, false},
		{sharding.Matern32, 1, 3, 7, 1, 0, true, false},
		{sharding.Matern52, 2, 4, 10, 3, 0, true, false},
		{sharding.Matern52, 3, 3, 9, 2, 0, false, true},
	} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, lisp := range []bool{false, true} {
				name := fmt.Sprintf("%v/dev%d/n%d/d%d/r%d/noise=%t/potrs+logdet=%t/%v/lisp=%t", c.family, c.devices, c.n, c.d, c.r, c.noise, c.potrsLogDet, dt, lisp)
				t.Run(name, func(t *testing.T) {
					mesh, err := testMesh(t, c.devices)
					require.NoError(t, err)
					opts := []mgla.Option{onMesh(mesh), mgla.WithTile(c.tile)}
					x := grRandom(rng, c.n, c.d)
					for !c.noise && minDistance(x, c.d) < 1 {
						// No noise: points far apart for their length
						// scale (ℓ ≤ 1.2) keep K well conditioned, and
						// the finite differences accurate; two points
						// closer than 1 made 1 run in 40 fail.
						x = grRandom(rng, c.n, c.d)
						for i := range x.data {
							x.data[i] *= 2.5
						}
					}
					if c.d == 1 {
						x.cols = 0 // a vector of points
					}
					y := grRandom(rng, c.n, c.r)
					theta := [3]float64{math.Log(0.7 + 0.5*rng.Float64()), math.Log(0.8 + 0.4*rng.Float64()), math.Log(0.05 + 0.1*rng.Float64())}
					if !c.noise {
						theta[2] = math.Inf(-1)
					}
					g, xn, th, cost := gpKernelGraph(t, c.family, dt, x, y, theta, c.noise, c.potrsLogDet, opts)
					wrt := []*G.Node{xn, th[0], th[1]}
					if c.noise {
						wrt = append(wrt, th[2])
					}
					require.NoError(t, grRunBackward(t, g, cost, lisp, wrt...), "seed %d", grSeed)
					if !lisp && !c.potrsLogDet {
						// One consumer: K's gradient stays on the mesh.
						for _, n := range g.AllNodes() {
							square := n.Dims() == 2 && n.Shape()[0] == c.n && n.Shape()[1] == c.n
							require.False(t, strings.Contains(n.Name(), "→host") || square && strings.HasPrefix(n.Name(), "Gather"), "%v gathers K's gradient", n.Name())
						}
					}

					check := fdChecker(t, dt, cost, gpReference(t, c.family, x, y, theta, nil))
					const h = 1e-5
					fd := func(xs grMat, th [3]float64) float64 { return gpReference(t, c.family, xs, y, th, nil) }
					for i := range 3 {
						if i == 2 && !c.noise {
							continue
						}
						p, m := theta, theta
						p[i] += h
						m[i] -= h
						check(fmt.Sprintf("θ%d", i), th[i], 0, (fd(x, p)-fd(x, m))/(2*h))
					}
					for i := range x.data {
						p, m := x.plus(h, grUnitAt(x, i)), x.plus(-h, grUnitAt(x, i))
						check(fmt.Sprintf("x[%d]", i), xn, i, (fd(p, theta)-fd(m, theta))/(2*h))
					}
				})
			}
		}
	}
}

// grUnitAt is the matrix of m's shape with a one at flat index i.
func grUnitAt(m grMat, i int) grMat {
	u := grMat{m.rows, m.cols, make([]float64, len(m.data))}
	u.data[i] = 1
	return u
}

// TestKernelMatrixBadInput: build-time and run-time errors.
func TestKernelMatrixBadInput(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	g, bad := G.NewGraph(), G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{0, 1, 2, 3, 4, 5, 6, 7}))))
	one := G.NewScalar(g, tensor.Float64, G.WithName("one"), G.WithValue(1.0))
	xb := G.NewMatrix(bad, tensor.Float64, G.WithShape(4, 2), G.WithName("x"))
	oneb := G.NewScalar(bad, tensor.Float64, G.WithName("one"))
	x32 := G.NewMatrix(bad, tensor.Float32, G.WithShape(4, 2), G.WithName("x32"))
	empty := G.NewMatrix(bad, tensor.Float64, G.WithShape(0, 2), G.WithName("empty"))
	xc := G.NewMatrix(bad, tensor.Complex128, G.WithShape(4, 2), G.WithName("xc"))
	for _, c := range []struct {
		name               string
		x, ell, sig, noise *G.Node
		opts               []mgla.Option
	}{
		{"nil points", nil, oneb, oneb, nil, nil},
		{"nil length scale", xb, nil, oneb, nil, nil},
		{"two graphs", xb, one, oneb, nil, nil},
		{"length scales of another dimension", xb, G.NewVector(bad, tensor.Float64, G.WithShape(3)), oneb, nil, nil},
		{"matrix length scale", xb, G.NewMatrix(bad, tensor.Float64, G.WithShape(2, 1)), oneb, nil, nil},
		{"dtype mismatch", x32, oneb, oneb, nil, nil},
		{"complex points", xc, G.NewScalar(bad, tensor.Complex128), G.NewScalar(bad, tensor.Complex128), nil, nil},
		{"empty points", empty, G.NewScalar(bad, tensor.Float64), G.NewScalar(bad, tensor.Float64), nil, nil},
		{"tile 0", xb, oneb, oneb, oneb, []mgla.Option{mgla.WithTile(0)}},
		{"grid and mesh", xb, oneb, oneb, oneb, []mgla.Option{mgla.WithGrid(&recorder{})}},
		{"one node for ℓ and σ²", xb, oneb, oneb, nil, nil},
		{"one node for σ² and σₙ²", xb, G.NewScalar(bad, tensor.Float64, G.WithName("ell")), oneb, oneb, nil},
		// Unnamed scalars of one type are one node in Gorgonia, whatever
		// their values: a user's three parameters become one.
		{"unnamed parameters", xb, G.NewScalar(bad, tensor.Float64, G.WithValue(0.2)), G.NewScalar(bad, tensor.Float64, G.WithValue(0.3)), nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for f, build := range kernelBuilders {
				_, err := build(c.x, c.ell, c.sig, c.noise, append([]mgla.Option{onMesh(mesh)}, c.opts...)...)
				require.ErrorIs(t, err, mgla.ErrBadInput, "%v", f)
				require.NotContains(t, err.Error(), "%!", "%v: a node's name garbled", f)
				if c.name == "unnamed parameters" {
					require.ErrorContains(t, err, "name them", "%v", f)
				}
			}
		})
	}

	// Run time: a zero length scale and a NaN point, then a good run.
	ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"), G.WithValue(0.0))
	noise := G.NewScalar(g, tensor.Float64, G.WithName("noise"), G.WithValue(1.0))
	k, err := mgla.SquaredExponential(x, ell, one, noise, onMesh(mesh), mgla.WithTile(3))
	require.NoError(t, err)
	out, err := ops.Gather(k)
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	err = m.RunAll()
	require.ErrorIs(t, mgla.Cause(err), mgla.ErrBadInput)
	require.ErrorContains(t, err, "length scale")
	require.NoError(t, G.Let(ell, 1.0))
	require.NoError(t, G.Let(x, tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{0, 1, 2, math.NaN(), 4, 5, 6, 7}))))
	m.Reset()
	require.ErrorIs(t, mgla.Cause(m.RunAll()), mgla.ErrNonFinite)
	require.NoError(t, G.Let(x, tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{0, 0, 1, 0, 0, 1, 1, 1}))))
	m.Reset()
	require.NoError(t, m.RunAll())
	got := grValue(t, out.Value())
	require.InDelta(t, 2.0, got[0], 1e-15)            // σ² + σₙ²
	require.InDelta(t, math.Exp(-0.5), got[1], 1e-15) // ‖x₀ − x₁‖ = 1
	require.InDelta(t, math.Exp(-1), got[3], 1e-15)   // ‖x₀ − x₃‖² = 2
}

// TestBackpropagateMatrixOutputs: gorgonia.Backpropagate given a matrix
// output (a solution) and a scalar one on a sharded K that both
// differentiate: their two gradients of K are gathered for Gorgonia's Add,
// and K's gradient is that of ⟨1, A⁻¹y⟩ + log det A.
func TestBackpropagateMatrixOutputs(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	a := []float64{4, 2, 0, 2, 5, 1, 0, 1, 3}
	y := []float64{1, 2, 3}
	g := G.NewGraph()
	kt, err := sharding.Put(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), a...))), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	k := ops.Input(g, kt, "K")
	yn := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("y"), G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking(y))))
	opts := []mgla.Option{onMesh(mesh), mgla.WithTile(2)}
	sol := must(mgla.Potrs(k, yn, opts...))
	ld := must(mgla.LogDet(k, opts...))
	ones := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("ones"), G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 1, 1}))))
	grads, err := G.Backpropagate(G.Nodes{sol, ld}, G.Nodes{ones, G.NewConstant(1.0)}, G.Nodes{k})
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	gv := grValue(t, grads[0].Value())
	// Ā = −½(A⁻¹1·xᵀ + x·(A⁻¹1)ᵀ) + A⁻¹ for the symmetric A, x = A⁻¹y.
	var inv mat.Dense
	require.NoError(t, inv.Inverse(mat.NewDense(3, 3, a)))
	x, u := mat.NewVecDense(3, nil), mat.NewVecDense(3, nil)
	x.MulVec(&inv, mat.NewVecDense(3, y))
	u.MulVec(&inv, mat.NewVecDense(3, []float64{1, 1, 1}))
	for i := range 3 {
		for j := range 3 {
			want := -0.5*(u.AtVec(i)*x.AtVec(j)+x.AtVec(i)*u.AtVec(j)) + inv.At(i, j)
			require.InDelta(t, want, gv[i*3+j], 1e-12, "Ā[%d,%d]", i, j)
		}
	}
}

// predictionReference is Σ w∘μ + Σ u∘v for a Gaussian process's posterior
// mean μ = C·K⁻¹·y and variance v = σ² − diag(C·K⁻¹·Cᵀ) at the points xs,
// C their kernel with x, in float64 with gonum.
func predictionReference(t *testing.T, f sharding.KernelFamily, x, xs, y, w, u grMat, theta [3]float64, logEll []float64) float64 {
	var chol mat.Cholesky
	require.True(t, chol.Factorize(kernelReference(f, x, theta, logEll)), "reference K not positive definite")
	c := crossReference(f, xs, x, theta, logEll)
	var alpha, kinvCt mat.Dense
	require.NoError(t, chol.SolveTo(&alpha, mat.NewVecDense(x.rows, append([]float64(nil), y.data...))))
	require.NoError(t, chol.SolveTo(&kinvCt, c.T()))
	var mu mat.Dense
	mu.Mul(c, &alpha)
	cost := 0.0
	for i := range xs.rows {
		q := 0.0
		for j := range x.rows {
			q += c.At(i, j) * kinvCt.At(j, i)
		}
		cost += w.data[i]*mu.At(i, 0) + u.data[i]*(math.Exp(theta[1])-q)
	}
	return cost
}

// TestCrossKernelGP: a Gaussian process's posterior mean and variance
// from CrossKernel, Potrs and Gorgonia's ops, a weighted sum of them and its
// gradients with respect to the log-parameters, the training points and
// the prediction points against float64 finite differences of the
// reference: every family, 1 and 3 devices, both machines, float32 and
// float64.
func TestCrossKernelGP(t *testing.T) {
	rng := grRNG(t, 41)
	for _, c := range []struct {
		family                 sharding.KernelFamily
		devices, tile, n, m, d int
	}{
		{sharding.SquaredExp, 1, 4, 9, 4, 1},
		{sharding.SquaredExp, 3, 4, 13, 5, 2},
		{sharding.Matern32, 3, 3, 10, 3, 3},
		{sharding.Matern52, 2, 5, 11, 6, 1},
	} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, lisp := range []bool{false, true} {
				name := fmt.Sprintf("%v/dev%d/n%d/m%d/d%d/%v/lisp=%t", c.family, c.devices, c.n, c.m, c.d, dt, lisp)
				t.Run(name, func(t *testing.T) {
					mesh, err := testMesh(t, c.devices)
					require.NoError(t, err)
					opts := []mgla.Option{onMesh(mesh), mgla.WithTile(c.tile)}
					x, xs := grRandom(rng, c.n, c.d), grRandom(rng, c.m, c.d)
					if c.d == 1 {
						x.cols, xs.cols = 0, 0 // vectors of points
					}
					y, w, u := grRandom(rng, c.n, 1), grRandom(rng, c.m, 0), grRandom(rng, c.m, 0)
					theta := [3]float64{math.Log(0.7 + 0.5*rng.Float64()), math.Log(0.8 + 0.4*rng.Float64()), math.Log(0.05 + 0.1*rng.Float64())}

					g := G.NewGraph()
					xn, xsn, yn := x.node(g, dt, "x"), xs.node(g, dt, "xs"), y.node(g, dt, "y")
					wn, un := w.node(g, dt, "w"), u.node(g, dt, "u")
					var th [3]*G.Node
					for i, name := range []string{"logLen", "logSignal", "logNoise"} {
						th[i] = G.NewScalar(g, dt, G.WithName(name), G.WithValue(grScalar(dt, theta[i])))
					}
					sig := G.Must(G.Exp(th[1]))
					k := must(kernelBuilders[c.family](xn, G.Must(G.Exp(th[0])), sig, G.Must(G.Exp(th[2])), opts...))
					cross := must(mgla.CrossKernel(k, xsn))
					require.False(t, ops.IsSharded(cross))
					require.Equal(t, []int{c.m, c.n}, []int(cross.Shape()))
					mean := G.Must(G.Mul(cross, must(mgla.Potrs(k, yn, opts...)))) // m×1
					kinvCt := must(mgla.Potrs(k, G.Must(G.Transpose(cross)), opts...))
					q := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.Transpose(cross)), kinvCt)), 0))
					variance := G.Must(G.Sub(G.Must(G.Mul(sig, G.NewConstant(grTensor(dt, []int{c.m}, ones(c.m))))), q))
					cost := G.Must(G.Add(
						G.Must(G.Sum(G.Must(G.HadamardProd(wn, G.Must(G.Reshape(mean, tensor.Shape{c.m})))))),
						G.Must(G.Sum(G.Must(G.HadamardProd(un, variance))))))
					wrt := []*G.Node{xn, xsn, th[0], th[1], th[2]}
					require.NoError(t, grRunBackward(t, g, cost, lisp, wrt...), "seed %d", grSeed)

					ref := func(x, xs grMat, theta [3]float64) float64 {
						return predictionReference(t, c.family, x, xs, y, w, u, theta, nil)
					}
					want := ref(x, xs, theta)
					check := fdChecker(t, dt, cost, want)
					const h = 1e-5
					for i := range 3 {
						p, m := theta, theta
						p[i] += h
						m[i] -= h
						check(fmt.Sprintf("θ%d", i), th[i], 0, (ref(x, xs, p)-ref(x, xs, m))/(2*h))
					}
					for i := range x.data {
						p, m := x.plus(h, grUnitAt(x, i)), x.plus(-h, grUnitAt(x, i))
						check(fmt.Sprintf("x[%d]", i), xn, i, (ref(p, xs, theta)-ref(m, xs, theta))/(2*h))
					}
					for i := range xs.data {
						p, m := xs.plus(h, grUnitAt(xs, i)), xs.plus(-h, grUnitAt(xs, i))
						check(fmt.Sprintf("xs[%d]", i), xsn, i, (ref(x, p, theta)-ref(x, m, theta))/(2*h))
					}
				})
			}
		}
	}
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// TestCrossKernelBadInput: build-time and run-time errors of CrossKernel;
// a refused run changes neither its inputs nor the next good run.
func TestCrossKernelBadInput(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	bad, other := G.NewGraph(), G.NewGraph()
	xb := G.NewMatrix(bad, tensor.Float64, G.WithShape(4, 2), G.WithName("x"))
	kb, err := mgla.SquaredExponential(xb, G.NewScalar(bad, tensor.Float64, G.WithName("ell")), G.NewScalar(bad, tensor.Float64, G.WithName("sig")), nil, onMesh(mesh))
	require.NoError(t, err)
	sharded, err := ops.Shard(G.NewMatrix(bad, tensor.Float64, G.WithShape(3, 2), G.WithName("s")), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		k, xs *G.Node
	}{
		{"nil kernel", nil, G.NewMatrix(bad, tensor.Float64, G.WithShape(3, 2), G.WithName("a"))},
		{"nil points", kb, nil},
		{"not a kernel matrix", xb, G.NewMatrix(bad, tensor.Float64, G.WithShape(3, 2), G.WithName("b"))},
		{"another graph", kb, G.NewMatrix(other, tensor.Float64, G.WithShape(3, 2), G.WithName("c"))},
		{"float32 points", kb, G.NewMatrix(bad, tensor.Float32, G.WithShape(3, 2), G.WithName("d"))},
		{"another dimension", kb, G.NewMatrix(bad, tensor.Float64, G.WithShape(3, 3), G.WithName("e"))},
		{"a vector for dimension 2", kb, G.NewVector(bad, tensor.Float64, G.WithShape(3), G.WithName("f"))},
		{"no points", kb, G.NewMatrix(bad, tensor.Float64, G.WithShape(0, 2), G.WithName("h"))},
		{"sharded points", kb, sharded},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := mgla.CrossKernel(c.k, c.xs)
			require.ErrorIs(t, err, mgla.ErrBadInput)
		})
	}

	g := G.NewGraph()
	xv := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking(append([]float64(nil), xv...)))))
	ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"), G.WithValue(1.0))
	sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"), G.WithValue(2.0))
	k, err := mgla.Matern52(x, ell, sig, nil, onMesh(mesh), mgla.WithTile(3))
	require.NoError(t, err)
	// Run time: a NaN point, then a zero length scale, then a good run.
	xsv := []float64{0.5, 0.5, math.NaN(), 1}
	xs := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("xs"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(xsv))))
	cross, err := mgla.CrossKernel(k, xs)
	require.NoError(t, err)
	cost := G.Must(G.Sum(cross))
	_, err = G.Grad(cost, x, xs, ell, sig)
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.ErrorIs(t, mgla.Cause(m.RunAll()), mgla.ErrNonFinite)
	require.True(t, math.IsNaN(xsv[2]))
	require.Equal(t, xv, x.Value().Data())
	xsv[2] = 1.5
	require.NoError(t, G.Let(ell, 0.0))
	m.Reset()
	err = m.RunAll()
	require.ErrorIs(t, mgla.Cause(err), mgla.ErrBadInput)
	require.ErrorContains(t, err, "length scale")
	require.NoError(t, G.Let(ell, 1.0))
	m.Reset()
	require.NoError(t, m.RunAll())
	require.Equal(t, []float64{0.5, 0.5, 1.5, 1}, xsv)
	require.Equal(t, xv, x.Value().Data())
	got := grValue(t, cross.Value())
	r := math.Sqrt(0.5) // ‖xs₀ − x₀‖
	require.InDelta(t, 2*(1+math.Sqrt(5)*r+5*r*r/3)*math.Exp(-math.Sqrt(5)*r), got[0], 1e-15)
	require.Equal(t, []int{2, 4}, []int(cross.Shape()))
}

// TestKernelMatrixARD: a length scale per dimension (a vector ℓ): a GP's
// cost −log p(y) plus Σ w∘μ of its posterior mean at new points through
// CrossKernel, and its gradients with respect to log ℓ (a vector), the
// other log-parameters and both sets of points, against float64 finite
// differences of the reference; points far from the origin; every family,
// 1 to 3 devices, both machines and dtypes.
func TestKernelMatrixARD(t *testing.T) {
	rng := grRNG(t, 42)
	for _, c := range []struct {
		family                 sharding.KernelFamily
		devices, tile, n, m, d int
		offset                 float64
	}{
		{sharding.SquaredExp, 1, 4, 9, 4, 1, 0},
		{sharding.SquaredExp, 3, 4, 13, 5, 3, 0},
		{sharding.Matern32, 2, 3, 10, 3, 2, 1e4},
		{sharding.Matern52, 3, 4, 11, 6, 4, 0},
	} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			if dt == tensor.Float32 && c.offset != 0 {
				continue // float32 points 1e4 from the origin keep 3 digits of their distances
			}
			for _, lisp := range []bool{false, true} {
				name := fmt.Sprintf("%v/dev%d/n%d/m%d/d%d/offset%g/%v/lisp=%t", c.family, c.devices, c.n, c.m, c.d, c.offset, dt, lisp)
				t.Run(name, func(t *testing.T) {
					mesh, err := testMesh(t, c.devices)
					require.NoError(t, err)
					opts := []mgla.Option{onMesh(mesh), mgla.WithTile(c.tile)}
					x, xs := grRandom(rng, c.n, c.d), grRandom(rng, c.m, c.d)
					for i := range x.data {
						x.data[i] += c.offset
					}
					for i := range xs.data {
						xs.data[i] += c.offset
					}
					if c.d == 1 {
						x.cols, xs.cols = 0, 0 // vectors of points
					}
					y, w := grRandom(rng, c.n, 0), grRandom(rng, c.m, 0)
					logEll := make([]float64, c.d)
					for k := range logEll {
						logEll[k] = math.Log(0.4 + 2*rng.Float64()) // ℓₖ from 0.4 to 2.4
					}
					theta := [3]float64{math.NaN(), math.Log(0.8 + 0.4*rng.Float64()), math.Log(0.05 + 0.1*rng.Float64())}

					g := G.NewGraph()
					xn, xsn, yn, wn := x.node(g, dt, "x"), xs.node(g, dt, "xs"), y.node(g, dt, "y"), w.node(g, dt, "w")
					logEllN := grMat{c.d, 0, logEll}.node(g, dt, "logEll")
					logSig := G.NewScalar(g, dt, G.WithName("logSignal"), G.WithValue(grScalar(dt, theta[1])))
					logNoise := G.NewScalar(g, dt, G.WithName("logNoise"), G.WithValue(grScalar(dt, theta[2])))
					k := must(kernelBuilders[c.family](xn, G.Must(G.Exp(logEllN)), G.Must(G.Exp(logSig)), G.Must(G.Exp(logNoise)), opts...))
					nll := G.Must(G.Neg(must(mgla.GaussianLogDensity(k, yn, opts...))))
					cross := must(mgla.CrossKernel(k, xsn))
					mean := G.Must(G.Mul(cross, must(mgla.Potrs(k, yn, opts...))))
					cost := G.Must(G.Add(nll, G.Must(G.Sum(G.Must(G.HadamardProd(wn, mean))))))
					wrt := []*G.Node{xn, xsn, logEllN, logSig, logNoise}
					require.NoError(t, grRunBackward(t, g, cost, lisp, wrt...), "seed %d", grSeed)

					zero := grMat{c.m, 0, make([]float64, c.m)}
					// The reference sees the points moved back by the
					// offset (exactly: Sterbenz), which the kernels do not
					// see: no digits of the finite differences are lost to it.
					back := func(m grMat) grMat { return m.plus(-c.offset, grMat{m.rows, m.cols, ones(len(m.data))}) }
					ref := func(x, xs grMat, theta [3]float64, logEll []float64) float64 {
						x, xs = back(x), back(xs)
						return gpReference(t, c.family, x, y, theta, logEll) +
							predictionReference(t, c.family, x, xs, y, w, zero, theta, logEll)
					}
					want := ref(x, xs, theta, logEll)
					check := fdChecker(t, dt, cost, want)
					const h = 1e-5
					for kk := range logEll {
						p, m := append([]float64(nil), logEll...), append([]float64(nil), logEll...)
						p[kk] += h
						m[kk] -= h
						check(fmt.Sprintf("log ℓ[%d]", kk), logEllN, kk, (ref(x, xs, theta, p)-ref(x, xs, theta, m))/(2*h))
					}
					for i, node := range []*G.Node{logSig, logNoise} {
						p, m := theta, theta
						p[i+1] += h
						m[i+1] -= h
						check(fmt.Sprintf("θ%d", i+1), node, 0, (ref(x, xs, p, logEll)-ref(x, xs, m, logEll))/(2*h))
					}
					// Divided by the steps taken: x ± h rounds at the offset.
					for i := range x.data {
						p, m := x.plus(h, grUnitAt(x, i)), x.plus(-h, grUnitAt(x, i))
						check(fmt.Sprintf("x[%d]", i), xn, i, (ref(p, xs, theta, logEll)-ref(m, xs, theta, logEll))/(p.data[i]-m.data[i]))
					}
					for i := range xs.data {
						p, m := xs.plus(h, grUnitAt(xs, i)), xs.plus(-h, grUnitAt(xs, i))
						check(fmt.Sprintf("xs[%d]", i), xsn, i, (ref(x, p, theta, logEll)-ref(x, m, theta, logEll))/(p.data[i]-m.data[i]))
					}
				})
			}
		}
	}
}

// TestKernelMatrixARDBadInput: ARD length scales that are not positive and
// finite are ErrBadInput, a NaN or Inf point ErrNonFinite that names it,
// for K and for CrossKernel; points too far apart in a dimension for its
// length scale a zero kernel; then a good run.
func TestKernelMatrixARDBadInput(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{0, 0, 1, 0, 0, 1}))))
	xs := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 2), G.WithName("xs"), G.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float64{0.5, 0.5}))))
	ell := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("ell"), G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 1}))))
	sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"), G.WithValue(1.0))
	k, err := mgla.SquaredExponential(x, ell, sig, nil, onMesh(mesh))
	require.NoError(t, err)
	for _, asCross := range []bool{false, true} {
		var out *G.Node
		if asCross {
			out = must(mgla.CrossKernel(k, xs))
		} else {
			out = must(ops.Gather(k))
		}
		cost := G.Must(G.Sum(out))
		_, err = G.Grad(cost, x, ell, sig)
		require.NoError(t, err)
		m := G.NewTapeMachine(g)
		for _, c := range []struct {
			name string
			ell  []float64
			x    []float64
			want error
		}{
			{"zero length scale", []float64{1, 0}, nil, mgla.ErrBadInput},
			{"negative length scale", []float64{-1, 1}, nil, mgla.ErrBadInput},
			{"NaN length scale", []float64{math.NaN(), 1}, nil, mgla.ErrBadInput},
			{"infinite length scale", []float64{1, math.Inf(1)}, nil, mgla.ErrBadInput},
			{"NaN point", []float64{1, 1}, []float64{0, 0, 1, 0, math.NaN(), 1}, mgla.ErrNonFinite},
			{"infinite point", []float64{1, 1}, []float64{0, 0, 1, 0, math.Inf(1), 1}, mgla.ErrNonFinite},
		} {
			require.NoError(t, G.Let(ell, tensor.New(tensor.WithBacking(c.ell))))
			xv := []float64{0, 0, 1, 0, 0, 1}
			if c.x != nil {
				xv = c.x
			}
			require.NoError(t, G.Let(x, tensor.New(tensor.WithShape(3, 2), tensor.WithBacking(xv))))
			m.Reset()
			err := m.RunAll()
			require.ErrorIs(t, mgla.Cause(err), c.want, "%s, cross %t", c.name, asCross)
			if c.want == mgla.ErrNonFinite {
				require.ErrorContains(t, err, "point 2 holds", "%s, cross %t", c.name, asCross)
			}
		}
		// Points 1e10 apart in a dimension of length scale 1e-300: a zero
		// kernel there, not an error.
		require.NoError(t, G.Let(ell, tensor.New(tensor.WithBacking([]float64{1e-300, 1}))))
		require.NoError(t, G.Let(x, tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{0, 0, 1e10, 0, 0, 1}))))
		m.Reset()
		require.NoError(t, m.RunAll(), "cross %t", asCross)
		if !asCross {
			got := grValue(t, out.Value())
			require.Equal(t, 0.0, got[1])
			require.InDelta(t, math.Exp(-0.5), got[2], 1e-15) // K₀₂: (0, −1)
		}
		require.NoError(t, G.Let(ell, tensor.New(tensor.WithBacking([]float64{1, 2}))))
		require.NoError(t, G.Let(x, tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{0, 0, 1, 0, 0, 1}))))
		m.Reset()
		require.NoError(t, m.RunAll())
		got := grValue(t, out.Value())
		if asCross { // ‖(0.5, 0.5) − (0, 0)‖² with ℓ = (1, 2): 0.25 + 0.0625
			require.InDelta(t, math.Exp(-0.3125/2), got[0], 1e-15)
		} else { // K₀₁: x₀ − x₁ = (−1, 0); K₀₂: (0, −1)/2
			require.InDelta(t, math.Exp(-0.5), got[1], 1e-15)
			require.InDelta(t, math.Exp(-0.125), got[2], 1e-15)
		}
		m.Close()
	}
}

// minDistance is the smallest distance between two of the rows (dimension
// d) of x.
func minDistance(x grMat, d int) float64 {
	best := math.Inf(1)
	for i := range x.rows {
		for j := range i {
			r2 := 0.0
			for k := range d {
				diff := x.data[i*d+k] - x.data[j*d+k]
				r2 += diff * diff
			}
			best = min(best, math.Sqrt(r2))
		}
	}
	return best
}

// TestCrossKernelConstantPointsLisp: new points given as a constant join
// K's graph, as the other builders' fixed data; a cost that reads C alone
// runs on the LispMachine (K is CrossKernel's input, so no second root),
// with σ̄² = Σ C/σ²; a NaN new point is named as one.
func TestCrossKernelConstantPointsLisp(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	for _, lisp := range []bool{false, true} {
		g := G.NewGraph()
		x := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 1, 2}))))
		ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"), G.WithValue(0.8))
		sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"), G.WithValue(1.5))
		k := must(mgla.Matern32(x, ell, sig, nil, onMesh(mesh)))
		xs := G.NewConstant(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0.5, 1.5})))
		c := must(mgla.CrossKernel(k, xs))
		cost := G.Must(G.Sum(c))
		if !lisp {
			_, err := G.Grad(cost, sig)
			require.NoError(t, err)
		}
		var m G.VM = G.NewTapeMachine(g)
		if lisp {
			m = G.NewLispMachine(g)
		}
		require.NoError(t, m.RunAll(), "lisp %t", lisp)
		got := grValue(t, c.Value())
		r := 0.5 / 0.8
		want := 1.5 * (1 + math.Sqrt(3)*r) * math.Exp(-math.Sqrt(3)*r) // C₀₀ = C₀₁ = C₁₁ = C₁₂
		for _, i := range []int{0, 1, 4, 5} {
			require.InDelta(t, want, got[i], 1e-15, "lisp %t, C[%d]", lisp, i)
		}
		sbar, err := sig.Grad()
		require.NoError(t, err)
		require.InDelta(t, grValue(t, cost.Value())[0]/1.5, grValue(t, sbar)[0], 1e-14, "lisp %t", lisp)
		m.Close()
	}

	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 1, 2}))))
	ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"), G.WithValue(0.8))
	sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"), G.WithValue(1.5))
	k := must(mgla.SquaredExponential(x, ell, sig, nil, onMesh(mesh)))
	xs := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("xStar"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0.5, math.NaN()}))))
	_ = must(mgla.CrossKernel(k, xs))
	m := G.NewTapeMachine(g)
	defer m.Close()
	err = m.RunAll()
	require.ErrorIs(t, mgla.Cause(err), mgla.ErrNonFinite)
	require.ErrorContains(t, err, "the new point 1 holds NaN")
}

// TestKernelMatrixARDMatchesOneScale: a length-1 vector ℓ gives the kernel
// matrix and −log p(y) of the scalar ℓ bit for bit, for two bursts of points
// 1e9 apart with ℓ = 1e-3 (points scaled by ℓ before their differences
// lost 4 digits of K there).
func TestKernelMatrixARDMatchesOneScale(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	var xd, yd []float64
	for i := range 12 {
		base := 0.0
		if i >= 6 {
			base = 1e9
		}
		xd = append(xd, base+float64(i%6)*1e-3+1.7e-5*float64(i%5))
		yd = append(yd, math.Sin(float64(i)))
	}
	var ks [2][]float64
	var nlls [2]float64
	for a, ard := range []bool{false, true} {
		g := G.NewGraph()
		x := G.NewVector(g, tensor.Float64, G.WithShape(12), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(append([]float64(nil), xd...)))))
		y := G.NewVector(g, tensor.Float64, G.WithShape(12), G.WithName("y"), G.WithValue(tensor.New(tensor.WithBacking(append([]float64(nil), yd...)))))
		ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"), G.WithValue(1e-3))
		if ard {
			ell = G.NewVector(g, tensor.Float64, G.WithShape(1), G.WithName("ell"), G.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1e-3}))))
		}
		sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"), G.WithValue(1.0))
		noise := G.NewScalar(g, tensor.Float64, G.WithName("noise"), G.WithValue(1e-2))
		k := must(mgla.SquaredExponential(x, ell, sig, noise, onMesh(mesh)))
		nll := G.Must(G.Neg(must(mgla.GaussianLogDensity(k, y, onMesh(mesh)))))
		kh := must(ops.Gather(k))
		m := G.NewTapeMachine(g)
		require.NoError(t, m.RunAll(), "ard %t", ard)
		ks[a] = append([]float64(nil), grValue(t, kh.Value())...)
		nlls[a] = grValue(t, nll.Value())[0]
		m.Close()
	}
	require.Equal(t, ks[0], ks[1])
	require.Equal(t, nlls[0], nlls[1])
}

// fdChecker asserts the cost's value against want, the reference's, and
// returns a check of element idx of a node's gradient against a finite
// difference of the reference, with tolerances for dt.
func fdChecker(t *testing.T, dt tensor.Dtype, cost *G.Node, want float64) func(what string, node *G.Node, idx int, want float64) {
	t.Helper()
	tol := 1e-9
	if dt == tensor.Float32 {
		tol = 2e-3
	}
	require.InDelta(t, want, grValue(t, cost.Value())[0], tol*(1+math.Abs(want)), "cost, seed %d", grSeed)
	return func(what string, node *G.Node, idx int, want float64) {
		t.Helper()
		gv, err := node.Grad()
		require.NoError(t, err, what)
		require.InDelta(t, want, grValue(t, gv)[idx], 20*tol*(1+math.Abs(want))+1e-7, "%s, seed %d", what, grSeed)
	}
}
