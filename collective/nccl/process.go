//go:build mglacuda

package nccl

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
)

// NewProcess returns the communicator of rank (of size processes, one GPU
// each) on GPU gpu: rank 0 makes an NCCL unique id, boot gives it to every
// rank, and each joins with ncclCommInitRank (non-blocking, so a rank whose
// peers never come returns collective.ErrTimeout after the timeout instead
// of hanging). Buffers of its calls are *sharding.DeviceBuffer on gpu. Close
// it when done.
func NewProcess(rank, size, gpu int, boot Bootstrap, opts ...Option) (collective.Comm, error) {
	if size < 1 || rank < 0 || rank >= size || gpu < 0 || boot == nil {
		return nil, fmt.Errorf("%w: collective/nccl: NewProcess(rank %d, size %d, gpu %d, bootstrap %v): want 0 <= rank < size, gpu >= 0 and a bootstrap",
			collective.ErrBadCall, rank, size, gpu, boot)
	}
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := Load(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.timeout)
	var id []byte
	if rank == 0 {
		id = make([]byte, IDBytes)
		if err := ncclErr("ncclGetUniqueId", C.mgla_nccl_get_unique_id(unsafe.Pointer(&id[0])), 0); err != nil {
			return nil, err
		}
	}
	if id, err = boot.ShareID(rank, size, id, deadline); err != nil {
		return nil, err
	}
	if len(id) != IDBytes {
		return nil, fmt.Errorf("%w: collective/nccl: the bootstrap gave an NCCL id of %d bytes, want %d", collective.ErrEngine, len(id), IDBytes)
	}
	e := &engine{what: fmt.Sprintf("rank %d of %d on gpu:%d", rank, size, gpu), size: size,
		local: []int{rank}, devices: []int{gpu}, nonblocking: true}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := e.setup(); err != nil { // makes gpu's context current, which NCCL joins on
		e.release()
		return nil, err
	}
	var comm C.uintptr_t
	r := C.mgla_nccl_comm_init_rank(&comm, C.int(size), unsafe.Pointer(&id[0]), C.int(rank), 0)
	if comm != 0 {
		e.comms = []uintptr{uintptr(comm)}
	}
	if r != ncclSuccess && r != ncclInProgress {
		err = ncclErr("ncclCommInitRank", r, uintptr(comm))
	} else {
		err = waitReady(e.comms, deadline, o.timeout, e.what+" ncclCommInitRank")
	}
	if err != nil {
		e.abort(err)
		return nil, err
	}
	if d, ok := boot.(interface{ done(rank int) }); ok {
		d.done(rank)
	}
	return &Comm{e: e, timeout: o.timeout, checks: !o.noChecks, owned: true}, nil
}
