package kernels

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
)

// TestConcurrentCalls pins "All functions are safe for concurrent use; they
// keep no state between calls other than pooled scratch buffers"
// (kernels/doc.go:52): Potrf, Potrs, Potri and Syevd with eigenvectors, in
// float64 and complex128, called from 4 goroutines at once (each on its own
// matrices, with junk in their strict upper triangles and padding rows),
// give bit for bit what the same calls give one at a time. N = 37 takes the
// unblocked paths; N = 176 the blocked ones and, in complex128, the pure-Go
// products that split their work between goroutines (GOMAXPROCS is raised
// to 4 for the test) with pooled packing buffers. It passes under -race and
// with -tags openblas (LAPACK's own routines, called from 4 threads).
func TestConcurrentCalls(t *testing.T) {
	t.Run("float64", testConcurrentCalls[float64])
	t.Run("complex128", testConcurrentCalls[complex128])
}

// ccCall is one kernel call on a goroutine's inputs: A (HPD, junk above
// the diagonal), B, and L = Potrf(A) from the call alone. It returns the
// matrix it writes and, for Syevd, the eigenvalues.
type ccCall[T Scalar] struct {
	name string
	run  func(n, k, ld int, a, b, l []T) ([]T, []float64, error)
}

func ccCalls[T Scalar]() []ccCall[T] {
	return []ccCall[T]{
		{"Potrf", func(n, _, ld int, a, _, _ []T) ([]T, []float64, error) {
			l := slices.Clone(a)
			return l, nil, Potrf(n, l, ld)
		}},
		{"Potrs", func(n, k, ld int, _, b, l []T) ([]T, []float64, error) {
			x := slices.Clone(b)
			return x, nil, Potrs(n, k, l, ld, x, ld)
		}},
		{"Potri", func(n, _, ld int, _, _, l []T) ([]T, []float64, error) {
			c := slices.Clone(l)
			return c, nil, Potri(n, c, ld)
		}},
		{"Syevd", func(n, _, ld int, a, _, _ []T) ([]T, []float64, error) {
			v, w := slices.Clone(a), make([]float64, n)
			return v, w, Syevd(n, v, ld, w, true)
		}},
	}
}

// ccResult is what a call returns.
type ccResult[T Scalar] struct {
	m   []T
	w   []float64
	err error
}

// ccDiff describes the first difference between two results, bit for bit
// (NaN payloads and signed zeros included), or is "" when there is none.
func ccDiff[T Scalar](got, want ccResult[T]) string {
	if !sameError(got.err, want.err) {
		return fmt.Sprintf("error %v, alone %v", got.err, want.err)
	}
	if i := ccFirstDiff(got.m, want.m); i >= 0 {
		return fmt.Sprintf("element %d is %v, alone %v", i, got.m[i], want.m[i])
	}
	if i := ccFirstDiff(got.w, want.w); i >= 0 {
		return fmt.Sprintf("eigenvalue %d is %v, alone %v", i, got.w[i], want.w[i])
	}
	return ""
}

// ccFirstDiff is the index of the first element of a and b whose bits
// differ (real and imaginary parts), or -1.
func ccFirstDiff[T Scalar](a, b []T) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		x, y := toC(a[i]), toC(b[i])
		if math.Float64bits(real(x)) != math.Float64bits(real(y)) || math.Float64bits(imag(x)) != math.Float64bits(imag(y)) {
			return i
		}
	}
	return -1
}

func testConcurrentCalls[T Scalar](t *testing.T) {
	const goroutines, k = 4, 3
	withProcs(t, goroutines)
	rnd := newRand(t, 91)
	junk := complex(1e300, -1e300)
	for _, n := range []int{37, 176} {
		ld := n + 2 // padding rows: never read, and left alone
		as, bs, ls := make([][]T, goroutines), make([][]T, goroutines), make([][]T, goroutines)
		for i := range goroutines {
			as[i] = store[T](randHPD[T](rnd, n), ld, &junk)
			bs[i] = store[T](randDense(rnd, n, k, isComplexT[T]()), ld, nil)
			ls[i] = slices.Clone(as[i])
			if err := Potrf(n, ls[i], ld); err != nil {
				t.Fatalf("seed %d: Potrf: %v", testSeed, err)
			}
		}
		for _, c := range ccCalls[T]() {
			t.Run(fmt.Sprintf("N=%d/%s", n, c.name), func(t *testing.T) {
				call := func(i int) ccResult[T] {
					m, w, err := c.run(n, k, ld, as[i], bs[i], ls[i])
					return ccResult[T]{m, w, err}
				}
				alone := make([]ccResult[T], goroutines)
				for i := range goroutines {
					if alone[i] = call(i); alone[i].err != nil {
						t.Fatalf("seed %d: alone: %v", testSeed, alone[i].err)
					}
				}
				// The goroutines start the call together, each on its own
				// inputs.
				var wg sync.WaitGroup
				start := make(chan struct{})
				diffs := make([]string, goroutines)
				for i := range goroutines {
					wg.Go(func() {
						<-start
						diffs[i] = ccDiff(call(i), alone[i])
					})
				}
				close(start)
				wg.Wait()
				for i, d := range diffs {
					if d != "" {
						t.Errorf("seed %d: goroutine %d, beside %d others, differs from the same call alone: %s", testSeed, i, goroutines-1, d)
					}
				}
			})
		}
	}
}
