//go:build openblas

package cpubackend

// This file calls LAPACK's column-major Fortran routines (dpotrf_, zheevd_,
// ...) as linked from OpenBLAS. The kernels' matrices are column-major
// already, so nothing is transposed or copied: the routines work in place on
// the caller's slices. The hidden string-length arguments that gfortran
// appends for CHARACTER arguments are passed explicitly (all 1).

/*
#include <stddef.h>
#include <complex.h>

extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
extern void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda, double *b, const int *ldb, int *info, size_t);
extern void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
extern void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
	double *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t, size_t);

extern void zpotrf_(const char *uplo, const int *n, double complex *a, const int *lda, int *info, size_t);
extern void zpotrs_(const char *uplo, const int *n, const int *nrhs, const double complex *a, const int *lda, double complex *b, const int *ldb, int *info, size_t);
extern void zpotri_(const char *uplo, const int *n, double complex *a, const int *lda, int *info, size_t);
extern void zheevd_(const char *jobz, const char *uplo, const int *n, double complex *a, const int *lda, double *w,
	double complex *work, const int *lwork, double *rwork, const int *lrwork, int *iwork, const int *liwork, int *info, size_t, size_t);

static int mgla_dpotrf(int n, double *a, int lda) {
	int info = 0; dpotrf_("L", &n, a, &lda, &info, 1); return info;
}
static int mgla_dpotrs(int n, int nrhs, const double *a, int lda, double *b, int ldb) {
	int info = 0; dpotrs_("L", &n, &nrhs, a, &lda, b, &ldb, &info, 1); return info;
}
static int mgla_dpotri(int n, double *a, int lda) {
	int info = 0; dpotri_("L", &n, a, &lda, &info, 1); return info;
}
static int mgla_dsyevd(char jobz, int n, double *a, int lda, double *w, double *work, int lwork, int *iwork, int liwork) {
	int info = 0; dsyevd_(&jobz, "L", &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1); return info;
}
static int mgla_zpotrf(int n, void *a, int lda) {
	int info = 0; zpotrf_("L", &n, a, &lda, &info, 1); return info;
}
static int mgla_zpotrs(int n, int nrhs, const void *a, int lda, void *b, int ldb) {
	int info = 0; zpotrs_("L", &n, &nrhs, a, &lda, b, &ldb, &info, 1); return info;
}
static int mgla_zpotri(int n, void *a, int lda) {
	int info = 0; zpotri_("L", &n, a, &lda, &info, 1); return info;
}
static int mgla_zheevd(char jobz, int n, void *a, int lda, double *w, void *work, int lwork, double *rwork, int lrwork, int *iwork, int liwork) {
	int info = 0; zheevd_(&jobz, "L", &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1); return info;
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// lapackInt converts a dimension for LAPACK's 32-bit INTEGER (Debian's
// OpenBLAS is built LP64), panicking on overflow like the kernels' other
// dimension checks.
func lapackInt(v int) C.int {
	if v < 0 || v > math.MaxInt32 {
		panic(fmt.Sprintf("kernels: dimension %d does not fit LAPACK's 32-bit INTEGER", v))
	}
	return C.int(v)
}

func jobzOf(vectors bool) C.char {
	if vectors {
		return 'V'
	}
	return 'N'
}

// DpotrfLAPACK runs dpotrf('L') in place and returns LAPACK's info.
func DpotrfLAPACK(n int, a []float64, lda int) int {
	return int(C.mgla_dpotrf(lapackInt(n), (*C.double)(&a[0]), lapackInt(lda)))
}

// DpotrsLAPACK runs dpotrs('L'): L is read from the lower triangle only.
func DpotrsLAPACK(n, nrhs int, l []float64, ldl int, b []float64, ldb int) int {
	return int(C.mgla_dpotrs(lapackInt(n), lapackInt(nrhs), (*C.double)(&l[0]), lapackInt(ldl), (*C.double)(&b[0]), lapackInt(ldb)))
}

// DpotriLAPACK runs dpotri('L'): the lower triangle becomes that of A⁻¹.
func DpotriLAPACK(n int, l []float64, ldl int) int {
	return int(C.mgla_dpotri(lapackInt(n), (*C.double)(&l[0]), lapackInt(ldl)))
}

// DsyevdLAPACK runs dsyevd(jobz, 'L') with an optimal workspace.
func DsyevdLAPACK(n int, a []float64, lda int, w []float64, vectors bool) int {
	jobz := jobzOf(vectors)
	var wq C.double
	var iwq C.int
	C.mgla_dsyevd(jobz, lapackInt(n), (*C.double)(&a[0]), lapackInt(lda), (*C.double)(&w[0]), &wq, -1, &iwq, -1)
	work := make([]float64, max(1, int(wq)))
	iwork := make([]int32, max(1, int(iwq)))
	return int(C.mgla_dsyevd(jobz, lapackInt(n), (*C.double)(&a[0]), lapackInt(lda), (*C.double)(&w[0]),
		(*C.double)(&work[0]), lapackInt(len(work)), (*C.int)(unsafe.Pointer(&iwork[0])), lapackInt(len(iwork))))
}

// ZpotrfLAPACK runs zpotrf('L') in place and returns LAPACK's info.
func ZpotrfLAPACK(n int, a []complex128, lda int) int {
	return int(C.mgla_zpotrf(lapackInt(n), unsafe.Pointer(&a[0]), lapackInt(lda)))
}

// ZpotrsLAPACK runs zpotrs('L'): L is read from the lower triangle only.
func ZpotrsLAPACK(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) int {
	return int(C.mgla_zpotrs(lapackInt(n), lapackInt(nrhs), unsafe.Pointer(&l[0]), lapackInt(ldl), unsafe.Pointer(&b[0]), lapackInt(ldb)))
}

// ZpotriLAPACK runs zpotri('L'): the lower triangle becomes that of A⁻¹.
func ZpotriLAPACK(n int, l []complex128, ldl int) int {
	return int(C.mgla_zpotri(lapackInt(n), unsafe.Pointer(&l[0]), lapackInt(ldl)))
}

// ZheevdLAPACK runs zheevd(jobz, 'L') with an optimal workspace.
func ZheevdLAPACK(n int, a []complex128, lda int, w []float64, vectors bool) int {
	jobz := jobzOf(vectors)
	var wq [2]float64 // one complex value
	var rwq C.double
	var iwq C.int
	C.mgla_zheevd(jobz, lapackInt(n), unsafe.Pointer(&a[0]), lapackInt(lda), (*C.double)(&w[0]),
		unsafe.Pointer(&wq[0]), -1, &rwq, -1, &iwq, -1)
	work := make([]complex128, max(1, int(wq[0])))
	rwork := make([]float64, max(1, int(rwq)))
	iwork := make([]int32, max(1, int(iwq)))
	return int(C.mgla_zheevd(jobz, lapackInt(n), unsafe.Pointer(&a[0]), lapackInt(lda), (*C.double)(&w[0]),
		unsafe.Pointer(&work[0]), lapackInt(len(work)), (*C.double)(&rwork[0]), lapackInt(len(rwork)),
		(*C.int)(unsafe.Pointer(&iwork[0])), lapackInt(len(iwork))))
}
