package mgla_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mgla/mgla"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// densityReference is the log density of y's k columns under N(0, K) in
// float64 through gonum: −½·tr(yᵀK⁻¹y) − (k/2)·log det K − (n·k/2)·log 2π.
func densityReference(t *testing.T, k []float64, y []float64, n, cols int) float64 {
	t.Helper()
	var ch mat.Cholesky
	require.True(t, ch.Factorize(mat.NewSymDense(n, k)), "reference: K not positive definite")
	ym := mat.NewDense(n, cols, y)
	var x mat.Dense
	require.NoError(t, ch.SolveTo(&x, ym))
	quad := mat.Sum(mat.DenseCopyOf(elementwise(ym, &x)))
	return -quad/2 - float64(cols)*ch.LogDet()/2 - float64(n*cols)*math.Log(2*math.Pi)/2
}

func elementwise(a, b mat.Matrix) mat.Matrix {
	var p mat.Dense
	p.MulElem(a, b)
	return &p
}

// complexDensityReference is the log density of y's columns under the
// circularly-symmetric complex normal CN(0, K) through the real normal of
// [Re y; Im y] with covariance ½·[[Re K, −Im K], [Im K, Re K]], whose log
// density is the complex one's.
func complexDensityReference(t *testing.T, k, y []complex128, n, cols int) float64 {
	t.Helper()
	r := make([]float64, 4*n*n)
	for i := range n {
		for j := range n {
			v := k[i*n+j] / 2
			r[i*2*n+j], r[i*2*n+n+j] = real(v), -imag(v)
			r[(n+i)*2*n+j], r[(n+i)*2*n+n+j] = imag(v), real(v)
		}
	}
	z := make([]float64, 2*n*cols)
	for i := range n {
		for j := range cols {
			z[i*cols+j], z[(n+i)*cols+j] = real(y[i*cols+j]), imag(y[i*cols+j])
		}
	}
	return densityReference(t, r, z, 2*n, cols)
}

// TestGaussianLogDensity checks the value against the float64 references,
// for the four dtypes, vector and matrix right-hand sides, on meshes of 1–3
// devices with orders that are not multiples of the tile.
func TestGaussianLogDensity(t *testing.T) {
	rng := grRNG(t, 40)
	for _, cf := range []struct{ ndev, n, tile, k int }{{1, 7, 3, 0}, {1, 9, 4, 10}, {2, 11, 4, 3}, {3, 13, 2, 10}} {
		t.Run(fmt.Sprintf("ndev=%d n=%d k=%d", cf.ndev, cf.n, cf.k), func(t *testing.T) {
			mesh, err := testMesh(t, cf.ndev)
			require.NoError(t, err)
			cols := max(cf.k, 1)
			a := grSPD(rng, cf.n)
			y := grRandom(rng, cf.n, cf.k)
			// A Hermitian positive definite K = A + i·S, S skew-symmetric and
			// small next to A's smallest eigenvalue (at least n/2 by grSPD).
			kc := make([]complex128, cf.n*cf.n)
			for i := range cf.n {
				for j := range i {
					s := 0.1 * (rng.Float64()*2 - 1)
					kc[i*cf.n+j] = complex(a.data[i*cf.n+j], s)
					kc[j*cf.n+i] = complex(a.data[j*cf.n+i], -s)
				}
				kc[i*cf.n+i] = complex(a.data[i*cf.n+i], 0)
			}
			yc := make([]complex128, len(y.data))
			for i, v := range y.data {
				yc[i] = complex(v, rng.NormFloat64())
			}
			want := densityReference(t, a.data, y.data, cf.n, cols)
			wantC := complexDensityReference(t, kc, yc, cf.n, cols)
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Complex128, tensor.Complex64} {
				what := fmt.Sprintf("ndev=%d n=%d T=%d k=%d %v seed=%d", cf.ndev, cf.n, cf.tile, cf.k, dt, grSeed)
				g := G.NewGraph()
				var kn, yn *G.Node
				ref, tol := want, 1e-12
				switch dt {
				case tensor.Complex128, tensor.Complex64:
					kn = G.NewMatrix(g, dt, G.WithShape(cf.n, cf.n), G.WithName("K"), G.WithValue(complexDense(dt, kc, cf.n, cf.n)))
					yn = G.NewTensor(g, dt, len(y.shape()), G.WithShape(y.shape()...), G.WithName("y"), G.WithValue(complexDense(dt, yc, y.shape()...)))
					ref = wantC
				default:
					kn, yn = a.node(g, dt, "K"), y.node(g, dt, "y")
				}
				if dt == tensor.Float32 || dt == tensor.Complex64 {
					tol = 1e-5
				}
				ld, err := mgla.GaussianLogDensity(kn, yn, onMesh(mesh), mgla.WithTile(cf.tile))
				require.NoError(t, err, what)
				m := G.NewTapeMachine(g)
				require.NoError(t, m.RunAll(), what)
				m.Close()
				got := grValue(t, ld.Value())[0]
				require.InDelta(t, ref, got, tol*math.Max(1, math.Abs(ref)), what)
				require.Equal(t, realDtype(dt), ld.Dtype(), what)
			}
		})
	}
}

