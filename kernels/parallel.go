package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// blockWidth is the width of the column blocks of columnBlocks.
const blockWidth = 64

// columnBlocks runs fn on the column blocks [j0, j1) of width blockWidth
// that cover [0, n), and returns when all are done. The blocks are shared
// between min(GOMAXPROCS, blocks/4) goroutines, each taking the next block
// as it finishes one, when that is at least three (from 12 blocks, n > 704,
// and GOMAXPROCS ≥ 3); otherwise they run in the calling goroutine. What fn
// writes must not overlap what another call of it reads or writes (the
// mirror of a triangle writes rows [j0, j1) of later columns, above the
// diagonal, which no other call reads). It serves the memory-bound passes
// around the LAPACK calls (input scans, zeroing and mirroring triangles),
// which on a single core would be a visible part of a threaded LAPACK
// routine's time.
//
// Two goroutines are not worth it: after a threaded OpenBLAS call its idle
// workers keep every other core busy for about 0.1 s, so on two cores the
// second goroutine shares a core with one of them and the pass ends no
// sooner than on the calling goroutine alone (PotrsVsLAPACK at N = 1000 on a
// 2-vCPU machine with 2 OpenBLAS threads: a median of 0.91 with two, 1.0
// with one). With more goroutines some speed-up remains even when OpenBLAS's
// threads take every core (Potri's mirror at N = 2000 on 16 cores: 1.6×).
func columnBlocks(n int, fn func(j0, j1 int)) {
	blocks := (n + blockWidth - 1) / blockWidth
	run := func(b int) { fn(b*blockWidth, min((b+1)*blockWidth, n)) }
	workers := min(runtime.GOMAXPROCS(0), blocks/4)
	if workers < 3 {
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
