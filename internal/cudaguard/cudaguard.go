// Package cudaguard keeps apart two kinds of CUDA calls of one process that
// can deadlock each other inside the driver:
//
//   - a launch of kernels on several GPUs that wait for one another (the
//     ncclGroupStart … ncclGroupEnd of a mesh communicator, which launches
//     one kernel per GPU from one thread; a cuSolverMg routine), and
//   - a call that may wait for a GPU's work while it holds the driver's locks
//     (cudaFree, cudaFreeHost, a synchronous copy between a GPU and pageable
//     host memory).
//
// When the second runs on another thread between the first kernel of such a
// launch and the last, it waits for a kernel that waits for a kernel the
// launching thread cannot launch until the second has let go of the
// driver's lock: NCCL's documentation warns of it ("any CUDA operation can
// cause a device synchronization, meaning it will wait for all NCCL kernels
// to complete"). mgla frees device memory from the garbage collector's
// cleanups and from reclaims on any goroutine, so every such call goes
// through Blocking and every such launch through MultiGPU: launches run one
// at a time with no blocking call beside them, blocking calls run beside
// each other.
//
// An abort of kernels that may never end otherwise (ncclCommAbort, which
// frees the communicator's memory too) goes through Aborting: it waits for a
// launch under way, but not for launches queued behind blocking calls,
// which may be waiting for the very kernels it ends; and it waits for the
// launch under way at most AbortWait. An NCCL group launches in
// microseconds, but a cuSolverMg routine returns only when its kernels are
// done, and one that synchronizes a device with a hung NCCL kernel on it
// would never end: the abort then runs beside it.
//
// The package is pure Go and imports only the standard library, so that
// sharding, kernels/cusolver and collective/nccl can all use it.
package cudaguard

import (
	"sync"
	"time"
)

// guard is a readers-writer lock whose writers (launches) go before new
// readers (blocking calls) once they wait, and whose aborts wait only for
// a writer under way.
type guard struct {
	mu      sync.Mutex
	changed *sync.Cond // readers, writing or waiting changed
	readers int        // blocking calls and aborts under way
	writing bool       // a launch under way
	waiting int        // launches waiting to start
}

var g = func() *guard {
	x := &guard{}
	x.changed = sync.NewCond(&x.mu)
	return x
}()

// MultiGPU runs launch, which launches kernels on several GPUs that wait for
// one another, while no Blocking call, abort or other launch runs. launch
// must not call Blocking, Aborting or MultiGPU.
func MultiGPU(launch func() error) error {
	g.mu.Lock()
	g.waiting++
	for g.writing || g.readers > 0 {
		g.changed.Wait()
	}
	g.waiting--
	g.writing = true
	g.mu.Unlock()
	defer g.end(func() { g.writing = false })
	return launch()
}

// Blocking runs call, which may wait for a GPU's work while it holds the
// driver's locks, while no MultiGPU launch runs or waits to start (so that
// a stream of blocking calls cannot hold launches off for ever). Blocking
// calls run beside each other. call must not call MultiGPU.
func Blocking(call func() error) error {
	g.mu.Lock()
	for g.writing || g.waiting > 0 {
		g.changed.Wait()
	}
	return g.read(call)
}

// AbortWait bounds how long Aborting waits for a launch under way.
var AbortWait = 10 * time.Second

// Aborting runs abort, which ends kernels that may never end otherwise,
// once no MultiGPU launch runs or one has run for AbortWait since Aborting
// began to wait for it; it does not wait for launches waiting to start.
// abort must not call MultiGPU.
func Aborting(abort func() error) error {
	deadline := time.Now().Add(AbortWait)
	wake := time.AfterFunc(AbortWait, func() {
		g.mu.Lock() // so that the broadcast cannot fall between a check and Wait
		g.mu.Unlock()
		g.changed.Broadcast()
	})
	defer wake.Stop()
	g.mu.Lock()
	for g.writing && time.Now().Before(deadline) {
		g.changed.Wait()
	}
	return g.read(abort)
}

// read runs f as a reader; g.mu is held on entry.
func (x *guard) read(f func() error) error {
	x.readers++
	x.mu.Unlock()
	defer x.end(func() { x.readers-- })
	return f()
}

// end applies the change under g.mu and wakes the waiters.
func (x *guard) end(change func()) {
	x.mu.Lock()
	change()
	x.mu.Unlock()
	x.changed.Broadcast()
}
