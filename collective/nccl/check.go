//go:build mglacuda

package nccl

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// ncclInt64 is the NCCL element type the records travel as (no arithmetic
// touches them).
const ncclInt64 = 4

// meta is a process communicator's record buffers: size+3 records in GPU
// memory and their host mirror in C memory. Slots 0 … size-1 receive the
// collective exchange's records (slot r from rank r); slot size is this
// rank's own record; size+1 and size+2 receive the peers' records of a
// point-to-point check (from the destination, from the source).
type meta struct {
	dev  cu.DevicePtr
	host unsafe.Pointer
}

// makeMeta allocates the record buffers on first use.
func (e *engine) makeMeta() error {
	if e.meta.dev != 0 {
		return nil
	}
	bytes := int64(e.size+3) * collective.RecordBytes
	if err := cu.SetCurrentContext(e.ctxs[0]); err != nil {
		return fmt.Errorf("%w: collective/nccl: %s: %v", collective.ErrEngine, e.what, err)
	}
	dev, err := cu.MemAlloc(bytes)
	if err != nil {
		return fmt.Errorf("%w: collective/nccl: %s: %d bytes for the consistency checks: %v", collective.ErrEngine, e.what, bytes, err)
	}
	e.meta = meta{dev: dev, host: C.calloc(C.size_t(bytes), 1)}
	return nil
}

// freeMeta frees the record buffers (release calls it with the context
// still retained).
func (e *engine) freeMeta() {
	if e.meta.dev == 0 {
		return
	}
	_ = cu.SetCurrentContext(e.ctxs[0])
	_ = memFree(e.meta.dev)
	C.free(e.meta.host)
	e.meta = meta{}
}

// words is the host mirror as int64 words.
func (m meta) words(size int) []int64 {
	return unsafe.Slice((*int64)(m.host), (size+3)*collective.RecordWords)
}

func (m meta) devSlot(slot int) C.uintptr_t {
	return C.uintptr_t(uintptr(m.dev) + uintptr(slot*collective.RecordBytes))
}

func (m meta) hostSlot(slot int) unsafe.Pointer {
	return unsafe.Add(m.host, slot*collective.RecordBytes)
}

// checkOf is the Call that wait reports for a consistency check of rec.
func checkOf(rec *collective.Record) *collective.Call {
	return &collective.Call{Kind: collective.Kind(rec.Kind), Name: "consistency check of " + rec.Label()}
}

// exchange all-gathers rec, this rank's record, over NCCL on the
// communicator's own stream (one ncclAllGather of RecordBytes per rank
// between the record buffers, with a copy in and a copy out) and compares
// the records on the host: nil when every rank made the same call,
// collective.ErrMismatch with the same text on every rank when they did not,
// collective.ErrTimeout (the communicator aborted) when a rank did not come
// by the deadline. It runs on a locked OS thread of a process engine.
func (e *engine) exchange(rec *collective.Record, deadline time.Time, timeout time.Duration) error {
	if err := e.makeMeta(); err != nil {
		return err
	}
	cc := checkOf(rec)
	m, s, comm := e.meta, e.streams[0], C.uintptr_t(e.comms[0])
	rec.Encode(m.words(e.size)[e.size*collective.RecordWords:])
	if err := cu.SetCurrentContext(e.ctxs[0]); err != nil {
		return fmt.Errorf("%w: collective/nccl: %s: %v", collective.ErrEngine, e.what, err)
	}
	if err := cu.MemcpyHtoDAsync(m.dev+cu.DevicePtr(e.size*collective.RecordBytes), m.hostSlot(e.size), collective.RecordBytes, s); err != nil {
		return fmt.Errorf("%w: collective/nccl: %v on %s: %v", collective.ErrEngine, cc, e.what, err)
	}
	r := C.mgla_nccl_all_gather(m.devSlot(e.size), m.devSlot(0), collective.RecordWords, ncclInt64, comm, e.stream(0))
	if r != ncclSuccess && r != ncclInProgress {
		err := ncclErr("ncclAllGather", r, e.comms[0])
		e.abort(abortedBy(e, cc, err))
		return err
	}
	return e.finishCheck(cc, deadline, timeout, 0, e.size)
}

// finishCheck waits for the records of slots first … first+n-1 to arrive
// in GPU memory by the deadline (under wait's watchdog: a rank that does not
// come gives ErrTimeout) and copies them to the host. The copy out is
// synchronous and after the wait: an asynchronous copy to pageable memory
// may block in the driver until the stream is done, before any watchdog
// runs.
func (e *engine) finishCheck(cc *collective.Call, deadline time.Time, timeout time.Duration, first, n int) error {
	if err := e.wait(cc, deadline, timeout); err != nil {
		return err
	}
	m := e.meta
	err := cu.SetCurrentContext(e.ctxs[0])
	if err == nil {
		err = memcpyDtoH(m.hostSlot(first), m.dev+cu.DevicePtr(first*collective.RecordBytes), int64(n*collective.RecordBytes))
	}
	if err != nil {
		err = fmt.Errorf("%w: collective/nccl: %v on %s: %v", collective.ErrEngine, cc, e.what, err)
		e.abort(abortedBy(e, cc, err))
		return err
	}
	return nil
}

