package mgla_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gradient tests: every op's gradient through gorgonia.Grad + TapeMachine and
// through the LispMachine, against central finite differences (a fourth-order
// stencil, in float64) along random symmetric directions of A and random
// directions of B.

// grSeed is fresh each run and printed, so that a failure can be replayed.
var grSeed = uint64(time.Now().UnixNano())

func grRNG(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	t.Logf("gradient test seed %d (stream %d)", grSeed, stream)
	return rand.New(rand.NewPCG(grSeed, stream))
}

// grMat is a row-major float64 matrix (a vector when cols is 0).
type grMat struct {
	rows, cols int
	data       []float64
}

func (m grMat) shape() []int {
	if m.cols == 0 {
		return []int{m.rows}
	}
	return []int{m.rows, m.cols}
}

func (m grMat) dense(dt tensor.Dtype) *tensor.Dense {
	if dt == tensor.Float32 {
		s := make([]float32, len(m.data))
		for i, v := range m.data {
			s[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(m.shape()...), tensor.WithBacking(s))
	}
	return tensor.New(tensor.WithShape(m.shape()...), tensor.WithBacking(append([]float64(nil), m.data...)))
}

// plus is m + h·d.
func (m grMat) plus(h float64, d grMat) grMat {
	out := grMat{m.rows, m.cols, make([]float64, len(m.data))}
	for i := range out.data {
		out.data[i] = m.data[i] + h*d.data[i]
	}
	return out
}

func (m grMat) node(g *G.ExprGraph, dt tensor.Dtype, name string) *G.Node {
	if m.cols == 0 {
		return G.NewVector(g, dt, G.WithShape(m.rows), G.WithName(name), G.WithValue(m.dense(dt)))
	}
	return G.NewMatrix(g, dt, G.WithShape(m.rows, m.cols), G.WithName(name), G.WithValue(m.dense(dt)))
}

func grRandom(rng *rand.Rand, rows, cols int) grMat {
	m := grMat{rows, cols, make([]float64, rows*max(cols, 1))}
	for i := range m.data {
		m.data[i] = rng.NormFloat64()
	}
	return m
}

// grUnit scales m to unit Frobenius norm.
func grUnit(m grMat) grMat {
	var s float64
	for _, v := range m.data {
		s += v * v
	}
	s = math.Sqrt(s)
	for i := range m.data {
		m.data[i] /= s
	}
	return m
}

// grSymDirection is a random symmetric unit direction.
func grSymDirection(rng *rand.Rand, n int) grMat {
	m := grRandom(rng, n, n)
	for i := range n {
		for j := range i {
			m.data[j*n+i] = m.data[i*n+j]
		}
	}
	return grUnit(m)
}

// grLowerDirection is a random lower triangular unit direction.
func grLowerDirection(rng *rand.Rand, n int) grMat {
	m := grRandom(rng, n, n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			m.data[i*n+j] = 0
		}
	}
	return grUnit(m)
}

// grSPD is a random well conditioned SPD matrix: M·Mᵀ/n + I.
func grSPD(rng *rand.Rand, n int) grMat {
	m := grRandom(rng, n, n)
	a := grMat{n, n, make([]float64, n*n)}
	for i := range n {
		for j := range n {
			var s float64
			for k := range n {
				s += m.data[i*n+k] * m.data[j*n+k]
			}
			a.data[i*n+j] = s / float64(n)
		}
		a.data[i*n+i] += 1
	}
	return a
}

// grSpectral is Q·diag(λ)·Qᵀ for a random orthogonal Q and eigenvalues
// λ_i ≈ 1 + i, separated by at least 0.8.
func grSpectral(rng *rand.Rand, n int) grMat {
	var qr mat.QR
	qr.Factorize(mat.NewDense(n, n, grRandom(rng, n, n).data))
	var q mat.Dense
	qr.QTo(&q)
	a := grMat{n, n, make([]float64, n*n)}
	lam := make([]float64, n)
	for i := range lam {
		lam[i] = 1 + float64(i) + 0.2*rng.Float64()
	}
	for i := range n {
		for j := range n {
			var s float64
			for k := range n {
				s += q.At(i, k) * lam[k] * q.At(j, k)
			}
			a.data[i*n+j] = s
		}
	}
	for i := range n { // exactly symmetric
		for j := range i {
			a.data[j*n+i] = a.data[i*n+j]
		}
	}
	return a
}

// grLowerFactor is a well conditioned lower triangular matrix with a
// positive diagonal and junk in its strict upper triangle (not read).
func grLowerFactor(rng *rand.Rand, n int) grMat {
	l := grRandom(rng, n, n)
	for i := range n {
		l.data[i*n+i] = 2 + math.Abs(l.data[i*n+i])
		for j := range n {
			if j < i {
				l.data[i*n+j] *= 0.3
			}
		}
	}
	return l
}

func grValue(t *testing.T, v G.Value) []float64 {
	t.Helper()
	switch x := v.Data().(type) {
	case []float64:
		return append([]float64(nil), x...)
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out
	case float64:
		return []float64{x}
	case float32:
		return []float64{float64(x)}
	}
	t.Fatalf("unexpected value %T", v)
	return nil
}

func grDot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func grNorm(a []float64) float64 { return math.Sqrt(grDot(a, a)) }

// grWeights are the fixed random weights that reduce an op's outputs to a
// scalar cost.
type grWeights struct {
	w  grMat // n×n, for matrix outputs
	wk grMat // like B, for solves
	u  grMat // n, for eigenvalues
	s  float64
}

func (w grWeights) sum(a, b *G.Node) *G.Node {
	return G.Must(G.Sum(G.Must(G.HadamardProd(a, b))))
}

// scaled is the scalar v times the weight s, a node of v's graph.
func (w grWeights) scaled(v *G.Node) *G.Node {
	s := G.NewScalar(v.Graph(), v.Dtype(), G.WithName("s"), G.WithValue(grScalar(v.Dtype(), w.s)))
	return G.Must(G.Mul(v, s))
}

