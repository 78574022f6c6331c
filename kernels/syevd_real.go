package kernels

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/mgla/mgla/kernels/cpubackend"
)

// syevdF64 is the float64 symmetric eigensolver on the lower triangle of the
// column-major a: tridiagonal reduction (dsytrd), then dsterf for values only
// or the divide and conquer tridiagonal solver (tridiagEig) and the blocked
// back-transformation (dormqr). With the openblas tag the whole computation is
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
	const (
		safmin = 0x1p-1022
		eps    = dlamchE
	)
	rmin := math.Sqrt(safmin / eps)
	rmax := math.Sqrt(1 / (safmin / eps))
	scale := 1.0
	if anrm > 0 && anrm < rmin {
		scale = rmin / anrm
	} else if anrm > rmax {
		scale = rmax / anrm
	}
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
	dsytrdLower(n, a, lda, d, e, tau)
	if !vectors {
		if !cpubackend.LAPACK.Dsterf(n, d, e) {
			return ErrNoConvergence
		}
		copy(w, d)
		return nil
	}
	z := make([]float64, n*n)
	if err := tridiagEig(n, d, e, z, n); err != nil {
		return err
	}
	// V = Q·Z. In the row-major view z is Zᵀ and the reflectors stored in the
	// columns of a are rows, the layout of an LQ factorization, whose
	// Q_lq = H(n-2)···H(0) = Qᵀ. So Vᵀ = Zᵀ·Qᵀ = Zᵀ·Q_lq (dormlq, right side)
	// acting on columns 1..n-1.
	work := make([]float64, 1)
	cpubackend.LAPACK.Dormlq(blas.Right, blas.NoTrans, n, n-1, n-1, a[1:], lda, tau, z[1:], n, work, -1)
	work = make([]float64, max(1, int(work[0])))
	cpubackend.LAPACK.Dormlq(blas.Right, blas.NoTrans, n, n-1, n-1, a[1:], lda, tau, z[1:], n, work, len(work))
	for j := 0; j < n; j++ {
		copy(a[j*lda:j*lda+n], z[j*n:(j+1)*n])
	}
	copy(w, d)
	return nil
}
