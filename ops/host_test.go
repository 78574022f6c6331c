package ops

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestHostKernelsOnScratch runs the host kernels on CPU meshes of several
// devices, where they work on buffers lent by the scratch pool, with the
// pool poisoned by NaNs before every call: each result must equal, bit for
// bit, the one-device mesh's (whose kernels write into the shard itself),
// for two matrices in turns and every dtype, so no stale contents of a
// reused buffer reach a result.
func TestHostKernelsOnScratch(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const n, k = 13, 3
	one, err := sharding.CPUMesh(1)
	require.NoError(t, err)
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Complex128, tensor.Complex64} {
		for _, c := range []struct {
			ndev   int
			layout sharding.Layout
		}{{2, sharding.Cyclic(4)}, {3, sharding.Cyclic(2)}, {3, sharding.RowBlocks()}} {
			t.Run(fmt.Sprintf("%v/ndev=%d/%v", dt, c.ndev, c.layout), func(t *testing.T) {
				mesh, err := sharding.CPUMesh(c.ndev)
				require.NoError(t, err)
				mats := []*tensor.Dense{randomHPD(rng, dt, n), randomHPD(rng, dt, n)}
				rhs := randomDense(rng, dt, n, k)
				for round := range 4 {
					a := mats[round%2]
					want := hostResults(t, one, sharding.Cyclic(4), dt, a, rhs)
					poisonScratch(dt, n*n, n*k)
					got := hostResults(t, mesh, c.layout, dt, a, rhs)
					for name, w := range want {
						require.Equal(t, w, got[name], "round %d: %s", round, name)
					}
				}
			})
		}
	}
}

