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
// The package is pure Go and imports only the standard library, so that
// sharding, kernels/cusolver and collective/nccl can all use it.
package cudaguard

import "sync"

var mu sync.RWMutex

// MultiGPU runs launch, which launches kernels on several GPUs that wait for
// one another, while no Blocking call runs. launch must not call Blocking
// or MultiGPU.
func MultiGPU(launch func() error) error {
	mu.Lock()
	defer mu.Unlock()
	return launch()
}

// Blocking runs call, which may wait for a GPU's work while it holds the
// driver's locks, while no MultiGPU launch runs. call must not call
// MultiGPU.
func Blocking(call func() error) error {
	mu.RLock()
	defer mu.RUnlock()
	return call()
}
