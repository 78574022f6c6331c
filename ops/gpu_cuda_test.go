//go:build mglacuda

package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// A factor that cuSolverMg got wrong is computed again: meshPotrf on a mesh
// of 2 or 3 GPUs, with the factor of the first attempt spoiled, returns the
// right factor (from one GPU, where the matrix fits, or from the mesh's
// second attempt) and counts one wrong factor; with every mesh attempt
// spoiled and no fallback to one GPU it returns ErrWrongResult after
// potrfAttempts attempts. Every dtype; N = 1000, T = 256.
func TestMeshPotrfRetry(t *testing.T) {
	ngpu, err := cu.NumDevices()
	require.NoError(t, err)
	if ngpu < 2 {
		t.Skip("the mesh path needs 2 GPUs")
	}
	ids := []int{0, 1, 2}[:min(ngpu, 3)]
	mesh, err := sharding.GPUMesh(ids...)
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	defer func() { spoilFactor, singleFallback = nil, true }()
	const n, tile = 1000, 256
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		what := fmt.Sprintf("seed %d, %d GPUs, %v", seed, len(ids), dt)
		a, err := sharding.Put(randomHPD(rng, dt, n), mesh, sharding.Cyclic(tile))
		require.NoError(t, err, what)
		l, err := sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(tile))
		require.NoError(t, err, what)
		// The right factor, from the host.
		want, err := sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(tile))
		require.NoError(t, err, what)
		require.NoError(t, (hostSolver{}).potrf(a, want), what)
		require.NoError(t, want.ZeroStrictUpper(), what)
		spoiled := 0
		spoil := func(l *sharding.Tensor, attempt int) error {
			spoiled++
			host, err := l.Gather()
			if err != nil {
				return err
			}
			// A lost update of the last tile: its rows scaled by 1.001.
			for i := n - n%tile; i < n; i++ {
				for j := 0; j <= i; j++ {
					v, _ := host.At(i, j)
					switch v := v.(type) {
					case float32:
						err = host.SetAt(v*1.001, i, j)
					case float64:
						err = host.SetAt(v*1.001, i, j)
					case complex64:
						err = host.SetAt(v*1.001, i, j)
					case complex128:
						err = host.SetAt(v*1.001, i, j)
					}
					if err != nil {
						return err
					}
				}
			}
			return l.Load(host)
		}
		spoilFactor = func(l *sharding.Tensor, attempt int) error {
			if attempt > 1 {
				return nil
			}
			return spoil(l, attempt)
		}
		ref, err := want.Gather()
		require.NoError(t, err, what)
		for _, fallback := range []bool{true, false} {
			singleFallback, spoiled = fallback, 0
			before := WrongFactorsCaught()
			require.NoError(t, gpuSolver{DispatchMesh}.potrf(a, l), what)
			require.Equal(t, 1, spoiled, what)
			// (≥: cuSolverMg's own wrong factors on busy GPUs count too)
			require.GreaterOrEqual(t, WrongFactorsCaught(), before+1, what)
			got, err := l.Gather()
			require.NoError(t, err, what)
			require.InDeltaSlice(t, toFloats(ref.Data()), toFloats(got.Data()), 1e-3, "%s fallback %v", what, fallback)
		}
		spoiled, singleFallback = 0, false
		spoilFactor = spoil
		err = gpuSolver{DispatchMesh}.potrf(a, l)
		require.True(t, errors.Is(err, kernels.ErrWrongResult), "%s: %v", what, err)
		require.ErrorContains(t, err, fmt.Sprintf("%d attempts", potrfAttempts), what)
		require.Equal(t, potrfAttempts, spoiled, what)
		spoilFactor, singleFallback = nil, true
		for _, x := range []*sharding.Tensor{a, l, want} {
			x.Free()
		}
	}
}

// toFloats lists the real and imaginary parts of a float or complex slice.
func toFloats(data any) []float64 {
	var out []float64
	switch s := data.(type) {
	case []float32:
		for _, v := range s {
			out = append(out, float64(v))
		}
	case []float64:
		out = append(out, s...)
	case []complex64:
		for _, v := range s {
			out = append(out, float64(real(v)), float64(imag(v)))
		}
	case []complex128:
		for _, v := range s {
			out = append(out, real(v), imag(v))
		}
	}
	return out
}
