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
// memory" on 3 and 4 H100s, 2026-11-28), and so do other processes on the
// same GPUs, whose unreachable buffers this process cannot reclaim. So the
// next allocation reclaims first when the buffers allocated since the last
// reclaim, less those freed since, add up to a quarter of a device's
// memory, or to a 64th of it while the device (all its processes together)
// would be left with less than an eighth free. The free memory is asked at
// most once for every 256th of a device allocated (cuMemGetInfo is a call
// into the driver; an allocation should not pay it every time).
type reclaimPace struct {
	since atomic.Int64 // bytes allocated, and not freed, since the last reclaim
	total atomic.Int64 // a device's memory, once known
	made  atomic.Int64 // bytes allocated (frees aside) since the last reclaim
	asked atomic.Int64 // made when the free memory was last asked
}

// due counts an allocation of bytes and reports whether a reclaim is due
// before it. deviceTotal, asked once, is a device's memory in bytes;
// deviceFree is the free memory of the device the allocation is for.
func (p *reclaimPace) due(bytes int64, deviceTotal, deviceFree func() int64) bool {
	total := p.total.Load()
	if total == 0 {
		total = max(deviceTotal(), 256)
		p.total.Store(total)
	}
	since, made := p.since.Add(bytes), p.made.Add(bytes)
	switch {
	case since > total/4:
		return true
	case since < total/64:
		return false
	}
	last := p.asked.Load()
	// asked > made: a reset (a reclaim beside this allocation) came
	// between the two counts and the swap; the next ask is due now.
	if last <= made && made-last < total/256 || !p.asked.CompareAndSwap(last, made) {
		return false // asked within the last 256th, or just now by another allocation
	}
	return deviceFree()-bytes < total/8
}

// count counts an allocation of bytes without asking whether a reclaim is
// due (one made right after a reclaim that its own due call set off).
func (p *reclaimPace) count(bytes int64) {
	p.since.Add(bytes)
	p.made.Add(bytes)
}

// freed takes bytes freed off the count (not below 0).
func (p *reclaimPace) freed(bytes int64) {
	for v := p.since.Load(); !p.since.CompareAndSwap(v, max(v-bytes, 0)); v = p.since.Load() {
	}
}

// reset starts the count again: a reclaim has run.
func (p *reclaimPace) reset() {
	p.since.Store(0)
	p.made.Store(0)
	p.asked.Store(0)
}
