package kernels

import (
	"runtime"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"

	"github.com/mgla/mgla/kernels/cpubackend"
)

// Real (float64) Cholesky kernels on column-major storage through the
// row-major backend. The row-major view of a column-major matrix is its
// transpose, so the column-major lower triangle is the row-major upper one and
// the backend is called with blas.Upper.

// potrfF64 factorizes the lower triangle of src (lds) into a (lda), or a in
// place when src is nil.
func potrfF64(n int, a []float64, lda int, src []float64, lds int) error {
	// dpotrf('L') neither reads nor writes the strict upper triangle, so it
	// is cleared for L in the input's pass.
	if err := cholInputF64(n, a, lda, src, lds); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if info, ok := cpubackend.DpotrfNative(n, a, lda); ok {
		if info > 0 {
			return cholFailure(info, a[info-1+(info-1)*lda])
		}
		// dpotrf forms each diagonal entry from all the entries left of it
		// (l_jj² = a_jj − Σ l_jk²), so an infinite L(j,k) makes the pivot
		// −Inf (which stops it) or NaN (Inf − Inf). Reference LAPACK stops
		// at a NaN pivot too; OpenBLAS's own dpotrf tests only ajj <= 0
		// and lets it through with info = 0. Scanning the diagonal, O(n),
		// catches every overflow, as the whole-triangle scan below does.
		for j := range n {
			if d := a[j+j*lda]; d-d != 0 {
				return &NonFiniteError{Row: j, Col: j}
			}
		}
		return nil
	}
	// The row-major upper triangle of the backend is the lower one here;
	// like LAPACK it leaves the other triangle alone.
	if !cpubackend.LAPACK.Dpotrf(blas.Upper, n, a, lda) {
		return potrfFailure(n, a, lda)
	}
	// A finite input can still overflow (entries near MaxFloat64).
	return checkFiniteF64(n, n, a, lda, true)
}

// potrfFailure locates the failing leading minor after an unsuccessful
// Dpotrf. Columns that were factorized hold sqrt(·) > 0 on the diagonal; the
// failing one holds the non-positive (or NaN) pivot that stopped the
// factorization, so it is the first diagonal entry that is not > 0.
func potrfFailure(n int, a []float64, lda int) error {
	for j := 0; j < n; j++ {
		d := a[j+j*lda]
		if d != d {
			return &NonFiniteError{Row: j, Col: j}
		}
		if !(d > 0) {
			return &NotPositiveDefiniteError{Order: j + 1}
		}
	}
	return &NotPositiveDefiniteError{Order: n}
}

// cholFailure is the error for a LAPACK ?potrf that stopped at the 1-based
// order info with pivot d on the diagonal: NaN there means the input (or an
// update) was not finite, anything else (a negative, zero or infinite pivot
// of a finite input) that the minor is not positive definite.
func cholFailure[T float64 | complex128](info int, d T) error {
	if d != d {
		return &NonFiniteError{Row: info - 1, Col: info - 1}
	}
	return &NotPositiveDefiniteError{Order: info}
}

// checkCholDiag returns NotPositiveDefiniteError{i+1} for the first diagonal
// entry of a Cholesky factor that is zero or not finite.
func checkCholDiagF64(n int, l []float64, ldl int) error {
	for i := 0; i < n; i++ {
		d := l[i+i*ldl]
		if d == 0 || !isFinite64(d) {
			return &NotPositiveDefiniteError{Order: i + 1}
		}
	}
	return nil
}

func potrsF64(n, nrhs int, l []float64, ldl int, b []float64, ldb int) error {
	if err := checkCholDiagF64(n, l, ldl); err != nil {
		return err
	}
	if n == 0 || nrhs == 0 {
		return nil
	}
	if !cpubackend.DpotrsNative(n, nrhs, l, ldl, b, ldb) {
		trsmLowerLeftReal(false, n, nrhs, l, ldl, b, ldb)
		trsmLowerLeftReal(true, n, nrhs, l, ldl, b, ldb)
	}
	if !resultFinite(n, nrhs, b, ldb) {
		return errResultNonFinite
	}
	return nil
}

