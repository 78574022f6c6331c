package ops

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// factorCheck passes LAPACK's factors on meshes of 1, 2, 3 and 5 CPU
// devices, every dtype, orders that are not multiples of the tile (within
// the typical threshold: right), and
// catches a factor with one element of its last row off by 1e-6 (float64,
// complex128) or 1e-2 (float32, complex64) times that row's diagonal
// element: a lost panel update is far larger.
func TestFactorCheck(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, ndev := range []int{1, 2, 3, 5} {
		mesh, err := sharding.CPUMesh(ndev)
		require.NoError(t, err)
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
			for _, n := range []int{1, 37, 130} {
				what := fmt.Sprintf("seed %d, %d devices, %v, n=%d", seed, ndev, dt, n)
				l, check, err := hostFactored(t, mesh, randomHPD(rng, dt, n), 16, what)
				require.NoError(t, err, what)
				ratio, _, err := check.worst(l)
				require.NoError(t, err, what)
				require.True(t, check.right(ratio), "%s: a right factor computed again (%.3g)", what, ratio)
				// One element below the diagonal (or the diagonal itself
				// when n = 1), in the last tile's rows.
				host, err := l.Gather()
				require.NoError(t, err, what)
				i := n - 1
				j := rng.IntN(n)
				if j > i {
					j = i
				}
				rel := 1e-6
				if dt == tensor.Float32 || dt == tensor.Complex64 {
					rel = 1e-2
				}
				moveEntry(t, host, i, j, rel)
				require.NoError(t, l.Load(host), what)
				ratio, row, err := check.worst(l)
				require.NoError(t, err, what)
				require.False(t, check.right(ratio), what)
				require.ErrorIs(t, check.wrong(ratio, row), kernels.ErrWrongResult, what)
				check.release() // the next case may reuse its vectors
			}
		}
	}
}

// hostFactored puts a0 on mesh in tiles of tile, starts a factorCheck of
// it and factors it on the host into l; the factorization's error is
// returned (l and check are valid either way), any other fails the test.
func hostFactored(t *testing.T, mesh *sharding.Mesh, a0 *tensor.Dense, tile int, what string) (*sharding.Tensor, *factorCheck, error) {
	t.Helper()
	a, err := sharding.Put(a0, mesh, sharding.Cyclic(tile))
	require.NoError(t, err, what)
	l, err := sharding.New(mesh, a0.Shape().Clone(), a0.Dtype(), sharding.Cyclic(tile))
	require.NoError(t, err, what)
	require.NoError(t, a.RelayoutInto(l), what)
	check, err := newFactorCheck(l)
	require.NoError(t, err, what)
	return l, check, (hostSolver{}).potrf(a, l)
}

// loadMoved loads into l the host factor right with entry (i, j) moved by
// rel times the diagonal entry of row i (right itself stays as it is).
func loadMoved(t *testing.T, l *sharding.Tensor, right *tensor.Dense, i, j int, rel float64, what string) {
	t.Helper()
	host := right.Clone().(*tensor.Dense)
	moveEntry(t, host, i, j, rel)
	require.NoError(t, l.Load(host), what)
}

// moveEntry adds rel times the diagonal entry of row i to entry (i, j) of
// the host matrix m.
func moveEntry(t *testing.T, m *tensor.Dense, i, j int, rel float64) {
	t.Helper()
	v, err := m.At(i, j)
	require.NoError(t, err)
	diag, err := m.At(i, i)
	require.NoError(t, err)
	var moved any
	switch v := v.(type) {
	case float32:
		moved = v + float32(rel)*diag.(float32)
	case float64:
		moved = v + rel*diag.(float64)
	case complex64:
		moved = v + complex64(complex(rel, 0))*diag.(complex64)
	case complex128:
		moved = v + complex(rel, 0)*diag.(complex128)
	}
	require.NoError(t, m.SetAt(moved, i, j))
}

// randomHPD is a random Hermitian positive definite matrix of dtype dt:
// entries uniform in [-1, 1] (real and imaginary parts) and n on the
// diagonal.
func randomHPD(rng *rand.Rand, dt tensor.Dtype, n int) *tensor.Dense {
	a := make([]complex128, n*n)
	cplx := dt == tensor.Complex64 || dt == tensor.Complex128
	for i := range n {
		for j := range i {
			v := complex(2*rng.Float64()-1, 0)
			if cplx {
				v += complex(0, 2*rng.Float64()-1)
			}
			a[i*n+j], a[j*n+i] = v, complex(real(v), -imag(v))
		}
		a[i*n+i] = complex(float64(n), 0)
	}
	return denseOf(dt, n, a)
}

// denseOf is the row-major n×n matrix a as a host tensor of dtype dt.
func denseOf(dt tensor.Dtype, n int, a []complex128) *tensor.Dense {
	d := tensor.New(tensor.WithShape(n, n), tensor.Of(dt))
	switch data := d.Data().(type) {
	case []float32:
		for k, v := range a {
			data[k] = float32(real(v))
		}
	case []float64:
		for k, v := range a {
			data[k] = real(v)
		}
	case []complex64:
		for k, v := range a {
			data[k] = complex64(v)
		}
	case []complex128:
		copy(data, a)
	default:
		panic(fmt.Sprintf("denseOf: dtype %v", dt))
	}
	return d
}

