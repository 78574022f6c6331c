package kernels

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
