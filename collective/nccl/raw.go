//go:build mglacuda

package nccl

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"

	"github.com/mgla/mgla/collective"
)

// rawCall is the baseline of BenchmarkCollectives: one float32 AllReduce
// (sum), AllGather or ReduceScatter of count elements per rank issued
// straight on h's NCCL communicators and streams, waited for with
// cuStreamSynchronize, as a program without mgla would (no checks, no
// polling). send and recv are device addresses, one per local rank.
func (h *Comm) rawCall(kind collective.Kind, send, recv []uintptr, count int) error {
	e := h.e
	e.mu.Lock()
	defer e.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := C.size_t(count)
	C.mgla_nccl_group_start()
	for i := range e.local {
		comm, s := C.uintptr_t(e.comms[i]), e.stream(i)
		sp, rp := C.uintptr_t(send[i]), C.uintptr_t(recv[i])
		var r C.int
		switch kind {
		case collective.AllReduce:
			r = C.mgla_nccl_all_reduce(sp, rp, n, 7, 0, comm, s)
		case collective.AllGather:
			r = C.mgla_nccl_all_gather(sp, rp, n, 7, comm, s)
		case collective.ReduceScatter:
			r = C.mgla_nccl_reduce_scatter(sp, rp, n, 7, 0, comm, s)
		default:
			r = C.MGLA_NCCL_NOSYM
		}
		if r != ncclSuccess {
			C.mgla_nccl_group_end()
			return fmt.Errorf("rawCall %v: %w", kind, ncclErr("raw", r, e.comms[i]))
		}
	}
	if err := ncclErr("ncclGroupEnd", C.mgla_nccl_group_end(), 0); err != nil {
		return err
	}
	for i := range e.streams {
		if err := e.streams[i].Synchronize(); err != nil {
			return err
		}
	}
	return nil
}