// grCase is one op reduced to a scalar cost.
type grCase struct {
	name     string
	withB    bool // has a right-hand side
	spectral bool // A with well separated eigenvalues
	lower    bool // the matrix input is a lower triangular factor
	cost     func(a, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error)
}

func grWeight(g *G.ExprGraph, dt tensor.Dtype, m grMat, name string) *G.Node {
	return m.node(g, dt, name)
}

func grCases() []grCase {
	return []grCase{
		{name: "Potrs", withB: true, cost: func(a, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			x, err := mgla.Potrs(a, b, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(x, grWeight(a.Graph(), a.Dtype(), w.wk, "Wk")), nil
		}},
		{name: "CholSolve(L)", withB: true, lower: true, cost: func(l, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			x, err := mgla.CholSolve(l, b, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(x, grWeight(l.Graph(), l.Dtype(), w.wk, "Wk")), nil
		}},
		{name: "CholSolve(Cholesky(A))", withB: true, cost: func(a, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			l, err := mgla.Cholesky(a, opts...)
			if err != nil {
				return nil, err
			}
			x, err := mgla.CholSolve(l, b, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(x, grWeight(a.Graph(), a.Dtype(), w.wk, "Wk")), nil
		}},
		{name: "Cholesky", cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			l, err := mgla.Cholesky(a, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(l, grWeight(a.Graph(), a.Dtype(), w.w, "W")), nil
		}},
		{name: "Potri", cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			c, err := mgla.Potri(a, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(c, grWeight(a.Graph(), a.Dtype(), w.w, "W")), nil
		}},
		{name: "LogDet", cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			ld, err := mgla.LogDet(a, opts...)
			if err != nil {
				return nil, err
			}
			return w.scaled(ld), nil
		}},
		{name: "Potrs+LogDet+Potri", withB: true, cost: func(a, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			// One factor, three consumers of the sharded A.
			x, err := mgla.Potrs(a, b, opts...)
			if err != nil {
				return nil, err
			}
			ld, err := mgla.LogDet(a, opts...)
			if err != nil {
				return nil, err
			}
			c, err := mgla.Potri(a, opts...)
			if err != nil {
				return nil, err
			}
			g, dt := a.Graph(), a.Dtype()
			cost := G.Must(G.Add(w.sum(x, grWeight(g, dt, w.wk, "Wk")), w.scaled(ld)))
			return G.Add(cost, w.sum(c, grWeight(g, dt, w.w, "W")))
		}},
		{name: "GaussianLogDensity", withB: true, cost: func(a, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			ld, err := mgla.GaussianLogDensity(a, b, opts...)
			if err != nil {
				return nil, err
			}
			return w.scaled(ld), nil
		}},
		{name: "GaussianLogDensity+Potrs+LogDet", withB: true, cost: func(a, b *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			// The density's factor and solve shared with Potrs and LogDet:
			// three gradients of A summed by Gorgonia, two of B.
			ld, err := mgla.GaussianLogDensity(a, b, opts...)
			if err != nil {
				return nil, err
			}
			x, err := mgla.Potrs(a, b, opts...)
			if err != nil {
				return nil, err
			}
			det, err := mgla.LogDet(a, opts...)
			if err != nil {
				return nil, err
			}
			g, dt := a.Graph(), a.Dtype()
			cost := G.Must(G.Add(w.sum(x, grWeight(g, dt, w.wk, "Wk")), w.scaled(ld)))
			return G.Add(cost, det)
		}},
		{name: "Syevd values", spectral: true, cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			ev, _, err := mgla.Syevd(a, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(ev, grWeight(a.Graph(), ev.Dtype(), w.u, "u")), nil
		}},
		{name: "Syevd values only", spectral: true, cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			ev, _, err := mgla.Syevd(a, append(opts, mgla.EigenvaluesOnly())...)
			if err != nil {
				return nil, err
			}
			return w.sum(ev, grWeight(a.Graph(), ev.Dtype(), w.u, "u")), nil
		}},
		{name: "Syevd vectors", spectral: true, cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			// Σ W∘(V∘V) does not depend on the eigenvectors' signs.
			_, v, err := mgla.Syevd(a, opts...)
			if err != nil {
				return nil, err
			}
			return w.sum(G.Must(G.HadamardProd(v, v)), grWeight(a.Graph(), a.Dtype(), w.w, "W")), nil
		}},
		{name: "Syevd values+vectors", spectral: true, cost: func(a, _ *G.Node, w grWeights, opts []mgla.Option) (*G.Node, error) {
			ev, v, err := mgla.Syevd(a, opts...)
			if err != nil {
				return nil, err
			}
			g := a.Graph()
			vv := w.sum(G.Must(G.HadamardProd(v, v)), grWeight(g, a.Dtype(), w.w, "W"))
			return G.Add(vv, w.sum(ev, grWeight(g, ev.Dtype(), w.u, "u")))
		}},
	}
}

func grScalar(dt tensor.Dtype, v float64) any {
	if dt == tensor.Float32 {
		return float32(v)
	}
	return v
}

// grConfig is a mesh size with an N that is not a multiple of the tile.
type grConfig struct {
	ndev, n, tile, k int // k = 0: the right-hand side is a vector
}

var grConfigs = []grConfig{{1, 7, 3, 2}, {2, 11, 4, 3}, {3, 13, 2, 0}}

// grProblem is one case's inputs and weights.
type grProblem struct {
	a, b grMat
	w    grWeights
}

func grNewProblem(rng *rand.Rand, c grCase, cf grConfig) grProblem {
	n := cf.n
	var p grProblem
	switch {
	case c.spectral:
		p.a = grSpectral(rng, n)
	case c.lower:
		p.a = grLowerFactor(rng, n)
	default:
		p.a = grSPD(rng, n)
	}
	p.b = grRandom(rng, n, cf.k)
	p.w = grWeights{w: grRandom(rng, n, n), wk: grRandom(rng, n, cf.k), u: grRandom(rng, n, 0), s: 0.5 + rng.Float64()}
	return p
}

// grForward evaluates the cost in float64 for finite differences.
type grForward struct {
	m    G.VM
	a, b *G.Node
	cost *G.Node
}

