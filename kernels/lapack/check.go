package lapack

import "fmt"

// checkMatrix panics, as the reference BLAS and LAPACK's argument checks
// report an illegal value, when the slice of length n cannot hold a rows×cols
// column-major matrix with leading dimension ld.
func checkMatrix(routine, name string, rows, cols, ld, n int) {
	switch {
	case rows < 0 || cols < 0:
		panic(fmt.Sprintf("lapack: %s: negative dimension of %s (%d×%d)", routine, name, rows, cols))
	case ld < max(1, rows):
		panic(fmt.Sprintf("lapack: %s: leading dimension of %s is %d, need at least %d", routine, name, ld, max(1, rows)))
	case rows > 0 && cols > 0 && n < (cols-1)*ld+rows:
		panic(fmt.Sprintf("lapack: %s: %s has %d elements, a %d×%d matrix with leading dimension %d needs %d", routine, name, n, rows, cols, ld, (cols-1)*ld+rows))
	}
}

// checkVector panics when a vector argument is shorter than need.
func checkVector(routine, name string, have, need int) {
	if have < need {
		panic(fmt.Sprintf("lapack: %s: len(%s) = %d, need at least %d", routine, name, have, need))
	}
}

func conj(z complex128) complex128 { return complex(real(z), -imag(z)) }
