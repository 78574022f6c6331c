package sharding

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// kernelReference is the kernel matrix, row-major, by the families'
// definitions in r = ‖xᵢ − xⱼ‖/ℓ.
func kernelReference(x []float64, n, d int, p KernelParams) []float64 {
	k := crossReference(x, n, x, n, d, p)
	for i := range n {
		k[i*n+i] += p.NoiseVar
	}
	return k
}

// crossReference is the m×n kernel between the rows of xs and x, without
// the noise, by the families' definitions.
func crossReference(xs []float64, m int, x []float64, n, d int, p KernelParams) []float64 {
	k := make([]float64, m*n)
	for i := range m {
		for j := range n {
			r2 := 0.0
			for q := range d {
				ell := p.LengthScale
				if p.LengthScales != nil {
					ell = p.LengthScales[q]
				}
				diff := (xs[i*d+q] - x[j*d+q]) / ell
				r2 += diff * diff
			}
			r := math.Sqrt(r2)
			switch p.Family {
			case SquaredExp:
				k[i*n+j] = p.SignalVar * math.Exp(-r*r/2)
			case Matern32:
				k[i*n+j] = p.SignalVar * (1 + math.Sqrt(3)*r) * math.Exp(-math.Sqrt(3)*r)
			case Matern52:
				k[i*n+j] = p.SignalVar * (1 + math.Sqrt(5)*r + 5*r*r/3) * math.Exp(-math.Sqrt(5)*r)
			}
		}
	}
	return k
}

// kernelCost is Σ K̄∘K, whose gradient KernelMatrixGrad gives for kbar.
func kernelCost(kbar, x []float64, n, d int, p KernelParams) float64 {
	s := 0.0
	for i, v := range kernelReference(x, n, d, p) {
		s += kbar[i] * v
	}
	return s
}

func randomKernel(rng *rand.Rand, n, d int, f KernelFamily) ([]float64, KernelParams) {
	x := make([]float64, n*d)
	for i := range x {
		x[i] = 3 * rng.NormFloat64()
	}
	return x, KernelParams{Family: f, LengthScale: 0.5 + 2*rng.Float64(), SignalVar: 0.5 + rng.Float64(), NoiseVar: 0.1 * rng.Float64()}
}

var kernelFamilies = []KernelFamily{SquaredExp, Matern32, Matern52}

func float64s(t *testing.T, d *tensor.Dense) []float64 {
	switch v := d.Data().(type) {
	case []float64:
		return v
	case []float32:
		out := make([]float64, len(v))
		for i, f := range v {
			out[i] = float64(f)
		}
		return out
	}
	t.Fatalf("unexpected data %T", d.Data())
	return nil
}

type kernelCase struct {
	devices int
	layout  Layout
	n, d    int
}

var kernelCases = []kernelCase{
	{1, Cyclic(4), 1, 1},
	{1, Cyclic(8), 13, 2},
	{2, Cyclic(3), 11, 1},
	{3, Cyclic(4), 17, 3},
	{3, ColBlocks(), 10, 4},
	{4, Cyclic(5), 7, 2}, // a device with no columns
}

// forKernelCases runs test for every case of kernelCases, kernel family,
// real dtype and length scale (one, or one per dimension), on a CPU mesh of
// the case's devices, with random points and parameters.
func forKernelCases(t *testing.T, rng *rand.Rand, test func(t *testing.T, mesh *Mesh, c kernelCase, dt tensor.Dtype, x []float64, p KernelParams)) {
	for _, c := range kernelCases {
		for _, f := range kernelFamilies {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				for _, ard := range []bool{false, true} {
					name := fmt.Sprintf("cpu%d/%v/n%d/d%d/%v/%v/ard=%t", c.devices, c.layout, c.n, c.d, f, dt, ard)
					t.Run(name, func(t *testing.T) {
						mesh, err := CPUMesh(c.devices)
						require.NoError(t, err)
						x, p := randomKernel(rng, c.n, c.d, f)
						if ard {
							p = withARD(rng, p, c.d)
						}
						test(t, mesh, c, dt, x, p)
					})
				}
			}
		}
	}
}

