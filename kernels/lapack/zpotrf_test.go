package lapack

import (
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// randHPD returns A = M·Mᴴ + n·I for a random complex M, n×n with leading
// dimension lda (padding rows junk), and with junk in its strict upper
// triangle when upperJunk is set.
func randHPD(rnd *rand.Rand, n, lda int, upperJunk bool) []complex128 {
	m := randMat(rnd, n, n, n, true)
	a := randMat(rnd, n, n, lda, false)
	p := naiveGemm(false, true, n, n, n, m, n, m, n)
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			a[i+j*lda] = p[i+j*n]
			if i == j {
				a[i+j*lda] = complex(real(p[i+j*n])+float64(n), 0)
			}
			if upperJunk && i < j {
				a[i+j*lda] = junk
			}
		}
	}
	return a
}

// lowerOf returns the lower triangle of the n×n block of a (strict upper
// zero), leading dimension n.
func lowerOf(n int, a []complex128, lda int) []complex128 {
	l := make([]complex128, n*n)
	for j := 0; j < n; j++ {
		copy(l[j+j*n:(j+1)*n], a[j+j*lda:n+j*lda])
	}
	return l
}

// TestZpotrf checks L·Lᴴ = A for random Hermitian positive definite
// matrices of orders around the panel (8) and block (128) sizes, with junk in
// the strict upper triangle, which must not be read, imaginary parts on the
// diagonal, which must be ignored, and junk in the padding rows of lda > n,
// which must stay untouched; and that a matrix whose leading
// minor of order k+1 is not positive definite (a negative or NaN pivot)
// returns info = k+1.
func TestZpotrf(t *testing.T) {
	rnd := newRand(t, 3)
	for _, n := range []int{1, 2, 7, 8, 9, 17, 31, 127, 129, 257} {
		lda := n + 3
		a := randHPD(rnd, n, lda, true)
		ref := hermitianLower(n, a, lda)
		for j := 0; j < n; j++ {
			a[j+j*lda] += complex(0, 3) // ignored: ref has the real diagonal
		}
		if info := Zpotrf(n, a, lda); info != 0 {
			t.Fatalf("seed %d n=%d: info %d for a positive definite matrix", testSeed, n, info)
		}
		if !paddingIntact(a, n, n, lda) {
			t.Errorf("n=%d: Zpotrf wrote the padding rows", n)
		}
		l := lowerOf(n, a, lda)
		llh := naiveGemm(false, true, n, n, n, l, n, l, n)
		if r := diffNorm(n, n, llh, n, ref, n) / frob(n, n, ref, n); !(r <= 4*0x1p-53*float64(n)) {
			t.Errorf("seed %d n=%d: ‖L·Lᴴ − A‖/‖A‖ = %.3g", testSeed, n, r)
		}
		for j := 0; j < n; j++ {
			if d := a[j+j*lda]; imag(d) != 0 || !(real(d) > 0) {
				t.Errorf("n=%d: L[%d,%d] = %v, want a positive real diagonal", n, j, j, d)
				break
			}
		}
		for _, k := range []int{0, n / 2, n - 1} {
			for _, pivot := range []complex128{complex(-1e3*float64(n*n), 0), cmplx.NaN()} {
				b := randHPD(rnd, n, lda, false)
				b[k+k*lda] = pivot
				if info := Zpotrf(n, b, lda); info != k+1 {
					t.Errorf("seed %d n=%d: pivot %v at %d: info %d, want %d", testSeed, n, pivot, k, info, k+1)
				}
			}
		}
	}
}