// record decodes slot of the host mirror; garbage is an engine failure.
func (e *engine) record(cc *collective.Call, slot int) (collective.Record, error) {
	r, ok := collective.DecodeRecord(e.meta.words(e.size)[slot*collective.RecordWords:])
	if !ok {
		return r, fmt.Errorf("%w: collective/nccl: %v on %s: garbled record in slot %d", collective.ErrEngine, cc, e.what, slot)
	}
	return r, nil
}

// checkCollective runs the consistency check of a collective or Split
// whose record is rec.
func (e *engine) checkCollective(rec *collective.Record, deadline time.Time, timeout time.Duration) error {
	if err := e.exchange(rec, deadline, timeout); err != nil {
		return err
	}
	cc := checkOf(rec)
	recs := make([]collective.Record, e.size)
	for r := range recs {
		var err error
		if recs[r], err = e.record(cc, r); err != nil {
			return err
		}
	}
	return collective.CompareRecords(recs)
}

// checkPair is the consistency check of Send, Recv and SendRecv: the two
// ends of each transfer swap their records (ncclSend/ncclRecv in one group,
// matched in issue order as NCCL has no tags) and compare dtype and count.
// sendOK and recvOK say which halves of c agree and may move data; mismatch
// is the collective.ErrMismatch both ends of a disagreeing transfer return
// (after the agreeing halves moved their data, so no peer is left waiting).
func (e *engine) checkPair(c *collective.Call, deadline time.Time, timeout time.Duration) (sendOK, recvOK bool, mismatch error, err error) {
	if err := e.makeMeta(); err != nil {
		return false, false, nil, err
	}
	const mine = 0 // slots past the collective exchange's size
	fromDest, fromSrc := 1, 2
	dest, src := -1, -1
	if c.Kind != collective.Recv {
		dest = c.Dest[0]
	}
	if c.Kind != collective.Send {
		src = c.Src[0]
	}
	rec := collective.CallRecord(c, 0)
	cc := &collective.Call{Kind: c.Kind, Name: "consistency check of " + c.String()}
	m, comm, s := e.meta, C.uintptr_t(e.comms[0]), e.stream(0)
	rec.Encode(m.words(e.size)[(e.size+mine)*collective.RecordWords:])
	if err := cu.SetCurrentContext(e.ctxs[0]); err != nil {
		return false, false, nil, fmt.Errorf("%w: collective/nccl: %s: %v", collective.ErrEngine, e.what, err)
	}
	if err := cu.MemcpyHtoDAsync(m.dev+cu.DevicePtr((e.size+mine)*collective.RecordBytes), m.hostSlot(e.size+mine), collective.RecordBytes, e.streams[0]); err != nil {
		return false, false, nil, fmt.Errorf("%w: collective/nccl: %v on %s: %v", collective.ErrEngine, cc, e.what, err)
	}
	var first error
	note := func(fn string, r C.int) {
		if r != ncclSuccess && r != ncclInProgress && first == nil {
			first = ncclErr(fn, r, e.comms[0])
		}
	}
	if r := C.mgla_nccl_group_start(); r != ncclSuccess {
		return false, false, nil, ncclErr("ncclGroupStart", r, 0)
	}
	if dest >= 0 {
		note("ncclSend", C.mgla_nccl_send(m.devSlot(e.size+mine), collective.RecordWords, ncclInt64, C.int(dest), comm, s))
		note("ncclRecv", C.mgla_nccl_recv(m.devSlot(e.size+fromDest), collective.RecordWords, ncclInt64, C.int(dest), comm, s))
	}
	if src >= 0 {
		note("ncclRecv", C.mgla_nccl_recv(m.devSlot(e.size+fromSrc), collective.RecordWords, ncclInt64, C.int(src), comm, s))
		note("ncclSend", C.mgla_nccl_send(m.devSlot(e.size+mine), collective.RecordWords, ncclInt64, C.int(src), comm, s))
	}
	if r := C.mgla_nccl_group_end(); r != ncclSuccess && r != ncclInProgress && first == nil {
		first = ncclErr("ncclGroupEnd", r, e.comms[0])
	}
	if first != nil {
		e.abort(abortedBy(e, cc, first))
		return false, false, nil, first
	}
	if err := e.finishCheck(cc, deadline, timeout, e.size+fromDest, 2); err != nil {
		return false, false, nil, err
	}
	var msgs []string
	sendOK, recvOK = dest >= 0, src >= 0
	if dest >= 0 {
		theirs, err := e.record(cc, e.size+fromDest)
		if err != nil {
			return false, false, nil, err
		}
		if msg := collective.PairMismatch(&rec, &theirs, e.local[0], dest, -1); msg != "" {
			msgs, sendOK = append(msgs, msg), false
		}
	}
	if src >= 0 {
		theirs, err := e.record(cc, e.size+fromSrc)
		if err != nil {
			return false, false, nil, err
		}
		if msg := collective.PairMismatch(&theirs, &rec, src, e.local[0], -1); msg != "" {
			msgs, recvOK = append(msgs, msg), false
		}
	}
	if msgs != nil {
		mismatch = fmt.Errorf("%w: %s", collective.ErrMismatch, strings.Join(msgs, "; "))
	}
	return sendOK, recvOK, mismatch, nil
}