// withARD is p with a random length scale per dimension, 0.5 to 2.5.
func withARD(rng *rand.Rand, p KernelParams, d int) KernelParams {
	p.LengthScales = make([]float64, d)
	for k := range p.LengthScales {
		p.LengthScales[k] = 0.5 + 2*rng.Float64()
	}
	return p
}

func TestKernelMatrix(t *testing.T) {
	rng, seed := seededRNG(t)
	forKernelCases(t, rng, func(t *testing.T, mesh *Mesh, c kernelCase, dt tensor.Dtype, x []float64, p KernelParams) {
		k, err := KernelMatrix(x, c.n, c.d, p, mesh, c.layout, dt)
		require.NoError(t, err)
		defer k.Free()
		got, err := k.Gather()
		require.NoError(t, err)
		gv, want := float64s(t, got), kernelReference(x, c.n, c.d, p)
		tol := 1e-15
		if dt == tensor.Float32 {
			tol = 1e-7
		}
		for i := range want {
			require.InDelta(t, want[i], gv[i], tol*(p.SignalVar+p.NoiseVar), "seed %d entry %d", seed, i)
		}
		for i := range c.n {
			for j := range i {
				require.Equal(t, gv[i*c.n+j], gv[j*c.n+i], "seed %d: K not exactly symmetric at (%d, %d)", seed, i, j)
			}
		}
	})
}

func TestKernelMatrixGrad(t *testing.T) {
	rng, seed := seededRNG(t)
	forKernelCases(t, rng, func(t *testing.T, mesh *Mesh, c kernelCase, dt tensor.Dtype, x []float64, p KernelParams) {
		kbar := make([]float64, c.n*c.n) // not symmetric: every entry counts
		for i := range kbar {
			kbar[i] = rng.NormFloat64()
		}
		if dt == tensor.Float32 { // the values the tensor holds
			for i, v := range kbar {
				kbar[i] = float64(float32(v))
			}
		}
		host := tensor.New(tensor.WithShape(c.n, c.n), tensor.WithBacking(kbar))
		if dt == tensor.Float32 {
			f := make([]float32, len(kbar))
			for i, v := range kbar {
				f[i] = float32(v)
			}
			host = tensor.New(tensor.WithShape(c.n, c.n), tensor.WithBacking(f))
		}
		kb, err := Put(host, mesh, c.layout)
		require.NoError(t, err)
		defer kb.Free()
		xbar, pbar, err := KernelMatrixGrad(kb, x, c.d, p)
		require.NoError(t, err)

		// Central differences of Σ K̄∘K, in float64 whatever the dtype.
		const h = 1e-6
		fd := func(set func(dx float64) ([]float64, KernelParams)) float64 {
			xp, pp := set(h)
			xm, pm := set(-h)
			return (kernelCost(kbar, xp, c.n, c.d, pp) - kernelCost(kbar, xm, c.n, c.d, pm)) / (2 * h)
		}
		check := func(what string, got, want float64) {
			t.Helper()
			require.InDelta(t, want, got, 1e-6*(1+math.Abs(want)), "seed %d: %s", seed, what)
		}
		if p.LengthScales == nil {
			require.Nil(t, pbar.LengthScales)
			check("ℓ̄", pbar.LengthScale, fd(func(dx float64) ([]float64, KernelParams) { q := p; q.LengthScale += dx; return x, q }))
		} else {
			require.Len(t, pbar.LengthScales, c.d)
			require.Zero(t, pbar.LengthScale)
			for k := range c.d {
				check(fmt.Sprintf("ℓ̄[%d]", k), pbar.LengthScales[k], fd(func(dx float64) ([]float64, KernelParams) {
					q := p
					q.LengthScales = append([]float64(nil), p.LengthScales...)
					q.LengthScales[k] += dx
					return x, q
				}))
			}
		}
		check("σ̄²", pbar.SignalVar, fd(func(dx float64) ([]float64, KernelParams) { q := p; q.SignalVar += dx; return x, q }))
		check("σ̄ₙ²", pbar.NoiseVar, fd(func(dx float64) ([]float64, KernelParams) { q := p; q.NoiseVar += dx; return x, q }))
		for i := range x {
			check(fmt.Sprintf("x̄[%d]", i), xbar[i], fd(func(dx float64) ([]float64, KernelParams) {
				xs := append([]float64(nil), x...)
				xs[i] += dx
				return xs, p
			}))
		}
	})
}