func grNewForward(t *testing.T, c grCase, p grProblem, opts []mgla.Option) *grForward {
	g := G.NewGraph()
	f := &grForward{a: p.a.node(g, tensor.Float64, "A")}
	if c.withB {
		f.b = p.b.node(g, tensor.Float64, "B")
	}
	var err error
	f.cost, err = c.cost(f.a, f.b, p.w, opts)
	require.NoError(t, err)
	f.m = G.NewTapeMachine(g)
	return f
}

func (f *grForward) eval(t *testing.T, a, b grMat) float64 {
	require.NoError(t, G.Let(f.a, a.dense(tensor.Float64)))
	if f.b != nil {
		require.NoError(t, G.Let(f.b, b.dense(tensor.Float64)))
	}
	f.m.Reset()
	require.NoError(t, f.m.RunAll(), "seed %d", grSeed)
	return grValue(t, f.cost.Value())[0]
}

// fd is the directional derivative along (da, db), fourth order.
func (f *grForward) fd(t *testing.T, a, b, da, db grMat, h float64) float64 {
	at := func(s float64) float64 { return f.eval(t, a.plus(s*h, da), b.plus(s*h, db)) }
	return (8*(at(1)-at(-1)) - (at(2) - at(-2))) / (12 * h)
}

// grGrads runs the graph of the case with dtype dt on one machine and returns
// the gradients of A and B. The TapeMachine runs the graph twice (Reset in
// between) and the two runs must agree exactly.
func grGrads(t *testing.T, c grCase, p grProblem, dt tensor.Dtype, opts []mgla.Option, lisp bool) (ga, gb []float64) {
	t.Helper()
	g := G.NewGraph()
	a := p.a.node(g, dt, "A")
	var b *G.Node
	if c.withB {
		b = p.b.node(g, dt, "B")
	}
	cost, err := c.cost(a, b, p.w, opts)
	require.NoError(t, err)
	read := func() {
		gv, err := a.Grad()
		require.NoError(t, err)
		ga = grValue(t, gv)
		gb = nil
		if c.withB {
			gv, err := b.Grad()
			require.NoError(t, err)
			gb = grValue(t, gv)
		}
	}
	if lisp {
		// The LispMachine wants one scalar root: run the cost's subgraph
		// (an op's unused outputs, such as Syevd's w, are roots too).
		m := G.NewLispMachine(g.SubgraphRoots(cost))
		defer m.Close()
		require.NoError(t, m.RunAll(), "seed %d", grSeed)
		read()
		return ga, gb
	}
	wrt := G.Nodes{a}
	if c.withB {
		wrt = append(wrt, b)
	}
	_, err = G.Grad(cost, wrt...)
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll(), "seed %d", grSeed)
	read()
	ga1, gb1 := ga, gb
	m.Reset()
	require.NoError(t, m.RunAll(), "seed %d", grSeed)
	read()
	require.Equal(t, ga1, ga, "second run, seed %d", grSeed)
	require.Equal(t, gb1, gb, "second run, seed %d", grSeed)
	return ga, gb
}

// grRelErr compares an analytic directional derivative with finite
// differences; the floor keeps a direction that happens to be nearly
// orthogonal to the gradient from dominating.
func grRelErr(an, fd, gradNorm float64, n int) float64 {
	return math.Abs(an-fd) / math.Max(math.Abs(fd), 0.1*gradNorm/float64(n))
}

func grTolerance(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 1e-4 // measured ≲ 6e-6
	}
	return 1e-6
}

func TestGradientsAgainstFiniteDifferences(t *testing.T) {
	rng := grRNG(t, 1)
	for ci, c := range grCases() {
		t.Run(c.name, func(t *testing.T) {
			worst := map[tensor.Dtype]float64{}
			for _, cf := range grConfigs {
				t.Run(fmt.Sprintf("ndev=%d", cf.ndev), func(t *testing.T) { // one GPU runs the one-device configuration
					mesh, err := testMesh(t, cf.ndev)
					require.NoError(t, err)
					opts := []mgla.Option{onMesh(mesh), mgla.WithTile(cf.tile)}
					p := grNewProblem(rng, c, cf)
					n := cf.n
					// Finite differences in float64 along two directions of A
					// (symmetric, or lower triangular for a factor input) and one
					// of B.
					f := grNewForward(t, c, p, opts)
					zeroB := grMat{p.b.rows, p.b.cols, make([]float64, len(p.b.data))}
					zeroA := grMat{n, n, make([]float64, n*n)}
					var dirs []grMat
					var fdA []float64
					for range 2 {
						d := grSymDirection(rng, n)
						if c.lower {
							d = grLowerDirection(rng, n)
						}
						dirs = append(dirs, d)
						fdA = append(fdA, f.fd(t, p.a, p.b, d, zeroB, 1e-3))
					}
					var db grMat
					var fdB float64
					if c.withB {
						db = grUnit(grRandom(rng, p.b.rows, p.b.cols))
						fdB = f.fd(t, p.a, p.b, zeroA, db, 1e-3)
					}
					f.m.Close()

					for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
						for _, lisp := range []bool{false, true} {
							what := fmt.Sprintf("%s ndev=%d N=%d T=%d %v lisp=%v seed=%d", c.name, cf.ndev, n, cf.tile, dt, lisp, grSeed)
							ga, gb := grGrads(t, c, p, dt, opts, lisp)
							require.Len(t, ga, n*n, what)
							na := grNorm(ga)
							require.False(t, math.IsNaN(na), what)
							require.Greater(t, na, 0.0, what)
							tol := grTolerance(dt)
							for i, d := range dirs {
								e := grRelErr(grDot(ga, d.data), fdA[i], na, n)
								worst[dt] = math.Max(worst[dt], e)
								require.Less(t, e, tol, "%s: A direction %d: analytic %g, finite differences %g", what, i, grDot(ga, d.data), fdA[i])
							}
							if c.withB {
								e := grRelErr(grDot(gb, db.data), fdB, grNorm(gb), n)
								worst[dt] = math.Max(worst[dt], e)
								require.Less(t, e, tol, "%s: B: analytic %g, finite differences %g", what, grDot(gb, db.data), fdB)
							}
							// The convention: Ā is symmetric (a factor's L̄ is
							// lower triangular instead).
							for i := range n {
								for j := range i {
									if c.lower {
										require.Zero(t, ga[j*n+i], "%s: L̄ upper (%d,%d)", what, j, i)
									} else {
										require.InDelta(t, ga[i*n+j], ga[j*n+i], 1e-12*na, "%s: Ā not symmetric at (%d,%d)", what, i, j)
									}
								}
							}
						}
					}
				})
			}
			t.Logf("%s: worst relative error against finite differences: float64 %.2e, float32 %.2e", c.name, worst[tensor.Float64], worst[tensor.Float32])
			_ = ci
		})
	}
}

