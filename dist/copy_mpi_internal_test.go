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
					spoil(s, pos, bad, inImag)
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

// spoil sets element pos of s to bad, in its imaginary part with inImag
// (complex types only).
func spoil[T Scalar](s []T, pos int, bad float64, inImag bool) {
	switch {
	case !inImag:
		s[pos] = fromFloat[T](bad)
	case dtypeCode[T]() == 3:
		reals[float32](s)[2*pos+1] = float32(bad)
	default:
		reals[float64](s)[2*pos+1] = bad
	}
}

// TestCopyTransposed checks copyTransposed for every dtype, shapes below,
// at and across the tile size (and empty ones), with padding in both
// leading dimensions: every element lands in its place, the padding is not
// written, and the verdict is right with no bad value and with NaN, +Inf or
// −Inf at each position (in the real or the imaginary part).
func TestCopyTransposed(t *testing.T) {
	t.Run("float32", testCopyTransposed[float32])
	t.Run("float64", testCopyTransposed[float64])
	t.Run("complex64", testCopyTransposed[complex64])
	t.Run("complex128", testCopyTransposed[complex128])
}

func testCopyTransposed[T Scalar](t *testing.T) {
	const pad = 3
	sizes := []int{0, 1, 2, 3, transposeTile - 1, transposeTile, transposeTile + 1, 2*transposeTile + 5}
	bads := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	sentinel := fromFloat[T](-7)
	for _, r := range sizes {
		for _, c := range sizes {
			lds, ldd := c+pad, r+pad
			src := make([]T, max(0, r*lds))
			for i := range src {
				src[i] = fromFloat[T](float64(i%97) - 48.5)
			}
			run := func(src []T) ([]T, bool) {
				dst := make([]T, max(0, c*ldd))
				for i := range dst {
					dst[i] = sentinel
				}
				return dst, copyTransposed(dst, ldd, src, lds, r, c)
			}
			dst, ok := run(src)
			if !ok {
				t.Fatalf("%d×%d, all finite: reported not finite", r, c)
			}
			for j := range c {
				for i := range ldd {
					want := sentinel
					if i < r {
						want = src[i*lds+j]
					}
					if got := dst[i+j*ldd]; got != want {
						t.Fatalf("%d×%d: dst[%d+%d·%d] = %v, want %v", r, c, i, j, ldd, got, want)
					}
				}
			}
			for i := range r {
				for j := range c {
					if r*c > 40*40 && (i < r-1 || j < c-1) { // large: the last element only
						continue
					}
					for k, bad := range bads {
						s := slices.Clone(src)
						spoil(s, i*lds+j, bad, (i+j+k)%2 == 1 && dtypeCode[T]() > 2)
						if _, ok := run(s); ok {
							t.Fatalf("%d×%d, %v at (%d, %d): reported finite", r, c, bad, i, j)
						}
					}
				}
			}
		}
	}
}

// TestMoveRule: p?gemr2d from the measured process counts on, and for a
// matrix above sumMoveMaxBytes on any count (the sum moves hold it whole on
// every rank).
func TestMoveRule(t *testing.T) {
	big := sumMoveMaxBytes + 1
	for _, tc := range []struct {
		mv           move
		ranks, bytes int
		want         bool
	}{
		{fromRootMove, 1, 8, false},
		{fromRootMove, 3, sumMoveMaxBytes, false},
		{fromRootMove, 4, 8, true},
		{fromRootMove, 1, big, true},
		{fromRowBlocksMove, 2, big, true},
		{fromRowBlocksMove, 3, 1 << 20, false},
		{gatherOneMove, 4, 1 << 20, false},
		{gatherOneMove, 8, 8, true},
		{gatherAllMove, 7, big, true},
		{gatherAllMove, 7, 1 << 20, false},
	} {
		if got := gemr2dRule(tc.mv, tc.ranks, tc.bytes); got != tc.want {
			t.Errorf("move %d on %d ranks, %d bytes: p?gemr2d %v, want %v", tc.mv, tc.ranks, tc.bytes, got, tc.want)
		}
	}
	if got, want := wholeBytes[complex64](3, 5), 3*5*8; got != want {
		t.Errorf("wholeBytes[complex64](3, 5) = %d, want %d", got, want)
	}
}
