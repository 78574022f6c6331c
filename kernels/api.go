package kernels

import (
	"fmt"

	"github.com/mgla/mgla/kernels/cpubackend"
	"github.com/mgla/mgla/kernels/lapack"
)

// Potrf computes the Cholesky factorization A = L·Lᴴ of the n×n
// Hermitian (real: symmetric) positive definite matrix A, column-major with
// leading dimension lda, reading only its lower triangle (the strict upper
// triangle may hold anything). On success the lower triangle of a holds L and
// the strict upper triangle is set to zero.
//
// If A is not positive definite it returns a *NotPositiveDefiniteError
// (errors.Is(err, ErrNotPositiveDefinite)) naming the 1-based order of the
// first leading minor that is not; NaN or ±Inf in the lower triangle (or an
// overflow to them) gives an error matching ErrNonFinite. On error the content
// of a is unspecified.
//
// float32 and complex64 are factorized in float64/complex128 and rounded.
func Potrf[T Scalar](n int, a []T, lda int) error {
	checkMatrix("a", n, n, lda, len(a))
	if n == 0 {
		return nil
	}
	return potrf(n, a, lda, nil, 0)
}

// PotrfTo is Potrf that keeps its input: it factorizes the n×n matrix whose
// lower triangle a (leading dimension lda) holds into l (ldl), with Potrf's
// results and errors, and does not modify a. a and l must not overlap.
// Reading the input, checking it for NaN/Inf, copying its lower triangle and
// clearing l's strict upper triangle are one pass over the memory, so this
// costs less than copying A and calling Potrf. On error the content of l is
// unspecified.
func PotrfTo[T Scalar](n int, a []T, lda int, l []T, ldl int) error {
	checkMatrix("a", n, n, lda, len(a))
	checkMatrix("l", n, n, ldl, len(l))
	if n == 0 {
		return nil
	}
	return potrf(n, l, ldl, a, lda)
}

// potrf factorizes the lower triangle of src (lds) into a (lda), or a in
// place when src is nil. float32 and complex64 are widened from their input
// into a float64/complex128 copy, which the wide factorization checks for
// NaN/Inf (widening keeps them, at the same positions), and rounded into a.
func potrf[T Scalar](n int, a []T, lda int, src []T, lds int) error {
	in, ldi := src, lds // the input of the wide copy
	if src == nil {
		in, ldi = a, lda
	}
	switch dtypeOf[T]() {
	case dtFloat64:
		return potrfF64(n, cast[float64](a), lda, cast[float64](src), lds)
	case dtComplex128:
		return potrfC128(n, cast[complex128](a), lda, cast[complex128](src), lds)
	case dtFloat32:
		buf := make([]float64, n*n)
		widenLowerF32(n, cast[float32](in), ldi, buf, n)
		if err := potrfF64(n, buf, n, nil, 0); err != nil {
			return err
		}
		return narrowF64(n, n, buf, n, cast[float32](a), lda) // the upper triangle of buf is zero
	default:
		buf := make([]complex128, n*n)
		widenLowerC64(n, cast[complex64](in), ldi, buf, n)
		if err := potrfC128(n, buf, n, nil, 0); err != nil {
			return err
		}
		return narrowC128(n, n, buf, n, cast[complex64](a), lda)
	}
}

// copyLower copies the lower triangle (diagonal included) of the n×n matrix
// a into l, by column blocks in parallel for large n (columnBlocks).
func copyLower[T any](n int, a []T, lda int, l []T, ldl int) {
	columnBlocks(n, func(j0, j1 int) {
		for j := j0; j < j1; j++ {
			copy(l[j*ldl+j:j*ldl+n], a[j*lda+j:j*lda+n])
		}
	})
}

// potrfC128 factorizes the lower triangle of src (lds) into a (lda), or a in
// place when src is nil.
func potrfC128(n int, a []complex128, lda int, src []complex128, lds int) error {
	if err := cholInputC128(n, a, lda, src, lds); err != nil {
		return err
	}
	info, native := cpubackend.ZpotrfNative(n, a, lda)
	if !native {
		info = lapack.Zpotrf(n, a, lda)
	}
	if info > 0 {
		return cholFailure(info, a[info-1+(info-1)*lda])
	}
	if !native {
		// The pure-Go Zpotrf uses the strict upper triangle as scratch;
		// LAPACK's zpotrf leaves it as cleared above.
		for j := 1; j < n; j++ {
			clear(a[j*lda : j*lda+j])
		}
	}
	// A finite input can still overflow: OpenBLAS's zpotrf, like its
	// dpotrf, lets an infinite L(i,j) through as a NaN diagonal.
	return CheckFinite(n, n, a, lda, true)
}

