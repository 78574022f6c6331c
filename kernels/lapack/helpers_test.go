package lapack

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testSeed is logged by every test that draws random inputs; set
// KERNELS_SEED=<n> to replay a failure (the same variable as package
// kernels' tests).
var testSeed = seedFromEnv("KERNELS_SEED")

// seedFromEnv returns the seed in the environment variable name, or a new one.
func seedFromEnv(name string) uint64 {
	seed, err := strconv.ParseUint(os.Getenv(name), 10, 64)
	if err != nil {
		seed = uint64(time.Now().UnixNano())
	}
	return seed
}

func newRand(t testing.TB, salt uint64) *rand.Rand {
	t.Helper()
	t.Logf("seed %d (replay with KERNELS_SEED=%d)", testSeed, testSeed)
	return rand.New(rand.NewPCG(testSeed, salt))
}

// The references below work on column-major complex128 slices with an
// explicit leading dimension; real inputs are stored with zero imaginary
// parts. They are plain loops, independent of the routines under test.

// junk fills the padding rows (rows..ld-1) and, where the test says so, the
// strict upper triangle: a value no routine may read or write.
var junk = complex(math.NaN(), 7)

// randMat returns a rows×cols matrix with leading dimension ld ≥ rows whose
// padding rows hold junk; entries are standard normal (complex when cplx).
func randMat(rnd *rand.Rand, rows, cols, ld int, cplx bool) []complex128 {
	a := make([]complex128, max(1, ld*cols))
	for i := range a {
		a[i] = junk
	}
	for j := 0; j < cols; j++ {
		for i := 0; i < rows; i++ {
			a[i+j*ld] = randScalar(rnd, cplx)
		}
	}
	return a
}

func randScalar(rnd *rand.Rand, cplx bool) complex128 {
	if cplx {
		return complex(rnd.NormFloat64(), rnd.NormFloat64())
	}
	return complex(rnd.NormFloat64(), 0)
}

// paddingIntact reports whether the rows rows..ld-1 of the cols columns of a
// still hold junk (compared bitwise, since junk is a NaN).
func paddingIntact(a []complex128, rows, cols, ld int) bool {
	for j := 0; j < cols; j++ {
		for i := rows; i < ld && i+j*ld < len(a); i++ {
			if !sameBits(a[i+j*ld], junk) {
				return false
			}
		}
	}
	return true
}

func sameBits(x, y complex128) bool {
	return math.Float64bits(real(x)) == math.Float64bits(real(y)) && math.Float64bits(imag(x)) == math.Float64bits(imag(y))
}

// opAt returns op(X)(i, j) for the column-major x: X(i, j), or conj(X(j, i))
// when trans is set.
func opAt(x []complex128, ld int, trans bool, i, j int) complex128 {
	if trans {
		return cmplx.Conj(x[j+i*ld])
	}
	return x[i+j*ld]
}

// naiveGemm returns op(A)·op(B) (m×n, leading dimension m) by the triple loop.
func naiveGemm(tA, tB bool, m, n, k int, a []complex128, lda int, b []complex128, ldb int) []complex128 {
	c := make([]complex128, m*n)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s complex128
			for p := 0; p < k; p++ {
				s += opAt(a, lda, tA, i, p) * opAt(b, ldb, tB, p, j)
			}
			c[i+j*m] = s
		}
	}
	return c
}

// diffNorm returns the Frobenius norm of the difference of the rows×cols
// blocks of x (leading dimension ldx) and y (ldy).
func diffNorm(rows, cols int, x []complex128, ldx int, y []complex128, ldy int) float64 {
	var s float64
	for j := 0; j < cols; j++ {
		for i := 0; i < rows; i++ {
			d := x[i+j*ldx] - y[i+j*ldy]
			s += real(d)*real(d) + imag(d)*imag(d)
		}
	}
	return math.Sqrt(s)
}

