//go:build mglacuda

package ops

import (
	"flag"
	"fmt"
	"math/cmplx"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla/internal/benchpair"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// factorOnFirstGPU is the Cholesky factor of a random HPD matrix of order n
// and dtype dt, on a one-GPU mesh of GPU 0 (one tile).
func factorOnFirstGPU(t testing.TB, rng *rand.Rand, dt tensor.Dtype, n int) (l, c *sharding.Tensor) {
	mesh, err := sharding.GPUMesh(0)
	if err != nil {
		t.Skip(err)
	}
	a, err := sharding.Put(randomHPD(rng, dt, n), mesh, sharding.Cyclic(n))
	require.NoError(t, err)
	defer a.Free()
	l, err = sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(n))
	require.NoError(t, err)
	require.NoError(t, (gpuSolver{}).potrf(a, l))
	c, err = sharding.New(mesh, tensor.Shape{n, n}, dt, sharding.Cyclic(n))
	require.NoError(t, err)
	return l, c
}

// lowerOf is the lower triangle of the gathered t, as complex128.
func lowerOf(t *testing.T, c *sharding.Tensor) []complex128 {
	d, err := c.Gather()
	require.NoError(t, err)
	n := c.Rows()
	out := make([]complex128, 0, n*(n+1)/2)
	for i := range n {
		for j := range i + 1 {
			v, err := d.At(i, j)
			require.NoError(t, err)
			switch x := v.(type) {
			case float32:
				out = append(out, complex(float64(x), 0))
			case float64:
				out = append(out, complex(x, 0))
			case complex64:
				out = append(out, complex128(x))
			case complex128:
				out = append(out, x)
			}
		}
	}
	return out
}

// TestInversePaths: the single-GPU inverse by potri and by potrs on the
// identity agree, in every dtype, at orders of one tile and less.
func TestInversePaths(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		for _, n := range []int{1, 7, 300, 1030} {
			t.Run(fmt.Sprintf("%v/n%d", dt, n), func(t *testing.T) {
				l, c := factorOnFirstGPU(t, rng, dt, n)
				defer l.Free()
				defer c.Free()
				require.NoError(t, dnInverseByPotri(l, c))
				byPotri := lowerOf(t, c)
				c.Zero()
				require.NoError(t, dnInverseBySolve(l, c))
				bySolve := lowerOf(t, c)
				// The inverse of a matrix with n on the diagonal and
				// entries up to 1 off it (condition number under 3) is
				// near I/n, entries under 1: both paths are backward
				// stable and agree to a few ulps of the dtype.
				eps := 1.2e-7
				if dt == tensor.Float64 || dt == tensor.Complex128 {
					eps = 2.3e-16
				}
				for k := range byPotri {
					require.Less(t, cmplx.Abs(byPotri[k]-bySolve[k]), 20*eps, "seed %d entry %d: %v and %v", seed, k, byPotri[k], bySolve[k])
				}
			})
		}
	}
}

var potriPathsN = flag.String("ops.potri-paths-n", "1024,2048,4096,8192,16384", "orders of BenchmarkInversePaths")

// BenchmarkInversePaths times the single-GPU inverse from a factor by
// cusolverDnXpotri (potri) and by cusolverDnXpotrs on the identity (solve)
// on GPU 0, in turns, float64 and float32, at -ops.potri-paths-n. Metrics:
// potri-ms, solve-ms (medians), solve/potri (median of the ratios).
func BenchmarkInversePaths(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range strings.Split(*potriPathsN, ",") {
		n, err := strconv.Atoi(s)
		require.NoError(b, err)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			b.Run(fmt.Sprintf("%v/n%d", dt, n), func(b *testing.B) {
				l, c := factorOnFirstGPU(b, rng, dt, n)
				defer l.Free()
				defer c.Free()
				run := func(f func(l, c *sharding.Tensor) error) func() {
					return func() { require.NoError(b, f(l, c)) }
				}
				potri, solve := run(dnInverseByPotri), run(dnInverseBySolve)
				potri()
				solve()
				var p benchpair.Pairs
				for range b.N {
					p.Time(solve, potri)
				}
				b.ReportMetric(float64(benchpair.Median(p.Wall[1]))/1e6, "potri-ms")
				b.ReportMetric(float64(benchpair.Median(p.Wall[0]))/1e6, "solve-ms")
				b.ReportMetric(p.MedianRatio(), "solve/potri")
			})
		}
	}
}
