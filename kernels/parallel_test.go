package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
)

// withProcs sets GOMAXPROCS to at least n for the test, so that
// columnBlocks shares large matrices out (from three goroutines) on a
// machine of fewer cores too.
func withProcs(t *testing.T, n int) {
	if old := runtime.GOMAXPROCS(0); old < n {
		runtime.GOMAXPROCS(n)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	}
}

// TestColumnBlocks: every column block is visited exactly once, in the
// calling goroutine or shared out, for every GOMAXPROCS around the
// three-goroutine threshold and sizes around the twelve blocks it needs
// (n = 704).
func TestColumnBlocks(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	for _, procs := range []int{1, 2, 3, 4, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 64, 448, 449, 704, 705, 767, 768, 1031, 4097} {
			seen := make([]atomic.Int32, n)
			columnBlocks(n, func(j0, j1 int) {
				if j0%blockWidth != 0 || j1 != min(j0+blockWidth, n) {
					t.Errorf("procs=%d n=%d: block [%d, %d)", procs, n, j0, j1)
				}
				for j := j0; j < j1; j++ {
					seen[j].Add(1)
				}
			})
			for j := range seen {
				if c := seen[j].Load(); c != 1 {
					t.Fatalf("procs=%d n=%d: column %d visited %d times", procs, n, j, c)
				}
			}
		}
	}
}

// TestMirrorLower: the strict upper triangle becomes the transpose of the
// strict lower one, which stays as it was, and so do the diagonal and the
// rows past n of each column; sizes on both sides of columnBlocks' shared
// passes (n = 704, at GOMAXPROCS 4), of the 64-wide blocks and of the 8-wide
// groups of columns; float64 and float32.
func TestMirrorLower(t *testing.T) {
	withProcs(t, 4)
	t.Run("float64", testMirrorLower[float64])
	t.Run("float32", testMirrorLower[float32])
}

func testMirrorLower[T float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed, 17))
	for _, n := range []int{1, 2, 9, 15, 16, 17, 33, 63, 64, 65, 71, 511, 512, 700, 704, 705, 1031} {
		lda := n + 3
		a := make([]T, lda*n)
		for i := range a {
			a[i] = T(rng.NormFloat64())
		}
		for j := range n {
			for i := range j {
				a[i+j*lda] = T(math.NaN()) // the upper triangle is overwritten
			}
		}
		before := append([]T(nil), a...)
		if !MirrorLower(n, a, lda) {
			t.Fatalf("seed %d n=%d: a finite lower triangle reported non-finite", testSeed, n)
		}
		for j := range n {
			for i := range lda {
				got, at := a[i+j*lda], before[i+j*lda]
				switch {
				case i < j:
					if want := before[j+i*lda]; got != want {
						t.Fatalf("seed %d n=%d: upper (%d,%d) = %v, want the lower (%d,%d) = %v", testSeed, n, i, j, got, j, i, want)
					}
				case got != at:
					t.Fatalf("seed %d n=%d: element (%d,%d) changed from %v to %v", testSeed, n, i, j, at, got)
				}
			}
		}
	}
}

// TestMirrorLowerFinite: the mirror reports a NaN or ±Inf anywhere in
// the lower triangle, diagonal included (in an eight-wide strip's body, in
// its triangle, in the narrower last strip), and no other element: entries
// near the largest float64, whose sums overflow, and NaN above the diagonal
// (overwritten) are fine.
func TestMirrorLowerFinite(t *testing.T) {
	withProcs(t, 4)
	const n, lda = 1031, 1033 // the last strip is 7 wide
	big := math.MaxFloat64
	for _, tc := range []struct {
		name   string
		i, j   int
		v      float64
		finite bool
	}{
		{"strip body", 900, 17, math.NaN(), false},
		{"another strip's body", 900, 30, math.Inf(1), false},
		{"strip triangle", 21, 17, math.Inf(-1), false},
		{"narrow strip", 1030, 1025, math.Inf(1), false},
		{"diagonal", 600, 600, math.NaN(), false},
		{"first column", n - 1, 0, math.Inf(1), false},
		{"above the diagonal", 3, 900, math.NaN(), true},
		{"largest finite", 0, 0, big, true},
	} {
		a := make([]float64, lda*n)
		for j := range n {
			for i := j; i < n; i++ {
				a[i+j*lda] = big // sums of neighbours overflow
			}
		}
		a[tc.i+tc.j*lda] = tc.v
		if got := mirrorLower(n, a, lda); got != tc.finite {
			t.Errorf("%s: mirrorLower reported finite=%v, want %v", tc.name, got, tc.finite)
		}
	}
}

// TestParallelScans: the NaN/Inf scan gives the serial answer on matrices large enough for
// columnBlocks to share them out: the first non-finite element in column
// order, wherever the blocks finish.
func TestParallelScans(t *testing.T) {
	withProcs(t, 4)
	const n, lda = 777, 780
	a := make([]float64, lda*n)
	for i := range a {
		a[i] = 1
	}
	if err := checkFiniteF64(n, n, a, lda, false); err != nil {
		t.Fatalf("finite matrix: %v", err)
	}
	a[700+600*lda] = math.Inf(1) // a late column
	a[650+130*lda] = math.NaN()  // the first in column order
	a[20+100*lda] = math.NaN()   // above the diagonal: only the full scan sees it
	for _, tc := range []struct {
		lowerOnly bool
		row, col  int
	}{{false, 20, 100}, {true, 650, 130}} {
		var nf *NonFiniteError
		if err := checkFiniteF64(n, n, a, lda, tc.lowerOnly); !errors.As(err, &nf) || nf.Row != tc.row || nf.Col != tc.col {
			t.Errorf("lowerOnly=%v: %v, want the element (%d,%d)", tc.lowerOnly, err, tc.row, tc.col)
		}
	}
}