// TestKernelMatrixBadInput: bad parameters, points, tensors and
// results are errors that leave the tensor as it was.
func TestKernelMatrixBadInput(t *testing.T) {
	mesh, err := CPUMesh(2)
	require.NoError(t, err)
	x := []float64{0, 1, 2}
	good := KernelParams{LengthScale: 1, SignalVar: 1, NoiseVar: 0.1}
	k, err := KernelMatrix(x, 3, 1, good, mesh, Cyclic(2), tensor.Float64)
	require.NoError(t, err)
	defer k.Free()
	before, err := k.Gather()
	require.NoError(t, err)

	for _, c := range []struct {
		name string
		x    []float64
		d    int
		p    KernelParams
		want error
		// forwardOnly: the gradient has no such limit.
		forwardOnly bool
	}{
		{"zero length scale", x, 1, KernelParams{SquaredExp, 0, 1, 0, nil}, ErrBadInput, false},
		{"unknown family", x, 1, KernelParams{Matern52 + 1, 1, 1, 0, nil}, ErrBadInput, false},
		{"negative length scale", x, 1, KernelParams{Matern32, -1, 1, 0, nil}, ErrBadInput, false},
		{"NaN length scale", x, 1, KernelParams{Matern52, math.NaN(), 1, 0, nil}, ErrBadInput, false},
		{"negative signal variance", x, 1, KernelParams{SquaredExp, 1, -1, 0, nil}, ErrBadInput, false},
		{"infinite signal variance", x, 1, KernelParams{SquaredExp, 1, math.Inf(1), 0, nil}, ErrBadInput, false},
		{"negative noise", x, 1, KernelParams{SquaredExp, 1, 1, -1e-9, nil}, ErrBadInput, false},
		{"short points", x[:2], 1, good, ErrBadInput, false},
		{"points of another dimension", x, 3, good, ErrBadInput, false},
		{"NaN point", []float64{0, math.NaN(), 2}, 1, good, ErrNonFinite, false},
		{"diagonal beyond float64", x, 1, KernelParams{Matern32, 1, math.MaxFloat64, math.MaxFloat64, nil}, ErrNonFinite, true},
		{"zero length scale of a dimension", x, 1, KernelParams{SquaredExp, 1, 1, 0, []float64{0}}, ErrBadInput, false},
		{"NaN length scale of a dimension", x, 1, KernelParams{Matern52, 1, 1, 0, []float64{math.NaN()}}, ErrBadInput, false},
		{"length scales of another dimension", x, 1, KernelParams{Matern32, 1, 1, 0, []float64{1, 1}}, ErrBadInput, false},
		{"an empty list of length scales", x, 1, KernelParams{Matern32, 1, 1, 0, []float64{}}, ErrBadInput, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := k.SetKernelMatrix(c.x, c.d, c.p)
			require.ErrorIs(t, err, c.want)
			after, gerr := k.Gather()
			require.NoError(t, gerr)
			require.Equal(t, before.Data(), after.Data())
			if !c.forwardOnly {
				_, _, err = KernelMatrixGrad(k, c.x, c.d, c.p)
				require.ErrorIs(t, err, c.want)
			}
		})
	}

	k32, err := KernelMatrix(x, 3, 1, good, mesh, Cyclic(2), tensor.Float32)
	require.NoError(t, err)
	defer k32.Free()
	require.ErrorIs(t, k32.SetKernelMatrix(x, 1, KernelParams{SquaredExp, 1, 1e39, 0, nil}), ErrNonFinite)

	for _, c := range []struct {
		name   string
		layout Layout
		dt     tensor.Dtype
		shape  tensor.Shape
	}{
		{"row blocks", RowBlocks(), tensor.Float64, tensor.Shape{3, 3}},
		{"replicated", Replicated(), tensor.Float64, tensor.Shape{3, 3}},
		{"complex", Cyclic(2), tensor.Complex128, tensor.Shape{3, 3}},
		{"not square", Cyclic(2), tensor.Float64, tensor.Shape{3, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad, err := New(mesh, c.shape, c.dt, c.layout)
			require.NoError(t, err)
			defer bad.Free()
			require.ErrorIs(t, bad.SetKernelMatrix(x, 1, good), ErrBadInput)
			_, _, err = KernelMatrixGrad(bad, x, 1, good)
			require.ErrorIs(t, err, ErrBadInput)
		})
	}
	require.ErrorIs(t, KernelParams{Family: Matern32, SignalVar: 1, LengthScales: []float64{}}.Check(), ErrBadInput)
	_, err = KernelMatrix(x, 3, 1, good, mesh, RowBlocks(), tensor.Float64)
	require.ErrorIs(t, err, ErrBadInput)
	_, err = KernelMatrix(x, 3, 1, good, mesh, Cyclic(2), tensor.Complex64)
	require.ErrorIs(t, err, ErrBadInput)

	// A gradient of NaN is ErrNonFinite, not a NaN result.
	nan := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{0, 0, 0, 0, math.NaN(), 0, 0, 0, 0}))
	kb, err := Put(nan, mesh, Cyclic(2))
	require.NoError(t, err)
	defer kb.Free()
	_, _, err = KernelMatrixGrad(kb, x, 1, good)
	require.ErrorIs(t, err, ErrNonFinite)
}

