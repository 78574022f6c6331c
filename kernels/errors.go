package kernels

// The package's errors, at the bottom of its files' dependencies: the
// scalar helpers (scalar.go), the finiteness scans (finite.go) and the
// kernels all refer to them, and they refer to nothing else in the package.

import (
	"errors"
	"fmt"
)

// ErrNotPositiveDefinite reports a matrix that is not (numerically) positive
// definite. Errors returned for it are *NotPositiveDefiniteError values, which
// match this sentinel under errors.Is.
var ErrNotPositiveDefinite = errors.New("matrix is not positive definite")

// NotPositiveDefiniteError names the order of the leading minor that is not
// positive definite (LAPACK's info > 0), counting from 1.
type NotPositiveDefiniteError struct {
	Order int
}

func (e *NotPositiveDefiniteError) Error() string {
	return fmt.Sprintf("%v: the leading minor of order %d is not positive definite", ErrNotPositiveDefinite, e.Order)
}

// Is makes errors.Is(err, ErrNotPositiveDefinite) hold.
func (e *NotPositiveDefiniteError) Is(target error) bool { return target == ErrNotPositiveDefinite }

// ErrNonFinite reports NaN or ±Inf entries in an input, or a result (a
// factor, a solution, an inverse, a gradient) beyond the dtype's range.
// Errors are wrapped with what and where, so test with
// errors.Is(err, ErrNonFinite).
var ErrNonFinite = errors.New("non-finite value")

// NonFiniteError gives the (0-based) position of the first non-finite entry
// found. It matches ErrNonFinite under errors.Is.
type NonFiniteError struct {
	Row, Col int
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("%v: NaN or Inf at entry (%d,%d)", ErrNonFinite, e.Row, e.Col)
}

// Is makes errors.Is(err, ErrNonFinite) hold.
func (e *NonFiniteError) Is(target error) bool { return target == ErrNonFinite }

// errResultNonFinite reports a double-precision result that is not finite:
// it overflows float64's range (or an input of Potrs' right-hand side was
// not finite).
var errResultNonFinite = fmt.Errorf("%w: a result is beyond float64's range (or, for a solve, comes from NaN or Inf right-hand sides)", ErrNonFinite)

// errOverflow32 reports a single-precision result out of float32's range.
var errOverflow32 = fmt.Errorf("%w: a result overflows single precision (computed in double precision, beyond float32's range)", ErrNonFinite)

// ErrComplexGradient reports a gradient asked of a complex-valued op:
// gradients are real only, on one process (package ops) and across
// processes (package dist) alike.
var ErrComplexGradient = errors.New("gradients of complex-valued ops are not supported")

// ErrNoConvergence reports that an iterative eigenvalue algorithm did not
// converge (LAPACK's info > 0 from the eigensolvers).
var ErrNoConvergence = errors.New("eigenvalue algorithm did not converge")

// ErrWrongResult reports that a solver library returned a result that
// mgla's check of it found wrong, again when the call was repeated (the
// error says which call, how often, and by how much).
var ErrWrongResult = errors.New("solver returned a wrong result")

// ErrRepeatedEigenvalues reports an eigenvector gradient asked where the
// backward pass cannot compute it: two eigenvalues are equal (to rounding)
// and the cost uses their eigenvectors (see EigenvectorTerm).
var ErrRepeatedEigenvalues = errors.New("eigenvector gradient at repeated eigenvalues: the cost uses their eigenvectors")
