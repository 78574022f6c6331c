package lapack

import (
	"fmt"
	"math"
	"math/cmplx"
	"slices"
	"testing"
)

// gemmSizes covers the empty products, the unpacked loops (m·n·k < 24³), the
// packed serial kernel with edges of the 2×2 micro tile, depths beyond one
// packed block (256) and the split between goroutines (m·n·k ≥ 2·96³).
var gemmSizes = [][3]int{
	{0, 3, 2}, {4, 0, 3}, {3, 4, 0}, {1, 1, 1}, {7, 5, 3},
	{33, 29, 31}, {97, 65, 130}, {5, 3, 300}, {130, 257, 129},
}

// realOf returns the real parts of a.
func realOf(a []complex128) []float64 {
	x := make([]float64, len(a))
	for i, v := range a {
		x[i] = real(v)
	}
	return x
}

// complexOf returns x as complex values; the NaN of junk comes back as junk,
// so that paddingIntact checks real matrices too.
func complexOf(x []float64) []complex128 {
	a := make([]complex128, len(x))
	for i, v := range x {
		a[i] = complex(v, 0)
		if math.Float64bits(v) == math.Float64bits(real(junk)) {
			a[i] = junk
		}
	}
	return a
}

// to64 rounds a to complex64 storage; round64 rounds a in place to the
// values that storage holds (junk stays junk).
func to64(a []complex128) []complex64 {
	y := make([]complex64, len(a))
	for i, v := range a {
		y[i] = complex64(v)
	}
	return y
}

func round64(a []complex128) {
	for i, v := range a {
		if !sameBits(v, junk) {
			a[i] = complex128(complex64(v))
		}
	}
}

// from64 widens c back; entries that were junk before the call and are NaN
// now are junk (complex64 does not keep the NaN's payload).
func from64(c []complex64, before []complex128) []complex128 {
	out := make([]complex128, len(c))
	for i, v := range c {
		out[i] = complex128(v)
		if sameBits(before[i], junk) && cmplx.IsNaN(out[i]) {
			out[i] = junk
		}
	}
	return out
}

// stored returns the shape of X for op(X) rows×cols.
func stored(trans bool, rows, cols int) (int, int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}

// TestGemm checks Dgemm and Zgemm (complex128 and complex64 storage) against
// the triple loop for every op combination and alpha, beta including zero
// (beta = 0 with NaN in C, which must not propagate), with leading dimensions
// larger than the rows and junk in the padding, which must stay untouched.
func TestGemm(t *testing.T) {
	rnd := newRand(t, 2)
	for _, sz := range gemmSizes {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			tA, tB := tr[0], tr[1]
			for _, ab := range [][2]complex128{{1, 0}, {complex(-0.5, 2), complex(0.25, -1)}, {0, 2}} {
				for _, routine := range []string{"Dgemm", "Zgemm", "Zgemm/complex64"} {
					alpha, beta := ab[0], ab[1]
					cplx := routine != "Dgemm"
					if !cplx {
						alpha, beta = complex(real(alpha), 0), complex(real(beta), 0)
					}
					ar, ac := stored(tA, m, k)
					br, bc := stored(tB, k, n)
					lda, ldb, ldc := ar+2, br+1, m+3
					a := randMat(rnd, ar, ac, lda, cplx)
					b := randMat(rnd, br, bc, ldb, cplx)
					c0 := randMat(rnd, m, n, ldc, cplx)
					if beta == 0 {
						for j := 0; j < n; j++ {
							for i := 0; i < m; i++ {
								c0[i+j*ldc] = cmplx.NaN()
							}
						}
					}
					eps := 0x1p-53
					var c []complex128
					switch routine {
					case "Dgemm":
						cr := realOf(c0)
						Dgemm(tA, tB, m, n, k, real(alpha), realOf(a), lda, realOf(b), ldb, real(beta), cr, ldc)
						c = complexOf(cr)
					case "Zgemm":
						c = slices.Clone(c0)
						Zgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
					default:
						eps = 0x1p-24
						round64(a)
						round64(b)
						round64(c0)
						c64 := to64(c0)
						Zgemm(tA, tB, m, n, k, alpha, to64(a), lda, to64(b), ldb, beta, c64, ldc)
						c = from64(c64, c0)
					}
					name := fmt.Sprintf("seed %d %s m=%d n=%d k=%d tA=%v tB=%v alpha=%v beta=%v", testSeed, routine, m, n, k, tA, tB, alpha, beta)
					// Reference: alpha·op(A)·op(B) + beta·C by the triple loop.
					ref := naiveGemm(tA, tB, m, n, k, a, lda, b, ldb)
					scale := cmplx.Abs(alpha) * frob(ar, ac, a, lda) * frob(br, bc, b, ldb)
					for j := 0; j < n; j++ {
						for i := 0; i < m; i++ {
							ref[i+j*m] *= alpha
							if beta != 0 {
								ref[i+j*m] += beta * c0[i+j*ldc]
							}
						}
					}
					if beta != 0 {
						scale += cmplx.Abs(beta) * frob(m, n, c0, ldc)
					}
					if d := diffNorm(m, n, c, ldc, ref, max(1, m)); !(d <= 4*eps*float64(k+2)*scale) {
						t.Errorf("%s: ‖C − ref‖_F = %.3g, bound %.3g", name, d, 4*eps*float64(k+2)*scale)
					}
					if !paddingIntact(c, m, n, ldc) {
						t.Errorf("%s: the padding rows of c were written", name)
					}
				}
			}
		}
	}
}
