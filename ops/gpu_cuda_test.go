//go:build mglacuda

package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/kernels/cusolver"
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

// notPD settles cuSolverMg's INTERNAL_ERROR on the host: a matrix the host
// factors gets the host's factor and no error (counted as a wrong result),
// one that is not positive definite gets the minor, one with a NaN
// ErrNonFinite; other errors pass through and leave the factor alone. CPU
// meshes of 1 and 3 devices, every dtype, N = 37.
func TestNotPDSettlesInternalError(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	internal := &cusolver.SolverError{Func: "cusolverMgPotrf", Status: 7}
	other := &cusolver.SolverError{Func: "cusolverMgPotrf", Status: 3}
	require.Equal(t, "CUSOLVER_STATUS_INTERNAL_ERROR", internal.Status.String())
	const n = 37
	for _, devs := range []int{1, 3} {
		mesh, err := sharding.CPUMesh(devs)
		require.NoError(t, err)
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
			what := fmt.Sprintf("seed %d, %d devices, %v", seed, devs, dt)
			host := randomHPD(rng, dt, n)
			put := func(d *tensor.Dense) *sharding.Tensor {
				a, err := sharding.Put(d, mesh, sharding.Cyclic(8))
				require.NoError(t, err, what)
				return a
			}
			a := put(host)
			want := put(host)
			require.NoError(t, (hostSolver{}).potrf(a, want), what)
			wantHost, err := want.Gather()
			require.NoError(t, err, what)

			l := put(host) // garbage from the failed call: A itself
			before := WrongFactorsCaught()
			require.NoError(t, notPD(internal, a, l), what)
			require.Equal(t, before+1, WrongFactorsCaught(), what)
			got, err := l.Gather()
			require.NoError(t, err, what)
			require.Equal(t, toFloats(wantHost.Data()), toFloats(got.Data()), what)

			l = put(host)
			require.Same(t, other, notPD(other, a, l), what)
			got, err = l.Gather()
			require.NoError(t, err, what)
			require.Equal(t, toFloats(host.Data()), toFloats(got.Data()), what)

			bad := host.Clone().(*tensor.Dense)
			neg := map[tensor.Dtype]any{tensor.Float32: float32(-1), tensor.Float64: -1.0,
				tensor.Complex64: complex64(-1), tensor.Complex128: complex(-1, 0)}[dt]
			require.NoError(t, bad.SetAt(neg, 20, 20))
			err = notPD(internal, put(bad), put(bad))
			var minor *kernels.NotPositiveDefiniteError
			require.ErrorAs(t, err, &minor, what)
			require.Equal(t, 21, minor.Order, what)

			nan := map[tensor.Dtype]any{tensor.Float32: float32(math.NaN()), tensor.Float64: math.NaN(),
				tensor.Complex64: complex64(complex(math.NaN(), 0)), tensor.Complex128: complex(math.NaN(), 0)}[dt]
			require.NoError(t, bad.SetAt(nan, 30, 2))
			require.NoError(t, bad.SetAt(nan, 2, 30))
			require.ErrorIs(t, notPD(internal, put(bad), put(bad)), kernels.ErrNonFinite, what)
		}
	}
}

// BenchmarkFactorCheck times the factor check of meshPotrf against the
// factorization it checks, both in this process: cusolverMgPotrf on a mesh
// of every GPU, then newFactorCheck and verify; float64, N = 16384 (or
// MGLA_BENCH_N), T = 2048. Metrics: the milliseconds of each and
// check/potrf, the check's share of an unchecked factorization.
func BenchmarkFactorCheck(b *testing.B) {
	mesh, err := sharding.GPUMesh()
	require.NoError(b, err)
	n := 16384
	if s := os.Getenv("MGLA_BENCH_N"); s != "" {
		n, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	const tile = 2048
	// A diagonally dominant symmetric matrix, made in O(n²).
	data := make([]float64, n*n)
	for i := range n {
		for j := range i {
			v := float64((i*7919+j*104729)%1000)/1000 - 0.5
			data[i*n+j], data[j*n+i] = v, v
		}
		data[i*n+i] = float64(n)
	}
	a, err := sharding.Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(data)), mesh, sharding.Cyclic(tile))
	require.NoError(b, err)
	defer a.Free()
	l, err := sharding.New(mesh, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(tile))
	require.NoError(b, err)
	defer l.Free()
	var potrf, check time.Duration
	for b.Loop() {
		b.StopTimer()
		require.NoError(b, a.RelayoutInto(l))
		b.StartTimer()
		t0 := time.Now()
		require.NoError(b, mgCall(l, func(h *cusolver.Mg, p []uintptr) error {
			return h.Potrf(tensor.Float64, n, tile, p)
		}))
		t1 := time.Now()
		c, err := newFactorCheck(a)
		require.NoError(b, err)
		require.NoError(b, c.verify(l))
		c.release()
		potrf, check = potrf+t1.Sub(t0), check+time.Since(t1)
	}
	b.ReportMetric(potrf.Seconds()*1e3/float64(b.N), "potrf-ms")
	b.ReportMetric(check.Seconds()*1e3/float64(b.N), "check-ms")
	b.ReportMetric(check.Seconds()/potrf.Seconds(), "check/potrf")
}