// trsmLowerLeftReal solves L·X = B (or Lᵀ·X = B) in place. In the row-major
// view this is Xᵀ·U = Bᵀ (or Xᵀ·Uᵀ = Bᵀ) with U = Lᵀ the row-major upper
// triangle, a right-side solve. Where blockTriangular says so the solve is
// blocked: diagonal blocks by the backend's trsm and the updates by Gemm.
func trsmLowerLeftReal[T float32 | float64](trans bool, m, n int, l []T, ldl int, b []T, ldb int) {
	if m == 0 || n == 0 {
		return
	}
	const nb = triangularBlock
	if !blockTriangular[T](m, n) {
		backendTrsm(trans, n, m, l, ldl, b, ldb)
		return
	}
	if !trans {
		for i0 := 0; i0 < m; i0 += nb {
			ib := min(nb, m-i0)
			backendTrsm(false, n, ib, l[i0+i0*ldl:], ldl, b[i0:], ldb)
			if i0+ib < m {
				Gemm(false, false, m-i0-ib, n, ib, -1, l[i0+ib+i0*ldl:], ldl, b[i0:], ldb, 1, b[i0+ib:], ldb)
			}
		}
		return
	}
	for i0 := (m - 1) / nb * nb; i0 >= 0; i0 -= nb {
		ib := min(nb, m-i0)
		backendTrsm(true, n, ib, l[i0+i0*ldl:], ldl, b[i0:], ldb)
		if i0 > 0 {
			Gemm(true, false, i0, n, ib, -1, l[i0:], ldl, b[i0:], ldb, 1, b, ldb)
		}
	}
}

// triangularBlock is the rows of a diagonal block in the blocked triangular
// solve and product.
const triangularBlock = 128

// blockTriangular reports whether the triangular solve and product of an
// m×m L and m×n B of element type T go by blocks, the updates by Gemm. Only
// where the backend's own routines run on one goroutine (gonum), which also
// stream all of L once per column of B. Measured with BenchmarkTriangular
// and paired runs of the two paths on 1 and 2 vCPUs (2026-11-28; the ratio is
// the backend's time over the blocked path's):
//   - float64: from 64 columns. m = 2000, n = 64 and 2000: 1.8–3.6 on one
//     core, 2.0–4.4 on two; m = 1000: n = 64 0.79–1.37, n = 256 1.28–1.48
//     on two cores, n = 1000 0.71–0.88 on one; n = 8 0.68–1.15.
//   - float32 (gonum's single-precision routines are faster, its Sgemm not):
//     from 256 columns with two cores or more. m = 2000, n = 2000: 1.32–1.66
//     on two cores, 0.72–0.95 on one; m = 1000, n = 256: 0.99–1.15.
func blockTriangular[T float32 | float64](m, n int) bool {
	if !cpubackend.SerialTriangular || m <= triangularBlock {
		return false
	}
	if _, single := any(T(0)).(float32); single {
		return n >= 256 && runtime.GOMAXPROCS(0) >= 2
	}
	return n >= 64
}

// backendTrsm is the backend's row-major right-side solve Bᵀ·op(U)⁻¹ with
// U = Lᵀ: op(L)⁻¹·B on the column-major m×n B (m = rows of L).
func backendTrsm[T float32 | float64](trans bool, n, m int, l []T, ldl int, b []T, ldb int) {
	switch b := any(b).(type) {
	case []float64:
		cpubackend.BLAS.Dtrsm(blas.Right, blas.Upper, blasTrans(trans), blas.NonUnit, n, m, 1, any(l).([]float64), ldl, b, ldb)
	case []float32:
		cpubackend.BLAS.Strsm(blas.Right, blas.Upper, blasTrans(trans), blas.NonUnit, n, m, 1, any(l).([]float32), ldl, b, ldb)
	}
}