// gpGraph builds cost(θ) = ½·yᵀA⁻¹y + ½·log det A for the Gaussian-process
// covariance A(θ) = σ²·exp(−D/(2ℓ²)) + noise·I, θ = (log ℓ, log σ², log noise),
// D the squared distances of fixed points.
func gpGraph(t *testing.T, theta [3]float64, d, y grMat, opts []mgla.Option) (*G.ExprGraph, [3]*G.Node, *G.Node) {
	g := G.NewGraph()
	n := d.rows
	var th [3]*G.Node
	for i, name := range []string{"logLen", "logSignal", "logNoise"} {
		th[i] = G.NewScalar(g, tensor.Float64, G.WithName(name), G.WithValue(theta[i]))
	}
	dn := d.node(g, tensor.Float64, "D")
	eye := grMat{n, n, make([]float64, n*n)}
	for i := range n {
		eye.data[i*n+i] = 1
	}
	in := eye.node(g, tensor.Float64, "I")
	yn := y.node(g, tensor.Float64, "y")
	// −1/(2ℓ²) = −½·exp(−2·log ℓ)
	scale := G.Must(G.Mul(G.NewConstant(-0.5), G.Must(G.Exp(G.Must(G.Mul(G.NewConstant(-2.0), th[0]))))))
	k := G.Must(G.Mul(G.Must(G.Exp(G.Must(G.Mul(dn, scale)))), G.Must(G.Exp(th[1]))))
	a := G.Must(G.Add(k, G.Must(G.Mul(in, G.Must(G.Exp(th[2]))))))
	x := must(mgla.Potrs(a, yn, opts...))
	ld := must(mgla.LogDet(a, opts...))
	quad := G.Must(G.Sum(G.Must(G.HadamardProd(yn, x))))
	cost := G.Must(G.Mul(G.NewConstant(0.5), G.Must(G.Add(quad, ld))))
	return g, th, cost
}

func TestGaussianProcessChain(t *testing.T) {
	rng := grRNG(t, 2)
	const n = 15
	pts := grRandom(rng, n, 2)
	d := grMat{n, n, make([]float64, n*n)}
	for i := range n {
		for j := range n {
			dx, dy := pts.data[2*i]-pts.data[2*j], pts.data[2*i+1]-pts.data[2*j+1]
			d.data[i*n+j] = dx*dx + dy*dy
		}
	}
	y := grRandom(rng, n, 0)
	theta := [3]float64{math.Log(0.8 + 0.4*rng.Float64()), math.Log(1 + rng.Float64()), math.Log(0.1 + 0.1*rng.Float64())}
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	opts := []mgla.Option{onMesh(mesh), mgla.WithTile(4)}

	// Grad + TapeMachine, run twice.
	g, th, cost := gpGraph(t, theta, d, y, opts)
	_, err = G.Grad(cost, th[:]...)
	require.NoError(t, err)
	tm := G.NewTapeMachine(g)
	defer tm.Close()
	var tape [2][3]float64
	for run := range 2 {
		tm.Reset()
		require.NoError(t, tm.RunAll(), "seed %d", grSeed)
		for i := range 3 {
			gv, err := th[i].Grad()
			require.NoError(t, err)
			tape[run][i] = grValue(t, gv)[0]
		}
	}
	require.Equal(t, tape[0], tape[1], "second run, seed %d", grSeed)

	// LispMachine.
	g2, th2, _ := gpGraph(t, theta, d, y, opts)
	lm := G.NewLispMachine(g2)
	defer lm.Close()
	require.NoError(t, lm.RunAll(), "seed %d", grSeed)
	var lisp [3]float64
	for i := range 3 {
		gv, err := th2[i].Grad()
		require.NoError(t, err)
		lisp[i] = grValue(t, gv)[0]
	}

	// Finite differences.
	g3, th3, cost3 := gpGraph(t, theta, d, y, opts)
	fm := G.NewTapeMachine(g3)
	defer fm.Close()
	eval := func(th [3]float64) float64 {
		for i := range 3 {
			require.NoError(t, G.Let(th3[i], th[i]))
		}
		fm.Reset()
		require.NoError(t, fm.RunAll(), "seed %d", grSeed)
		return grValue(t, cost3.Value())[0]
	}
	const h = 1e-3
	for i := range 3 {
		at := func(s float64) float64 {
			p := theta
			p[i] += s * h
			return eval(p)
		}
		fd := (8*(at(1)-at(-1)) - (at(2) - at(-2))) / (12 * h)
		scale := math.Max(math.Abs(fd), 1e-3)
		t.Logf("θ%d: tape %.12g lisp %.12g finite differences %.12g (rel. err. %.1e, %.1e)", i, tape[0][i], lisp[i], fd,
			math.Abs(tape[0][i]-fd)/scale, math.Abs(lisp[i]-fd)/scale)
		require.Less(t, math.Abs(tape[0][i]-fd)/scale, 1e-6, "θ%d tape seed %d", i, grSeed)
		require.Less(t, math.Abs(lisp[i]-fd)/scale, 1e-6, "θ%d lisp seed %d", i, grSeed)
		require.Less(t, math.Abs(lisp[i]-tape[0][i])/scale, 1e-10, "θ%d lisp vs tape seed %d", i, grSeed)
	}
}