func complexDense(dt tensor.Dtype, v []complex128, shape ...int) *tensor.Dense {
	if dt == tensor.Complex64 {
		s := make([]complex64, len(v))
		for i, x := range v {
			s[i] = complex64(x)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(s))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]complex128(nil), v...)))
}

// TestGaussianLogDensityAgainstPotrsLogDet checks the value and the
// gradients of K and y against the same cost written with Potrs and LogDet
// (gradients Gorgonia sums from two ops), with ten right-hand sides (the
// backward pass's gemm branch) and one, on both machines.
func TestGaussianLogDensityAgainstPotrsLogDet(t *testing.T) {
	rng := grRNG(t, 41)
	for _, ndev := range []int{1, 2} {
		t.Run(fmt.Sprint(ndev), func(t *testing.T) { densityAgainstPotrsLogDet(t, rng, ndev) })
	}
}

func densityAgainstPotrsLogDet(t *testing.T, rng *rand.Rand, ndev int) {
	mesh, err := testMesh(t, ndev)
	require.NoError(t, err)
	opts := []mgla.Option{onMesh(mesh), mgla.WithTile(5)}
	for _, k := range []int{10, 0} {
		const n = 17
		a, y := grSPD(rng, n), grRandom(rng, n, k)
		cols := float64(max(k, 1))
		composed := func(kn, yn *G.Node) *G.Node {
			x := G.Must(mgla.Potrs(kn, yn, opts...))
			ld := G.Must(mgla.LogDet(kn, opts...))
			quad := G.Must(G.Sum(G.Must(G.HadamardProd(yn, x))))
			v := G.Must(G.Sub(G.Must(G.Mul(G.NewConstant(-0.5), quad)), G.Must(G.Mul(G.NewConstant(cols/2), ld))))
			return G.Must(G.Sub(v, G.NewConstant(n*cols*math.Log(2*math.Pi)/2)))
		}
		fused := func(kn, yn *G.Node) *G.Node { return G.Must(mgla.GaussianLogDensity(kn, yn, opts...)) }
		run := func(cost func(kn, yn *G.Node) *G.Node, lisp bool) (v float64, gk, gy []float64) {
			g := G.NewGraph()
			kn, yn := a.node(g, tensor.Float64, "K"), y.node(g, tensor.Float64, "y")
			c := cost(kn, yn)
			var m G.VM
			if lisp {
				m = G.NewLispMachine(g.SubgraphRoots(c))
			} else {
				_, err := G.Grad(c, kn, yn)
				require.NoError(t, err)
				m = G.NewTapeMachine(g)
			}
			defer m.Close()
			require.NoError(t, m.RunAll())
			gkv, err := kn.Grad()
			require.NoError(t, err)
			gyv, err := yn.Grad()
			require.NoError(t, err)
			return grValue(t, c.Value())[0], grValue(t, gkv), grValue(t, gyv)
		}
		wv, wk, wy := run(composed, false)
		for _, lisp := range []bool{false, true} {
			what := fmt.Sprintf("ndev=%d k=%d lisp=%v seed=%d", ndev, k, lisp, grSeed)
			v, gk, gy := run(fused, lisp)
			require.InDelta(t, wv, v, 1e-12*math.Abs(wv), what)
			require.InDeltaSlice(t, wk, gk, 1e-12*grNorm(wk), what)
			require.InDeltaSlice(t, wy, gy, 1e-12*grNorm(wy), what)
			for i := range n {
				for j := range i {
					require.Equal(t, gk[i*n+j], gk[j*n+i], "%s: K̄ not exactly symmetric at (%d,%d)", what, i, j)
				}
			}
		}
	}
}

