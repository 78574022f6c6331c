package kernels

import (
	"fmt"
	"math"

	gonumlapack "gonum.org/v1/gonum/lapack"

	"github.com/mgla/mgla/kernels/cpubackend"
	"github.com/mgla/mgla/kernels/lapack"
)

// The eigensolver drivers behind Syevd, on the lower triangle of a
// column-major matrix: float64 (syevdF64) and complex128 (heevdC128). Each
// scales the matrix into a safe range, then runs LAPACK's dsyevd/zheevd with
// the openblas tag, or else the reduction to a real tridiagonal matrix
// (lapack.Dsytrd, lapack.Zhetrd), dsteqr without vectors for the eigenvalues only or
// the divide and conquer lapack.Dstedc and the back-transformation with the
// reflectors (dormlq on the row-major view, lapack.Zunmtr).

// tridiagonalValues overwrites d with the eigenvalues (ascending) of the
// symmetric tridiagonal matrix of diagonal d and off-diagonal e (which it
// destroys), by the implicit QL/QR iteration of dsteqr without vectors
// (lapack.Dsteqr: one unreduced block at a time). Not gonum's dsterf: its
// scaling of a block whose norm is below √safmin/ε² (about 1e-122) hands
// Dlascl the leading dimension n for a vector and panics ("insufficient
// length of a") for every such block of two or more rows, which a matrix of
// entries near 1e-130 gives.
//
// It is gonum's pure-Go dsteqr in every build: the openblas build reaches
// it only from tests (its Syevd is LAPACK's dsyevd and zheevd).
func tridiagonalValues(n int, d, e []float64) bool {
	return lapack.Dsteqr(gonumlapack.EVCompNone, n, d, e, nil, 1, make([]float64, max(1, 2*n-2)))
}

// dlamchE is the relative machine precision of float64 (LAPACK dlamch('E')).
const dlamchE = 0x1p-53

// syevdF64 is the float64 symmetric eigensolver on the lower triangle of the
// column-major a: tridiagonal reduction (dsytrd), then dsteqr for values only
// or the divide and conquer tridiagonal solver (dstedc) and the blocked
// back-transformation (dormtr). With the openblas tag the whole computation is
// LAPACK's dsyevd instead.
func syevdF64(n int, a []float64, lda int, w []float64, vectors bool) error {
	if n == 0 {
		return nil
	}
	// Scale a matrix with a norm far from 1 into a safe range (as dsyev).
	// The same pass finds NaN and Inf (max propagates NaN); only then is the
	// matrix scanned again for the position of the first one.
	anrm := 0.0
	for j := 0; j < n; j++ {
		for _, v := range a[j*lda+j : j*lda+n] {
			anrm = max(anrm, math.Abs(v))
		}
	}
	if !(anrm <= math.MaxFloat64) {
		return checkFiniteF64(n, n, a, lda, true)
	}
	if n == 1 {
		w[0] = a[0]
		if vectors {
			a[0] = 1
		}
		return nil
	}
	scale := eigenScale(anrm)
	if scale != 1 {
		for j := 0; j < n; j++ {
			for i := j; i < n; i++ {
				a[i+j*lda] *= scale
			}
		}
	}
	err := syevdF64Scaled(n, a, lda, w, vectors)
	if scale != 1 {
		for i := range w[:n] {
			w[i] /= scale
		}
	}
	return err
}

func syevdF64Scaled(n int, a []float64, lda int, w []float64, vectors bool) error {
	if info, handled := cpubackend.DsyevdNative(n, a, lda, w, vectors); handled {
		if info != 0 {
			return fmt.Errorf("%w (LAPACK dsyevd info %d)", ErrNoConvergence, info)
		}
		return nil
	}
	d := make([]float64, n)
	e := make([]float64, n-1)
	tau := make([]float64, n-1)
	lapack.Dsytrd(n, a, lda, d, e, tau)
	if !vectors {
		if !tridiagonalValues(n, d, e) {
			return ErrNoConvergence
		}
		copy(w, d)
		return nil
	}
	z := make([]float64, n*n)
	if !lapack.Dstedc(n, d, e, z, n) {
		return ErrNoConvergence
	}
	// V = Q·Z (not gonum's blocked dormlq on the row-major view: its dlarft
	// builds wrong block reflectors when a reflector ends in zeros, which
	// gave non-orthogonal eigenvectors of the all-ones matrix).
	lapack.Dormtr(n, n, a, lda, tau, z, n)
	for j := 0; j < n; j++ {
		copy(a[j*lda:j*lda+n], z[j*n:(j+1)*n])
	}
	copy(w, d)
	return nil
}

// heevdC128 is the complex Hermitian eigensolver on the lower triangle of a.
func heevdC128(n int, a []complex128, lda int, w []float64, vectors bool) error {
	if err := CheckFinite(n, n, a, lda, true); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if n == 1 {
		w[0] = real(a[0])
		if vectors {
			a[0] = 1
		}
		return nil
	}
	// The scale is that of the matrix zheevd reads: the diagonal's
	// imaginary parts, which it ignores (as zlanhe), are cleared first and
	// take no part in it (large ones used to scale the rest into underflow).
	anrm := 0.0
	for j := 0; j < n; j++ {
		a[j+j*lda] = complex(real(a[j+j*lda]), 0)
		for _, v := range a[j*lda+j : j*lda+n] {
			anrm = max(anrm, cabs(v))
		}
	}
	scale := eigenScale(anrm)
	if scale != 1 {
		for j := 0; j < n; j++ {
			for i := j; i < n; i++ {
				a[i+j*lda] *= complex(scale, 0)
			}
		}
	}
	if info, handled := cpubackend.ZheevdNative(n, a, lda, w, vectors); handled {
		if info != 0 {
			return fmt.Errorf("%w (LAPACK zheevd info %d)", ErrNoConvergence, info)
		}
		for i := range w[:n] {
			w[i] /= scale
		}
		return nil
	}
	d := make([]float64, n)
	e := make([]float64, n-1)
	tau := make([]complex128, n-1)
	lapack.Zhetrd(n, a, lda, d, e, tau)
	var err error
	if !vectors {
		if !tridiagonalValues(n, d, e) {
			err = ErrNoConvergence
		}
	} else {
		z := make([]float64, n*n)
		if !lapack.Dstedc(n, d, e, z, n) {
			err = ErrNoConvergence
		} else {
			c := make([]complex128, n*n)
			for i, v := range z {
				c[i] = complex(v, 0)
			}
			lapack.Zunmtr(n, n, a, lda, tau, c, n)
			for j := 0; j < n; j++ {
				copy(a[j*lda:j*lda+n], c[j*n:(j+1)*n])
			}
		}
	}
	if err != nil {
		return err
	}
	for i := range d {
		w[i] = d[i] / scale
	}
	return nil
}

// eigenScale is the factor that brings a Hermitian matrix whose largest
// element magnitude is anrm into [rmin, 1/rmin], rmin = √(safmin/ε), before
// the eigensolver (LAPACK's dsyevd/zheevd scaling), or 1 when it is there.
func eigenScale(anrm float64) float64 {
	rmin := math.Sqrt(0x1p-1022 / dlamchE)
	switch {
	case anrm > 0 && anrm < rmin:
		return rmin / anrm
	case anrm > 1/rmin:
		return 1 / rmin / anrm
	}
	return 1
}
