package sparse

import (
	"fmt"
	"math"
)

// space is what the Go Krylov methods need from a (possibly distributed)
// matrix: products with A or Aᵀ on this process's rows, and dot products
// over every process.
type space interface {
	matvec(trans bool, x, y []float64) error
	dot(a, b []float64) (float64, error)
}

// krylovFunc is one Go Krylov method: it solves op(A)x = b from x = 0, with
// the preconditioner z = M⁻¹r (nil for none).
type krylovFunc func(sp space, trans bool, precond func(r, z []float64) error, b, x []float64, tol float64, maxIter int) (Info, error)

// cg is preconditioned conjugate gradients (A symmetric positive definite,
// M symmetric positive definite). The residual is the recurrence's, checked
// against ‖b‖.
func cg(sp space, trans bool, precond func(r, z []float64) error, b, x []float64, tol float64, maxIter int) (Info, error) {
	n := len(b)
	clear(x)
	r := append([]float64(nil), b...)
	z := make([]float64, n)
	p := make([]float64, n)
	q := make([]float64, n)
	bnorm, err := norm(sp, b)
	if err != nil {
		return Info{Status: Failed}, err
	}
	if bnorm == 0 {
		return Info{Status: Success}, nil
	}
	apply := func(r, z []float64) error {
		if precond == nil {
			copy(z, r)
			return nil
		}
		return precond(r, z)
	}
	if err := apply(r, z); err != nil {
		return Info{Status: Failed}, err
	}
	copy(p, z)
	rz, err := sp.dot(r, z)
	if err != nil {
		return Info{Status: Failed}, err
	}
	info := Info{Residual: 1}
	for it := 1; it <= maxIter; it++ {
		if err := sp.matvec(trans, p, q); err != nil {
			return Info{Status: Failed}, err
		}
		pq, err := sp.dot(p, q)
		if err != nil {
			return Info{Status: Failed}, err
		}
		if pq <= 0 || math.IsNaN(pq) {
			info.Iterations = it
			info.Status = Failed // A (or M) not positive definite
			return info, nil
		}
		alpha := rz / pq
		for i := range x {
			x[i] += alpha * p[i]
			r[i] -= alpha * q[i]
		}
		rn, err := norm(sp, r)
		if err != nil {
			return Info{Status: Failed}, err
		}
		info.Iterations, info.Residual = it, rn/bnorm
		if s, done := progressStatus(info.Residual, tol); done {
			info.Status = s
			return info, nil
		}
		if err := apply(r, z); err != nil {
			return Info{Status: Failed}, err
		}
		rzNew, err := sp.dot(r, z)
		if err != nil {
			return Info{Status: Failed}, err
		}
		beta := rzNew / rz
		rz = rzNew
		for i := range p {
			p[i] = z[i] + beta*p[i]
		}
	}
	info.Status = NotConverged
	return info, nil
}

