//go:build mglacuda

package ops

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// TestFactorCheckStructuredGPU: on a mesh of the visible GPUs (up to 4),
// the check computed by the GPUs keeps the right factors of the structured
// matrices (structuredHPD) — the host's and cuSOLVER's on the first GPU,
// in single precision computed in single precision, unlike the host's —
// and, on 2 GPUs or more, cusolverMgPotrf through meshPotrf returns a
// factor the check keeps, with no error (a wrong one is computed again on
// the first GPU). Each
// case prints the check's worst row in units of the rounding of every
// path, so the log shows the margin below the threshold.
func TestFactorCheckStructuredGPU(t *testing.T) {
	ngpu, err := cu.NumDevices()
	require.NoError(t, err)
	ids := []int{0, 1, 2, 3}[:min(ngpu, 4)]
	mesh, err := sharding.GPUMesh(ids...)
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d GPUs", seed, len(ids))
	rng := rand.New(rand.NewPCG(seed, 6))
	var meshRatios []float64
	defer func() { traceAttempt = nil }()
	const tile = 256
	for _, n := range []int{1000, 1537} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
			for k, kind := range structuredHPD {
				func() { // a case, whose deferred calls release its buffers on every path
					what := fmt.Sprintf("seed %d, %d GPUs, %v, %s, n=%d", seed, len(ids), dt, kind.name, n)
					a, err := sharding.Put(structuredMatrix(rng, k, dt, n), mesh, sharding.Cyclic(tile))
					require.NoError(t, err, what)
					defer a.Free()
					l, err := sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(tile))
					require.NoError(t, err, what)
					defer l.Free()
					require.NoError(t, a.RelayoutInto(l), what)
					check, err := newFactorCheck(l)
					require.NoError(t, err, what)
					defer check.release() // also when the case fails: TestScratchPeak counts lent vectors
					defer func() { traceAttempt = nil }()
					ratioOf := func(path string, factor func() error) float64 {
						t.Helper()
						require.NoError(t, a.RelayoutInto(l), what)
						require.NoError(t, factor(), "%s: %s", what, path)
						ratio, row, err := check.worst(l)
						require.NoError(t, err, what)
						require.True(t, check.right(ratio), "%s: %s's factor judged wrong: %.3g (threshold %.3g) at row %d", what, path, ratio, check.typical(), row)
						return ratio
					}
					host := ratioOf("the host", func() error { return (hostSolver{}).potrf(a, l) })
					single := ratioOf("cuSOLVER", func() error { return singlePotrf(a, l) })
					if len(ids) == 1 {
						fmt.Printf("STRUCTURED %s: worst row / rounding: host %.3g, cuSOLVER %.3g; threshold %.3g\n",
							what, host, single, check.typical())
					} else {
						var first []float64
						traceAttempt = func(attempt int, ratio float64, _ int, _ bool) { first = append(first, ratio) }
						checked := ratioOf("meshPotrf", func() error { return (gpuSolver{DispatchMesh}).potrf(a, l) })
						require.NotEmpty(t, first, "%s: meshPotrf did not factor on the mesh", what)
						meshRatios = append(meshRatios, first[0])
						fmt.Printf("STRUCTURED %s: worst row / rounding: host %.3g, cuSOLVER %.3g, cusolverMgPotrf %.3g (attempts %d), kept %.3g; threshold %.3g\n",
							what, host, single, first[0], len(first), checked, check.typical())
					}
				}()
			}
		}
	}
	if len(meshRatios) > 0 {
		fmt.Printf("STRUCTURED %d GPUs: cusolverMgPotrf's first attempts, worst row / rounding: median %.3g max %.3g\n", len(ids), median(meshRatios), slices.Max(meshRatios))
	}
}