// frob is the Frobenius norm of the rows×cols block of x.
func frob(rows, cols int, x []complex128, ld int) float64 {
	return diffNorm(rows, cols, x, ld, make([]complex128, rows*cols), max(1, rows))
}

// identity returns the n×n identity, leading dimension n.
func identity(n int) []complex128 {
	id := make([]complex128, n*n)
	for i := 0; i < n; i++ {
		id[i+i*n] = 1
	}
	return id
}

// hermitianLower returns the full n×n (leading dimension n) Hermitian matrix
// whose lower triangle is that of a, the diagonal taken real.
func hermitianLower(n int, a []complex128, lda int) []complex128 {
	h := make([]complex128, n*n)
	for j := 0; j < n; j++ {
		h[j+j*n] = complex(real(a[j+j*lda]), 0)
		for i := j + 1; i < n; i++ {
			h[i+j*n] = a[i+j*lda]
			h[j+i*n] = cmplx.Conj(a[i+j*lda])
		}
	}
	return h
}

// reflectorProduct forms Q = H(0)·H(1)···H(n−2) explicitly (n×n, leading
// dimension n) from the reflectors of Dsytrd or Zhetrd: H(i) = I − tau_i·v·vᴴ
// with v[0:i+1] = 0, v[i+1] = 1, v[i+2:] = a[i+2:, i].
func reflectorProduct(n int, a []complex128, lda int, tau []complex128) []complex128 {
	q := identity(n)
	v := make([]complex128, n)
	for i := n - 2; i >= 0; i-- { // Q = H(i)·Q, from the last reflector
		clear(v)
		v[i+1] = 1
		copy(v[i+2:], a[i+2+i*lda:n+i*lda])
		for j := 0; j < n; j++ {
			var s complex128 // vᴴ·Q[:, j]
			for r := i + 1; r < n; r++ {
				s += cmplx.Conj(v[r]) * q[r+j*n]
			}
			s *= tau[i]
			for r := i + 1; r < n; r++ {
				q[r+j*n] -= v[r] * s
			}
		}
	}
	return q
}

// tridiagResidual returns ‖T·Z − Z·Λ‖_F/(‖T‖_F·n) and ‖ZᵀZ − I‖_F/n for the
// symmetric tridiagonal T = (d0, e0) and the eigenpairs (lam, Z) from Dstedc
// (Z column-major with leading dimension ldz).
func tridiagResidual(d0, e0, lam, z []float64, ldz int) (res, orth float64) {
	n := len(d0)
	tn := 0.0
	for i := 0; i < n; i++ {
		tn += d0[i] * d0[i]
		if i < n-1 {
			tn += 2 * e0[i] * e0[i]
		}
	}
	tn = math.Sqrt(tn)
	if tn == 0 {
		tn = 1
	}
	var rs, os float64
	for j := 0; j < n; j++ {
		col := z[j*ldz : j*ldz+n]
		for i := 0; i < n; i++ {
			v := d0[i]*col[i] - lam[j]*col[i]
			if i > 0 {
				v += e0[i-1] * col[i-1]
			}
			if i < n-1 {
				v += e0[i] * col[i+1]
			}
			rs += v * v
		}
		for k := 0; k <= j; k++ {
			var s float64
			for i, x := range z[k*ldz : k*ldz+n] {
				s += x * col[i]
			}
			if k == j {
				s--
			}
			if k != j {
				s *= math.Sqrt2 // the pair (k, j) stands for two entries
			}
			os += s * s
		}
	}
	return math.Sqrt(rs) / tn / float64(n), math.Sqrt(os) / float64(n)
}

// mustPanic runs f and fails unless it panics with a message starting with
// "lapack: " and naming routine.
func mustPanic(t *testing.T, routine string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		msg, _ := r.(string)
		if r == nil || !strings.HasPrefix(msg, "lapack: "+routine+": ") {
			t.Errorf("%s: recovered %v, want a panic \"lapack: %s: …\"", routine, r, routine)
		}
	}()
	f()
}
