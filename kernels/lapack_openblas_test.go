//go:build openblas

package kernels

import (
	"testing"

	"github.com/mgla/mgla/kernels/lapack"
)

// TestLAPACKDirect checks that the openblas build, whose Potrf, Potrs, Potri
// and Syevd call LAPACK's column-major routines directly, gives the answers of
// the package's own pure-Go complex128 routines (lapack.Zpotrf, lapack.Ztrsm,
// lapack.Ztrtri + lapack.Zlauum, lapack.Zhetrd + dsterf), run on the same input in
// complex128, for every dtype, odd sizes and a leading dimension larger than n
// with junk in the strict upper triangle.
func TestLAPACKDirect(t *testing.T) {
	forAllTypes(t, testLAPACKDirect[float32], testLAPACKDirect[float64], testLAPACKDirect[complex64], testLAPACKDirect[complex128])
}

func testLAPACKDirect[T Scalar](t *testing.T) {
	rnd := newRand(t, 7)
	tol := tolT[T]()
	junk := complex(3e20, -3e20)
	for _, n := range []int{1, 3, 17, 131, 257} {
		const nrhs = 5
		a := randHPD[T](rnd, n)
		bm := roundTo[T](randDense(rnd, n, nrhs, isComplexT[T]()))
		lda := n + 2

		// References: the pure-Go complex128 routines.
		ref := append([]complex128(nil), a.v...)
		if info := lapack.Zpotrf(n, ref, n); info != 0 {
			t.Fatalf("seed %d n=%d: reference Zpotrf info %d", testSeed, n, info)
		}
		for j := 1; j < n; j++ {
			clear(ref[j*n : j*n+j])
		}
		refL := dense{n, n, ref}
		refX := dense{n, nrhs, append([]complex128(nil), bm.v...)}
		lapack.Ztrsm(false, n, nrhs, ref, n, refX.v, n)
		lapack.Ztrsm(true, n, nrhs, ref, n, refX.v, n)
		refInv := dense{n, n, append([]complex128(nil), ref...)}
		lapack.Ztrtri(n, refInv.v, n, make([]complex128, (n/2+1)*(n/2+1)))
		lapack.Zlauum(n, refInv.v, n)
		refW := make([]float64, n)
		if n > 1 {
			h := append([]complex128(nil), a.v...)
			e := make([]float64, n-1)
			lapack.Zhetrd(n, h, n, refW, e, make([]complex128, n-1))
			if !tridiagonalValues(n, refW, e) {
				t.Fatalf("seed %d n=%d: reference dsteqr did not converge", testSeed, n)
			}
		} else {
			refW[0] = real(a.v[0])
		}

		l := store[T](a, lda, &junk)
		if err := Potrf(n, l, lda); err != nil {
			t.Fatalf("seed %d n=%d: Potrf: %v", testSeed, n, err)
		}
		if d := fnorm(sub(denseOf(n, n, l, lda), refL)) / fnorm(refL); d > tol {
			t.Errorf("seed %d n=%d: Potrf differs from zpotrf by %.3g (rel)", testSeed, n, d)
		}
		x := store[T](bm, n+1, nil)
		if err := Potrs(n, nrhs, l, lda, x, n+1); err != nil {
			t.Fatalf("seed %d n=%d: Potrs: %v", testSeed, n, err)
		}
		if d := fnorm(sub(denseOf(n, nrhs, x, n+1), refX)) / fnorm(refX); d > tol {
			t.Errorf("seed %d n=%d: Potrs differs from the pure-Go solve by %.3g (rel)", testSeed, n, d)
		}
		if err := Potri(n, l, lda); err != nil {
			t.Fatalf("seed %d n=%d: Potri: %v", testSeed, n, err)
		}
		inv := denseOf(n, n, l, lda)
		if d := fnorm(sub(inv, refInv)) / fnorm(refInv); d > tol {
			t.Errorf("seed %d n=%d: Potri differs from the pure-Go inverse by %.3g (rel)", testSeed, n, d)
		}
		for j := 0; j < n; j++ {
			for i := j; i < n; i++ {
				if inv.at(j, i) != conj(inv.at(i, j)) {
					t.Fatalf("seed %d n=%d: Potri result not exactly Hermitian at (%d,%d)", testSeed, n, i, j)
				}
			}
		}

		scale := max(abs1(complex(refW[0], 0)), abs1(complex(refW[n-1], 0)))
		w0, _ := syevdValues[T](t, n, a, lda, junk, false)
		w, v := syevdValues[T](t, n, a, lda, junk, true)
		for i := range refW {
			if d := max(abs1(complex(w[i]-refW[i], 0)), abs1(complex(w0[i]-refW[i], 0))) / scale; d > tol {
				t.Errorf("seed %d n=%d: eigenvalue %d = %g (values only %g), pure Go %g", testSeed, n, i, w[i], w0[i], refW[i])
				break
			}
		}
		// A·V = V·diag(w) and VᴴV = I.
		av := mul(a, v)
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				av.add(i, j, -v.at(i, j)*complex(w[j], 0))
			}
		}
		if d := fnorm(av) / (scale * float64(n)); d > tol {
			t.Errorf("seed %d n=%d: eigen residual %.3g", testSeed, n, d)
		}
		if d := fnorm(sub(mul(adjoint(v), v), eye(n))) / float64(n); d > tol {
			t.Errorf("seed %d n=%d: eigenvectors not orthonormal: %.3g", testSeed, n, d)
		}
	}
}

// syevdValues runs Syevd on a stored copy of a and returns the eigenvalues
// (as float64) and what Syevd left in a (the eigenvectors with vectors).
func syevdValues[T Scalar](t *testing.T, n int, a dense, lda int, junk complex128, vectors bool) ([]float64, dense) {
	s := store[T](a, lda, &junk)
	w := make([]float64, n)
	var err error
	if isSingleT[T]() {
		w32 := make([]float32, n)
		err = Syevd(n, s, lda, w32, vectors)
		for i, x := range w32 {
			w[i] = float64(x)
		}
	} else {
		err = Syevd(n, s, lda, w, vectors)
	}
	if err != nil {
		t.Fatalf("seed %d n=%d: Syevd: %v", testSeed, n, err)
	}
	return w, denseOf(n, n, s, lda)
}