// backendTrmm is the backend's row-major right-side product Bᵀ·op(U) with
// U = Lᵀ: op(L)·B on the column-major m×n B (m = rows of L).
func backendTrmm[T float32 | float64](trans bool, n, m int, l []T, ldl int, b []T, ldb int) {
	switch b := any(b).(type) {
	case []float64:
		cpubackend.BLAS.Dtrmm(blas.Right, blas.Upper, blasTrans(trans), blas.NonUnit, n, m, 1, any(l).([]float64), ldl, b, ldb)
	case []float32:
		cpubackend.BLAS.Strmm(blas.Right, blas.Upper, blasTrans(trans), blas.NonUnit, n, m, 1, any(l).([]float32), ldl, b, ldb)
	}
}

func potriF64(n int, l []float64, ldl int) error {
	if err := checkCholDiagF64(n, l, ldl); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if info, ok := cpubackend.DpotriNative(n, l, ldl); ok {
		if info > 0 {
			return checkCholDiagF64(n, l, ldl)
		}
	} else if !cpubackend.LAPACK.Dpotri(blas.Upper, n, l, ldl) {
		// Dtrtri found an exactly zero diagonal entry: excluded above, but
		// keep the contract if the backend disagrees.
		return checkCholDiagF64(n, l, ldl)
	}
	if !mirrorLower(n, l, ldl) {
		return errResultNonFinite
	}
	return nil
}

// mirrorLower copies the strict lower triangle into the strict upper one;
// columnBlocks shares the source's column blocks out, and mirrorColumns
// copies each. It reports whether the lower triangle, diagonal included, is
// finite (in the same pass).
func mirrorLower[T float32 | float64](n int, a []T, lda int) bool {
	var nonFinite atomic.Bool
	columnBlocks(n, func(j0, j1 int) {
		if !mirrorColumns(n, a, lda, j0, j1) {
			nonFinite.Store(true)
		}
	})
	return !nonFinite.Load()
}

// mirrorColumns copies the columns [j0, j1) of a's strict lower triangle
// into the rows [j0, j1) of its strict upper one and reports whether those
// columns of the lower triangle, diagonal included, are finite. It takes the
// source eight columns at a time: each row of such a strip is one contiguous
// piece of a destination column (64 bytes in float64), and the eight source
// columns are read as eight sequential streams (3× faster than square tiles
// read one source column at a time, at N = 1000 on one core).
func mirrorColumns[T float32 | float64](n int, a []T, lda int, j0, j1 int) bool {
	var nan T // v*0 is 0 for finite v and NaN for ±Inf and NaN
	for j := j0; j < j1; j += 8 {
		w := min(8, j1-j)
		// The strip's triangle, and all of a narrower strip, entry by entry.
		rows := n
		if w == 8 {
			rows = min(n, j+8)
		}
		for i := j + 1; i < rows; i++ {
			for k := j; k < min(i, j+w); k++ {
				v := a[i+k*lda]
				nan += v * 0
				a[k+i*lda] = v
			}
		}
		if w < 8 {
			continue
		}
		c0 := a[j*lda : j*lda+n]
		c1 := a[(j+1)*lda : (j+1)*lda+n]
		c2 := a[(j+2)*lda : (j+2)*lda+n]
		c3 := a[(j+3)*lda : (j+3)*lda+n]
		c4 := a[(j+4)*lda : (j+4)*lda+n]
		c5 := a[(j+5)*lda : (j+5)*lda+n]
		c6 := a[(j+6)*lda : (j+6)*lda+n]
		c7 := a[(j+7)*lda : (j+7)*lda+n]
		for i := j + 8; i < n; i++ {
			d := a[i*lda+j : i*lda+j+8]
			v0, v1, v2, v3, v4, v5, v6, v7 := c0[i], c1[i], c2[i], c3[i], c4[i], c5[i], c6[i], c7[i]
			nan += v0*0 + v1*0 + v2*0 + v3*0 + v4*0 + v5*0 + v6*0 + v7*0
			d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = v0, v1, v2, v3, v4, v5, v6, v7
		}
	}
	for i := j0; i < j1; i++ {
		nan += a[i+i*lda] * 0
	}
	return nan == 0
}