// TestFactorCheckTinyMatrices: the exact factor of s·I, and LAPACK's of a
// random matrix scaled by s, is right down to the smallest numbers, in
// every dtype: a row whose rounding scale eps·(|A|·|v| + |L|·|Lᴴ|·|v|)
// underflowed to 0 gave 0/0, NaN, and a right factor computed again (and on
// a mesh too large for one GPU, ErrWrongResult).
func TestFactorCheckTinyMatrices(t *testing.T) {
	seed, rng, mesh := factorCheckStart(t, 4)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		scales := []float64{1e-300, 1e-305, 1e-308, 1e-310, 1e-320}
		if dt == tensor.Float32 || dt == tensor.Complex64 {
			scales = []float64{1e-30, 1e-36, 1e-38, 1e-40, 1e-44}
		}
		for _, s := range scales {
			for _, n := range []int{1, 2, 50} {
				for _, identity := range []bool{true, false} {
					what := fmt.Sprintf("seed %d, %v, %g·%s, n=%d", seed, dt, s, map[bool]string{true: "I", false: "random"}[identity], n)
					// s·I, or s on the diagonal and entries uniform in ±s/n below it.
					m := make([]complex128, n*n)
					for i := range n {
						m[i*n+i] = complex(s, 0)
						if identity {
							continue
						}
						for j := range i {
							v := complex(s*(2*rng.Float64()-1)/float64(n), 0)
							m[i*n+j], m[j*n+i] = v, v
						}
					}
					l, check, err := hostFactored(t, mesh, denseOf(dt, n, m), 16, what)
					if err != nil {
						check.release()
						continue // not positive definite once rounded to the dtype: nothing to check
					}
					ratio, row, err := check.worst(l)
					require.NoError(t, err, what)
					require.True(t, check.right(ratio), "%s: a right factor judged wrong: %v at row %d", what, ratio, row)
					check.release()
				}
			}
		}
	}
}

// TestFactorCheckSlightlyWrong: a factor off by 1.2–1.8√(n+2) units of
// rounding in its worst row — as the complex64 factor of J + I that
// cusolverMgPotrf returned beside the GPU suite (74 units at N = 1537, call
// 43), which the threshold of 2√(n+2) kept — is not right, in every dtype.
// The factor is LAPACK's with one element of its last row moved, by an
// amount scaled from a first try so that the check lands in that band.
func TestFactorCheckSlightlyWrong(t *testing.T) {
	seed, rng, mesh := factorCheckStart(t, 10)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		for _, n := range []int{130, 517} {
			what := fmt.Sprintf("seed %d, %v, n=%d", seed, dt, n)
			l, check, err := hostFactored(t, mesh, structuredMatrix(rng, 1, dt, n), 32, what) // J + I
			require.NoError(t, err, what)
			right, err := l.Gather()
			require.NoError(t, err, what)
			j := rng.IntN(n - 1)
			// moved is the check's ratio for the factor with L[n-1, j]
			// moved by rel times L[n-1, n-1].
			moved := func(rel float64) float64 {
				loadMoved(t, l, right, n-1, j, rel, what)
				ratio, _, err := check.worst(l)
				require.NoError(t, err, what)
				return ratio
			}
			eps := 0x1p-52
			if dt == tensor.Float32 || dt == tensor.Complex64 {
				eps = 0x1p-23
			}
			root := math.Sqrt(float64(n + 2))
			target := 1.5 * root
			rel := 100 * eps
			for range 4 { // the ratio grows about linearly with the move
				rel *= target / moved(rel)
			}
			ratio := moved(rel)
			require.InDelta(t, target, ratio, 0.3*root, "%s: moved by %.3g, the check gave %.3g", what, rel, ratio)
			require.False(t, check.right(ratio), "%s: a factor off by %.3g units kept (threshold %.3g)", what, ratio, check.typical())
			require.Less(t, ratio, 2*root, "%s: the band that 2√(n+2) kept", what)
			check.release()
		}
	}
}

