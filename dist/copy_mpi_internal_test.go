//go:build mpi

package dist

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestCopyFinite checks copyFinite for every dtype and length 0–9 (the
// unrolled loop and its tail), with no bad value and with NaN, +Inf or −Inf
// at each position (in the real or the imaginary part): the copy is exact
// and the verdict right.
func TestCopyFinite(t *testing.T) {
	t.Run("float32", testCopyFinite[float32])
	t.Run("float64", testCopyFinite[float64])
	t.Run("complex64", testCopyFinite[complex64])
	t.Run("complex128", testCopyFinite[complex128])
}

func testCopyFinite[T Scalar](t *testing.T) {
	bads := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	for n := range 10 {
		src := make([]T, n)
		for i := range src {
			src[i] = scalar[T](float64(i)-3.5, float64(n-i)*1e30)
		}
		dst := make([]T, n)
		if !copyFinite(dst, src) || !slices.Equal(dst, src) {
			t.Fatalf("n=%d, all finite: copy %v of %v, or reported not finite", n, dst, src)
		}
		for pos := range n {
			for _, bad := range bads {
				for _, inImag := range []bool{false, true} {
					if inImag && dtypeCode[T]() <= 2 { // a real type has no imaginary part
						continue
					}
					s := slices.Clone(src)
					if inImag {
						s[pos] = scalar[T](float64(pos), bad)
					} else {
						s[pos] = scalar[T](bad, 1)
					}
					d := make([]T, n)
					name := fmt.Sprintf("n=%d, %v at %d (imaginary part: %v)", n, bad, pos, inImag)
					if copyFinite(d, s) {
						t.Errorf("%s: reported finite", name)
					}
					for i := range s {
						if d[i] != s[i] && i != pos {
							t.Errorf("%s: element %d copied as %v, want %v", name, i, d[i], s[i])
						}
					}
				}
			}
		}
	}
}

// scalar is re + im·i as a T (the real part only for a real T).
func scalar[T Scalar](re, im float64) T {
	var x T
	switch p := any(&x).(type) {
	case *float32:
		*p = float32(re)
	case *float64:
		*p = re
	case *complex64:
		*p = complex(float32(re), float32(im))
	case *complex128:
		*p = complex(re, im)
	}
	return x
}