// hostResults runs every host kernel on a and b on mesh and returns the
// results gathered as row-major host data by name.
func hostResults(t *testing.T, mesh *sharding.Mesh, layout sharding.Layout, dt tensor.Dtype, a, b *tensor.Dense) map[string]any {
	t.Helper()
	n, k := a.Shape()[0], b.Shape()[1]
	put := func(d *tensor.Dense) *sharding.Tensor {
		s, err := sharding.Put(d, mesh, layout)
		require.NoError(t, err)
		return s
	}
	alloc := func(rows, cols int) *sharding.Tensor {
		s, err := sharding.New(mesh, tensor.Shape{rows, cols}, dt, layout)
		require.NoError(t, err)
		return s
	}
	at, bt := put(a), put(b)
	l, x, c, v := alloc(n, n), alloc(n, k), alloc(n, n), alloc(n, n)
	w, wv := make([]float64, n), make([]float64, n)
	require.NoError(t, withHost(at, func(h hostKernels) error {
		for _, step := range []func() error{
			func() error { return h.potrf(at, l) },
			func() error { return h.checkFactor(l) },
			func() error { return h.potrs(l, bt, x) },
			func() error { return h.potri(l, c) },
			func() error { return h.syevd(at, w, nil) },
			func() error { return h.syevd(at, wv, v) },
		} {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}))
	out := map[string]any{"eigenvalues": w, "eigenvalues with vectors": wv}
	for name, s := range map[string]*sharding.Tensor{"L": l, "X": x, "inverse": c, "eigenvectors": v} {
		d, err := s.Gather()
		require.NoError(t, err)
		out[name] = d.Data()
	}
	return out
}

// poisonScratch lends the scratch pool's buffers of the sizes the kernels
// take, fills them with NaN and gives them back.
func poisonScratch(dt tensor.Dtype, sizes ...int) {
	for _, size := range sizes {
		for range 4 { // more than one buffer of a size is lent at once
			switch dt {
			case tensor.Float64:
				poison(size, math.NaN())
			case tensor.Float32:
				poison(size, float32(math.NaN()))
			case tensor.Complex128:
				poison(size, cmplx.NaN())
			default:
				poison(size, complex64(cmplx.NaN()))
			}
		}
	}
}

func poison[T any](size int, nan T) {
	buf, release := lend[T](size)
	buf = buf[:cap(buf)]
	for i := range buf {
		buf[i] = nan
	}
	release()
}

// randomDense is an n×k matrix of uniform entries in [-1, 1) of dtype dt.
func randomDense(rng *rand.Rand, dt tensor.Dtype, rows, cols int) *tensor.Dense {
	d := tensor.New(tensor.WithShape(rows, cols), tensor.Of(dt))
	for i := range rows {
		for j := range cols {
			re, im := 2*rng.Float64()-1, 2*rng.Float64()-1
			var e any
			switch dt {
			case tensor.Float32:
				e = float32(re)
			case tensor.Float64:
				e = re
			case tensor.Complex64:
				e = complex64(complex(re, im))
			default:
				e = complex(re, im)
			}
			if err := d.SetAt(e, i, j); err != nil {
				panic(err)
			}
		}
	}
	return d
}

// TestLend checks the scratch pool's bookkeeping: a buffer has the length
// asked for and its class's capacity (at most a quarter more), and element
// types and classes never mix.
func TestLend(t *testing.T) {
	for _, c := range []struct{ n, cap int }{
		{1, 1}, {3, 3}, {8, 8}, {9, 10}, {16, 16}, {17, 20}, {1000, 1024}, {1024, 1024}, {1025, 1280},
		{1000 * 1000, 1048576}, {3000 * 3000, 10485760}, {1 << 20, 1 << 20}, {1<<20 + 1, 5 << 18},
	} {
		require.Equal(t, c.cap, scratchCap(c.n), "n = %d", c.n)
		require.LessOrEqual(t, float64(c.cap), 1.25*float64(c.n), "n = %d", c.n)
	}
	for _, c := range []struct{ n, cap int }{{1, 1}, {3, 3}, {1000, 1024}, {1025, 1280}} {
		buf, release := lend[float64](c.n)
		require.Len(t, buf, c.n)
		require.Equal(t, c.cap, cap(buf), "n = %d", c.n)
		release()
	}
	empty, release := lend[float64](0)
	require.Empty(t, empty)
	release()

	// A float64 buffer given back is not lent as complex64 (the same bytes
	// per element), nor for more elements than its capacity.
	f, release := lend[float64](7)
	f[0] = 7
	release()
	c64, releaseC := lend[complex64](7)
	require.Equal(t, complex64(0), c64[0], "a new complex64 buffer, not the float64 one")
	releaseC()
	more, releaseMore := lend[float64](8)
	require.Equal(t, 8, cap(more))
	require.Zero(t, more[0], "a new buffer, not the one of 7")
	releaseMore()
}

// TestGradientsOnScratch runs the backward computations, whose temporaries
// and operand copies the scratch pool lends, once as they are and once with
// the pool's buffers of the sizes they take filled with NaN: the gradients
// must be the same bit for bit, on meshes of one and three devices, through
// the host path (A with several consumers) and the sharded one (a single
// Cholesky).
func TestGradientsOnScratch(t *testing.T) {
	rng := lgRNG(t, 7)
	const n, k = 11, 3
	aData, bData := lgSPD(rng, n), lgRandom(rng, n*k)
	weights := map[string][]float64{}
	for _, name := range []string{"Wx", "Wi", "Wl", "Ww", "Wv"} {
		weights[name] = lgRandom(rng, n*n)
	}
	build := func(t *testing.T, mesh *sharding.Mesh, single bool) (*G.ExprGraph, []*G.Node) {
		g := G.NewGraph()
		a, b := lgMatNode(g, "A", n, n, aData), lgMatNode(g, "B", n, k, bData)
		w := func(name string, rows, cols int) *G.Node {
			return lgMatNode(g, name, rows, cols, weights[name][:rows*cols])
		}
		gathered := func(x *G.Node, err error) *G.Node {
			require.NoError(t, err)
			h, err := Gather(x)
			require.NoError(t, err)
			return h
		}
		ac, err := Shard(a, mesh, sharding.Cyclic(4))
		require.NoError(t, err)
		l, err := Cholesky(ac)
		require.NoError(t, err)
		cost := lgWeighted(gathered(l, nil), w("Wl", n, n))
		if !single {
			bc, err := Shard(b, mesh, sharding.Cyclic(4))
			require.NoError(t, err)
			x := gathered(CholSolve(l, bc))
			inv := gathered(Potri(ac, l))
			ld, err := LogDet(ac, l)
			require.NoError(t, err)
			e, err := Eigen(ac)
			require.NoError(t, err)
			vals := gathered(EigenValues(ac, e))
			vecs := gathered(EigenVectors(ac, e))
			for _, term := range []*G.Node{
				lgWeighted(x, w("Wx", n, k)), lgWeighted(inv, w("Wi", n, n)), ld,
				lgWeighted(vals, G.Must(G.Reshape(w("Ww", n, 1), tensor.Shape{n}))),
				lgWeighted(G.Must(G.HadamardProd(vecs, vecs)), w("Wv", n, n)), // signs cancel
			} {
				cost = G.Must(G.Add(cost, term))
			}
			_, err = G.Grad(cost, a, b)
			require.NoError(t, err)
			return g, []*G.Node{a, b}
		}
		_, err = G.Grad(cost, a)
		require.NoError(t, err)
		return g, []*G.Node{a}
	}
	grads := func(t *testing.T, mesh *sharding.Mesh, single, poisoned bool) [][]float64 {
		g, wrt := build(t, mesh, single)
		m := G.NewTapeMachine(g)
		defer m.Close()
		if poisoned {
			poisonScratch(tensor.Float64, n*n, n*k, n)
		}
		require.NoError(t, m.RunAll())
		var out [][]float64
		for _, x := range wrt {
			gv, err := x.Grad()
			require.NoError(t, err)
			out = append(out, append([]float64(nil), gv.Data().([]float64)...))
		}
		return out
	}
	for _, ndev := range []int{1, 3} {
		for _, single := range []bool{false, true} {
			t.Run(fmt.Sprintf("ndev=%d/single-cholesky=%v", ndev, single), func(t *testing.T) {
				mesh, err := sharding.CPUMesh(ndev)
				require.NoError(t, err)
				want := grads(t, mesh, single, false)
				for _, gv := range want {
					for _, v := range gv {
						require.False(t, math.IsNaN(v) || math.IsInf(v, 0))
					}
				}
				require.Equal(t, want, grads(t, mesh, single, true))
			})
		}
	}
}