var (
	kernelBenchN = flag.Int("mgla.se-n", 2048, "points of BenchmarkKernelMatrix")
	kernelBenchD = flag.Int("mgla.se-d", 3, "their dimension")
	// kernelBenchFamily is a KernelFamily: 0 squared exponential, 1 Matérn 3/2,
	// 2 Matérn 5/2.
	kernelBenchFamily = flag.Int("mgla.se-family", 0, "kernel family of BenchmarkKernelMatrix (0 SE, 1 Matérn 3/2, 2 Matérn 5/2)")
	// kernelBenchMesh makes the benchmark's mesh; the mglacuda build's tests
	// set it to a GPU mesh when -mgla.se-gpu is given.
	kernelBenchMesh = func() (*Mesh, error) { return CPUMesh(1) }
)

// BenchmarkKernelMatrix times SetKernelMatrix (forward) and
// KernelMatrixGrad (grad) of N = -mgla.se-n points of dimension
// -mgla.se-d in float64, K in one tile per device. Metric: ms, the median.
func BenchmarkKernelMatrix(b *testing.B) {
	n, d := *kernelBenchN, *kernelBenchD
	mesh, err := kernelBenchMesh()
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 2))
	x, p := randomKernel(rng, n, d, KernelFamily(*kernelBenchFamily))
	k, err := KernelMatrix(x, n, d, p, mesh, Cyclic((n+mesh.Size()-1)/mesh.Size()), tensor.Float64)
	require.NoError(b, err)
	defer k.Free()
	b.Logf("%v, N = %d, d = %d", mesh, n, d)
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"forward", func() error { return k.SetKernelMatrix(x, d, p) }},
		{"grad", func() error { _, _, err := KernelMatrixGrad(k, x, d, p); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			require.NoError(b, c.run()) // warm-up
			times := make([]float64, 0, b.N)
			for range b.N {
				t0 := time.Now()
				require.NoError(b, c.run())
				times = append(times, float64(time.Since(t0))/1e6)
			}
			slices.Sort(times)
			b.ReportMetric(times[len(times)/2], "ms")
		})
	}
}

// TestKernelMatrixScales: K depends on the points and ℓ only through
// ‖xᵢ − xⱼ‖/ℓ, so scaling both by c changes nothing, and the gradients of
// x and ℓ scale by 1/c, also where ‖xᵢ − xⱼ‖² or ℓ² alone would overflow or
// underflow (they gave NaNs of K).
func TestKernelMatrixScales(t *testing.T) {
	cpu, err := CPUMesh(2)
	require.NoError(t, err)
	meshes := []*Mesh{cpu}
	if gpuTestMeshes != nil {
		meshes = append(meshes, gpuTestMeshes(t)...)
	}
	for _, mesh := range meshes {
		kernelScales(t, mesh)
	}
}