// TestFactorCheckVectorDraw: every entry of the check's vector has a
// modulus between ½ and 1, with both signs (complex: phases all round), in
// every dtype, and is exactly representable in the single-precision dtypes.
// With entries near 0, as a uniform draw from [−1, 1] gives, a wrong entry of
// L in such a column goes nearly unseen (TestFactorCheckProbeStudy).
func TestFactorCheckVectorDraw(t *testing.T) {
	seed, rng, mesh := factorCheckStart(t, 12)
	const n = 400
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		what := fmt.Sprintf("seed %d, %v", seed, dt)
		a, err := sharding.Put(structuredMatrix(rng, 0, dt, n), mesh, sharding.Cyclic(32))
		require.NoError(t, err, what)
		c, err := newFactorCheck(a)
		require.NoError(t, err, what)
		var quadrants [4]int // by the sign of the real part, and of the imaginary part
		for i, v := range c.v {
			m := cmplx.Abs(v)
			require.True(t, m >= 0.5-1e-7 && m <= 1+1e-7, "%s: |v[%d]| = %v, want ½ to 1", what, i, m)
			require.Equal(t, m, c.vAbs[i], "%s: |v[%d]|", what, i)
			if dt == tensor.Float32 || dt == tensor.Complex64 {
				require.Equal(t, real(v), float64(float32(real(v))), "%s: v[%d] not a float32", what, i)
				require.Equal(t, imag(v), float64(float32(imag(v))), "%s: v[%d] not a float32", what, i)
			}
			q := 0
			if real(v) < 0 {
				q++
			}
			if imag(v) < 0 {
				q += 2
			}
			quadrants[q]++
		}
		if dt == tensor.Complex64 || dt == tensor.Complex128 {
			for q, k := range quadrants {
				require.Greater(t, k, n/8, "%s: %d of %d entries in quadrant %d", what, k, n, q)
			}
		} else {
			require.Greater(t, quadrants[0], n/4, "%s: positive entries", what)
			require.Greater(t, quadrants[1], n/4, "%s: negative entries", what)
		}
		c.release()
	}
}

// TestFactorCheckProbeStudy (MGLA_FACTOR_STUDY=probes; not part of the
// suite) counts the vectors that keep a factor with one wrong entry, moved
// so that the median ratio over the vectors is 2.5 times the threshold, for
// the check's draw and for a uniform draw from [−1, 1]. J + I, n = 517, 64
// vectors a dtype and draw. 2026-11-28, 35 runs: the uniform draw kept 264
// of 6400 (25 runs) and the check's 12 of 7680 (30 runs), 28 of them with
// none and two with 4 and 8 (some columns of L leave (Lᴴ·v) there small for
// many vectors of either draw).
func TestFactorCheckProbeStudy(t *testing.T) {
	if os.Getenv("MGLA_FACTOR_STUDY") != "probes" {
		t.Skip("MGLA_FACTOR_STUDY=probes not set")
	}
	seed, rng, mesh := factorCheckStart(t, 11)
	const n, probes = 517, 64
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		what := fmt.Sprintf("seed %d, %v, n=%d", seed, dt, n)
		a0 := structuredMatrix(rng, 1, dt, n) // J + I
		a, err := sharding.Put(a0, mesh, sharding.Cyclic(32))
		require.NoError(t, err, what)
		l, check, err := hostFactored(t, mesh, a0, 32, what)
		require.NoError(t, err, what)
		checks := []*factorCheck{check}
		for range 2*probes - 1 {
			c, err := newFactorCheck(a)
			require.NoError(t, err, what)
			checks = append(checks, c)
		}
		// The second half draws uniformly from [−1, 1], as the check did
		// until 2026-11-28.
		single := dt == tensor.Float32 || dt == tensor.Complex64
		for _, c := range checks[probes:] {
			for i := range c.v {
				re, im := 2*rng.Float64()-1, 0.0
				if dt == tensor.Complex64 || dt == tensor.Complex128 {
					im = 2*rng.Float64() - 1
				}
				if single {
					re, im = float64(float32(re)), float64(float32(im))
				}
				c.v[i] = complex(re, im)
				c.vAbs[i] = cmplx.Abs(c.v[i])
			}
			require.NoError(t, a.MulHermitianInto(c.av, c.avAbs, c.v, c.vAbs), what)
		}
		right, err := l.Gather()
		require.NoError(t, err, what)
		j := rng.IntN(n - 1)
		// ratios are the checks' ratios for the factor with L[n-1, j]
		// moved by rel times L[n-1, n-1].
		ratios := func(cs []*factorCheck, rel float64) []float64 {
			loadMoved(t, l, right, n-1, j, rel, what)
			out := make([]float64, len(cs))
			for i, c := range cs {
				out[i], _, err = c.worst(l)
				require.NoError(t, err, what)
			}
			return out
		}
		for _, draw := range []struct {
			name string
			cs   []*factorCheck
		}{{"the check's", checks[:probes]}, {"uniform", checks[probes:]}} {
			target := 2.5 * check.typical()
			rel := 0x1p-10
			for range 4 { // the ratios grow about linearly with the move
				rel *= target / median(ratios(draw.cs, rel))
			}
			got := ratios(draw.cs, rel)
			kept := 0
			for _, r := range got {
				if check.right(r) {
					kept++
				}
			}
			fmt.Printf("PROBES %s, %s draw: ratios from %.3g to %.3g (median %.3g, threshold %.3g), kept by %d of %d\n",
				what, draw.name, slices.Min(got), slices.Max(got), median(got), check.typical(), kept, probes)
		}
		for _, c := range checks {
			c.release()
		}
	}
}

// median is the middle of x (the upper one of an even count); x stays as it
// is.
func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

// factorCheckStart starts a factor-check test on the CPU: a seed of its own
// (logged), the random stream of it, and a mesh of two devices.
func factorCheckStart(t *testing.T, stream uint64) (seed uint64, rng *rand.Rand, mesh *sharding.Mesh) {
	t.Helper()
	seed = uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	mesh, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	return seed, rand.New(rand.NewPCG(seed, stream)), mesh
}
