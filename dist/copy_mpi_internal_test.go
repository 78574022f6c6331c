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
			src[i] = fromFloat[T](float64(i) - 3.5)
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
					switch {
					case !inImag:
						s[pos] = fromFloat[T](bad)
					case dtypeCode[T]() == 3:
						reals[float32](s)[2*pos+1] = float32(bad)
					default:
						reals[float64](s)[2*pos+1] = bad
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