func kernelScales(t *testing.T, mesh *Mesh) {
	for _, f := range kernelFamilies {
		kernelScalesOf(t, mesh, f)
	}
}

func kernelScalesOf(t *testing.T, mesh *Mesh, f KernelFamily) {
	unit := []float64{0, 0, 1, 0.5, 2.5, -1}
	kbar := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{0.3, -1, 2, 0.5, 1, -0.25, 1.5, 0, -2}))
	kb, err := Put(kbar, mesh, Cyclic(2))
	require.NoError(t, err)
	defer kb.Free()
	var wantK []float64
	var wantX []float64
	var wantP KernelParams
	for _, c := range []float64{1, 1e200, 1e-160, 1e-300} {
		x := make([]float64, len(unit))
		for i, v := range unit {
			x[i] = c * v
		}
		p := KernelParams{Family: f, LengthScale: 1.3 * c, SignalVar: 2, NoiseVar: 0.5}
		k, err := KernelMatrix(x, 3, 2, p, mesh, Cyclic(2), tensor.Float64)
		require.NoError(t, err, "%v, scale %g", mesh, c)
		g, err := k.Gather()
		k.Free()
		require.NoError(t, err)
		xbar, pbar, err := KernelMatrixGrad(kb, x, 2, p)
		require.NoError(t, err, "%v, scale %g", mesh, c)
		got := g.Data().([]float64)
		if c == 1 {
			wantK, wantX, wantP = got, xbar, pbar
			continue
		}
		for i := range got {
			require.InDelta(t, wantK[i], got[i], 1e-15, "scale %g: K[%d]", c, i)
		}
		for i := range xbar {
			require.InDelta(t, wantX[i], xbar[i]*c, 1e-14, "scale %g: x̄[%d]·c", c, i)
		}
		require.InDelta(t, wantP.LengthScale, pbar.LengthScale*c, 1e-14, "scale %g: ℓ̄·c", c)
		require.InDelta(t, wantP.SignalVar, pbar.SignalVar, 1e-15, "scale %g: σ̄²", c)
		require.Equal(t, wantP.NoiseVar, pbar.NoiseVar, "scale %g: σ̄ₙ²", c)
	}
}

