//go:build mglacuda

package sharding

import (
	"flag"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// The kernel matrix of every family and its gradient on GPU meshes (GPU 0,
// and every visible GPU) agree with a CPU mesh of as many devices, in both
// real dtypes, for orders that are and are not multiples of the tile,
// dimensions 1, 3, 7 and 17, block-cyclic and column-block layouts and
// points that coincide: K to an exp's rounding, exactly symmetric, with the
// CPU's diagonal; SetKernelMatrix writes KernelMatrix's K bit for bit; the
// gradient within the rounding of its sums, bit for bit the same whether its
// columns go through the device scratch in one chunk or several; a NaN in K̄
// is ErrNonFinite on both.
func TestKernelMatrixOnGPU(t *testing.T) {
	first, err := GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	meshes := []*Mesh{first}
	if all, err := GPUMesh(); err == nil && all.Size() > 1 {
		meshes = append(meshes, all)
	}
	rng, seed := seededRNG(t)
	cases := []struct {
		n, d   int
		layout Layout
	}{
		{1, 1, Cyclic(1)},
		{5, 3, Cyclic(2)},
		{37, 1, Cyclic(8)},
		{64, 7, Cyclic(16)},
		{100, 7, Cyclic(16)},
		{257, 3, ColBlocks()},
		{300, 7, Cyclic(64)},
		{61, 17, Cyclic(4)},
		{513, 1, Cyclic(32)},
	}
	const eps = 0x1p-52
	for _, mesh := range meshes {
		cpu, err := CPUMesh(mesh.Size())
		require.NoError(t, err)
		for _, c := range cases {
			n, d := c.n, c.d
			x := make([]float64, n*d)
			for k := range x {
				x[k] = 2 * rng.NormFloat64()
			}
			if n >= 4 {
				copy(x[3*d:4*d], x[:d]) // points 0 and 3 coincide
			}
			for _, fa := range []struct {
				f   KernelFamily
				ard bool
			}{{SquaredExp, false}, {Matern32, false}, {Matern52, false}, {SquaredExp, true}, {Matern52, true}} {
				f := fa.f
				p := KernelParams{Family: f, LengthScale: 0.5 + 2*rng.Float64(), SignalVar: 0.2 + 2*rng.Float64(), NoiseVar: 0.1 * rng.Float64()}
				if fa.ard {
					p = withARD(rng, p, d)
				}
				for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
					what := fmt.Sprintf("seed %d, %v, n = %d, d = %d, %v, %v, %v, %+v", seed, mesh, n, d, c.layout, p.Family, dt, p)

					// K.
					want := gatherSE(t, cpu, x, n, d, p, c.layout, dt, what)
					gk, err := KernelMatrix(x, n, d, p, mesh, c.layout, dt)
					require.NoError(t, err, what)
					g, err := gk.Gather()
					require.NoError(t, err, what)
					got := floatsOf(g.Data())
					rel, tiny := 8*eps, 1e-300
					if dt == tensor.Float32 {
						rel, tiny = 0x1p-23, 1e-44
					}
					for i := range n {
						for j := range n {
							a, b := got[i*n+j], want[i*n+j]
							if math.Abs(a-b) > rel*math.Abs(b)+tiny || math.IsNaN(a) {
								t.Fatalf("%s: K[%d,%d] = %v, the CPU's %v", what, i, j, a, b)
							}
							if math.Float64bits(a) != math.Float64bits(got[j*n+i]) {
								t.Fatalf("%s: K[%d,%d] = %v but K[%d,%d] = %v", what, i, j, a, j, i, got[j*n+i])
							}
						}
						require.Equal(t, want[i*n+i], got[i*n+i], "%s: diagonal %d", what, i)
					}
					// SetKernelMatrix over other contents.
					set, err := Put(randomDense(rng, dt, n, n), mesh, c.layout)
					require.NoError(t, err, what)
					require.NoError(t, set.SetKernelMatrix(x, d, p), what)
					s, err := set.Gather()
					require.NoError(t, err, what)
					for k, v := range floatsOf(s.Data()) {
						if math.Float64bits(v) != math.Float64bits(got[k]) {
							t.Fatalf("%s: SetKernelMatrix's K[%d,%d] = %v, KernelMatrix's %v", what, k/n, k%n, v, got[k])
						}
					}
					set.Free()
					gk.Free()

					// The gradient, K̄ with exact zeros (some on the diagonal).
					kb := make([]float64, n*n)
					for k := range kb {
						if rng.IntN(5) > 0 {
							kb[k] = rng.NormFloat64()
						}
					}
					if dt == tensor.Float32 {
						for k, v := range kb {
							kb[k] = float64(float32(v))
						}
					}
					wantX, wantP := gradSE(t, cpu, kb, x, n, d, p, c.layout, dt, what)
					gotX, gotP := gradSE(t, mesh, kb, x, n, d, p, c.layout, dt, what)
					// Bounds: (terms + 16)·4ε times the sums of the terms' magnitudes.
					abs := make([]float64, n*n)
					for k, v := range kb {
						abs[k] = math.Abs(v)
					}
					absX := xbarMagnitudes(abs, x, n, d, p)
					_, absP := gradSE(t, cpu, abs, x, n, d, p, c.layout, dt, what)
					sumTol := float64(4*(n*n+16)) * eps
					checks := [][3]float64{
						{gotP.LengthScale, wantP.LengthScale, absP.LengthScale},
						{gotP.SignalVar, wantP.SignalVar, absP.SignalVar},
						{gotP.NoiseVar, wantP.NoiseVar, absP.NoiseVar},
					}
					require.Len(t, gotP.LengthScales, len(p.LengthScales), what)
					for k := range gotP.LengthScales {
						checks = append(checks, [3]float64{gotP.LengthScales[k], wantP.LengthScales[k], absP.LengthScales[k]})
					}
					for _, v := range checks {
						if math.Abs(v[0]-v[1]) > sumTol*v[2] {
							t.Fatalf("%s: p̄ = %+v, the CPU's %+v (magnitudes %+v)", what, gotP, wantP, absP)
						}
					}
					xTol := float64(4*(2*n+16)) * eps
					for k := range wantX {
						if math.Abs(gotX[k]-wantX[k]) > xTol*absX[k] || math.IsNaN(gotX[k]) {
							t.Fatalf("%s: x̄[%d,%d] = %v, the CPU's %v (magnitude %v)", what, k/d, k%d, gotX[k], wantX[k], absX[k])
						}
					}
					// Chunks of one and of three columns: the same sums in the same order.
					for _, cols := range []int{1, 3} {
						func() {
							defer func(old int) { kernelScratchBytes = old }(kernelScratchBytes)
							kernelScratchBytes = 8 * n * cols
							cx, cp := gradSE(t, mesh, kb, x, n, d, p, c.layout, dt, what)
							require.Equal(t, gotP, cp, "%s: %d-column chunks", what, cols)
							for k := range cx {
								if math.Float64bits(cx[k]) != math.Float64bits(gotX[k]) {
									t.Fatalf("%s: %d-column chunks: x̄[%d,%d] = %v, in one chunk %v", what, cols, k/d, k%d, cx[k], gotX[k])
								}
							}
						}()
					}
					// A NaN in K̄ reaches the result.
					kb[rng.IntN(n*n)] = math.NaN()
					for _, m := range []*Mesh{cpu, mesh} {
						kt := mustPut(t, m, kb, n, c.layout, dt)
						_, _, err := KernelMatrixGrad(kt, x, d, p)
						require.ErrorIs(t, err, ErrNonFinite, "%s: a NaN in K̄ on %v", what, m)
						kt.Free()
					}
				}
			}
		}
	}
}

