package kernels

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
		return scanColumns(rows, cols, parts[float32](a), lda, nil, 0, 2, lowerOnly, false, firstNonFinite32)
	default:
		return scanColumns(rows, cols, parts[float64](a), lda, nil, 0, 2, lowerOnly, false, firstNonFinite64)
	}
}

func checkFiniteF64(rows, cols int, a []float64, lda int, lowerOnly bool) error {
	return scanColumns(rows, cols, a, lda, nil, 0, 1, lowerOnly, false, firstNonFinite64)
}

func checkFiniteF32(rows, cols int, a []float32, lda int, lowerOnly bool) error {
	return scanColumns(rows, cols, a, lda, nil, 0, 1, lowerOnly, false, firstNonFinite32)
}

// cholInputF64 is the input pass of a Cholesky factorization into l: it
// copies the lower triangle of the n×n matrix a into l (a nil: l holds the
// input already), checks it like checkFiniteF64(n, n, a, lda, true) and
// clears l's strict upper triangle, all in one pass over the memory.
func cholInputF64(n int, l []float64, ldl int, a []float64, lda int) error {
	return scanColumns(n, n, l, ldl, a, lda, 1, true, true, firstNonFinite64)
}

// cholInputC128 is cholInputF64 for complex128.
func cholInputC128(n int, l []complex128, ldl int, a []complex128, lda int) error {
	var src []float64
	if a != nil {
		src = parts[float64](a)
	}
	return scanColumns(n, n, parts[float64](l), ldl, src, lda, 2, true, true, firstNonFinite64)
}

// scanColumns applies first to each column of the column-major rows×cols
// matrix f (leading dimension lda) whose elements are per consecutive reals
// (1 for real, 2 for complex matrices; lda counts elements), from the
// diagonal down with lowerOnly, and reports the first non-finite element it
// finds. With src (leading dimension lds, same shape) each column's scanned
// part is first copied from src, so that the scan reads it from cache; with
// zeroUpper (and lowerOnly) each column of f is also cleared above the
// diagonal. Large matrices are done by column blocks in parallel
// (columnBlocks); the error names the first non-finite element in column
// order either way.
func scanColumns[F float32 | float64](rows, cols int, f []F, lda int, src []F, lds int, per int, lowerOnly, zeroUpper bool, first func([]F) int) error {
	scan := func(j0, j1 int) *NonFiniteError {
		for j := j0; j < j1; j++ {
			i0 := 0
			if lowerOnly {
				i0 = j
				if zeroUpper {
					clear(f[per*j*lda : per*(j*lda+min(j, rows))])
				}
			}
			if i0 >= rows {
				break
			}
			col := f[per*(j*lda+i0) : per*(j*lda+rows)]
			if src != nil {
				copy(col, src[per*(j*lds+i0):per*(j*lds+rows)])
			}
			if k := first(col); k >= 0 {
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

// firstNonFinite returns the index of the first NaN or ±Inf in s, or -1.
// It sums s in chunks with eight independent accumulators (the scan is then
// bound by memory, not by the latency of one chain of additions): a sum is
// finite when every term is, and NaN or ±Inf when one term is, or when
// finite terms overflow; only then is the chunk searched element by element,
// which also rules out the overflow.
func firstNonFinite[F float32 | float64](s []F) int {
	const chunk = 512
	for c := 0; c < len(s); c += chunk {
		b := s[c:min(c+chunk, len(s))]
		if t := sum8(b); t-t == 0 {
			continue
		}
		for k, v := range b {
			if v-v != 0 { // NaN for NaN and ±Inf, 0 for every finite v
				return c + k
			}
		}
	}
	return -1
}

// sum8 sums b with eight accumulators.
func sum8[F float32 | float64](b []F) F {
	var a0, a1, a2, a3, a4, a5, a6, a7 F
	i := 0
	for ; i+8 <= len(b); i += 8 {
		q := b[i : i+8 : i+8]
		a0 += q[0]
		a1 += q[1]
		a2 += q[2]
		a3 += q[3]
		a4 += q[4]
		a5 += q[5]
		a6 += q[6]
		a7 += q[7]
	}
	for ; i < len(b); i++ {
		a0 += b[i]
	}
	return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
}

func firstNonFinite64(s []float64) int { return firstNonFinite(s) }

func firstNonFinite32(s []float32) int { return firstNonFinite(s) }

// resultFinite reports whether the rows×cols block of a is finite (v−v is
// NaN exactly for an infinite or NaN v, in either part of a complex v).
func resultFinite[T float64 | complex128](rows, cols int, a []T, lda int) bool {
	for j := 0; j < cols; j++ {
		for _, v := range a[j*lda : j*lda+rows] {
			if v-v != 0 {
				return false
			}
		}
	}
	return true
}
