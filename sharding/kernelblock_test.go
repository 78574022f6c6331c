package sharding

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/mgla/mgla/cyclic"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// gridIndices are the global rows and columns process (prow, pcol) of a
// 2-D block-cyclic distribution holds, in its local order.
func gridIndices(l cyclic.BlockCyclic2D, prow, pcol int) (rows, cols []int) {
	lr, lc := l.LocalShape(prow, pcol)
	for i := range lr {
		rows = append(rows, cyclic.IndexGlobal(i, l.MB, prow, l.P))
	}
	for j := range lc {
		cols = append(cols, cyclic.IndexGlobal(j, l.NB, pcol, l.Q))
	}
	return rows, cols
}

// TestKernelBlock checks that the blocks of a 2-D grid's processes are the
// kernel matrix's elements bit for bit, and that their gradient shares add
// up to KernelMatrixGrad's.
func TestKernelBlock(t *testing.T) {
	rng, seed := seededRNG(t)
	grids := [][3]int{{1, 1, 4}, {2, 1, 3}, {1, 3, 2}, {2, 2, 5}, {3, 2, 1}}
	forKernelCases(t, rng, func(t *testing.T, mesh *Mesh, c kernelCase, dt tensor.Dtype, x []float64, p KernelParams) {
		if dt != tensor.Float64 {
			t.Skip("KernelBlock computes in float64")
		}
		k, err := KernelMatrix(x, c.n, c.d, p, mesh, c.layout, dt)
		require.NoError(t, err)
		defer k.Free()
		whole, err := k.Gather()
		require.NoError(t, err)
		kv := float64s(t, whole)
		kbar := make([]float64, c.n*c.n)
		for i := range kbar {
			kbar[i] = rng.NormFloat64()
		}
		kb, err := Put(tensor.New(tensor.WithShape(c.n, c.n), tensor.WithBacking(kbar)), mesh, c.layout)
		require.NoError(t, err)
		defer kb.Free()
		wantX, wantP, err := KernelMatrixGrad(kb, x, c.d, p)
		require.NoError(t, err)
		for _, g := range grids {
			l := cyclic.BlockCyclic2D{Rows: c.n, Cols: c.n, MB: g[2], NB: g[2], P: g[0], Q: g[1]}
			sumX := make([]float64, c.n*c.d)
			var sumP []float64
			for prow := range l.P {
				for pcol := range l.Q {
					rows, cols := gridIndices(l, prow, pcol)
					blk, err := KernelBlock(x, c.n, c.d, rows, cols, p)
					require.NoError(t, err)
					bbar := make([]float64, len(rows)*len(cols))
					for j, cj := range cols {
						for i, ri := range rows {
							require.Equal(t, kv[ri*c.n+cj], blk[i+j*len(rows)], "seed %d grid %v: K(%d, %d)", seed, g, ri, cj)
							bbar[i+j*len(rows)] = kbar[ri*c.n+cj]
						}
					}
					xbar, pbar, err := KernelBlockGrad(bbar, x, c.n, c.d, rows, cols, p)
					require.NoError(t, err)
					for i, v := range xbar {
						sumX[i] += v
					}
					ps := append([]float64{pbar.LengthScale, pbar.SignalVar, pbar.NoiseVar}, pbar.LengthScales...)
					if sumP == nil {
						sumP = make([]float64, len(ps))
					}
					for i, v := range ps {
						sumP[i] += v
					}
				}
			}
			want := append([]float64{wantP.LengthScale, wantP.SignalVar, wantP.NoiseVar}, wantP.LengthScales...)
			for i := range want {
				require.InDelta(t, want[i], sumP[i], 1e-12*(1+math.Abs(want[i])), "seed %d grid %v: parameter %d", seed, g, i)
			}
			for i := range wantX {
				require.InDelta(t, wantX[i], sumX[i], 1e-12*(1+math.Abs(wantX[i])), "seed %d grid %v: x̄[%d]", seed, g, i)
			}
		}
	})
}