// grCause is the op's error inside an error from Grad or a machine.
// gorgonia.Grad returns an op's SymDiff error inside a SymDiffError, which
// has no Unwrap; ops.UnwrapSymDiff reads it.
func grCause(err error) error {
	c := mgla.Cause(err)
	if inner := ops.UnwrapSymDiff(c); inner != nil {
		return mgla.Cause(inner)
	}
	return c
}

func TestComplexGradientsAreRejected(t *testing.T) {
	const n = 5
	mesh, _ := testMesh(t, 2)
	a := make([]complex128, n*n)
	for i := range n {
		a[i*n+i] = complex(float64(i+2), 0)
	}
	a[1*n+0] = complex(0.3, 0.2)
	a[0*n+1] = complex(0.3, -0.2)
	builders := map[string]func(an *G.Node) (*G.Node, error){
		"LogDet": func(an *G.Node) (*G.Node, error) { return mgla.LogDet(an, onMesh(mesh), mgla.WithTile(2)) },
		"Syevd": func(an *G.Node) (*G.Node, error) {
			w, _, err := mgla.Syevd(an, onMesh(mesh), mgla.WithTile(2), mgla.EigenvaluesOnly())
			if err != nil {
				return nil, err
			}
			return G.Sum(w)
		},
	}
	for name, build := range builders {
		for _, dt := range []tensor.Dtype{tensor.Complex64, tensor.Complex128} {
			mk := func() (*G.ExprGraph, *G.Node, *G.Node) {
				g := G.NewGraph()
				var v *tensor.Dense
				if dt == tensor.Complex64 {
					c := make([]complex64, len(a))
					for i, z := range a {
						c[i] = complex64(z)
					}
					v = tensor.New(tensor.WithShape(n, n), tensor.WithBacking(c))
				} else {
					v = tensor.New(tensor.WithShape(n, n), tensor.WithBacking(append([]complex128(nil), a...)))
				}
				an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(v))
				cost, err := build(an)
				require.NoError(t, err)
				return g, an, cost
			}
			_, an, cost := mk()
			_, err := G.Grad(cost, an)
			require.Error(t, err, "%s %v", name, dt)
			require.True(t, errors.Is(grCause(err), ops.ErrComplexGradient), "%s %v: %v", name, dt, err)

			g, _, _ := mk()
			m := G.NewLispMachine(g)
			err = m.RunAll()
			m.Close()
			require.Error(t, err, "%s %v lisp", name, dt)
			require.True(t, errors.Is(grCause(err), ops.ErrComplexGradient), "%s %v lisp: %v", name, dt, err)

			// The forward pass alone still works.
			g, _, _ = mk()
			m = G.NewLispMachine(g, G.ExecuteFwdOnly())
			require.NoError(t, m.RunAll(), "%s %v forward", name, dt)
			m.Close()
		}
	}
}

// TestSyevdRepeatedEigenvalues: at repeated eigenvalues a cost that leaves
// the eigenvectors unused (multiplied by 0) gets its gradient, and one that
// uses them gets ErrRepeatedEigenvalues, not Inf or NaN — sum(V), and
// sum(V·diag(w)·Vᵀ) = sum(A) too, whose gradient exists but is not what the
// backward pass can compute from w̄ and V̄; on meshes of 1 and 3 devices,
// with the TapeMachine and the LispMachine, for the identity and a matrix
// with one double eigenvalue.
func TestSyevdRepeatedEigenvalues(t *testing.T) {
	const n = 5
	identity := make([]float64, n*n)
	double := make([]float64, n*n) // diag(1, 2, 2, 3, 4) turned by a rotation in the plane of e0, e3
	for i := range n {
		identity[i*n+i] = 1
		double[i*n+i] = []float64{1, 2, 2, 3, 4}[i]
	}
	c, s := math.Cos(0.3), math.Sin(0.3)
	double[0*n+0], double[3*n+3] = c*c*1+s*s*3, s*s*1+c*c*3
	double[0*n+3], double[3*n+0] = c*s*(3-1), c*s*(3-1)
	costs := []struct {
		name string
		cost func(w, v *G.Node) (*G.Node, error)
		want func(i, j int) float64 // nil: ErrRepeatedEigenvalues
	}{
		{"sum(V·diag(w)·Vᵀ)", func(w, v *G.Node) (*G.Node, error) {
			ones := G.NewConstant(tensor.New(tensor.WithShape(n), tensor.WithBacking([]float64{1, 1, 1, 1, 1})))
			vw, err := G.HadamardProd(v, G.Must(G.OuterProd(ones, w)))
			if err != nil {
				return nil, err
			}
			return G.Sum(G.Must(G.Mul(vw, G.Must(G.Transpose(v)))))
		}, nil},
		{"sum(w∘w) + 0·sum(V)", func(w, v *G.Node) (*G.Node, error) {
			return G.Add(G.Must(G.Sum(G.Must(G.Square(w)))), G.Must(G.Mul(G.NewConstant(0.0), G.Must(G.Sum(v)))))
		}, nil},
		{"sum(V) + 0·sum(w)", func(w, v *G.Node) (*G.Node, error) {
			// (w in the cost too: the LispMachine takes an unused output for a root)
			return G.Add(G.Must(G.Sum(v)), G.Must(G.Mul(G.NewConstant(0.0), G.Must(G.Sum(w)))))
		}, nil},
	}
	for _, a := range []struct {
		name string
		vals []float64
	}{{"identity", identity}, {"double eigenvalue", double}} {
		for _, devices := range []int{1, 3} {
			for _, cc := range costs {
				for _, lisp := range []bool{false, true} {
					if lisp && cc.name == "sum(V·diag(w)·Vᵀ)" {
						continue // Gorgonia's LispMachine fails on OuterProd's gradient itself
					}
					name := fmt.Sprintf("%s/%d devices/%s/lisp=%v", a.name, devices, cc.name, lisp)
					g := G.NewGraph()
					an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
						G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(append([]float64(nil), a.vals...)))))
					mesh, err := sharding.CPUMesh(devices)
					require.NoError(t, err)
					w, v, err := mgla.Syevd(an, mgla.WithMesh(mesh), mgla.WithTile(2))
					require.NoError(t, err, name)
					cost, err := cc.cost(w, v)
					require.NoError(t, err, name)
					err = grRunBackward(t, g, cost, lisp, an)
					want := cc.want
					if cc.name == "sum(w∘w) + 0·sum(V)" {
						want = func(i, j int) float64 { return 2 * a.vals[i*n+j] } // d sum(w²)/dA = 2A
					}
					if want == nil {
						require.ErrorIs(t, mgla.Cause(err), mgla.ErrRepeatedEigenvalues, name)
						continue
					}
					require.NoError(t, err, name)
					gv, err := an.Grad()
					require.NoError(t, err, name)
					got := grValue(t, gv)
					for i := range n {
						for j := range n {
							require.InDelta(t, want(i, j), got[i*n+j], 1e-9, "%s: element (%d,%d) of %v", name, i, j, got)
						}
					}
				}
			}
		}
	}
}

