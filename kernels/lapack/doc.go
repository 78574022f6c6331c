// Package lapack holds the pure-Go LAPACK-style routines that gonum lacks and
// that the CPU kernels of package kernels are built from: complex gemm and
// Cholesky (factorization, triangular solve, triangular inverse, Mᴴ·M), the
// reductions of symmetric and Hermitian matrices to real tridiagonal form with
// the back-transformation, and the divide and conquer tridiagonal
// eigensolver. The name is LAPACK's because the routines are: each is named,
// stored and documented as its LAPACK (or BLAS) counterpart, so that a call
// reads lapack.Zpotrf(n, a, lda) as in LAPACK. gonum's own LAPACK
// (gonum.org/v1/gonum/lapack) is imported where needed as gonumlapack.
//
// # Routines
//
// One routine a file, with the routine's internal parts beside it:
//
//   - Dgemm (dgemm.go): column-major real gemm on the row-major BLAS backend.
//   - Zgemm (zgemm.go): complex gemm, packed blocks and a 2×2 register
//     kernel, complex64 or complex128 storage.
//   - Zpotrf (zpotrf.go): complex Cholesky factorization, left-looking with
//     recursive panels.
//   - Ztrsm (ztrsm.go): blocked lower triangular solve, L·X = B or Lᴴ·X = B.
//   - Ztrtri (ztrtri.go): recursive lower triangular inverse.
//   - Zlauum (zlauum.go): Mᴴ·M for lower triangular M, full Hermitian result;
//     Ztrtri then Zlauum is zpotri.
//   - Dsytrd (dsytrd.go) and Zhetrd (zhetrd.go): blocked Householder
//     reduction to real symmetric tridiagonal form, with their parts dlatrd
//     and dsytd2 (zlatrd, zhetd2), the reflector generators dlarfg.go and
//     zlarfg.go, the one-pass parallel matrix–vector products dsymv.go and
//     zhemv.go and the level-1 helpers in blas1.go.
//   - Zunmtr (zunmtr.go) and Dormtr (dormtr.go): Q·C with the reflectors
//     of Zhetrd and Dsytrd, blocked (one algorithm for both types).
//   - Dstedc (dstedc.go): tridiagonal divide and conquer, with its recursion
//     and merge (dlaed0–dlaed3, dlaed.go) and the secular equation solver
//     (dlaed4, dlaed4.go).
//
// # Conventions
//
// As in LAPACK, matrices are column-major with a leading dimension: element
// (i, j) of a is a[i+j*lda], lda ≥ max(1, rows). Only the referenced part of
// a matrix is read, and only its rows×cols block is written: the rows beyond
// it up to the leading dimension are never touched. Symmetric and Hermitian
// inputs are given by their lower triangle (uplo = 'L'); each routine's
// comment says what it does with the strict upper triangle. Dimensions and
// slice lengths that do not fit are programming errors and panic with a
// message "lapack: <Routine>: …" before anything is changed, like the
// argument checks of the reference BLAS. Numerical failure is reported as
// LAPACK reports it: Zpotrf returns info (the order of the failing minor),
// Dstedc returns ok = false (info > 0); package kernels turns them into its
// errors. The routines allocate their own workspace, except Ztrtri, which
// takes it. They keep no state between calls other than pooled packing
// buffers, are safe for concurrent use and split large products between up
// to GOMAXPROCS goroutines.
//
// # Imports
//
// Package lapack may import gonum and, of this module, only
// kernels/cpubackend (the BLAS/LAPACK backend: Dgemm's products, gonum's
// dsteqr in the divide and conquer leaves, OpenBLAS's zgemm under the
// openblas tag). It does not import package kernels, which imports it
// (TestPackageLayers in the root package checks both).
package lapack
