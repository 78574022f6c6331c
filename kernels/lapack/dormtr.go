package lapack

// Dormtr overwrites the n×ncols matrix C in c (column-major, leading
// dimension ldc ≥ max(1, n)) with Q·C, where Q = H(0)·H(1)···H(n−2) is the
// orthogonal matrix of the reduction by Dsytrd, given by its reflectors in
// the lower triangle of a (leading dimension lda ≥ max(1, n)) and tau
// (length n−1) (LAPACK dormtr with side = 'L', uplo = 'L', trans = 'N'). a
// and tau are not modified; only the n×ncols block of c is written. It is
// Zunmtr's blocked algorithm, the products by Dgemm.
func Dormtr(n, ncols int, a []float64, lda int, tau []float64, c []float64, ldc int) {
	checkMatrix("Dormtr", "a", n, n, lda, len(a))
	checkMatrix("Dormtr", "c", n, ncols, ldc, len(c))
	checkVector("Dormtr", "tau", len(tau), n-1)
	unmtr(n, ncols, a, lda, tau, c, ldc, Dgemm, dot)
}