// TestGaussianLogDensityErrors checks the build-time errors (ErrBadInput,
// the graph unchanged) and the run-time ones: a K that is not positive
// definite, a y with NaN.
func TestGaussianLogDensityErrors(t *testing.T) {
	g := G.NewGraph()
	k := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("K"))
	y := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("y"))
	for _, c := range []struct {
		name string
		k, y *G.Node
		opts []mgla.Option
	}{
		{"nil K", nil, y, nil},
		{"nil y", k, nil, nil},
		{"not square", G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("R")), y, nil},
		{"rows", k, G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("y4")), nil},
		{"dtype", k, G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("y32")), nil},
		{"rank 3", k, G.NewTensor(g, tensor.Float64, 3, G.WithShape(3, 1, 1), G.WithName("y3")), nil},
		{"tile", k, y, []mgla.Option{mgla.WithTile(0)}},
		{"grid complex", G.NewMatrix(g, tensor.Complex128, G.WithShape(3, 3), G.WithName("Kc")),
			G.NewVector(g, tensor.Complex128, G.WithShape(3), G.WithName("yc")), []mgla.Option{mgla.WithGrid(&recorder{})}},
	} {
		before := g.AllNodes()
		_, err := mgla.GaussianLogDensity(c.k, c.y, c.opts...)
		require.ErrorIs(t, err, mgla.ErrBadInput, c.name)
		require.Equal(t, before, g.AllNodes(), "%s: the graph changed", c.name)
	}

	for _, c := range []struct {
		name string
		k, y []float64
		want error
	}{
		{"indefinite", []float64{1, 2, 0, 2, 1, 0, 0, 0, 1}, []float64{1, 1, 1}, mgla.ErrNotPositiveDefinite},
		{"NaN in y", []float64{2, 0, 0, 0, 2, 0, 0, 0, 2}, []float64{1, math.NaN(), 1}, mgla.ErrNonFinite},
	} {
		g := G.NewGraph()
		kv := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), c.k...)))
		yv := tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), c.y...)))
		kn := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("K"), G.WithValue(kv))
		yn := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("y"), G.WithValue(yv))
		ld, err := mgla.GaussianLogDensity(kn, yn)
		require.NoError(t, err, c.name)
		_, err = G.Grad(ld, kn, yn)
		require.NoError(t, err, c.name)
		m := G.NewTapeMachine(g)
		err = m.RunAll()
		m.Close()
		require.True(t, errors.Is(mgla.Cause(err), c.want), "%s: %v", c.name, err)
		require.Equal(t, c.k, kv.Data(), "%s: K changed", c.name)
		require.Equal(t, fmt.Sprint(c.y), fmt.Sprint(yv.Data()), "%s: y changed", c.name)
	}
}

// TestGaussianLogDensityRange: float32 results beyond the range are
// ErrNonFinite, the value (summed in float64, so −2e38 from terms whose sum
// is −4e38 is right) and ȳ = −ḡ·α, which overflowed to a silent −Inf
// where K̄ fits (a review's finding), on both machines.
func TestGaussianLogDensityRange(t *testing.T) {
	f32 := func(g *G.ExprGraph, name string, shape []int, v ...float32) *G.Node {
		return G.NewTensor(g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))))
	}
	eye4 := []float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}
	for _, c := range []struct {
		name string
		v    float32 // y = (v, v, v, v), K = I₄: the density is −2v² − 2·log 2π
		want float64 // 0: ErrNonFinite
	}{{"fits", 1e19, -2e38}, {"beyond", 2e19, 0}} {
		g := G.NewGraph()
		ld, err := mgla.GaussianLogDensity(f32(g, "K", []int{4, 4}, eye4...), f32(g, "y", []int{4}, c.v, c.v, c.v, c.v))
		require.NoError(t, err)
		m := G.NewTapeMachine(g)
		err = m.RunAll()
		m.Close()
		if c.want == 0 {
			require.ErrorIs(t, mgla.Cause(err), mgla.ErrNonFinite, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.InDelta(t, c.want, float64(ld.Value().Data().(float32)), 1e32, c.name)
	}
	for _, lisp := range []bool{false, true} {
		// K = I₂, y = (1.5, 1.5), cost s·density with s = 2.5e38: K̄ fits
		// (at most 2.81e38), ȳ = −s·α = −3.75e38 does not.
		g := G.NewGraph()
		k, y := f32(g, "K", []int{2, 2}, 1, 0, 0, 1), f32(g, "y", []int{2}, 1.5, 1.5)
		ld, err := mgla.GaussianLogDensity(k, y)
		require.NoError(t, err)
		s := G.NewScalar(g, tensor.Float32, G.WithName("s"), G.WithValue(float32(2.5e38)))
		cost := G.Must(G.Mul(G.Must(G.Sub(ld, G.NewConstant(float32(-4.087877)))), s))
		err = grRunBackward(t, g, cost, lisp, k, y)
		require.ErrorIs(t, mgla.Cause(err), mgla.ErrNonFinite, "lisp %v", lisp)
	}
}
