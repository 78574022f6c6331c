package kernels

import "math"

// The eigenvector part of Syevd's gradient, shared by the gradients on one
// process (package ops) and across processes (package dist): for
// A = V·diag(w)·Vᵀ and M = VᵀV̄, the gradient of A is
// sym(V·(F∘M)·Vᵀ) with F_ij = 1/(w_j − w_i) for i ≠ j. For eigenvalues
// equal to rounding F_ij is infinite. Where M_ij and M_ji are both exactly
// zero (the cost does not use those eigenvectors: V unused, or multiplied
// by 0) the term is 0. Anywhere else it is undefined as computed from w̄ and
// V̄, even for costs whose gradient exists (sum(V·diag(w)·Vᵀ), which is
// sum(A)): the limit of F_ij·M_ij depends on how M varies with w, which the
// backward pass does not see. That is ErrRepeatedEigenvalues, not Inf or
// NaN.

// EigenGapTolerance is the gap below which two of the eigenvalues w count as
// equal: max(n, minGapUlps)·ε·max|w|, the rounding of eigenvalues computed
// backward stably, ε the unit roundoff of single precision (single) or of
// double.
func EigenGapTolerance(w []float64, single bool) float64 {
	eps := dlamchE
	if single {
		eps = 0x1p-24
	}
	var top float64
	for _, x := range w {
		top = max(top, math.Abs(x))
	}
	return float64(max(len(w), minGapUlps)) * eps * top
}

// minGapUlps is the smallest tolerance of EigenGapTolerance in units of
// ε·max|w|. n·ε alone is below the rounding of small matrices: the computed
// copies of a double eigenvalue of Q·diag(1, 2, 2)·Qᵀ (Q random orthogonal,
// A rounded to float64) differ by up to about 10·ε·max|w| at n = 3 and
// 7·ε·max|w| at n = 5, and a gap of that size taken as distinct makes an
// eigenvector gradient of order 1/ε instead of ErrRepeatedEigenvalues.
const minGapUlps = 64

// EigenvectorTerm is (F∘M)_ij for i ≠ j from m = M_ij and mt = M_ji:
// m/(wj − wi) when |wj − wi| > gap, else 0 if m and mt are both zero and
// ok = false if not (ErrRepeatedEigenvalues).
func EigenvectorTerm(m, mt, wi, wj, gap float64) (term float64, ok bool) {
	if math.Abs(wj-wi) > gap {
		return m / (wj - wi), true
	}
	return 0, m == 0 && mt == 0
}

// SymmetricEigenvectorTerms replaces the n×n column-major M (leading
// dimension ld) by sym(F∘M): for each pair i < j the mean of
// EigenvectorTerm(M_ij, M_ji, w_i, w_j) and EigenvectorTerm(M_ji, M_ij,
// w_j, w_i) (halves first: no overflow where both fit) in both places, and
// 0 on the diagonal. sym(V·(F∘M)·Vᵀ) = V·sym(F∘M)·Vᵀ, and with a
// symmetric middle factor the last product is symmetric. It works by
// square tiles below the diagonal and their mirror images, which stay in
// cache, and in parallel by column blocks (columnBlocks: block J writes
// columns J above the diagonal and rows J below it, which no other block
// touches). When a pair is undefined (EigenvectorTerm's ok is false) it
// returns ok = false and the first such pair (the smallest j, then the
// smallest i); M is then partly overwritten.
func SymmetricEigenvectorTerms[T float32 | float64](n int, m []T, ld int, w []float64, gap float64) (i, j int, ok bool) {
	checkMatrix("m", n, n, ld, len(m))
	if len(w) != n {
		panic("kernels: SymmetricEigenvectorTerms: eigenvalues and matrix of different sizes")
	}
	// firstBad[b] is column block b's first undefined pair as j·n + i, or
	// -1.
	firstBad := make([]int, (n+blockWidth-1)/blockWidth)
	columnBlocks(n, func(j0, j1 int) {
		bad := -1
		for i0 := 0; i0 < j1; i0 += blockWidth {
			for j := j0; j < j1; j++ {
				if i0 == 0 {
					m[j+j*ld] = 0
				}
				col := m[j*ld:]
				for i := i0; i < min(i0+blockWidth, j); i++ {
					ij, ji := float64(col[i]), float64(m[j+i*ld])
					a, okA := EigenvectorTerm(ij, ji, w[i], w[j], gap)
					b, okB := EigenvectorTerm(ji, ij, w[j], w[i], gap)
					if !okA || !okB {
						if k := j*n + i; bad < 0 || k < bad {
							bad = k
						}
						continue
					}
					// Each half rounded before the sum (the conversions
					// forbid fusing it into an FMA, which Go does on arm64
					// and GOAMD64=v3): the GPU kernel's rounding, bit for bit.
					col[i] = T(float64(a/2) + float64(b/2))
					m[j+i*ld] = col[i]
				}
			}
		}
		firstBad[j0/blockWidth] = bad
	})
	for _, k := range firstBad {
		if k >= 0 {
			return k % n, k / n, false
		}
	}
	return 0, 0, true
}