// Potrs solves A·X = B with A = L·Lᴴ given by the lower triangular factor L
// from Potrf (n×n, leading dimension ldl; only its lower triangle is read).
// B is n×nrhs with leading dimension ldb and is overwritten by X. A zero or
// non-finite diagonal entry of L gives a *NotPositiveDefiniteError with
// Order = its 1-based index, and b is left unchanged. A solution that is not
// finite (NaN or Inf in B, or beyond the dtype's range) is an error matching
// ErrNonFinite, with b overwritten.
//
// float32 and complex64 are solved in float64/complex128 and rounded.
func Potrs[T Scalar](n, nrhs int, l []T, ldl int, b []T, ldb int) error {
	checkMatrix("l", n, n, ldl, len(l))
	checkMatrix("b", n, nrhs, ldb, len(b))
	if n == 0 {
		return nil
	}
	switch dtypeOf[T]() {
	case dtFloat64:
		return potrsF64(n, nrhs, cast[float64](l), ldl, cast[float64](b), ldb)
	case dtFloat32:
		lf, bf := cast[float32](l), cast[float32](b)
		for i := 0; i < n; i++ {
			if d := lf[i+i*ldl]; d == 0 || !isFinite64(float64(d)) {
				return &NotPositiveDefiniteError{Order: i + 1}
			}
		}
		if nrhs == 0 {
			return nil
		}
		lw := make([]float64, n*n)
		widenLowerF32(n, lf, ldl, lw, n)
		bw := make([]float64, n*nrhs)
		widenF32(n, nrhs, bf, ldb, bw, n)
		if err := potrsF64(n, nrhs, lw, n, bw, n); err != nil {
			return err
		}
		if err := narrowF64(n, nrhs, bw, n, bf, ldb); err != nil {
			return err
		}
		return nil
	case dtComplex128:
		return potrsC(n, nrhs, cast[complex128](l), ldl, cast[complex128](b), ldb)
	default:
		lc, bc := cast[complex64](l), cast[complex64](b)
		if err := checkCholDiagC(n, lc, ldl); err != nil {
			return err
		}
		if nrhs == 0 {
			return nil
		}
		// L and B are widened; the solve runs in complex128.
		bw := make([]complex128, n*nrhs)
		widenC64(n, nrhs, bc, ldb, bw, n)
		lw := make([]complex128, n*n)
		widenLowerC64(n, lc, ldl, lw, n)
		if err := potrsC(n, nrhs, lw, n, bw, n); err != nil {
			return err
		}
		if err := narrowC128(n, nrhs, bw, n, bc, ldb); err != nil {
			return err
		}
		return nil
	}
}

func checkCholDiagC[S lapack.Complex](n int, l []S, ldl int) error {
	for i := 0; i < n; i++ {
		d := complex128(l[i+i*ldl])
		if d == 0 || !isFinite128(d) {
			return &NotPositiveDefiniteError{Order: i + 1}
		}
	}
	return nil
}

func potrsC(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) error {
	if err := checkCholDiagC(n, l, ldl); err != nil {
		return err
	}
	if nrhs == 0 {
		return nil // (the native solver takes the address of b's first element)
	}
	if !cpubackend.ZpotrsNative(n, nrhs, l, ldl, b, ldb) {
		// The solver reads full diagonal blocks of L: use a clean copy when
		// the strict upper triangle is not zero.
		if !strictUpperZero(n, l, ldl) {
			lw := make([]complex128, n*n)
			for j := 0; j < n; j++ {
				copy(lw[j*n+j:(j+1)*n], l[j*ldl+j:j*ldl+n])
			}
			l, ldl = lw, n
		}
		lapack.Ztrsm(false, n, nrhs, l, ldl, b, ldb)
		lapack.Ztrsm(true, n, nrhs, l, ldl, b, ldb)
	}
	if !resultFinite(n, nrhs, b, ldb) {
		return errResultNonFinite
	}
	return nil
}

