package kernels

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
	"time"
)

// testSeed is printed by every test that uses random matrices; set
// KERNELS_SEED=<n> to replay a failure.
var testSeed = func() uint64 {
	if s, ok := lookupSeedEnv(); ok {
		return s
	}
	return uint64(time.Now().UnixNano())
}()

func newRand(t testing.TB, salt uint64) *rand.Rand {
	t.Helper()
	t.Logf("seed %d (replay with KERNELS_SEED=%d)", testSeed, testSeed)
	return rand.New(rand.NewPCG(testSeed, salt))
}

func isComplexT[T Scalar]() bool {
	d := dtypeOf[T]()
	return d == dtComplex64 || d == dtComplex128
}

func isSingleT[T Scalar]() bool {
	d := dtypeOf[T]()
	return d == dtFloat32 || d == dtComplex64
}

// epsT is the unit roundoff of T.
func epsT[T Scalar]() float64 {
	if isSingleT[T]() {
		return 0x1p-24
	}
	return 0x1p-53
}

func toC[T Scalar](v T) complex128 {
	switch x := any(v).(type) {
	case float32:
		return complex(float64(x), 0)
	case float64:
		return complex(x, 0)
	case complex64:
		return complex128(x)
	case complex128:
		return x
	}
	panic("unreachable")
}

func fromC[T Scalar](z complex128) T {
	var r T
	switch p := any(&r).(type) {
	case *float32:
		*p = float32(real(z))
	case *float64:
		*p = real(z)
	case *complex64:
		*p = complex64(z)
	case *complex128:
		*p = z
	}
	return r
}

// dense is a column-major complex128 matrix used as the reference.
type dense struct {
	r, c int
	v    []complex128
}

func newDense(r, c int) dense              { return dense{r, c, make([]complex128, r*c)} }
func (d dense) at(i, j int) complex128     { return d.v[i+j*d.r] }
func (d dense) set(i, j int, z complex128) { d.v[i+j*d.r] = z }
func (d dense) add(i, j int, z complex128) { d.v[i+j*d.r] += z }
func (d dense) String() string             { return fmt.Sprintf("%d×%d", d.r, d.c) }
func denseOf[T Scalar](r, c int, a []T, lda int) dense {
	d := newDense(r, c)
	for j := 0; j < c; j++ {
		for i := 0; i < r; i++ {
			d.set(i, j, toC(a[i+j*lda]))
		}
	}
	return d
}

// hermFromLower is the Hermitian matrix defined by the lower triangle of a.
func hermFromLower[T Scalar](n int, a []T, lda int) dense {
	d := newDense(n, n)
	for j := 0; j < n; j++ {
		for i := j; i < n; i++ {
			z := toC(a[i+j*lda])
			if i == j {
				z = complex(real(z), 0)
			}
			d.set(i, j, z)
			d.set(j, i, cmplx.Conj(z))
		}
	}
	return d
}

func mul(a, b dense) dense {
	c := newDense(a.r, b.c)
	for j := 0; j < b.c; j++ {
		for p := 0; p < a.c; p++ {
			t := b.at(p, j)
			if t == 0 {
				continue
			}
			col := a.v[p*a.r : (p+1)*a.r]
			cc := c.v[j*c.r : (j+1)*c.r]
			for i, v := range col {
				cc[i] += v * t
			}
		}
	}
	return c
}

func adjoint(a dense) dense {
	c := newDense(a.c, a.r)
	for j := 0; j < a.c; j++ {
		for i := 0; i < a.r; i++ {
			c.set(j, i, cmplx.Conj(a.at(i, j)))
		}
	}
	return c
}

func sub(a, b dense) dense {
	c := newDense(a.r, a.c)
	for i := range a.v {
		c.v[i] = a.v[i] - b.v[i]
	}
	return c
}

func fnorm(a dense) float64 {
	var s float64
	for _, v := range a.v {
		s += real(v)*real(v) + imag(v)*imag(v)
	}
	return math.Sqrt(s)
}

func eye(n int) dense {
	d := newDense(n, n)
	for i := 0; i < n; i++ {
		d.set(i, i, 1)
	}
	return d
}

// randLower is a random m×m lower triangular matrix, well conditioned: its
// entries below the diagonal divided by m, 3 added to its diagonal.
func randLower(rnd *rand.Rand, m int, cplx bool) dense {
	L := randDense(rnd, m, m, cplx)
	for j := 0; j < m; j++ {
		for i := 0; i < j; i++ {
			L.set(i, j, 0)
		}
		for i := j + 1; i < m; i++ {
			L.set(i, j, L.at(i, j)/complex(float64(m), 0))
		}
		L.set(j, j, L.at(j, j)+complex(3, 0))
	}
	return L
}

func randDense(rnd *rand.Rand, r, c int, cplx bool) dense {
	d := newDense(r, c)
	for i := range d.v {
		if cplx {
			d.v[i] = complex(rnd.NormFloat64(), rnd.NormFloat64())
		} else {
			d.v[i] = complex(rnd.NormFloat64(), 0)
		}
	}
	return d
}

// store writes d into a new []T with leading dimension ld; the strict upper
// triangle gets junk instead when junk is non-nil (square matrices).
func store[T Scalar](d dense, ld int, junk *complex128) []T {
	a := make([]T, ld*d.c)
	for i := range a {
		a[i] = fromC[T](complex(math.NaN(), math.NaN())) // padding rows are never read
	}
	for j := 0; j < d.c; j++ {
		for i := 0; i < d.r; i++ {
			z := d.at(i, j)
			if junk != nil && i < j {
				z = *junk
			}
			a[i+j*ld] = fromC[T](z)
		}
	}
	return a
}

// randHPD returns A = M·Mᴴ + n·I for a random M (real for real T).
func randHPD[T Scalar](rnd *rand.Rand, n int) dense {
	m := randDense(rnd, n, n, isComplexT[T]())
	a := mul(m, adjoint(m))
	for i := 0; i < n; i++ {
		a.set(i, i, complex(real(a.at(i, i))+float64(n), 0))
	}
	return roundTo[T](a)
}

// roundTo rounds d to T's precision (so the reference is the actual input).
func roundTo[T Scalar](d dense) dense {
	c := newDense(d.r, d.c)
	for i, v := range d.v {
		c.v[i] = toC(fromC[T](v))
	}
	return c
}

// randUnitary returns a random unitary (orthogonal for real) matrix.
func randUnitary(rnd *rand.Rand, n int, cplx bool) dense {
	q := randDense(rnd, n, n, cplx)
	// Modified Gram–Schmidt, twice.
	for pass := 0; pass < 2; pass++ {
		for j := 0; j < n; j++ {
			cj := q.v[j*n : (j+1)*n]
			for p := 0; p < j; p++ {
				cp := q.v[p*n : (p+1)*n]
				var s complex128
				for i := range cp {
					s += cmplx.Conj(cp[i]) * cj[i]
				}
				for i := range cp {
					cj[i] -= s * cp[i]
				}
			}
			var nr float64
			for _, v := range cj {
				nr += real(v)*real(v) + imag(v)*imag(v)
			}
			nr = math.Sqrt(nr)
			for i := range cj {
				cj[i] /= complex(nr, 0)
			}
		}
	}
	return q
}

func dtName[T Scalar]() string { return dtypeOf[T]().String() }

// forAllTypes runs f as a subtest for each of the four dtypes.
func forAllTypes(t *testing.T, f32, f64, c64, c128 func(t *testing.T)) {
	t.Run("float32", f32)
	t.Run("float64", f64)
	t.Run("complex64", c64)
	t.Run("complex128", c128)
}