// TestKernelMatrixFarPoints: points so far apart for their length scale
// that s = ‖xᵢ − xⱼ‖²/ℓ² is Inf (review: the gradient was 0·Inf = NaN,
// ErrNonFinite) give K = diag(σ² + σₙ²) and its exact gradient: x̄ = 0,
// ℓ̄ = 0, σ̄² = σ̄ₙ² = Σ K̄ᵢᵢ, for every family, on CPU and GPU meshes.
func TestKernelMatrixFarPoints(t *testing.T) {
	cpu, err := CPUMesh(2)
	require.NoError(t, err)
	meshes := []*Mesh{cpu}
	if gpuTestMeshes != nil {
		meshes = append(meshes, gpuTestMeshes(t)...)
	}
	kbar := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1.5, -2, 0.5, 1}))
	for _, mesh := range meshes {
		kb, err := Put(kbar, mesh, Cyclic(1))
		require.NoError(t, err)
		kbHuge, err := Put(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0, 1e300, -1e300, 0})), mesh, Cyclic(1))
		require.NoError(t, err)
		for _, f := range kernelFamilies {
			for _, c := range []struct {
				x   []float64
				ell float64
			}{{[]float64{0, 1}, 1e-300}, {[]float64{-1e200, 1e200}, 1}, {[]float64{-1e308, 1e308}, 1e10}} {
				p := KernelParams{Family: f, LengthScale: c.ell, SignalVar: 2, NoiseVar: 0.5}
				k, err := KernelMatrix(c.x, 2, 1, p, mesh, Cyclic(1), tensor.Float64)
				require.NoError(t, err)
				g, err := k.Gather()
				k.Free()
				require.NoError(t, err)
				require.Equal(t, []float64{2.5, 0, 0, 2.5}, g.Data(), "%v, %v, %v", mesh, f, c)
				xbar, pbar, err := KernelMatrixGrad(kb, c.x, 1, p)
				require.NoError(t, err, "%v, %v, %v", mesh, f, c)
				require.Equal(t, []float64{0, 0}, xbar, "%v, %v, %v", mesh, f, c)
				require.Equal(t, KernelParams{Family: f, LengthScale: 0, SignalVar: 2.5, NoiseVar: 2.5}, pbar, "%v, %v, %v", mesh, f, c)
			}
			// A weight K̄ᵢⱼ·σ² beyond float64 at a zero slope adds nothing
			// either (it made Inf·0 = NaN).
			huge := KernelParams{Family: f, LengthScale: 1, SignalVar: 1e300}
			xbar, pbar, err := KernelMatrixGrad(kbHuge, []float64{0, 1e10}, 1, huge)
			require.NoError(t, err, "%v, %v", mesh, f)
			require.Equal(t, []float64{0, 0}, xbar, "%v, %v", mesh, f)
			require.Equal(t, KernelParams{Family: f}, pbar, "%v, %v", mesh, f)
		}
		kb.Free()
		kbHuge.Free()
	}
	// The same for the kernel between two sets of points.
	for _, f := range kernelFamilies {
		p := KernelParams{Family: f, LengthScale: 1, SignalVar: 1e300}
		c, err := CrossKernel([]float64{0}, 1, []float64{1e10, -1e10}, 2, 1, p)
		require.NoError(t, err)
		require.Equal(t, []float64{0, 0}, c)
		xsbar, xbar, pbar, err := CrossKernelGrad([]float64{1e300, -1e300}, []float64{0}, 1, []float64{1e10, -1e10}, 2, 1, p)
		require.NoError(t, err, "%v", f)
		require.Equal(t, []float64{0}, xsbar)
		require.Equal(t, []float64{0, 0}, xbar)
		require.Equal(t, KernelParams{Family: f}, pbar)
	}
}