// Potri overwrites the lower triangular factor L from Potrf (n×n, leading
// dimension ldl; only the lower triangle is read) with the full inverse
// A⁻¹ = (L·Lᴴ)⁻¹: both triangles are filled and the result is exactly
// Hermitian (a[j,i] == conj(a[i,j]) bitwise, real diagonal). A zero or
// non-finite diagonal entry of L gives a *NotPositiveDefiniteError and leaves
// l unchanged. An inverse beyond the dtype's range (a nearly singular A) is
// an error matching ErrNonFinite, with l overwritten.
//
// float32 and complex64 are computed in float64/complex128 and rounded.
func Potri[T Scalar](n int, l []T, ldl int) error {
	checkMatrix("l", n, n, ldl, len(l))
	if n == 0 {
		return nil
	}
	switch dtypeOf[T]() {
	case dtFloat64:
		return potriF64(n, cast[float64](l), ldl)
	case dtFloat32:
		lf := cast[float32](l)
		for i := 0; i < n; i++ {
			if d := lf[i+i*ldl]; d == 0 || !isFinite64(float64(d)) {
				return &NotPositiveDefiniteError{Order: i + 1}
			}
		}
		buf := make([]float64, n*n)
		widenLowerF32(n, lf, ldl, buf, n)
		if err := potriF64(n, buf, n); err != nil {
			return err
		}
		if err := narrowF64(n, n, buf, n, lf, ldl); err != nil {
			return err
		}
		return nil
	case dtComplex128:
		return potriC128(n, cast[complex128](l), ldl)
	default:
		lc := cast[complex64](l)
		if err := checkCholDiagC(n, lc, ldl); err != nil {
			return err
		}
		buf := make([]complex128, n*n)
		widenLowerC64(n, lc, ldl, buf, n)
		if err := potriC128(n, buf, n); err != nil {
			return err
		}
		if err := narrowC128(n, n, buf, n, lc, ldl); err != nil {
			return err
		}
		return nil
	}
}

// PotriTo is Potri that keeps the factor: it writes the full inverse A⁻¹ of
// A = L·Lᴴ into c (n×n, leading dimension ldc) from the factor L in the
// lower triangle of l (ldl), with Potri's results and errors, and does not
// modify l. l and c must not overlap. Only L's lower triangle is copied
// (LAPACK's ?potri reads no more, and the mirror writes the other one), which
// costs half a full copy. On error the content of c is unspecified.
func PotriTo[T Scalar](n int, l []T, ldl int, c []T, ldc int) error {
	checkMatrix("l", n, n, ldl, len(l))
	checkMatrix("c", n, n, ldc, len(c))
	if n == 0 {
		return nil
	}
	copyLower(n, l, ldl, c, ldc)
	return Potri(n, c, ldc)
}

// eigenvaluesFinite is err, or when the solve succeeded an error for an
// eigenvalue beyond float64's range: unscaling a matrix of entries near
// math.MaxFloat64 can overflow, as rounding to float32 can for single
// precision.
func eigenvaluesFinite(err error, w []float64) error {
	if err == nil && !resultFinite(len(w), 1, w, len(w)) {
		return errResultNonFinite
	}
	return err
}

func potriC128(n int, l []complex128, ldl int) error {
	if err := checkCholDiagC(n, l, ldl); err != nil {
		return err
	}
	if info, ok := cpubackend.ZpotriNative(n, l, ldl); ok {
		if info > 0 { // a zero diagonal entry: excluded above
			return &NotPositiveDefiniteError{Order: info}
		}
		if !hermitianFromLower(n, l, ldl) {
			return errResultNonFinite
		}
		return nil
	}
	for j := 1; j < n; j++ {
		clear(l[j*ldl : j*ldl+j])
	}
	tmp := make([]complex128, (n/2+1)*(n/2+1))
	lapack.Ztrtri(n, l, ldl, tmp)
	lapack.Zlauum(n, l, ldl)
	if !resultFinite(n, n, l, ldl) {
		return errResultNonFinite
	}
	return nil
}

// hermitianFromLower makes a exactly Hermitian from its lower triangle: the
// diagonal's imaginary parts are cleared and the strict upper triangle becomes
// the conjugate transpose of the strict lower one. It reports whether the
// lower triangle (the diagonal's real parts included) is finite.
func hermitianFromLower(n int, a []complex128, lda int) bool {
	finite := true
	for j := 0; j < n; j++ {
		d := real(a[j+j*lda])
		if d-d != 0 {
			finite = false
		}
		a[j+j*lda] = complex(d, 0)
		for i := j + 1; i < n; i++ {
			v := a[i+j*lda]
			if v-v != 0 {
				finite = false
			}
			a[j+i*lda] = conj(v)
		}
	}
	return finite
}