// bicgstab is right-preconditioned BiCGStab (van der Vorst 1992) for
// non-symmetric A.
func bicgstab(sp space, trans bool, precond func(r, z []float64) error, b, x []float64, tol float64, maxIter int) (Info, error) {
	n := len(b)
	clear(x)
	r := append([]float64(nil), b...)
	r0 := append([]float64(nil), b...)
	p := make([]float64, n)
	v := make([]float64, n)
	s := make([]float64, n)
	t := make([]float64, n)
	ph := make([]float64, n)
	sh := make([]float64, n)
	apply := func(r, z []float64) error {
		if precond == nil {
			copy(z, r)
			return nil
		}
		return precond(r, z)
	}
	bnorm, err := norm(sp, b)
	if err != nil {
		return Info{Status: Failed}, err
	}
	if bnorm == 0 {
		return Info{Status: Success}, nil
	}
	rho, alpha, omega := 1.0, 1.0, 1.0
	info := Info{Residual: 1}
	fail := func(err error) (Info, error) { return Info{Status: Failed}, err }
	for it := 1; it <= maxIter; it++ {
		rhoNew, err := sp.dot(r0, r)
		if err != nil {
			return fail(err)
		}
		if rhoNew == 0 || omega == 0 {
			info.Status = Failed // breakdown
			return info, nil
		}
		beta := (rhoNew / rho) * (alpha / omega)
		rho = rhoNew
		for i := range p {
			p[i] = r[i] + beta*(p[i]-omega*v[i])
		}
		if err := apply(p, ph); err != nil {
			return fail(err)
		}
		if err := sp.matvec(trans, ph, v); err != nil {
			return fail(err)
		}
		r0v, err := sp.dot(r0, v)
		if err != nil {
			return fail(err)
		}
		if r0v == 0 {
			info.Status = Failed
			return info, nil
		}
		alpha = rho / r0v
		for i := range s {
			s[i] = r[i] - alpha*v[i]
		}
		sn, err := norm(sp, s)
		if err != nil {
			return fail(err)
		}
		info.Iterations = it
		if sn/bnorm <= tol {
			for i := range x {
				x[i] += alpha * ph[i]
			}
			info.Residual, info.Status = sn/bnorm, Success
			return info, nil
		}
		if err := apply(s, sh); err != nil {
			return fail(err)
		}
		if err := sp.matvec(trans, sh, t); err != nil {
			return fail(err)
		}
		ts, err := sp.dot(t, s)
		if err != nil {
			return fail(err)
		}
		tt, err := sp.dot(t, t)
		if err != nil {
			return fail(err)
		}
		if tt == 0 {
			info.Status = Failed
			return info, nil
		}
		omega = ts / tt
		for i := range x {
			x[i] += alpha*ph[i] + omega*sh[i]
			r[i] = s[i] - omega*t[i]
		}
		rn, err := norm(sp, r)
		if err != nil {
			return fail(err)
		}
		info.Residual = rn / bnorm
		if st, done := progressStatus(info.Residual, tol); done {
			info.Status = st
			return info, nil
		}
	}
	info.Status = NotConverged
	return info, nil
}

// divergedAbove is the relative residual past which a solve has diverged.
const divergedAbove = 1e8

// statusOf is the Status of a relative residual: Diverged, Success when it
// reached the tolerance, else NotConverged.
func statusOf(res, tol float64) Status {
	switch {
	case math.IsNaN(res) || math.IsInf(res, 0) || res > divergedAbove:
		return Diverged
	case res <= tol:
		return Success
	}
	return NotConverged
}

// finalStatus is the Status of a solve that an engine ended after
// info.Iterations of at most maxIter, with the relative residual
// info.Residual and its own verdict, converged (hypre's convergence flag).
// The verdict alone is not enough: hypre's GMRES stops early without
// raising the flag when it breaks down or stagnates (a singular system, say),
// so Success needs the residual at the tolerance (up to rounding where the
// engine says so itself), and a solve that stops short of the limit without
// reaching it Failed.
func finalStatus(info Info, tol float64, maxIter int, converged bool) Status {
	s := statusOf(info.Residual, tol)
	switch {
	case s != NotConverged:
		return s
	case converged && info.Residual <= tol*(1+1e-6):
		return Success
	case info.Iterations < maxIter:
		return Failed
	}
	return NotConverged
}

// progressStatus says whether an iteration of the Go methods with this
// relative residual ends the solve, and how: at the tolerance, or when it
// is NaN or Inf. Growth alone does not end them (unlike statusOf): the
// residual of CG and BiCGStab is not monotone, and on a diagonally scaled
// SPD system CG's first one was 6e9·‖b‖ on its way to converging, which
// divergedAbove called Diverged.
func progressStatus(res, tol float64) (Status, bool) {
	switch {
	case math.IsNaN(res) || math.IsInf(res, 0):
		return Diverged, true
	case res <= tol:
		return Success, true
	}
	return NotConverged, false
}

func norm(sp space, v []float64) (float64, error) {
	d, err := sp.dot(v, v)
	if err != nil {
		return 0, err
	}
	return math.Sqrt(d), nil
}

// localSpace is a matrix held whole by this process.
type localSpace struct {
	p    *Pattern
	vals []float64
}

func (l *localSpace) matvec(trans bool, x, y []float64) error {
	if len(x) != l.p.n || len(y) != l.p.n {
		return fmt.Errorf("%w: vectors of length %d and %d for order %d", ErrBadInput, len(x), len(y), l.p.n)
	}
	if trans {
		l.p.mulVecT(l.vals, x, y)
	} else {
		l.p.mulVec(l.vals, x, y)
	}
	return nil
}

func (l *localSpace) dot(a, b []float64) (float64, error) {
	var s float64
	for i, x := range a {
		s += x * b[i]
	}
	return s, nil
}