// TestCholInput: Cholesky's input pass, in place and copying from a
// separate input, reports what the lower scan reports and, on a finite
// lower triangle, leaves the lower triangle of the input in place, clears
// the strict upper triangle and touches nothing else (not the rows past n,
// not the input), for float64 and complex128, below and above the parallel
// threshold.
func TestCholInput(t *testing.T) {
	withProcs(t, 4)
	rng := rand.New(rand.NewPCG(testSeed, 23))
	for _, n := range []int{1, 5, 64, 777} {
		lda := n + 3
		for _, bad := range []bool{false, true} {
			for _, copying := range []bool{false, true} {
				a := make([]float64, lda*n)
				for i := range a {
					a[i] = rng.NormFloat64()
				}
				c := make([]complex128, lda*n)
				for i := range c {
					c[i] = complex(rng.NormFloat64(), rng.NormFloat64())
				}
				if bad {
					i, j := n-1, n/2
					a[i+j*lda] = math.Inf(-1)
					c[i+j*lda] = complex(0, math.NaN())
				}
				a0, c0 := append([]float64(nil), a...), append([]complex128(nil), c...)
				wantA := checkFiniteF64(n, n, a, lda, true)
				wantC := CheckFinite(n, n, c, lda, true)
				// In place, or into buffers of junk from a and c.
				la, lc, srcA, srcC := a, c, []float64(nil), []complex128(nil)
				if copying {
					la, lc, srcA, srcC = make([]float64, lda*n), make([]complex128, lda*n), a, c
					for i := range la {
						la[i], lc[i] = math.NaN(), complex(math.NaN(), 1)
					}
				}
				la0, lc0 := append([]float64(nil), la...), append([]complex128(nil), lc...)
				if got := cholInputF64(n, la, lda, srcA, lda); !sameError(got, wantA) {
					t.Errorf("seed %d n=%d copying=%v float64: %v, want %v", testSeed, n, copying, got, wantA)
				}
				if got := cholInputC128(n, lc, lda, srcC, lda); !sameError(got, wantC) {
					t.Errorf("seed %d n=%d copying=%v complex128: %v, want %v", testSeed, n, copying, got, wantC)
				}
				if copying && (!equalBits(a, a0) || !equalBits(c, c0)) {
					t.Fatalf("seed %d n=%d: the input changed", testSeed, n)
				}
				if bad {
					continue
				}
				for j := range n {
					for i := range lda {
						k := i + j*lda
						wa, wc := a0[k], c0[k]
						switch {
						case i < j:
							wa, wc = 0, 0
						case i >= n:
							wa, wc = la0[k], lc0[k]
						}
						if !sameFloat(la[k], wa) || !sameFloat(real(lc[k]), real(wc)) || !sameFloat(imag(lc[k]), imag(wc)) {
							t.Fatalf("seed %d n=%d copying=%v: element (%d,%d) = %v, %v; want %v, %v", testSeed, n, copying, i, j, la[k], lc[k], wa, wc)
						}
					}
				}
			}
		}
	}
}

func sameFloat(x, y float64) bool { return x == y || x != x && y != y }

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// TestFirstNonFinite: the index of the first NaN or ±Inf at every position
// class of the chunked sums (first, last, chunk edges, the tail), after
// finite values whose sum overflows, and -1 for finite slices whose sums
// overflow; float64 and float32.
func TestFirstNonFinite(t *testing.T) {
	for _, size := range []int{0, 1, 7, 8, 9, 511, 512, 513, 1500} {
		for _, huge := range []bool{false, true} {
			s64 := make([]float64, size)
			s32 := make([]float32, size)
			for i := range size {
				s64[i], s32[i] = float64(i%5), float32(i%5)
				if huge {
					s64[i], s32[i] = math.MaxFloat64, math.MaxFloat32
				}
			}
			if got := firstNonFinite64(s64); got != -1 {
				t.Errorf("size %d huge=%v: float64 finite slice reported at %d", size, huge, got)
			}
			if got := firstNonFinite32(s32); got != -1 {
				t.Errorf("size %d huge=%v: float32 finite slice reported at %d", size, huge, got)
			}
			for _, at := range []int{0, 7, 8, 511, 512, 513, size - 1} {
				if at < 0 || at >= size {
					continue
				}
				for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
					b64 := append([]float64(nil), s64...)
					b32 := append([]float32(nil), s32...)
					b64[at], b32[at] = v, float32(v)
					if at+1 < size {
						b64[size-1], b32[size-1] = math.NaN(), float32(math.NaN()) // a later one
					}
					if got := firstNonFinite64(b64); got != at {
						t.Errorf("size %d huge=%v: float64 %v at %d reported at %d", size, huge, v, at, got)
					}
					if got := firstNonFinite32(b32); got != at {
						t.Errorf("size %d huge=%v: float32 %v at %d reported at %d", size, huge, v, at, got)
					}
				}
			}
		}
	}
}