// TestCrossKernel: the kernel between two sets of points against the
// families' definitions and its gradient against central differences of
// Σ C̄∘C; of a set with itself, the kernel matrix less its noise, bit for bit.
func TestCrossKernel(t *testing.T) {
	rng, seed := seededRNG(t)
	mesh, err := CPUMesh(1)
	require.NoError(t, err)
	for _, c := range []struct{ m, n, d int }{{1, 1, 1}, {3, 7, 1}, {9, 4, 3}, {17, 13, 2}, {2, 40, 5}} {
		for _, f := range kernelFamilies {
			for _, ard := range []bool{false, true} {
				t.Run(fmt.Sprintf("m%d/n%d/d%d/%v/ard=%t", c.m, c.n, c.d, f, ard), func(t *testing.T) {
					x, p := randomKernel(rng, c.n, c.d, f)
					xs, _ := randomKernel(rng, c.m, c.d, f)
					if ard {
						p = withARD(rng, p, c.d)
					}
					got, err := CrossKernel(xs, c.m, x, c.n, c.d, p)
					require.NoError(t, err)
					want := crossReference(xs, c.m, x, c.n, c.d, p)
					for i := range want {
						require.InDelta(t, want[i], got[i], 1e-15*p.SignalVar, "seed %d entry %d", seed, i)
					}

					self, err := CrossKernel(x, c.n, x, c.n, c.d, p)
					require.NoError(t, err)
					k, err := KernelMatrix(x, c.n, c.d, p, mesh, Cyclic(4), tensor.Float64)
					require.NoError(t, err)
					defer k.Free()
					kh, err := k.Gather()
					require.NoError(t, err)
					kv := kh.Data().([]float64)
					for i := range c.n {
						for j := range c.n {
							if i != j {
								require.Equal(t, kv[i*c.n+j], self[i*c.n+j], "seed %d (%d, %d)", seed, i, j)
							}
						}
						require.Equal(t, p.SignalVar, self[i*c.n+i], "seed %d diagonal %d", seed, i)
					}

					cbar := make([]float64, c.m*c.n)
					for i := range cbar {
						cbar[i] = rng.NormFloat64()
					}
					xsbar, xbar, pbar, err := CrossKernelGrad(cbar, xs, c.m, x, c.n, c.d, p)
					require.NoError(t, err)
					require.Zero(t, pbar.NoiseVar)
					require.Equal(t, f, pbar.Family)
					cost := func(xs, x []float64, p KernelParams) float64 {
						s := 0.0
						for i, v := range crossReference(xs, c.m, x, c.n, c.d, p) {
							s += cbar[i] * v
						}
						return s
					}
					const h = 1e-6
					fd := func(set func(dx float64) ([]float64, []float64, KernelParams)) float64 {
						xsp, xp, pp := set(h)
						xsm, xm, pm := set(-h)
						return (cost(xsp, xp, pp) - cost(xsm, xm, pm)) / (2 * h)
					}
					check := func(what string, got, want float64) {
						t.Helper()
						require.InDelta(t, want, got, 1e-6*(1+math.Abs(want)), "seed %d: %s", seed, what)
					}
					if !ard {
						check("ℓ̄", pbar.LengthScale, fd(func(dx float64) ([]float64, []float64, KernelParams) { q := p; q.LengthScale += dx; return xs, x, q }))
					}
					for k := range pbar.LengthScales {
						check(fmt.Sprintf("ℓ̄[%d]", k), pbar.LengthScales[k], fd(func(dx float64) ([]float64, []float64, KernelParams) {
							q := p
							q.LengthScales = append([]float64(nil), p.LengthScales...)
							q.LengthScales[k] += dx
							return xs, x, q
						}))
					}
					require.Len(t, pbar.LengthScales, len(p.LengthScales))
					check("σ̄²", pbar.SignalVar, fd(func(dx float64) ([]float64, []float64, KernelParams) { q := p; q.SignalVar += dx; return xs, x, q }))
					for i := range xs {
						check(fmt.Sprintf("x̄s[%d]", i), xsbar[i], fd(func(dx float64) ([]float64, []float64, KernelParams) {
							moved := append([]float64(nil), xs...)
							moved[i] += dx
							return moved, x, p
						}))
					}
					for i := range x {
						check(fmt.Sprintf("x̄[%d]", i), xbar[i], fd(func(dx float64) ([]float64, []float64, KernelParams) {
							moved := append([]float64(nil), x...)
							moved[i] += dx
							return xs, moved, p
						}))
					}
				})
			}
		}
	}
}

// TestCrossKernelBadInput: bad parameters, points and gradients are errors.
func TestCrossKernelBadInput(t *testing.T) {
	x, xs := []float64{0, 1, 2}, []float64{0.5, 1.5}
	good := KernelParams{LengthScale: 1, SignalVar: 1}
	for _, c := range []struct {
		name string
		xs   []float64
		m    int
		x    []float64
		n, d int
		p    KernelParams
		cbar []float64
		want error
	}{
		{"zero length scale", xs, 2, x, 3, 1, KernelParams{SquaredExp, 0, 1, 0, nil}, make([]float64, 6), ErrBadInput},
		{"negative signal variance", xs, 2, x, 3, 1, KernelParams{Matern32, 1, -1, 0, nil}, make([]float64, 6), ErrBadInput},
		{"short first points", xs[:1], 2, x, 3, 1, good, make([]float64, 6), ErrBadInput},
		{"short second points", xs, 2, x[:2], 3, 1, good, make([]float64, 6), ErrBadInput},
		{"no first points", nil, 0, x, 3, 1, good, nil, ErrBadInput},
		{"NaN first point", []float64{math.NaN(), 1}, 2, x, 3, 1, good, make([]float64, 6), ErrNonFinite},
		{"Inf second point", xs, 2, []float64{0, math.Inf(-1), 2}, 3, 1, good, make([]float64, 6), ErrNonFinite},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CrossKernel(c.xs, c.m, c.x, c.n, c.d, c.p)
			require.ErrorIs(t, err, c.want)
			_, _, _, err = CrossKernelGrad(c.cbar, c.xs, c.m, c.x, c.n, c.d, c.p)
			require.ErrorIs(t, err, c.want)
		})
	}
	_, _, _, err := CrossKernelGrad(make([]float64, 5), xs, 2, x, 3, 1, good)
	require.ErrorIs(t, err, ErrBadInput)
	_, _, _, err = CrossKernelGrad([]float64{0, 0, math.NaN(), 0, 0, 0}, xs, 2, x, 3, 1, good)
	require.ErrorIs(t, err, ErrNonFinite)
	// A tiny length scale with points near enough for their terms to
	// count: ℓ̄ beyond float64.
	_, _, _, err = CrossKernelGrad([]float64{1e10}, []float64{0}, 1, []float64{1e-300}, 1, 1, KernelParams{SquaredExp, 1e-300, 1, 0, nil})
	require.ErrorIs(t, err, ErrNonFinite)
}