func strictUpperZero[S lapack.Complex](n int, a []S, lda int) bool {
	for j := 1; j < n; j++ {
		for _, v := range a[j*lda : j*lda+j] {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// Syevd computes all eigenvalues, and optionally the eigenvectors, of the n×n
// Hermitian (real: symmetric) matrix given by the lower triangle of the
// column-major a (leading dimension lda; the strict upper triangle is not
// read; finite imaginary parts of the diagonal are ignored, while a NaN or Inf
// anywhere in the lower triangle, imaginary parts included, is ErrNonFinite).
// The eigenvalues are returned in ascending order in w[:n]. With vectors, a
// is overwritten by the orthonormal eigenvectors, column j belonging to w[j];
// otherwise the content of a is unspecified on return.
//
// R must be the real type of T: float32 for float32 and complex64, float64 for
// float64 and complex128; a mismatch panics. NaN or ±Inf in the lower
// triangle gives an error matching ErrNonFinite, and so does an eigenvalue
// beyond the dtype's range (of entries near its largest value).
//
// float32 and complex64 are computed in float64/complex128 and rounded.
func Syevd[T Scalar, R Float](n int, a []T, lda int, w []R, vectors bool) error {
	checkMatrix("a", n, n, lda, len(a))
	if len(w) < n {
		panic(fmt.Sprintf("kernels: Syevd: len(w) = %d < n = %d", len(w), n))
	}
	dt := dtypeOf[T]()
	rt := realDtypeOf[R]()
	want := dtFloat64
	if dt == dtFloat32 || dt == dtComplex64 {
		want = dtFloat32
	}
	if rt != want {
		panic(fmt.Sprintf("kernels: Syevd: eigenvalue type %v does not match matrix type %v (want %v)", rt, dt, want))
	}
	if n == 0 {
		return nil
	}
	switch dt {
	case dtFloat64:
		return eigenvaluesFinite(syevdF64(n, cast[float64](a), lda, cast[float64](w), vectors), cast[float64](w[:n]))
	case dtComplex128:
		return eigenvaluesFinite(heevdC128(n, cast[complex128](a), lda, cast[float64](w), vectors), cast[float64](w[:n]))
	case dtFloat32:
		af := cast[float32](a)
		if err := checkFiniteF32(n, n, af, lda, true); err != nil {
			return err
		}
		buf := make([]float64, n*n)
		widenLowerF32(n, af, lda, buf, n)
		ww := make([]float64, n)
		if err := syevdF64(n, buf, n, ww, vectors); err != nil {
			return err
		}
		if err := narrowF64(n, 1, ww, n, cast[float32](w), n); err != nil {
			return err
		}
		if vectors {
			if err := narrowF64(n, n, buf, n, af, lda); err != nil {
				return err
			}
		}
		return nil
	default:
		ac := cast[complex64](a)
		if err := CheckFinite(n, n, ac, lda, true); err != nil {
			return err
		}
		buf := make([]complex128, n*n)
		widenLowerC64(n, ac, lda, buf, n)
		ww := make([]float64, n)
		if err := heevdC128(n, buf, n, ww, vectors); err != nil {
			return err
		}
		if err := narrowF64(n, 1, ww, n, cast[float32](w), n); err != nil {
			return err
		}
		if vectors {
			if err := narrowC128(n, n, buf, n, ac, lda); err != nil {
				return err
			}
		}
		return nil
	}
}

// TrsmLowerLeft solves op(L)·X = B in place for X, where L is m×m lower
// triangular with a non-unit diagonal (leading dimension ldl; only its lower
// triangle is read) and B is m×n (leading dimension ldb). op(L) is L, or Lᴴ
// (conjugate transpose; transpose for real types) when conjTrans is set. No
// singularity check is made. float32 is solved in float32 by the BLAS
// backend; complex64 accumulates in complex128.
func TrsmLowerLeft[T Scalar](conjTrans bool, m, n int, l []T, ldl int, b []T, ldb int) {
	checkMatrix("l", m, m, ldl, len(l))
	checkMatrix("b", m, n, ldb, len(b))
	if m == 0 || n == 0 {
		return
	}
	switch dtypeOf[T]() {
	case dtFloat64:
		trsmLowerLeftReal(conjTrans, m, n, cast[float64](l), ldl, cast[float64](b), ldb)
	case dtFloat32:
		trsmLowerLeftReal(conjTrans, m, n, cast[float32](l), ldl, cast[float32](b), ldb)
	case dtComplex128:
		lc := cast[complex128](l)
		if !strictUpperZero(m, lc, ldl) {
			lw := make([]complex128, m*m)
			for j := 0; j < m; j++ {
				copy(lw[j*m+j:(j+1)*m], lc[j*ldl+j:j*ldl+m])
			}
			lc, ldl = lw, m
		}
		lapack.Ztrsm(conjTrans, m, n, lc, ldl, cast[complex128](b), ldb)
	default:
		lc := cast[complex64](l)
		if !strictUpperZero(m, lc, ldl) {
			lw := make([]complex64, m*m)
			for j := 0; j < m; j++ {
				copy(lw[j*m+j:(j+1)*m], lc[j*ldl+j:j*ldl+m])
			}
			lc, ldl = lw, m
		}
		lapack.Ztrsm(conjTrans, m, n, lc, ldl, cast[complex64](b), ldb)
	}
}

// MirrorLower copies the strict lower triangle of the real n×n column-major
// a (leading dimension lda) into its strict upper one, so that a is exactly
// symmetric, and reports whether that lower triangle, diagonal included, is
// finite. Large matrices are shared out by column blocks.
func MirrorLower[T float32 | float64](n int, a []T, lda int) bool {
	checkMatrix("a", n, n, lda, len(a))
	return mirrorLower(n, a, lda)
}

// Transpose writes the transpose of the m×n column-major src (leading
// dimension lds) into the n×m column-major dst (leading dimension ldd),
// which must not overlap src. A row-major m×n matrix is the column-major
// n×m matrix with leading dimension n, so Transpose also converts between
// the two orders. It works by square blocks, which stay in cache (a plain
// double loop strides through memory on every write), shared out by
// column blocks of src when large.
func Transpose[T Scalar](m, n int, src []T, lds int, dst []T, ldd int) {
	checkMatrix("src", m, n, lds, len(src))
	checkMatrix("dst", n, m, ldd, len(dst))
	const bs = 64
	columnBlocks(n, func(j0, j1 int) {
		for ib := 0; ib < m; ib += bs {
			for j := j0; j < j1; j++ {
				col := src[j*lds : j*lds+m]
				for i := ib; i < min(ib+bs, m); i++ {
					dst[j+i*ldd] = col[i]
				}
			}
		}
	})
}

// Symmetrize replaces the n×n column-major matrix a by its Hermitian part
// (A + Aᴴ)/2 (real: (A + Aᵀ)/2). The result is exactly Hermitian:
// a[j,i] == conj(a[i,j]) bitwise and the diagonal is real. It halves before
// adding, so entries beyond half the largest float do not overflow.
func Symmetrize[T Scalar](n int, a []T, lda int) {
	checkMatrix("a", n, n, lda, len(a))
	switch dtypeOf[T]() {
	case dtFloat64:
		symmetrizeReal(n, cast[float64](a), lda)
	case dtFloat32:
		symmetrizeReal(n, cast[float32](a), lda)
	case dtComplex128:
		symmetrizeC128(n, cast[complex128](a), lda)
	default:
		symmetrizeC64(n, cast[complex64](a), lda)
	}
}

// symmetrizeReal works by square blocks below the diagonal (and their
// mirror images above it), which stay in cache.
func symmetrizeReal[F float32 | float64](n int, a []F, lda int) {
	const bs = 64
	for jb := 0; jb < n; jb += bs {
		for ib := jb; ib < n; ib += bs {
			for j := jb; j < min(jb+bs, n); j++ {
				for i := max(ib, j+1); i < min(ib+bs, n); i++ {
					v := a[i+j*lda]/2 + a[j+i*lda]/2
					a[i+j*lda] = v
					a[j+i*lda] = v
				}
			}
		}
	}
}

func symmetrizeC128(n int, a []complex128, lda int) {
	for j := 0; j < n; j++ {
		a[j+j*lda] = complex(real(a[j+j*lda]), 0)
		for i := j + 1; i < n; i++ {
			x, y := a[i+j*lda], a[j+i*lda]
			re := real(x)/2 + real(y)/2
			im := imag(x)/2 - imag(y)/2
			a[i+j*lda] = complex(re, im)
			a[j+i*lda] = complex(re, -im)
		}
	}
}

func symmetrizeC64(n int, a []complex64, lda int) {
	for j := 0; j < n; j++ {
		a[j+j*lda] = complex(real(a[j+j*lda]), 0)
		for i := j + 1; i < n; i++ {
			x, y := a[i+j*lda], a[j+i*lda]
			re := real(x)/2 + real(y)/2
			im := imag(x)/2 - imag(y)/2
			a[i+j*lda] = complex(re, im)
			a[j+i*lda] = complex(re, -im)
		}
	}
}
