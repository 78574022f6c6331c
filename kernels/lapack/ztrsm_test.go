package lapack

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// wellCondLower returns a random n×n lower triangular matrix with a dominant
// diagonal (strict upper triangle zero), leading dimension lda with junk in
// the padding rows.
func wellCondLower(rnd *rand.Rand, n, lda int) []complex128 {
	l := randMat(rnd, n, n, lda, true)
	for j := 0; j < n; j++ {
		clear(l[j*lda : j*lda+j])
		l[j+j*lda] = complex(float64(n)+math.Abs(rnd.NormFloat64()), rnd.NormFloat64())
	}
	return l
}

// TestZtrsm checks op(L)·X = B for both ops, complex128 and complex64
// storage, orders around the block size (64), junk (NaN) in the strict upper
// triangle of L, which must not be read, and in the padding rows of L and B.
func TestZtrsm(t *testing.T) {
	rnd := newRand(t, 4)
	for _, m := range []int{1, 5, 63, 64, 65, 130, 200} {
		for _, n := range []int{1, 3, 17} {
			for _, conjTrans := range []bool{false, true} {
				for _, single := range []bool{false, true} {
					ldl, ldb := m+1, m+2
					l := wellCondLower(rnd, m, ldl)
					for j := 0; j < m; j++ {
						for i := 0; i < j; i++ {
							l[i+j*ldl] = junk
						}
					}
					b := randMat(rnd, m, n, ldb, true)
					eps := 0x1p-53
					var x []complex128
					if single {
						eps = 0x1p-24
						round64(l)
						round64(b)
						x64 := to64(b)
						Ztrsm(conjTrans, m, n, to64(l), ldl, x64, ldb)
						x = from64(x64, b)
					} else {
						x = slices.Clone(b)
						Ztrsm(conjTrans, m, n, l, ldl, x, ldb)
					}
					if !paddingIntact(x, m, n, ldb) {
						t.Errorf("m=%d n=%d: Ztrsm wrote the padding rows of b", m, n)
					}
					lo := lowerOf(m, l, ldl)
					lx := naiveGemm(conjTrans, false, m, n, m, lo, m, x, ldb)
					r := diffNorm(m, n, lx, m, b, ldb) / (frob(m, m, lo, m) * frob(m, n, x, ldb))
					if !(r <= 4*eps*float64(m)) {
						t.Errorf("seed %d m=%d n=%d conjTrans=%v complex64=%v: ‖op(L)·X − B‖/(‖L‖‖X‖) = %.3g", testSeed, m, n, conjTrans, single, r)
					}
				}
			}
		}
	}
}
