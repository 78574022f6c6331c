package ops

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// structuredHPD lists Hermitian positive definite matrices of the kinds
// users factor, far from randomHPD's diagonally dominant ones: kernel
// matrices with jitter (every entry positive, condition numbers up to
// 1/jitter), J + I, Kac–Murdock–Szegő, graded (entries over 12 orders of
// magnitude in double precision) and Lehmer's. Complex dtypes get
// D·A·Dᴴ with D a diagonal of random phases (the same spectrum, complex
// entries).
var structuredHPD = []struct {
	name string
	gen  func(rng *rand.Rand, n int, single bool) []complex128
}{
	{"rbf kernel + jitter", func(rng *rand.Rand, n int, single bool) []complex128 {
		jitter := 1e-6
		if single {
			jitter = 1e-2
		}
		x := make([][3]float64, n)
		for i := range x {
			x[i] = [3]float64{rng.Float64(), rng.Float64(), rng.Float64()}
		}
		return fill(n, func(i, j int) float64 {
			d := 0.0
			for k := range 3 {
				d += (x[i][k] - x[j][k]) * (x[i][k] - x[j][k])
			}
			v := math.Exp(-d / (2 * 0.5 * 0.5))
			if i == j {
				v += jitter
			}
			return v
		})
	}},
	{"J + I", func(_ *rand.Rand, n int, _ bool) []complex128 {
		return fill(n, func(i, j int) float64 {
			if i == j {
				return 2
			}
			return 1
		})
	}},
	{"KMS 0.9", func(_ *rand.Rand, n int, _ bool) []complex128 {
		return fill(n, func(i, j int) float64 { return math.Pow(0.9, math.Abs(float64(i-j))) })
	}},
	{"graded", func(rng *rand.Rand, n int, single bool) []complex128 {
		if single {
			return gradedHPD(rng, n, 1.5)
		}
		return gradedHPD(rng, n, 3)
	}},
	{"Lehmer + jitter", func(_ *rand.Rand, n int, single bool) []complex128 {
		jitter := 0.0
		if single {
			jitter = 1e-3
		}
		return fill(n, func(i, j int) float64 {
			v := float64(min(i, j)+1) / float64(max(i, j)+1)
			if i == j {
				v += jitter
			}
			return v
		})
	}},
}

// gradedHPD is D·R·D with R a random diagonally dominant matrix (randomHPD's
// kind) and D's diagonal rising evenly in exponent from 10^-g to 10^g.
func gradedHPD(rng *rand.Rand, n int, g float64) []complex128 {
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Pow(10, -g+2*g*float64(i)/float64(max(n-1, 1)))
	}
	r := fill(n, func(i, j int) float64 {
		if i == j {
			return float64(n)
		}
		return 0
	})
	for i := range n {
		for j := range i {
			v := 2*rng.Float64() - 1
			r[i*n+j], r[j*n+i] = complex(v, 0), complex(v, 0)
		}
	}
	for i := range n {
		for j := range n {
			r[i*n+j] *= complex(d[i]*d[j], 0)
		}
	}
	return r
}

// fill is the row-major n×n matrix of f's values.
func fill(n int, f func(i, j int) float64) []complex128 {
	a := make([]complex128, n*n)
	for i := range n {
		for j := range n {
			a[i*n+j] = complex(f(i, j), 0)
		}
	}
	return a
}

// structuredMatrix is kind k of structuredHPD as a host tensor of dtype dt.
func structuredMatrix(rng *rand.Rand, k int, dt tensor.Dtype, n int) *tensor.Dense {
	single := dt == tensor.Float32 || dt == tensor.Complex64
	return withPhases(rng, dt, n, structuredHPD[k].gen(rng, n, single))
}

// withPhases is the real symmetric row-major n×n matrix a as a host tensor
// of dtype dt, as D·A·Dᴴ with D a diagonal of random phases in the complex
// dtypes.
func withPhases(rng *rand.Rand, dt tensor.Dtype, n int, a []complex128) *tensor.Dense {
	if dt == tensor.Complex64 || dt == tensor.Complex128 {
		phase := make([]complex128, n)
		for i := range phase {
			phase[i] = cmplx.Exp(complex(0, 2*math.Pi*rng.Float64()))
		}
		for i := range n {
			for j := range n {
				a[i*n+j] *= phase[i] * cmplx.Conj(phase[j])
			}
		}
		for i := range n {
			a[i*n+i] = complex(real(a[i*n+i]), 0)
		}
	}
	return denseOf(dt, n, a)
}

// TestFactorCheckStructured: LAPACK's factors of the structured matrices
// pass the check's typical threshold (right: kept) on CPU meshes, every
// dtype, orders that are not multiples of the tile. The threshold was set
// from random, diagonally dominant matrices; a right factor it refused
// would be computed again, and on a mesh too large for one GPU end in
// ErrWrongResult.
func TestFactorCheckStructured(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	for _, ndev := range []int{1, 3} {
		mesh, err := sharding.CPUMesh(ndev)
		require.NoError(t, err)
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
			for _, n := range []int{61, 301} {
				for k, kind := range structuredHPD {
					what := fmt.Sprintf("seed %d, %d devices, %v, %s, n=%d", seed, ndev, dt, kind.name, n)
					l, check, err := hostFactored(t, mesh, structuredMatrix(rng, k, dt, n), 32, what)
					require.NoError(t, err, what)
					ratio, row, err := check.worst(l)
					require.NoError(t, err, what)
					require.True(t, check.right(ratio), "%s: a right factor judged wrong: %.3g (threshold %.3g) at row %d", what, ratio, check.typical(), row)
					if ndev == 3 && n == 301 {
						t.Logf("%s: worst %.3g units (threshold %.3g)", what, ratio, check.typical())
					}
					check.release()
				}
			}
		}
	}
}