// TestSyevdRepeatedEigenvaluesRotated: A = Q·diag(1, 2, 2, 3, …)·Qᵀ for a
// random orthogonal Q, rounded to the dtype. Its computed copies of the
// double eigenvalue differ by several ulps of max|w| (up to about 10 at
// n = 3), so the eigenvector gradient of a cost that uses every eigenvector
// must still be ErrRepeatedEigenvalues, not a value of order 1/ulp.
func TestSyevdRepeatedEigenvaluesRotated(t *testing.T) {
	rng := grRNG(t, 3)
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, n := range []int{3, 4, 5, 8} {
			for trial := range 25 {
				name := fmt.Sprintf("%v/n=%d/trial %d", dt, n, trial)
				q := randomOrthogonal(rng, n)
				a := make([]float64, n*n)
				for i := range n {
					for j := range n {
						for k := range n {
							lambda := float64(k)
							if k > 1 {
								lambda = float64(k - 1) // 0, 1, 1, 2, …: 1 is double
							}
							a[i*n+j] += q[i*n+k] * (lambda + 1) * q[j*n+k]
						}
					}
				}
				for i := range n { // exactly symmetric
					for j := range i {
						a[j*n+i] = a[i*n+j]
					}
				}
				var backing any = a
				if dt == tensor.Float32 {
					a32 := make([]float32, n*n)
					for i, x := range a {
						a32[i] = float32(x)
					}
					backing = a32
				}
				weights := make([]float64, n*n)
				weights32 := make([]float32, n*n)
				for i := range weights {
					weights[i] = rng.NormFloat64()
					weights32[i] = float32(weights[i])
				}
				var weightBacking any = weights
				if dt == tensor.Float32 {
					weightBacking = weights32
				}
				g := G.NewGraph()
				an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"),
					G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(backing))))
				_, v, err := mgla.Syevd(an)
				require.NoError(t, err, name)
				wn := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("W"),
					G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(weightBacking))))
				cost := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.HadamardProd(v, v)), wn))))
				_, err = G.Grad(cost, an)
				require.NoError(t, err, name)
				m := G.NewTapeMachine(g)
				err = m.RunAll()
				m.Close()
				if !errors.Is(mgla.Cause(err), mgla.ErrRepeatedEigenvalues) {
					gv, _ := an.Grad()
					t.Fatalf("%s: err = %v, want ErrRepeatedEigenvalues (gradient %v)", name, err, gv)
				}
			}
		}
	}
}

// randomOrthogonal is a random n×n orthogonal matrix, row-major: the product
// of n Householder reflections with Gaussian vectors.
func randomOrthogonal(rng *rand.Rand, n int) []float64 {
	q := make([]float64, n*n)
	for i := range n {
		q[i*n+i] = 1
	}
	u := make([]float64, n)
	for range n {
		var uu float64
		for i := range u {
			u[i] = rng.NormFloat64()
			uu += u[i] * u[i]
		}
		for r := range n { // q ← q·(I − 2uuᵀ/uᵀu)
			var qu float64
			for i := range n {
				qu += q[r*n+i] * u[i]
			}
			for i := range n {
				q[r*n+i] -= 2 * qu / uu * u[i]
			}
		}
	}
	return q
}

// TestGradientBeyondRange: forward results in range whose gradient is not
// (its products overflow) give ErrNonFinite, on both machines, as the
// forward ops do, not a silent NaN or Inf. (The LispMachine added LogDet's
// ḡ·A⁻¹ straight into A's accumulator, unchecked: an Inf gradient and no
// error.)
func TestGradientBeyondRange(t *testing.T) {
	const potri, logDet = 0, -1
	cases := []struct {
		name  string
		dt    tensor.Dtype
		a     []float64
		k     int     // right-hand sides of Potrs, or potri or logDet
		scale float64 // of the cost
	}{
		{"Potrs float64 diag(1e-160, 1), 2 columns", tensor.Float64, []float64{1e-160, 0, 0, 1}, 2, 1},
		{"Potrs float64 diag(1e-160, 1), 1 column", tensor.Float64, []float64{1e-160, 0, 0, 1}, 1, 1},
		{"Potri float32 diag(1e-20, 1)", tensor.Float32, []float64{1e-20, 0, 0, 1}, potri, 1},
		{"1e30·LogDet float32 diag(1e-20, 1)", tensor.Float32, []float64{1e-20, 0, 0, 1}, logDet, 1e30},
		{"1e300·LogDet float64 diag(1e-20, 1)", tensor.Float64, []float64{1e-20, 0, 0, 1}, logDet, 1e300},
	}
	for _, c := range cases {
		for _, lisp := range []bool{false, true} {
			name := fmt.Sprintf("%s/lisp=%v", c.name, lisp)
			g := G.NewGraph()
			a := G.NewMatrix(g, c.dt, G.WithShape(2, 2), G.WithName("A"), G.WithValue(grTensor(c.dt, []int{2, 2}, c.a)))
			var out *G.Node
			var err error
			switch c.k {
			case potri:
				out, err = mgla.Potri(a)
			case logDet:
				out, err = mgla.LogDet(a)
			default:
				b := G.NewMatrix(g, c.dt, G.WithShape(2, c.k), G.WithName("B"), G.WithValue(grTensor(c.dt, []int{2, c.k}, []float64{1, 1, 1, 1}[:2*c.k])))
				out, err = mgla.Potrs(a, b)
			}
			require.NoError(t, err, name)
			cost := G.Must(G.Sum(out))
			if c.scale != 1 {
				scale := G.NewConstant(c.scale)
				if c.dt == tensor.Float32 {
					scale = G.NewConstant(float32(c.scale))
				}
				cost = G.Must(G.Mul(scale, cost))
			}
			err = grRunBackward(t, g, cost, lisp, a)
			require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNonFinite), "%s: want ErrNonFinite, got %v", name, err)
		}
	}
}