// TestKernelBlockBadInput: every point is checked, whichever the block
// reads, so that processes holding other blocks agree; bad indices and
// gradients are named.
func TestKernelBlockBadInput(t *testing.T) {
	x := []float64{0, 1, 2, 3}
	p := KernelParams{Family: SquaredExp, LengthScale: 1, SignalVar: 1, NoiseVar: 0.1}
	nan := []float64{0, 1, 2, math.NaN()}
	cases := []struct {
		name       string
		x          []float64
		rows, cols []int
		kbar       []float64
		p          KernelParams
		want       error
		text       string
	}{
		{"NaN point outside the block", nan, []int{0, 1}, []int{0}, []float64{1, 1}, p, ErrNonFinite, "point 3"},
		{"row index", x, []int{0, 4}, []int{0}, []float64{1, 1}, p, ErrBadInput, "index 4 of a kernel matrix of 4 points"},
		{"negative column", x, []int{0}, []int{-1}, []float64{1}, p, ErrBadInput, "index -1"},
		{"length scale", x, []int{0}, []int{0}, []float64{1}, KernelParams{Family: SquaredExp, LengthScale: 0, SignalVar: 1}, ErrBadInput, "length scale"},
		{"ARD scales", x, []int{0}, []int{0}, []float64{1}, KernelParams{Family: SquaredExp, LengthScales: []float64{1, 2}, SignalVar: 1}, ErrBadInput, "2 length scales for points of dimension 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := KernelBlock(c.x, 4, 1, c.rows, c.cols, c.p)
			require.True(t, errors.Is(err, c.want), "%v", err)
			require.ErrorContains(t, err, c.text)
			_, _, err = KernelBlockGrad(c.kbar, c.x, 4, 1, c.rows, c.cols, c.p)
			require.True(t, errors.Is(err, c.want), "%v", err)
			require.ErrorContains(t, err, c.text)
		})
	}
	for _, bad := range []float64{math.NaN(), math.Inf(-1)} {
		t.Run(fmt.Sprintf("gradient %v", bad), func(t *testing.T) {
			// The pair (3, 0) is far apart (weight 0): a NaN there would be skipped.
			far := []float64{0, 1, 2, 300}
			_, _, err := KernelBlockGrad([]float64{1, bad}, far, 4, 1, []int{2, 3}, []int{0}, p)
			require.True(t, errors.Is(err, ErrNonFinite), "%v", err)
			require.ErrorContains(t, err, fmt.Sprintf("holds %v at (3, 0)", bad))
		})
	}
	_, _, err := KernelBlockGrad([]float64{1}, x, 4, 1, []int{0, 1}, []int{0}, p)
	require.True(t, errors.Is(err, ErrBadInput), "%v", err)
	require.ErrorContains(t, err, "1 values for a 2×1 block")
}

// TestKernelParamsCheck: every bad parameter is ErrBadInput; NaN and Inf
// ones match ErrNonFinite too (a diverged training step), the others not.
func TestKernelParamsCheck(t *testing.T) {
	good := KernelParams{Family: Matern32, LengthScale: 1, SignalVar: 1, NoiseVar: 0.1}
	for _, c := range []struct {
		name      string
		change    func(p *KernelParams)
		nonFinite bool
		text      string
	}{
		{"NaN length scale", func(p *KernelParams) { p.LengthScale = math.NaN() }, true, "length scale must be positive"},
		{"zero length scale", func(p *KernelParams) { p.LengthScale = 0 }, false, "length scale must be positive"},
		{"Inf signal variance", func(p *KernelParams) { p.SignalVar = math.Inf(1) }, true, "signal variance must be ≥ 0"},
		{"negative signal variance", func(p *KernelParams) { p.SignalVar = -1 }, false, "signal variance"},
		{"NaN noise variance", func(p *KernelParams) { p.NoiseVar = math.NaN() }, true, "noise variance"},
		{"negative noise variance", func(p *KernelParams) { p.NoiseVar = -0.5 }, false, "noise variance"},
		{"Inf ARD scale", func(p *KernelParams) { p.LengthScales = []float64{1, math.Inf(1)} }, true, "length scale of dimension 1"},
		{"negative ARD scale", func(p *KernelParams) { p.LengthScales = []float64{-1, 1} }, false, "length scale of dimension 0"},
		{"unknown family", func(p *KernelParams) { p.Family = 9 }, false, "unknown kernel family"},
	} {
		p := good
		c.change(&p)
		err := p.Check()
		require.ErrorIs(t, err, ErrBadInput, c.name)
		require.Equal(t, c.nonFinite, errors.Is(err, ErrNonFinite), "%s: %v", c.name, err)
		require.ErrorContains(t, err, c.text, c.name)
	}
	require.NoError(t, good.Check())
}
