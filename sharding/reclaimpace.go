package sharding

import "sync/atomic"

// reclaimPace decides when the GPU build reclaims the device memory of
// unreachable buffers before an allocation has failed. That memory is freed
// when a garbage collection has run the buffers' cleanups, and Go's
// collector runs after the host heap grows, not the devices' memory: a
// program that allocates little on the host could fill a device with
// unreachable buffers. mgla's own allocations then reclaim them, but
// cuSolverMg, cuSOLVER and NCCL allocate on their own and fail
// (cusolverMgDeviceSelect's CUSOLVER_STATUS_INTERNAL_ERROR, NCCL's "out of
// memory" on 3 and 4 H100s, 2026-11-28). So every time the buffers
// allocated since the last reclaim, less those freed explicitly, add up to a
// quarter of a device's memory, the next allocation reclaims first.
type reclaimPace struct {
	since atomic.Int64 // bytes allocated, and not freed explicitly, since the last reclaim
	every atomic.Int64 // a quarter of a device's memory, once known
}

// due counts an allocation of bytes and reports whether a reclaim is due
// before it; deviceTotal, asked once, is a device's memory in bytes.
func (p *reclaimPace) due(bytes int64, deviceTotal func() int64) bool {
	every := p.every.Load()
	if every == 0 {
		every = max(deviceTotal()/4, 1)
		p.every.Store(every)
	}
	return p.since.Add(bytes) > every
}

// freed takes bytes freed explicitly off the count (not below 0).
func (p *reclaimPace) freed(bytes int64) {
	for v := p.since.Load(); !p.since.CompareAndSwap(v, max(v-bytes, 0)); v = p.since.Load() {
	}
}

// reset starts the count again: a reclaim has run.
func (p *reclaimPace) reset() { p.since.Store(0) }
