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
	floor       float64      // the least rounding scale of a row (worst)
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
	c.floor = float64(n+2) * math.SmallestNonzeroFloat64
	if single {
		c.eps = 0x1p-23
		c.floor = float64(n+2) * math.SmallestNonzeroFloat32
	}
	// A generator of the check's own: the global one costs about three
	// times as much per number.
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	isComplex := a.Dtype() == tensor.Complex64 || a.Dtype() == tensor.Complex128
	// Every entry of v has a modulus between ½ and 1 and a random sign
	// (complex: phase). With entries near 0, as a uniform draw from
	// [−1, 1] gives, a wrong entry of L in that column would go almost
	// unseen: the ratio of an error in one entry would vary from one v to
	// another by any factor, here by at most about 2 (a kept factor 1.8
	// times the threshold off by another v, call 51).
	for i := range c.v {
		mod := 0.5 + 0.5*rng.Float64()
		z := complex(mod, 0)
		switch {
		case isComplex:
			z = cmplx.Rect(mod, 2*math.Pi*rng.Float64())
		case rng.IntN(2) == 0:
			z = -z
		}
		if single { // exactly representable in the dtype
			z = complex(float64(float32(real(z))), float64(float32(imag(z))))
		}
		c.v[i] = z
		c.vAbs[i] = abs(z)
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

// worst compares L·(Lᴴ·v) with A·v, L being the lower triangle of l, row
// by row in units of the row's rounding scale eps·(|A|·|v| + |L|·|Lᴴ|·|v|)
// and returns the largest ratio (NaN when a row is NaN) and its row. The
// scale has a floor of n+2 of the dtype's smallest subnormals, the
// rounding of gradual underflow: rows of entries near the smallest normal
// number would otherwise divide by a scale that underflowed to 0.
func (c *factorCheck) worst(l *sharding.Tensor) (ratio float64, row int, err error) {
	if err := l.MulCholeskyInto(c.y, c.yAbs, c.v, c.vAbs); err != nil {
		return 0, 0, err
	}
	row = -1
	for i := range c.v {
		r := abs(c.av[i]-c.y[i]) / max(c.eps*(c.avAbs[i]+c.yAbs[i]), c.floor)
		if row < 0 || r > ratio || math.IsNaN(r) {
			ratio, row = r, i
			if math.IsNaN(r) {
				break
			}
		}
	}
	return ratio, row, nil
}

// typical is the check's threshold on worst's ratio, √(n+2): what rounding
// errors that add up like √n reach. (A rigorous bound on the rounding
// errors of the factorization and of the products is 4(n+2): Higham,
// Thm. 10.3.) The right factors of cuSOLVER and cusolverMgPotrf stay at a
// fifth of it at most (0.2√n: about 1400 factors of random, graded, kernel,
// J + I, Kac–Murdock–Szegő and Lehmer matrices, N = 1000 to 16385, 1 to 4
// H100s, every dtype; calls 36–44 in
// docs/bench/gpu-4xH100-2026-11-27-review.txt and gpu-4xH100-2026-11-28.txt),
// and the host's unblocked factor of graded matrices at 0.4√n. The wrong
// ones that cusolverMgPotrf returned beside other GPU work were off by 229
// to 5e14 in units of rounding, all but one beyond the rigorous bound in
// double precision, many within it in single precision, and one complex64
// factor of J + I by 74 at N = 1537 (1.9√n), which the threshold used
// until 2026-11-28, 2√(n+2), kept.
func (c *factorCheck) typical() float64 { return math.Sqrt(float64(len(c.v) + 2)) }

// wrong is the error of a factor whose worst row, row, gave ratio.
func (c *factorCheck) wrong(ratio float64, row int) error {
	return fmt.Errorf("%w: the factor fails its check: |A·v − L·Lᴴ·v| is %.3g times eps·(|A|·|v| + |L|·|Lᴴ|·|v|) at row %d (rounding stays below %.3g)",
		kernels.ErrWrongResult, ratio, row, c.typical())
}

// right reports whether a factor whose check gave ratio is kept: within the
// typical threshold. A factor beyond it is computed again, also within the
// rigorous bound: the wrong factors that cusolverMgPotrf returns beside
// other GPU work can repeat bit for bit (two of 19 in one float64 run, call
// 37), so a repeated factor is no sign of a right one, and right factors
// beyond √(n+2) need rounding errors that add up (row by row in ΔA·v, v's
// random signs cancel them: |ΔA·v| grows like √n·max|ΔA| even where the
// entries of ΔA = L·Lᴴ − A all reach the rigorous bound).
func (c *factorCheck) right(ratio float64) bool { return ratio <= c.typical() }

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
// the process started gave a wrong result that mgla caught: a factor that
// failed mgla's check and was computed again, or that was the last attempt
// (the op then fails with mgla.ErrWrongResult), or an error cuSolverMg
// reported for a matrix that the host then factored.
func WrongFactorsCaught() int64 { return wrongFactors.Load() }
