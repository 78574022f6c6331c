package kernels

import (
	"math"
	"runtime"
	"sync"
)

// triangleParts splits the columns 0…n of a lower triangle into nw runs of
// about equal area (column c holds n−c entries): bounds[p] … bounds[p+1].
func triangleParts(n, nw int) []int {
	bounds := make([]int, nw+1)
	total := float64(n) * float64(n) / 2
	fn := float64(n)
	for p := 1; p < nw; p++ {
		// area(0…c) = n·c − c²/2 = total·p/nw
		c := fn - math.Sqrt(fn*fn-2*total*float64(p)/float64(nw))
		bounds[p] = min(n, max(bounds[p-1], int(c)))
	}
	bounds[nw] = n
	return bounds
}

// triangleWorkers is how many goroutines share an O(n²) pass over a
// triangle of order n: one below 512, where a pass costs less than
// starting them.
func triangleWorkers(n int) int {
	if n < 512 {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

// eachTrianglePart runs fn on the column runs of triangleParts(n, nw)
// concurrently and returns the error of the first run (in column order)
// that failed.
func eachTrianglePart(n int, fn func(j0, j1 int) error) error {
	nw := triangleWorkers(n)
	if nw == 1 {
		return fn(0, n)
	}
	bounds := triangleParts(n, nw)
	errs := make([]error, nw)
	var wg sync.WaitGroup
	for p := range nw {
		wg.Add(1)
		go func() { defer wg.Done(); errs[p] = fn(bounds[p], bounds[p+1]) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
