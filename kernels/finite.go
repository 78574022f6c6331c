package kernels

import (
	"math"
)

// CheckFinite returns a *NonFiniteError (matching ErrNonFinite) for the first
// NaN or Inf entry of the column-major rows×cols matrix a with leading
// dimension lda, scanning column by column. With lowerOnly only the lower
// triangle (i ≥ j, diagonal included) is inspected. It returns nil when all
// inspected entries are finite.
func CheckFinite[T Scalar](rows, cols int, a []T, lda int, lowerOnly bool) error {
	checkMatrix("a", rows, cols, lda, len(a))
	switch dtypeOf[T]() {
	case dtFloat32:
		return checkFiniteF32(rows, cols, cast[float32](a), lda, lowerOnly)
	case dtFloat64:
		return checkFiniteF64(rows, cols, cast[float64](a), lda, lowerOnly)
	case dtComplex64:
		// A complex number is two reals: scan them as a real 2·rows × cols matrix.
		return scanColumns(rows, cols, parts[float32](a), lda, 2, lowerOnly, firstNonFinite32)
	default:
		return scanColumns(rows, cols, parts[float64](a), lda, 2, lowerOnly, firstNonFinite64)
	}
}

func checkFiniteF64(rows, cols int, a []float64, lda int, lowerOnly bool) error {
	return scanColumns(rows, cols, a, lda, 1, lowerOnly, firstNonFinite64)
}

func checkFiniteF32(rows, cols int, a []float32, lda int, lowerOnly bool) error {
	return scanColumns(rows, cols, a, lda, 1, lowerOnly, firstNonFinite32)
}

// scanColumns applies first to each column of the column-major rows×cols
// matrix whose elements are per consecutive reals of f (1 for real, 2 for
// complex matrices; lda counts elements), from the diagonal down with
// lowerOnly, and reports the first non-finite element it finds.
// Large matrices are scanned by column blocks in parallel (columnBlocks);
// the error names the first non-finite element in column order either way.
func scanColumns[F float32 | float64](rows, cols int, f []F, lda, per int, lowerOnly bool, first func([]F) int) error {
	scan := func(j0, j1 int) *NonFiniteError {
		for j := j0; j < j1; j++ {
			i0 := 0
			if lowerOnly {
				i0 = j
			}
			if i0 >= rows {
				break
			}
			if k := first(f[per*(j*lda+i0) : per*(j*lda+rows)]); k >= 0 {
				return &NonFiniteError{Row: i0 + k/per, Col: j}
			}
		}
		return nil
	}
	if rows*cols < 1<<18 {
		if e := scan(0, cols); e != nil {
			return e
		}
		return nil
	}
	found := make([]*NonFiniteError, (cols+blockWidth-1)/blockWidth)
	columnBlocks(cols, func(j0, j1 int) { found[j0/blockWidth] = scan(j0, j1) })
	for _, e := range found {
		if e != nil {
			return e
		}
	}
	return nil
}

// firstNonFinite64 returns the index of the first NaN/Inf in s, or -1.
// x-x is 0 for finite x and NaN for NaN and ±Inf; the sum of a block of such
// differences is NaN iff the block holds a non-finite value.
func firstNonFinite64(s []float64) int {
	const blk = 8
	i := 0
	for ; i+blk <= len(s); i += blk {
		b := s[i : i+blk : i+blk]
		t := (b[0] - b[0]) + (b[1] - b[1]) + (b[2] - b[2]) + (b[3] - b[3]) +
			(b[4] - b[4]) + (b[5] - b[5]) + (b[6] - b[6]) + (b[7] - b[7])
		if t != 0 || t != t {
			for k, v := range b {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return i + k
				}
			}
		}
	}
	for ; i < len(s); i++ {
		if math.IsNaN(s[i]) || math.IsInf(s[i], 0) {
			return i
		}
	}
	return -1
}

func firstNonFinite32(s []float32) int {
	for i, v := range s {
		if v-v != 0 {
			return i
		}
	}
	return -1
}