// TestGradientIntermediatesInRange: gradients that fit the dtype are
// computed, on both machines, where a product or sum on the way does not
// fit: Potri's −C·sym(W)·C in float32 with C·sym(W) past MaxFloat32, and
// sym(W) with both entries past half the largest float (float32 and
// float64). They were ErrNonFinite, "beyond the dtype's range".
func TestGradientIntermediatesInRange(t *testing.T) {
	cases := []struct {
		name   string
		dt     tensor.Dtype
		a, w   []float64 // A (diagonal) and the cost's weights: cost = Σ W∘Potri(A)
		pureGo bool      // right on CPU meshes of the pure-Go build, else ErrNonFinite
	}{
		{"float32 C·sym(W) overflows", tensor.Float32, []float64{1e-20, 0, 0, 1e20}, []float64{0, 1e20, 1e20, 0}, false},
		{"float32 W+Wᵀ overflows", tensor.Float32, []float64{1e3, 0, 0, 1e3}, []float64{1, 3e38, 3e38, 1}, false},
		{"float64 W+Wᵀ overflows", tensor.Float64, []float64{1, 0, 0, 1}, []float64{1, 1.7e308, 1.7e308, 1}, false},
		// Only the upper triangle of C·sym(W) overflows, which the lower
		// one of the symmetric product C·sym(W)·C does not read (pure Go
		// on CPU meshes; OpenBLAS's gemm and cuBLAS on GPU meshes take
		// Inf·0 as NaN: ErrNonFinite, README).
		{"float64 C·sym(W) overflows above the diagonal", tensor.Float64, []float64{1e-200, 0, 0, 1e200}, []float64{0, 1e200, 1e200, 0}, true},
	}
	for _, c := range cases {
		// Where the products take Inf·0 as NaN, the documented error.
		wantNonFinite := c.pureGo && (kernels.Backend != "gonum" || *meshFlag == "gpu")
		// Ā = −C·sym(W)·C with C = A⁻¹ diagonal: −c_i·w_ij·c_j (W symmetric).
		want := make([]float64, 4)
		for i := range 2 {
			for j := range 2 {
				want[i*2+j] = -(1 / c.a[i*3]) * c.w[i*2+j] * (1 / c.a[j*3])
			}
		}
		for _, lisp := range []bool{false, true} {
			name := fmt.Sprintf("%s/lisp=%v", c.name, lisp)
			g := G.NewGraph()
			a := G.NewMatrix(g, c.dt, G.WithShape(2, 2), G.WithName("A"), G.WithValue(grTensor(c.dt, []int{2, 2}, c.a)))
			w := G.NewMatrix(g, c.dt, G.WithShape(2, 2), G.WithName("W"), G.WithValue(grTensor(c.dt, []int{2, 2}, c.w)))
			inv, err := mgla.Potri(a)
			require.NoError(t, err, name)
			cost := G.Must(G.Sum(G.Must(G.HadamardProd(inv, w))))
			err = grRunBackward(t, g, cost, lisp, a)
			if wantNonFinite {
				require.ErrorIs(t, mgla.Cause(err), mgla.ErrNonFinite, name)
				continue
			}
			require.NoError(t, err, name)
			ga, err := a.Grad()
			require.NoError(t, err, name)
			got := grValue(t, ga)
			for k := range want {
				require.LessOrEqual(t, math.Abs(got[k]-want[k]), 1e-6*math.Abs(want[k]), "%s: Ā[%d] = %v, want %v", name, k, got[k], want[k])
			}
		}
	}
}

// TestGradientIntermediatesBeyondRange: where a gradient fits its dtype but
// a step to it does not, and no wider pass can help, the run is ErrNonFinite
// on both machines, never a silent Inf (README, "Errors"): a float64
// product (C·sym(W) in Potri's), float32 A⁻¹ in LogDet's (ḡ·A⁻¹ fits) and
// float32 B̄ = A⁻¹X̄ in Potrs' (Ā fits; B's gradient is not asked for).
func TestGradientIntermediatesBeyondRange(t *testing.T) {
	cases := []struct {
		name  string
		dt    tensor.Dtype
		build func(g *G.ExprGraph, a *G.Node) (*G.Node, error) // the cost
		a     []float64
		inMsg string
	}{
		{"float64 Potri, C·sym(W) = 1e400", tensor.Float64, func(g *G.ExprGraph, a *G.Node) (*G.Node, error) {
			w := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("W"), G.WithValue(grTensor(tensor.Float64, []int{2, 2}, []float64{0, 1e200, 1e200, 0})))
			c, err := mgla.Potri(a)
			if err != nil {
				return nil, err
			}
			return G.Sum(G.Must(G.HadamardProd(c, w)))
		}, []float64{1e200, 0, 0, 1e-200}, "on the way"}, // C = diag(1e-200, 1e200): the lower triangle of C·sym(W)·C, which the gradient computes (it is symmetric), goes through (C·sym(W))₁₀ = 1e400
		{"float32 1e-12·LogDet, A⁻¹ beyond float32", tensor.Float32, func(g *G.ExprGraph, a *G.Node) (*G.Node, error) {
			ld, err := mgla.LogDet(a)
			if err != nil {
				return nil, err
			}
			return G.Mul(ld, G.NewConstant(float32(1e-12)))
		}, []float64{1e-39, 0, 0, 1}, ""},
		{"float32 Potrs, B̄ = 1e40", tensor.Float32, func(g *G.ExprGraph, a *G.Node) (*G.Node, error) {
			b := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 1), G.WithName("B"), G.WithValue(grTensor(tensor.Float32, []int{2, 1}, []float64{1e-30, 0})))
			w := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 1), G.WithName("W"), G.WithValue(grTensor(tensor.Float32, []int{2, 1}, []float64{1e20, 0})))
			x, err := mgla.Potrs(a, b)
			if err != nil {
				return nil, err
			}
			return G.Sum(G.Must(G.HadamardProd(x, w)))
		}, []float64{1e-20, 0, 0, 1}, ""},
	}
	for _, c := range cases {
		for _, lisp := range []bool{false, true} {
			name := fmt.Sprintf("%s/lisp=%v", c.name, lisp)
			g := G.NewGraph()
			a := G.NewMatrix(g, c.dt, G.WithShape(2, 2), G.WithName("A"), G.WithValue(grTensor(c.dt, []int{2, 2}, c.a)))
			cost, err := c.build(g, a)
			require.NoError(t, err, name)
			err = grRunBackward(t, g, cost, lisp, a)
			require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNonFinite), "%s: want ErrNonFinite, got %v", name, err)
			require.Contains(t, err.Error(), c.inMsg, name)
		}
	}
}

