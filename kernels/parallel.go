package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// blockWidth is the width of the column blocks of columnBlocks.
const blockWidth = 64

// columnBlocks runs fn on the column blocks [j0, j1) of width blockWidth
// that cover [0, n), and returns when all are done. From 8 blocks (n > 448)
// the blocks are shared between up to GOMAXPROCS goroutines, each taking
// the next block as it finishes one; with fewer they run in the calling
// goroutine. fn must write only to its own columns. It serves the
// memory-bound passes around the LAPACK calls (input scans, zeroing and
// mirroring triangles), which on a single core would be a visible part of a
// threaded LAPACK routine's time.
func columnBlocks(n int, fn func(j0, j1 int)) {
	blocks := (n + blockWidth - 1) / blockWidth
	run := func(b int) { fn(b*blockWidth, min((b+1)*blockWidth, n)) }
	workers := min(runtime.GOMAXPROCS(0), blocks/4)
	if blocks < 8 || workers <= 1 {
		for b := range blocks {
			run(b)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := next.Add(1) - 1; b < int64(blocks); b = next.Add(1) - 1 {
				run(int(b))
			}
		})
	}
	wg.Wait()
}