// gatherSE is KernelMatrix on mesh, gathered (row-major, as float64).
func gatherSE(t *testing.T, mesh *Mesh, x []float64, n, d int, p KernelParams, layout Layout, dt tensor.Dtype, what string) []float64 {
	k, err := KernelMatrix(x, n, d, p, mesh, layout, dt)
	require.NoError(t, err, what)
	defer k.Free()
	g, err := k.Gather()
	require.NoError(t, err, what)
	return append([]float64(nil), floatsOf(g.Data())...)
}

// gradSE is KernelMatrixGrad of the row-major kb (of dt) on mesh.
func gradSE(t *testing.T, mesh *Mesh, kb, x []float64, n, d int, p KernelParams, layout Layout, dt tensor.Dtype, what string) ([]float64, KernelParams) {
	kt := mustPut(t, mesh, kb, n, layout, dt)
	defer kt.Free()
	xbar, pbar, err := KernelMatrixGrad(kt, x, d, p)
	require.NoError(t, err, "%s on %v", what, mesh)
	return xbar, pbar
}

func mustPut(t *testing.T, mesh *Mesh, a []float64, n int, layout Layout, dt tensor.Dtype) *Tensor {
	kt, err := Put(denseOfFloats(dt, n, a), mesh, layout)
	require.NoError(t, err)
	return kt
}

// xbarMagnitudes is, for each x̄ᵢ[m], the sum of its terms' magnitudes,
// Σⱼ (|K̄ᵢⱼ| + |K̄ⱼᵢ|)·σ²·gᵢⱼ·|xᵢ[m] − xⱼ[m]|/ℓₘ², from abs = |K̄|, g the
// family's profile (KernelFamily.profile) at sᵢⱼ = ‖xᵢ − xⱼ‖²/ℓ².
func xbarMagnitudes(abs, x []float64, n, d int, p KernelParams) []float64 {
	out := make([]float64, n*d)
	ells := p.scales(d)
	for i := range n {
		for j := range n {
			_, g := p.Family.profile(scaledDistance2(x[i*d:(i+1)*d], x[j*d:(j+1)*d], ells))
			w := (abs[i*n+j] + abs[j*n+i]) * p.SignalVar * g
			for m := range d {
				out[i*d+m] += w * math.Abs(x[i*d+m]-x[j*d+m]) / (ells[m] * ells[m])
			}
		}
	}
	return out
}

var kernelBenchGPU = flag.Bool("mgla.se-gpu", false, "BenchmarkKernelMatrix on every visible GPU")

func init() {
	cpu := kernelBenchMesh
	kernelBenchMesh = func() (*Mesh, error) {
		if *kernelBenchGPU {
			return GPUMesh()
		}
		return cpu()
	}
}

// kernelSlabs cuts every count of local columns into slabs that cover them, none
// empty, as many as give about 2¹⁹ threads, each of at least 32 columns
// (one slab for fewer than 64).
func TestKernelMatrixSlabs(t *testing.T) {
	for _, c := range []struct{ n, d, lcols int }{
		{1, 1, 1}, {31, 1, 31}, {64, 1, 64}, {513, 1, 257}, {4096, 3, 4096}, {4096, 1, 2048},
		{8192, 64, 8192}, {100000, 1, 33333}, {1 << 20, 3, 5},
	} {
		nslabs, slab := kernelSlabs(c.n, c.d, c.lcols)
		what := fmt.Sprintf("%+v: %d slabs of %d", c, nslabs, slab)
		require.True(t, nslabs >= 1 && slab >= 1, what)
		require.True(t, nslabs*slab >= c.lcols && (nslabs-1)*slab < c.lcols, what)
		require.True(t, nslabs == 1 || slab >= 32, what)
		require.LessOrEqual(t, nslabs*c.n*c.d, (1<<19)+c.n*c.d, what)
	}
}
