package lapack

import (
	"fmt"
	"testing"
)

// tridiagSizes are orders below, at and beyond the unblocked limit (128),
// with one and several panels of 32 and odd remainders.
var tridiagSizes = []int{1, 2, 3, 31, 128, 129, 130, 161, 300}

// checkReduction checks the reduction of the Hermitian A (full, leading
// dimension n) to T = (d, e) by the reflectors in a (leading dimension lda)
// and tau: Qᴴ·A·Q = T and QᴴQ = I, with Q formed by the loop of
// reflectorProduct, and that the padding rows of a are untouched.
// reductionTol bounds checkReduction's relative residuals: 10·n ulps, a
// third of LAPACK's own test threshold (30·n·ulp, dsyt21). 2·n ulps, the
// bound before, failed about once in some hundreds of random matrices: at
// n = 3, ‖QᴴQ − I‖ = 1.45e-15 = 2.2·n ulps (seed 1795882834907929480).
func reductionTol(n int) float64 { return 10 * 0x1p-52 * float64(n) }

func checkReduction(t *testing.T, name string, n int, full, a []complex128, lda int, d, e []float64, tau []complex128) {
	t.Helper()
	if !paddingIntact(a, n, n, lda) {
		t.Errorf("%s: the padding rows of a were written", name)
	}
	q := reflectorProduct(n, a, lda, tau)
	aq := naiveGemm(false, false, n, n, n, full, n, q, n)
	qaq := naiveGemm(true, false, n, n, n, q, n, aq, n)
	tri := make([]complex128, n*n)
	for i := 0; i < n; i++ {
		tri[i+i*n] = complex(d[i], 0)
		if i+1 < n {
			tri[i+1+i*n] = complex(e[i], 0)
			tri[i+(i+1)*n] = complex(e[i], 0)
		}
	}
	if r := diffNorm(n, n, qaq, n, tri, n) / frob(n, n, full, n); !(r <= reductionTol(n)) {
		t.Errorf("seed %d %s: ‖Qᴴ·A·Q − T‖/‖A‖ = %.3g", testSeed, name, r)
	}
	qq := naiveGemm(true, false, n, n, n, q, n, q, n)
	if r := diffNorm(n, n, qq, n, identity(n), n); !(r <= reductionTol(n)) {
		t.Errorf("seed %d %s: ‖QᴴQ − I‖ = %.3g", testSeed, name, r)
	}
}

// randHermitian returns a random Hermitian matrix in the lower triangle of
// an n×n block with leading dimension lda (strict upper triangle and padding
// junk) and the full matrix (leading dimension n).
func randHermitian(rnd interface{ NormFloat64() float64 }, n, lda int, cplx bool) (a, full []complex128) {
	a = make([]complex128, lda*n)
	for i := range a {
		a[i] = junk
	}
	for j := 0; j < n; j++ {
		a[j+j*lda] = complex(rnd.NormFloat64(), 0)
		for i := j + 1; i < n; i++ {
			a[i+j*lda] = complex(rnd.NormFloat64(), 0)
			if cplx {
				a[i+j*lda] += complex(0, rnd.NormFloat64())
			}
		}
	}
	return a, hermitianLower(n, a, lda)
}

// TestDsytrd checks the real reduction Qᵀ·A·Q = T on random symmetric
// matrices with junk in the strict upper triangle and the padding rows.
func TestDsytrd(t *testing.T) {
	rnd := newRand(t, 11)
	for _, n := range tridiagSizes {
		lda := n + 2
		a, full := randHermitian(rnd, n, lda, false)
		ar := realOf(a)
		d := make([]float64, n)
		e := make([]float64, n-1)
		tau := make([]float64, n-1)
		Dsytrd(n, ar, lda, d, e, tau)
		checkReduction(t, fmt.Sprintf("Dsytrd n=%d", n), n, full, complexOf(ar), lda, d, e, complexOf(tau))
	}
}
