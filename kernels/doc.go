// Package kernels provides CPU kernels for dense LAPACK-style linear algebra
// on column-major matrices, for the four dtypes float32, float64, complex64
// and complex128 (and types defined on them), through Go generics.
//
// # Storage
//
// Every matrix is column-major with a leading dimension, as in LAPACK:
// element (i, j) of an r×c matrix a with leading dimension lda ≥ max(1, r) is
// a[i+j*lda]. Hermitian (real: symmetric) inputs are given by their lower
// triangle; the strict upper triangle is never read and may hold anything,
// NaN included. Dimension and slice-length errors are programming errors and
// panic, as in BLAS; numerical failures are returned as errors.
//
// # Kernels
//
//   - Potrf: Cholesky factorization A = L·Lᴴ (lower), with
//     *NotPositiveDefiniteError (errors.Is ErrNotPositiveDefinite) naming the
//     failing leading minor, and ErrNonFinite for NaN/Inf input.
//   - Potrs: solve A·X = B given L.
//   - Potri: the full, exactly Hermitian inverse (L·Lᴴ)⁻¹ given L.
//   - Syevd: all eigenvalues (ascending) and optionally the orthonormal
//     eigenvectors of a Hermitian matrix.
//   - Helpers for gradient code: Gemm (C = α·op(A)·op(B) + β·C with op ∈
//     {X, Xᴴ}), TrsmLowerLeft (L·X = B or Lᴴ·X = B), Symmetrize ((A+Aᴴ)/2)
//     and CheckFinite.
//
// # Layout
//
// Package kernels is the kernel API the ops call: the generic entry points
// and their dtype dispatch (api.go; gemm.go for Gemm), the float64 drivers on
// the LAPACK/BLAS backend (potrf_real.go), the eigensolver drivers for
// float64 and complex128 (syevd.go), the errors (errors.go, at the bottom),
// the scalar helpers and single-precision conversions (scalar.go) and the
// finiteness scans (finite.go). Beside it:
//
//   - kernels/lapack: the pure-Go LAPACK-style routines gonum lacks, one a
//     file (complex gemm Zgemm and column-major Dgemm, complex Cholesky
//     Zpotrf, Ztrsm, Ztrtri, Zlauum, the tridiagonal reductions Dsytrd and
//     Zhetrd with Zunmtr, the divide and conquer Dstedc), with reference
//     tests each. It reports LAPACK's info, not errors.
//   - the backends, side by side: kernels/cpubackend (gonum's pure-Go BLAS
//     and LAPACK, or OpenBLAS and LAPACK with -tags openblas), and for GPUs
//     kernels/cusolver (the cuSolverMg / cuSOLVER shim) and kernels/ptx
//     (mgla's PTX kernels).
//
// Package kernels may import kernels/lapack and kernels/cpubackend and no
// other package of this module; kernels/lapack imports only
// kernels/cpubackend, and kernels/cpubackend nothing of this module, so no
// import runs back up (TestPackageLayers checks it). kernels/cusolver imports
// kernels; kernels does not import the GPU backends.
//
// All functions are safe for concurrent use; they keep no state between
// calls other than pooled scratch buffers. Large products use up to
// GOMAXPROCS goroutines.
//
// # Algorithms
//
// float64 Cholesky, its solves and inverse call the LAPACK/BLAS backend
// (kernels/cpubackend: gonum's pure-Go lapack/gonum and blas/gonum; with the
// openblas tag LAPACK's own column-major routines, see below) on the row-major view of the column-major data, which is the
// transpose: the column-major lower triangle is the row-major upper one, so
// no copies are made. Solves with many right-hand sides are blocked over gemm.
//
// Real symmetric eigenproblems use a blocked Householder tridiagonalization
// written for column-major storage (dsytrd/dlatrd, with a parallel one-pass
// symmetric matrix–vector product and gemm-based rank-2k updates), then
//   - eigenvalues only: the implicit QL/QR iteration without vectors
//     (gonum's dsteqr; its dsterf mis-scales entries below about 1e-122);
//   - with eigenvectors: a divide-and-conquer tridiagonal solver (Cuppen's
//     method as in LAPACK's dstedc/dlaed0–4, with deflation of small
//     components and close poles, a safeguarded two-pole rational secular
//     equation solver and Gu–Eisenstat recomputed vectors, which keep the
//     vectors orthogonal for clustered or repeated eigenvalues), followed by
//     the blocked back-transformation with the reflectors (Dormtr of
//     kernels/lapack; gonum's blocked dormlq built wrong block reflectors
//     for reflectors that end in zeros).
//
// Complex Hermitian matrices have no gonum LAPACK, so kernels/lapack
// implements them in pure Go: a pure-Go complex gemm (packed blocks, 2×2 register
// kernel, complex128 accumulation, split between goroutines); a left-looking
// blocked Cholesky with recursive panels; blocked triangular solves; the
// inverse by a recursive triangular inverse and a blocked Lᴴ·L-type product;
// and a zhetrd-style blocked Householder reduction to a real symmetric
// tridiagonal matrix (the reflectors make the off-diagonal real), the same
// real tridiagonal solvers as above, and a blocked back-transformation with
// the complex reflectors (zlarft/zlarfb via gemm).
//
// float32 and complex64 inputs are widened to float64/complex128, computed
// with the double-precision algorithms, and rounded once to single precision
// at the end (Potrf, Potrs, Potri, Syevd). Gemm and TrsmLowerLeft are the
// exception: float32 runs in float32 through the BLAS backend (sgemm, strsm)
// and complex64 is computed with complex128 accumulation by the pure-Go
// kernels.
//
// # Accuracy
//
// Measured by the package tests on random and clustered matrices of order up
// to 300 (u is the unit roundoff: 1.1e-16 for float64/complex128, 6e-8 for
// float32/complex64):
//
//	                          float64   complex128   float32   complex64
//	Potrf ‖L·Lᴴ−A‖/‖A‖        4e-16     2e-16        7e-8      7e-8
//	Potrs backward error      1e-16     7e-17        4e-8      3e-8
//	Potri ‖A·A⁻¹−I‖_F/√n      1e-15     1.5e-15      9e-8      1e-7   (cond(A) ≲ 5)
//	Syevd ‖AV−VΛ‖_F/(‖A‖_F·n) 2e-16     2e-16        3e-8      2e-8
//	Syevd ‖VᴴV−I‖_F/n         4e-16     4e-16        3e-8      3e-8
//	Syevd |λ−λref|/‖A‖_F      1e-15     8e-16        5e-8      3e-8
//
// that is backward stable to a small multiple of u·n in double precision, and
// the double-precision result correctly rounded (a few u) in single
// precision, independent of the conditioning of the eigenvalue clusters. The
// forward errors of solves and inverses grow with cond(A) as usual. λref is
// gonum's EigenSym (for complex128, on the real 2n×2n embedding). The
// tridiagonal divide and conquer alone reaches ‖TZ−ZΛ‖_F/(‖T‖_F·n) ≤ 4e-17
// and ‖ZᵀZ−I‖_F/n ≤ 3e-16 on hard families (glued Wilkinson, Clement,
// graded, constant diagonals with tiny couplings). Values-only and
// with-vectors eigenvalues agree to 1e-15·‖A‖ (they use different tridiagonal
// solvers).
//
// # Performance
//
// On two cores, float64, against gonum's mat package in the same process
// (speed-up = gonum time ÷ kernels time; BENCHMARKS.md has the measured
// tables, runs on a shared 2-core VM vary by up to ~25% in pure Go):
// Potrf+Potrs 1.0–1.5× mat.Cholesky Factorize+SolveTo at N = 1000 and 2000
// in pure Go (one run on a loaded machine gave 0.98× at N = 1000 with 64
// right-hand sides), 1.1–3.2× with openblas; Syevd with vectors about 3.3×
// (N = 500), 4–5× (N = 1000) and 12–13× (N = 2000: 4–5.5 s against 54–65 s)
// mat.EigenSym in pure Go, and 5.5–6.5×, 13.5–15× and 29–34× (1.7–1.8 s at
// N = 2000) with openblas. In pure Go, complex128 Syevd with vectors takes
// about 2.5–4× the float64 time.
//
// # Benchmarks
//
// bench_test.go holds the benchmarks (BenchmarkPotrs, BenchmarkSyevd and
// BenchmarkSyevdValues against gonum, reporting x-vs-gonum and gonum-s/op;
// BenchmarkComplex without a baseline, gonum having no complex LAPACK).
// `make bench` runs each build, pure Go and then -tags openblas, in two
// steps: `-bench . -skip 'BenchmarkSyevd/N=2000' -benchtime 3x` over
// kernels, ops and the root package, then `-bench 'BenchmarkSyevd/N=2000'`
// alone, because that case's gonum baseline takes 50–65 s by itself; the
// whole target takes about 4 minutes. A plain `go test -bench .` skips
// BenchmarkSyevd/N=2000 with b.Skip, whose SKIP line go test shows only
// under -v; a -bench pattern containing "2000" runs it.
//
// # Build tag openblas
//
// Built with -tags openblas (and cgo, CGO_LDFLAGS='-llapacke -lopenblas',
// Debian packages libopenblas-dev and liblapacke-dev) Potrf, Potrs, Potri and
// Syevd call LAPACK's column-major Fortran routines directly, in place on the
// caller's column-major storage (no transposition, no copy; PotrfTo and
// PotriTo, which keep their input, fold the one copy that needs into the
// passes around LAPACK): dpotrf, dpotrs,
// dpotri, dsyevd for float64 (and, widened, float32) and zpotrf, zpotrs,
// zpotri, zheevd for complex128 (and, widened, complex64). The other real
// BLAS calls (cblas dtrsm/dgemm/sgemm) go through gonum.org/v1/netlib, and
// the pure-Go complex helpers run their products through OpenBLAS zgemm. The
// constant Backend reports the active backend. Results agree with the pure-Go
// build to rounding; the same tests run under both, and TestLAPACKDirect
// compares the direct calls with the pure-Go routines. BenchmarkPotrsVsLAPACK,
// BenchmarkPotriVsLAPACK and BenchmarkSyevdVsLAPACK time the kernels as
// package ops calls them against the bare LAPACK calls on a copy, in the
// same process ("x-vs-lapack").
package kernels
