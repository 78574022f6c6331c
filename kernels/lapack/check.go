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

// checkGemm checks the operands of C = op(A)·op(B) + C, C m×n and the
// inner dimension k, given their slice lengths and leading dimensions.
func checkGemm(routine string, tA, tB bool, m, n, k, na, lda, nb, ldb, nc, ldc int) {
	if tA {
		checkMatrix(routine, "a", k, m, lda, na)
	} else {
		checkMatrix(routine, "a", m, k, lda, na)
	}
	if tB {
		checkMatrix(routine, "b", n, k, ldb, nb)
	} else {
		checkMatrix(routine, "b", k, n, ldb, nb)
	}
	checkMatrix(routine, "c", m, n, ldc, nc)
}

// checkVector panics when a vector argument is shorter than need.
func checkVector(routine, name string, have, need int) {
	if have < need {
		panic(fmt.Sprintf("lapack: %s: len(%s) = %d, need at least %d", routine, name, have, need))
	}
}

func conj(z complex128) complex128 { return complex(real(z), -imag(z)) }