// stage is a process communicator's GPU memory for calls on host buffers
// (the graph ops' values): the send data is copied in, the call runs
// between the staging buffers, and the received elements are copied out.
// The buffers grow to the largest call and are kept.
type stage struct {
	send, recv       cu.DevicePtr
	sendCap, recvCap int64
}

// hostPtr is the first element of a host buffer holding dt, or an error.
func hostPtr(c *collective.Call, b sharding.Buffer) (unsafe.Pointer, error) {
	hb := b.(*sharding.HostBuffer)
	v := reflect.ValueOf(hb.Data())
	if dt := (tensor.Dtype{Type: v.Type().Elem()}); dt != c.Dtype {
		return nil, fmt.Errorf("%w: collective/nccl: %v: a host buffer of %v, the call is %v", collective.ErrBadCall, c, dt, c.Dtype)
	}
	return v.UnsafePointer(), nil
}

// grow makes *p hold at least bytes on the engine's GPU.
func (e *engine) grow(p *cu.DevicePtr, capacity *int64, bytes int64) error {
	if *capacity >= bytes {
		return nil
	}
	if *p != 0 {
		_ = memFree(*p)
		*p, *capacity = 0, 0
	}
	d, err := cu.MemAlloc(bytes)
	if err != nil {
		return fmt.Errorf("%w: collective/nccl: %s: %d bytes of GPU memory to stage host buffers: %v", collective.ErrEngine, e.what, bytes, err)
	}
	*p, *capacity = d, bytes
	return nil
}

// stageIn copies the send elements of a call on host buffers to the
// staging buffers and returns the device addresses the call runs on.
func (e *engine) stageIn(c *collective.Call) (send, recv []uintptr, err error) {
	if err := cu.SetCurrentContext(e.ctxs[0]); err != nil {
		return nil, nil, fmt.Errorf("%w: collective/nccl: %s: %v", collective.ErrEngine, e.what, err)
	}
	es := int64(c.Dtype.Size())
	sendBytes, recvBytes := int64(c.SendLen(e.size))*es, int64(c.RecvLen(e.size))*es
	if sendBytes > 0 {
		p, err := hostPtr(c, c.Send[0])
		if err != nil {
			return nil, nil, err
		}
		if err := e.grow(&e.stage.send, &e.stage.sendCap, sendBytes); err != nil {
			return nil, nil, err
		}
		// On the call's stream, so that NCCL reads it after the copy; the
		// stream is idle here, so the copy from pageable memory returns
		// once it has read p.
		if err := cu.MemcpyHtoDAsync(e.stage.send, p, sendBytes, e.streams[0]); err != nil {
			return nil, nil, fmt.Errorf("%w: collective/nccl: %v on %s: staging the send buffer: %v", collective.ErrEngine, c, e.what, err)
		}
		send = []uintptr{uintptr(e.stage.send)}
	}
	if recvBytes > 0 {
		if _, err := hostPtr(c, c.Recv[0]); err != nil {
			return nil, nil, err
		}
		if err := e.grow(&e.stage.recv, &e.stage.recvCap, recvBytes); err != nil {
			return nil, nil, err
		}
		recv = []uintptr{uintptr(e.stage.recv)}
	}
	return send, recv, nil
}

// stageOut copies the received elements back to the host receive buffer.
func (e *engine) stageOut(c *collective.Call) error {
	bytes := int64(c.RecvLen(e.size)) * int64(c.Dtype.Size())
	if bytes == 0 {
		return nil
	}
	p, err := hostPtr(c, c.Recv[0])
	if err != nil {
		return err
	}
	if err := cu.SetCurrentContext(e.ctxs[0]); err != nil {
		return fmt.Errorf("%w: collective/nccl: %s: %v", collective.ErrEngine, e.what, err)
	}
	if err := memcpyDtoH(p, e.stage.recv, bytes); err != nil {
		return fmt.Errorf("%w: collective/nccl: %v on %s: copying the result to the host: %v", collective.ErrEngine, c, e.what, err)
	}
	return nil
}

// freeStage frees the staging buffers (release calls it).
func (e *engine) freeStage() {
	if e.stage.send == 0 && e.stage.recv == 0 {
		return
	}
	_ = cu.SetCurrentContext(e.ctxs[0])
	for _, p := range []cu.DevicePtr{e.stage.send, e.stage.recv} {
		if p != 0 {
			_ = memFree(p)
		}
	}
	e.stage = stage{}
}