// TestKernelMatrixARDEqualScales: per-dimension length scales that are all
// ℓ give the kernel matrix, the kernel between two sets of points and their
// points' gradients of one length scale ℓ bit for bit, and Σₖ ℓₖ·ℓ̄ₖ = ℓ·ℓ̄, also
// for points 1e9 apart with ℓ = 1e-3 (scaling the points by ℓ before
// subtracting them lost 4 digits there).
func TestKernelMatrixARDEqualScales(t *testing.T) {
	rng, seed := seededRNG(t)
	mesh, err := CPUMesh(2)
	require.NoError(t, err)
	meshes := []*Mesh{mesh}
	if gpuTestMeshes != nil {
		meshes = append(meshes, gpuTestMeshes(t)...)
	}
	const n, d = 12, 3
	for _, mesh := range meshes {
		for _, f := range kernelFamilies {
			for _, far := range []float64{0, 1e9} {
				x := make([]float64, n*d)
				for i := range x {
					x[i] = 1e-3 * rng.NormFloat64()
					if i >= n*d/2 {
						x[i] += far
					}
				}
				iso := KernelParams{Family: f, LengthScale: 1e-3, SignalVar: 1.3, NoiseVar: 0.01}
				ard := iso
				ard.LengthScales = []float64{1e-3, 1e-3, 1e-3}
				var ks [2][]float64
				for a, p := range []KernelParams{iso, ard} {
					k, err := KernelMatrix(x, n, d, p, mesh, Cyclic(5), tensor.Float64)
					require.NoError(t, err)
					h, err := k.Gather()
					k.Free()
					require.NoError(t, err)
					ks[a] = h.Data().([]float64)
				}
				require.Equal(t, ks[0], ks[1], "seed %d, %v, %v, far %g", seed, mesh, f, far)
				kbar := make([]float64, n*n)
				for i := range kbar {
					kbar[i] = rng.NormFloat64()
				}
				kb, err := Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(kbar)), mesh, Cyclic(5))
				require.NoError(t, err)
				xbarIso, pbarIso, err := KernelMatrixGrad(kb, x, d, iso)
				require.NoError(t, err)
				xbarARD, pbarARD, err := KernelMatrixGrad(kb, x, d, ard)
				require.NoError(t, err)
				kb.Free()
				require.Equal(t, xbarIso, xbarARD, "seed %d, %v, %v, far %g", seed, mesh, f, far)
				require.Equal(t, pbarIso.SignalVar, pbarARD.SignalVar)
				require.Equal(t, pbarIso.NoiseVar, pbarARD.NoiseVar)
				sum := 0.0
				for k, l := range ard.LengthScales {
					sum += l * pbarARD.LengthScales[k]
				}
				require.InDelta(t, iso.LengthScale*pbarIso.LengthScale, sum, 1e-12*(1+math.Abs(sum)), "seed %d, %v, %v, far %g", seed, mesh, f, far)

				xs := x[:2*d]
				ciso, err := CrossKernel(xs, 2, x, n, d, iso)
				require.NoError(t, err)
				card, err := CrossKernel(xs, 2, x, n, d, ard)
				require.NoError(t, err)
				require.Equal(t, ciso, card)
			}
		}
	}
}