// grRunBackward runs g forward and backward to the gradient of cost with
// respect to wrt, through Grad and the TapeMachine or through the
// LispMachine, and returns RunAll's error.
func grRunBackward(t *testing.T, g *G.ExprGraph, cost *G.Node, lisp bool, wrt ...*G.Node) error {
	t.Helper()
	var m G.VM
	if lisp {
		m = G.NewLispMachine(g)
	} else {
		_, err := G.Grad(cost, wrt...)
		require.NoError(t, err)
		m = G.NewTapeMachine(g)
	}
	defer m.Close()
	return m.RunAll()
}

// grTensor is a host tensor of dtype dt (float32 or float64) holding v.
func grTensor(dt tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		v32 := make([]float32, len(v))
		for i, x := range v {
			v32[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v32))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
}

// TestGradientProductsByBlocks: the backward products whose symmetric
// results are formed by column blocks of 256, their lower triangles only
// (Potri's −C·sym(C̄)·C, Syevd's V·(diag(w̄) + sym(F∘(VᵀV̄)))·Vᵀ), at orders
// of two and three blocks, against the formulas in float64 (gonum) on the
// op's own forward results; float64 and float32, TapeMachine.
func TestGradientProductsByBlocks(t *testing.T) {
	rng := grRNG(t, 30)
	for _, n := range []int{300, 520} {
		a := grSpectral(rng, n) // eigenvalues apart: Syevd's gradient is well defined
		w1, w2 := grRandom(rng, n, n), grRandom(rng, n, n)
		u := grRandom(rng, n, 0)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			what := fmt.Sprintf("N=%d %v seed=%d", n, dt, grSeed)
			g := G.NewGraph()
			an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(a.dense(dt)))
			inv, err := mgla.Potri(an)
			require.NoError(t, err, what)
			w, v, err := mgla.Syevd(an)
			require.NoError(t, err, what)
			var cv, wv, vv G.Value
			G.Read(inv, &cv)
			G.Read(w, &wv)
			G.Read(v, &vv)
			weighted := func(x *G.Node, m grMat, name string) *G.Node {
				mn := G.NewTensor(g, dt, len(m.shape()), G.WithShape(m.shape()...), G.WithName(name), G.WithValue(m.dense(dt)))
				return G.Must(G.Sum(G.Must(G.HadamardProd(x, mn))))
			}
			cost := G.Must(G.Add(weighted(inv, w1, "W1"), weighted(v, w2, "W2")))
			cost = G.Must(G.Add(cost, weighted(w, u, "u")))
			require.NoError(t, grRunBackward(t, g, cost, false, an), what)
			gv, err := an.Grad()
			require.NoError(t, err, what)
			got := grValue(t, gv)
			c, lam, vecs := grValue(t, cv), grValue(t, wv), grValue(t, vv)
			want := grBlocksReference(n, c, lam, vecs, w1.data, w2.data, u.data)
			var diff, norm float64
			for i := range want {
				diff += (got[i] - want[i]) * (got[i] - want[i])
				norm += want[i] * want[i]
			}
			tol := 1e-11
			if dt == tensor.Float32 {
				tol = 1e-4
			}
			if e := math.Sqrt(diff / norm); !(e <= tol) {
				t.Errorf("%s: relative error %.3g, want ≤ %g", what, e, tol)
			}
		}
	}
}

// grBlocksReference is the gradient of Σ W1∘Potri(A) + Σ W2∘V + Σ u∘w in
// float64 from the forward results C = A⁻¹, w and V (row-major):
// −C·sym(W1)·C + sym(V·(diag(u) + F∘(Vᵀ·W2))·Vᵀ), F_ij = 1/(w_j − w_i) off
// the diagonal and 0 on it.
func grBlocksReference(n int, c, w, v, w1, w2, u []float64) []float64 {
	cm, vm := mat.NewDense(n, n, c), mat.NewDense(n, n, v)
	s := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			s.Set(i, j, (w1[i*n+j]+w1[j*n+i])/2)
		}
	}
	var cs, potri mat.Dense
	cs.Mul(cm, s)
	potri.Mul(&cs, cm)
	var m mat.Dense
	m.Mul(vm.T(), mat.NewDense(n, n, w2))
	for i := range n {
		for j := range n {
			if i == j {
				m.Set(i, i, u[i])
			} else {
				m.Set(i, j, m.At(i, j)/(w[j]-w[i]))
			}
		}
	}
	var vmv, eig mat.Dense
	vmv.Mul(vm, &m)
	eig.Mul(&vmv, vm.T())
	out := make([]float64, n*n)
	for i := range n {
		for j := range n {
			out[i*n+j] = -potri.At(i, j) + (eig.At(i, j)+eig.At(j, i))/2
		}
	}
	return out
}
