//go:build openblas

package kernels

// The openblas build calls LAPACK's column-major Fortran routines (bundled
// in OpenBLAS) directly: mgla's matrices are column-major, so nothing is
// transposed on the way in or out, as LAPACKE's row-major interface would.
// Integers are LP64 (32-bit), as in Debian's libopenblas; the hidden
// lengths of the character arguments are passed explicitly.

/*
#cgo LDFLAGS: -lopenblas
#include <stddef.h>
#include <complex.h>

void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda, double *b, const int *ldb, int *info, size_t);
void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
	double *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t, size_t);
void zpotrf_(const char *uplo, const int *n, double complex *a, const int *lda, int *info, size_t);
void zpotrs_(const char *uplo, const int *n, const int *nrhs, const double complex *a, const int *lda, double complex *b, const int *ldb, int *info, size_t);
void zpotri_(const char *uplo, const int *n, double complex *a, const int *lda, int *info, size_t);
void zheevd_(const char *jobz, const char *uplo, const int *n, double complex *a, const int *lda, double *w,
	double complex *work, const int *lwork, double *rwork, const int *lrwork, int *iwork, const int *liwork, int *info, size_t, size_t);
*/
import "C"

import (
	"fmt"
	"unsafe"
)

var lower, jobN, jobV = C.char('L'), C.char('N'), C.char('V')

func cint(v int) C.int { return C.int(v) }

func f64p(s []float64) *C.double { return (*C.double)(unsafe.Pointer(unsafe.SliceData(s))) }
func c128p(s []complex128) *C.complexdouble {
	return (*C.complexdouble)(unsafe.Pointer(unsafe.SliceData(s)))
}

// potrfNativeF64 factors the lower triangle in place (dpotrf); info > 0 is
// the order of the failing leading minor.
func potrfNativeF64(n int, a []float64, lda int) (handled bool, info int) {
	cn, clda, ci := cint(n), cint(lda), C.int(0)
	C.dpotrf_(&lower, &cn, f64p(a), &clda, &ci, 1)
	return true, int(ci)
}

// potrsNativeF64 solves L·Lᵀ·X = B in place (dpotrs).
func potrsNativeF64(n, nrhs int, l []float64, ldl int, b []float64, ldb int) bool {
	cn, cr, cl, cb, ci := cint(n), cint(nrhs), cint(ldl), cint(ldb), C.int(0)
	C.dpotrs_(&lower, &cn, &cr, f64p(l), &cl, f64p(b), &cb, &ci, 1)
	return true
}

// potriNativeF64 overwrites the lower factor with the lower triangle of the
// inverse (dpotri); info > 0 names a zero diagonal entry.
func potriNativeF64(n int, l []float64, ldl int) (handled bool, info int) {
	cn, cl, ci := cint(n), cint(ldl), C.int(0)
	C.dpotri_(&lower, &cn, f64p(l), &cl, &ci, 1)
	return true, int(ci)
}

// syevdNative runs dsyevd (divide and conquer) on the lower triangle of the
// column-major a.
func syevdNative(n int, a []float64, lda int, w []float64, vectors bool) (handled bool, err error) {
	job := jobN
	if vectors {
		job = jobV
	}
	cn, clda, ci := cint(n), cint(lda), C.int(0)
	var wq C.double
	var iq C.int
	q := C.int(-1)
	C.dsyevd_(&job, &lower, &cn, f64p(a), &clda, f64p(w), &wq, &q, &iq, &q, &ci, 1, 1)
	lwork, liwork := max(1, int(wq)), max(1, int(iq))
	work, iwork := make([]float64, lwork), make([]C.int, liwork)
	cw, cli := cint(lwork), cint(liwork)
	C.dsyevd_(&job, &lower, &cn, f64p(a), &clda, f64p(w), f64p(work), &cw, unsafe.SliceData(iwork), &cli, &ci, 1, 1)
	if ci != 0 {
		return true, fmt.Errorf("%w (LAPACK dsyevd, info %d)", ErrNoConvergence, int(ci))
	}
	return true, nil
}

func potrfNativeC128(n int, a []complex128, lda int) (handled bool, info int) {
	cn, clda, ci := cint(n), cint(lda), C.int(0)
	C.zpotrf_(&lower, &cn, c128p(a), &clda, &ci, 1)
	return true, int(ci)
}

func potrsNativeC128(n, nrhs int, l []complex128, ldl int, b []complex128, ldb int) bool {
	cn, cr, cl, cb, ci := cint(n), cint(nrhs), cint(ldl), cint(ldb), C.int(0)
	C.zpotrs_(&lower, &cn, &cr, c128p(l), &cl, c128p(b), &cb, &ci, 1)
	return true
}

func potriNativeC128(n int, l []complex128, ldl int) (handled bool, info int) {
	cn, cl, ci := cint(n), cint(ldl), C.int(0)
	C.zpotri_(&lower, &cn, c128p(l), &cl, &ci, 1)
	return true, int(ci)
}

// heevdNative runs zheevd on the lower triangle of the column-major a.
func heevdNative(n int, a []complex128, lda int, w []float64, vectors bool) (handled bool, err error) {
	job := jobN
	if vectors {
		job = jobV
	}
	cn, clda, ci := cint(n), cint(lda), C.int(0)
	var wq C.complexdouble
	var rq C.double
	var iq C.int
	q := C.int(-1)
	C.zheevd_(&job, &lower, &cn, c128p(a), &clda, f64p(w), &wq, &q, &rq, &q, &iq, &q, &ci, 1, 1)
	lwork := max(1, int(real(complex128(wq))))
	lrwork, liwork := max(1, int(rq)), max(1, int(iq))
	work, rwork, iwork := make([]complex128, lwork), make([]float64, lrwork), make([]C.int, liwork)
	cw, crw, cli := cint(lwork), cint(lrwork), cint(liwork)
	C.zheevd_(&job, &lower, &cn, c128p(a), &clda, f64p(w), c128p(work), &cw, f64p(rwork), &crw,
		unsafe.SliceData(iwork), &cli, &ci, 1, 1)
	if ci != 0 {
		return true, fmt.Errorf("%w (LAPACK zheevd, info %d)", ErrNoConvergence, int(ci))
	}
	return true, nil
}
