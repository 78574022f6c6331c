package ops

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"sync/atomic"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// factorCheck checks a Cholesky factor L of A, computed on a mesh by a
// library mgla cannot look inside, with one random vector v: L·(Lᴴ·v) must
// equal A·v to within the rounding errors of the factorization and the
// products. A wrong panel update anywhere in the factor changes L·Lᴴ·v with
// probability one. The products (sharding.Tensor.MulHermitian before the
// factorization, MulCholesky after) read the lower triangle four times on
// the devices that hold it, in two round trips: n² work against the
// factorization's n³/3 (BENCHMARKS.md has its cost).
//
// The check's vectors are lent by the scratch pool (lend) and go back to it
// (release): the first writes into fresh memory are page faults, which cost
// the check as much as its products (n = 32768 on 4 H200s: 7.3–8.3 ms with
// fresh vectors, 4.7–5.5 ms with reused ones).
type factorCheck struct {
	v, av, y    []complex128 // v, A·v and L·(Lᴴ·v)
	vAbs, avAbs []float64    // |v| and |A|·|v|
	yAbs        []float64    // |L|·(|Lᴴ|·|v|)
	eps         float64      // machine epsilon of the dtype
	releases    []func()     // give the vectors back
}

// newFactorCheck draws v and computes A·v from a, which holds the Hermitian
// matrix A in its lower triangle (the factorization's input, before it is
// overwritten).
func newFactorCheck(a *sharding.Tensor) (*factorCheck, error) {
	n := a.Rows()
	c := &factorCheck{eps: 0x1p-52}
	// Every vector is written before it is read: v and |v| below, the others
	// by the products.
	for _, v := range []*[]complex128{&c.v, &c.av, &c.y} {
		var release func()
		*v, release = lend[complex128](n)
		c.releases = append(c.releases, release)
	}
	for _, v := range []*[]float64{&c.vAbs, &c.avAbs, &c.yAbs} {
		var release func()
		*v, release = lend[float64](n)
		c.releases = append(c.releases, release)
	}
	single := a.Dtype() == tensor.Float32 || a.Dtype() == tensor.Complex64
	if single {
		c.eps = 0x1p-23
	}
	// A generator of the check's own: the global one costs about three
	// times as much per number.
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	isComplex := a.Dtype() == tensor.Complex64 || a.Dtype() == tensor.Complex128
	for i := range c.v {
		re, im := 2*rng.Float64()-1, 0.0
		if isComplex {
			im = 2*rng.Float64() - 1
		}
		if single { // exactly representable in the dtype
			re, im = float64(float32(re)), float64(float32(im))
		}
		c.v[i] = complex(re, im)
		c.vAbs[i] = abs(c.v[i])
	}
	if err := a.MulHermitianInto(c.av, c.avAbs, c.v, c.vAbs); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// release gives c's vectors back to the scratch pool; c must not be used
// after.
func (c *factorCheck) release() {
	for _, r := range c.releases {
		r()
	}
}

// verify compares L·(Lᴴ·v) with A·v, L being the lower triangle of l. Row i
// may differ by 4(n+2)·eps·(|A|·|v| + |L|·|Lᴴ|·|v|)(i), a bound on the
// rounding errors of the factorization (Higham, Thm. 10.3) and of the
// products; a larger difference, or NaN, is an error wrapping
// kernels.ErrWrongResult that names the worst row.
func (c *factorCheck) verify(l *sharding.Tensor) error {
	if err := l.MulCholeskyInto(c.y, c.yAbs, c.v, c.vAbs); err != nil {
		return err
	}
	y, yAbs := c.y, c.yAbs
	n := len(c.v)
	worst, worstRow, wrong := 0.0, -1, 0
	for i := range n {
		bound := 4 * float64(n+2) * c.eps * (c.avAbs[i] + yAbs[i])
		d := abs(c.av[i] - y[i])
		if d <= bound {
			continue
		}
		wrong++
		if r := d / bound; worstRow < 0 || r > worst || math.IsNaN(r) {
			worst, worstRow = r, i
		}
	}
	if wrong == 0 {
		return nil
	}
	return fmt.Errorf("%w: the factor fails its check in %d of %d rows (|A·v − L·Lᴴ·v| is %.3g times its rounding bound at row %d)",
		kernels.ErrWrongResult, wrong, n, worst, worstRow)
}

// abs is |z|, without cmplx.Abs's cost for a real z.
func abs(z complex128) float64 {
	if imag(z) == 0 {
		return math.Abs(real(z))
	}
	return cmplx.Abs(z)
}

// wrongFactors counts the wrong factors that factorCheck caught and the
// errors that cuSolverMg reported for matrices the host then factored.
var wrongFactors atomic.Int64

// WrongFactorsCaught returns how many factorizations on GPU meshes since
// the process started gave a wrong result that mgla replaced: a factor that
// failed mgla's check and was computed again (see mgla.ErrWrongResult), or
// an error cuSolverMg reported for a matrix that the host then factored.
func WrongFactorsCaught() int64 { return wrongFactors.Load() }
