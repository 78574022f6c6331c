//go:build mglacuda

package nccl

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/internal/cudaguard"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// engine is a set of NCCL communicators driven by this process: one per
// local rank, each with its GPU's primary context and a stream. Calls are
// serialized by mu, on one locked OS thread each (NCCL's group state is per
// thread).
type engine struct {
	mu      sync.Mutex
	what    string // for messages: "mesh[gpu:0,gpu:1]", "rank 2 of 4 on gpu:0"
	isMesh  bool
	mesh    *sharding.Mesh // the ranks' devices, of a mesh communicator
	size    int
	local   []int // the local ranks, in buffer order
	devices []int // GPU ordinal of each local rank
	comms   []uintptr
	ctxs    []cu.CUContext
	streams []cu.Stream
	scratch []cu.DevicePtr // one float32 per local rank for Barrier, made on first use
	dead    error          // why calls are refused (closed, aborted); nil while usable
	// nonblocking: the communicators were made non-blocking (calls may
	// return ncclInProgress; wait polls them before synchronizing).
	nonblocking bool
	aborted     bool // ncclCommAbort was called on comms

	// Process communicators only:
	seq   int64 // collectives (and Splits) issued so far, for the checks
	meta  meta  // the consistency checks' record buffers, made on first use
	stage stage // GPU memory for calls on host buffers, made on first use
}

// Comm is an NCCL communicator; it implements collective.Comm. Handles of
// meshes over the same GPUs share their cached engine; a process
// communicator and the communicators made by Split own theirs.
type Comm struct {
	e       *engine
	mesh    *sharding.Mesh // the handle's own mesh (NewMesh); nil: e.mesh
	timeout time.Duration
	checks  bool // process communicators: compare the calls across ranks first
	owned   bool // Close destroys e
	closed  atomic.Bool
	hooks   collective.CloseHooks
}

var _ collective.Comm = (*Comm)(nil)

// Size is the number of ranks.
func (h *Comm) Size() int { return h.e.size }

// Mesh is the GPU mesh whose devices are the ranks of a mesh communicator
// (nil for a process communicator), so that it is a collective.MeshComm.
func (h *Comm) Mesh() *sharding.Mesh {
	if h.mesh != nil {
		return h.mesh
	}
	return h.e.mesh
}

// LocalRanks are the ranks this process drives: every rank of a mesh, the
// process's own rank otherwise.
func (h *Comm) LocalRanks() []int { return slices.Clone(h.e.local) }

// Close marks the handle closed and, for a communicator that owns its NCCL
// communicators (NewProcess, Split), destroys them. A mesh's communicators
// stay cached for other handles until ReleaseMesh.
func (h *Comm) Close() error {
	h.hooks.Run()
	if h.closed.Swap(true) || !h.owned {
		return nil
	}
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.destroy(fmt.Errorf("%w: collective/nccl: %s was closed", collective.ErrClosed, h.e.what))
}

// OnClose arranges for f to run when h is closed (collective.CloseNotifier),
// at once if it already is.
func (h *Comm) OnClose(f func()) { h.hooks.Add(f) }

// setup retains the primary context of every device and makes its stream.
// It runs on a locked OS thread.
func (e *engine) setup() error {
	for _, d := range e.devices {
		ctx, err := cu.Device(d).RetainPrimaryCtx()
		if err != nil {
			return fmt.Errorf("%w: collective/nccl: primary context of gpu:%d: %v", collective.ErrEngine, d, err)
		}
		e.ctxs = append(e.ctxs, ctx)
		if err := cu.SetCurrentContext(ctx); err != nil {
			return fmt.Errorf("%w: collective/nccl: gpu:%d: %v", collective.ErrEngine, d, err)
		}
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return fmt.Errorf("%w: collective/nccl: stream on gpu:%d: %v", collective.ErrEngine, d, err)
		}
		e.streams = append(e.streams, s)
	}
	return nil
}

// stream is the raw cudaStream_t of local rank i.
func (e *engine) stream(i int) C.uintptr_t {
	return C.uintptr_t(uintptr(unsafe.Pointer(e.streams[i].C())))
}

// release frees the streams, scratch memory and contexts (not the NCCL
// communicators).
func (e *engine) release() {
	if len(e.ctxs) > 0 {
		e.freeMeta()
		e.freeStage()
	}
	for i := range e.streams {
		_ = e.streams[i].Destroy()
	}
	for i, p := range e.scratch {
		if p != 0 {
			_ = cu.SetCurrentContext(e.ctxs[i])
			_ = memFree(p)
		}
	}
	for i := range e.ctxs {
		_ = cu.Device(e.devices[i]).ReleasePrimaryCtx()
	}
	e.streams, e.scratch, e.ctxs = nil, nil, nil
}

// destroy frees everything after the calls finished; why becomes the error
// of later calls. It is a no-op on a dead engine.
func (e *engine) destroy(why error) error {
	if e.dead != nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var first error
	for _, c := range e.comms {
		var r C.int
		_ = cudaguard.Blocking(func() error { r = C.mgla_nccl_comm_destroy(C.uintptr_t(c)); return nil }) // it frees device memory
		if r != ncclInProgress && first == nil {
			first = ncclErr("ncclCommDestroy", r, 0)
		}
	}
	e.release()
	e.dead = why
	return first
}

// abort tears the engine down without waiting (ncclCommAbort) after a
// timeout or an NCCL failure; why becomes the error of later calls.
func (e *engine) abort(why error) {
	if e.dead != nil {
		return
	}
	for _, c := range e.comms {
		if c != 0 && !e.aborted {
			commAbort(c)
		}
	}
	e.aborted = true
	e.release()
	e.dead = why
}

// ncclType is the NCCL element type (ncclDataType_t) of dt and the number
// of them in one element (complex values are pairs of reals); ok is false
// for dtypes NCCL cannot move (its integers are 8, 32 and 64 bits wide; Go's
// int and uint move as the integers of their width).
func ncclType(dt tensor.Dtype) (typ C.int, parts int, ok bool) {
	if dt.Type == nil {
		return 0, 0, false // no data (Barrier)
	}
	switch dt.Kind() {
	case reflect.Float32:
		return 7, 1, true // ncclFloat32
	case reflect.Float64:
		return 8, 1, true // ncclFloat64
	case reflect.Complex64:
		return 7, 2, true
	case reflect.Complex128:
		return 8, 2, true
	case reflect.Int8, reflect.Int32, reflect.Int64, reflect.Int:
		typ, ok = map[uintptr]C.int{1: 0, 4: 2, 8: 4}[dt.Size()] // ncclInt8, ncclInt32, ncclInt64
		return typ, 1, ok
	case reflect.Uint8, reflect.Uint32, reflect.Uint64, reflect.Uint:
		typ, ok = map[uintptr]C.int{1: 1, 4: 3, 8: 5}[dt.Size()] // ncclUint8, ncclUint32, ncclUint64
		return typ, 1, ok
	}
	return 0, 0, false
}

// ncclOp is the ncclRedOp_t of op.
func ncclOp(op collective.ReduceOp) C.int {
	return [...]C.int{collective.Sum: 0, collective.Prod: 1, collective.Max: 2, collective.Min: 3}[op]
}

func isComplex(dt tensor.Dtype) bool { return dt == tensor.Complex64 || dt == tensor.Complex128 }

// reduces reports whether kind applies c.Op.
func reduces(k collective.Kind) bool {
	return k == collective.AllReduce || k == collective.ReduceScatter || k == collective.Reduce || k == collective.Scan
}

// checkCall adds the engine's own rules to Call.Check: buffers in GPU memory
// on the rank's device, no Send/Recv on a mesh, no complex product.
func (e *engine) checkCall(c *collective.Call) error {
	bad := func(sentinel error, format string, args ...any) error {
		return fmt.Errorf("%w: collective/nccl: %v on %s: %s", sentinel, c, e.what, fmt.Sprintf(format, args...))
	}
	if e.isMesh && (c.Kind == collective.Send || c.Kind == collective.Recv) {
		return bad(collective.ErrBadCall, "a mesh communicator drives every rank in one call, so a lone %v would never be matched; use SendRecv", c.Kind)
	}
	if c.Kind == collective.Barrier {
		return nil
	}
	if _, _, ok := ncclType(c.Dtype); !ok {
		return bad(collective.ErrBadCall, "NCCL has no %v type (its integers are 8, 32 and 64 bits wide); use the CPU mesh or MPI engine", c.Dtype)
	}
	if reduces(c.Kind) && c.Op == collective.Prod && isComplex(c.Dtype) {
		return bad(collective.ErrUnavailable, "NCCL has no complex product (it reduces complex values as pairs of reals, right for sum only); use the CPU mesh or MPI engine")
	}
	host, err := e.onHost(c)
	if err != nil || host {
		return err
	}
	buffers := func(what string, bs []sharding.Buffer, n int) error {
		if n == 0 {
			return nil
		}
		for i, b := range bs {
			db, ok := b.(*sharding.DeviceBuffer)
			if !ok {
				want := "a *sharding.DeviceBuffer"
				if !e.isMesh {
					want += " (or host buffers for both sides)"
				}
				return bad(collective.ErrBadCall, "%s buffer of rank %d is a %T, want %s", what, e.local[i], b, want)
			}
			if want := (sharding.Device{Kind: sharding.GPU, ID: e.devices[i]}); db.Device() != want {
				return bad(collective.ErrBadCall, "%s buffer of rank %d is on %v, want %v", what, e.local[i], db.Device(), want)
			}
			if db.Freed() {
				return fmt.Errorf("%w: %w", bad(collective.ErrBadCall, "%s buffer of rank %d was freed", what, e.local[i]), sharding.ErrFreed)
			}
			if db.Dtype() != c.Dtype {
				return bad(collective.ErrBadCall, "%s buffer of rank %d holds %v, the call moves %v", what, e.local[i], db.Dtype(), c.Dtype)
			}
		}
		return nil
	}
	if err := buffers("send", c.Send, c.SendLen(e.size)); err != nil {
		return err
	}
	return buffers("receive", c.Recv, c.RecvLen(e.size))
}

// onHost reports whether c is a call of a process communicator on host
// buffers (every buffer a *sharding.HostBuffer), which the engine stages
// through GPU memory; a call that mixes host and device buffers is an
// error.
func (e *engine) onHost(c *collective.Call) (bool, error) {
	var bs []sharding.Buffer
	if c.SendLen(e.size) > 0 {
		bs = append(bs, c.Send...)
	}
	if c.RecvLen(e.size) > 0 {
		bs = append(bs, c.Recv...)
	}
	hosts := 0
	for _, b := range bs {
		if _, ok := b.(*sharding.HostBuffer); ok {
			if _, err := hostPtr(c, b); err != nil {
				return false, err
			}
			hosts++
		}
	}
	switch {
	case hosts == 0:
		return false, nil
	case e.isMesh:
		return false, fmt.Errorf("%w: collective/nccl: %v on %s: host buffers on a mesh communicator (its values are sharded on the GPUs)", collective.ErrBadCall, c, e.what)
	case hosts < len(bs):
		return false, fmt.Errorf("%w: collective/nccl: %v on %s: host and device buffers mixed in one call", collective.ErrBadCall, c, e.what)
	}
	return true, nil
}

// Do runs one collective (see the package documentation for the NCCL calls)
// and waits for it until the communicator's timeout. On a process
// communicator with the checks on it first compares the call across ranks
// (package documentation, "Consistency checks"), and it stages calls on
// host buffers through GPU memory.
func (h *Comm) Do(c *collective.Call) error {
	e := h.e
	if h.closed.Load() {
		return fmt.Errorf("%w: collective/nccl: %v on closed %s", collective.ErrClosed, c, e.what)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead != nil {
		return fmt.Errorf("%v: %w", c, e.dead)
	}
	if err := c.Check(e.size, e.local); err != nil {
		return err
	}
	if err := e.checkCall(c); err != nil {
		return err
	}
	host, _ := e.onHost(c) // checkCall reported its error
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	deadline := time.Now().Add(h.timeout)
	var mismatch error
	if !e.isMesh {
		pair := c.Kind == collective.Send || c.Kind == collective.Recv || c.Kind == collective.SendRecv
		switch {
		case pair && h.checks:
			sendOK, recvOK, m, err := e.checkPair(c, deadline, h.timeout)
			if err != nil {
				return err
			}
			if m != nil {
				if c = agreeing(c, sendOK, recvOK); c == nil {
					return m
				}
				mismatch = m
			}
		case !pair:
			rec := collective.CallRecord(c, e.seq)
			e.seq++
			if h.checks {
				if err := e.checkCollective(&rec, deadline, h.timeout); err != nil {
					return err
				}
				if c.Kind == collective.Barrier {
					return nil // the exchange was one
				}
			}
		}
	}
	if c.Kind != collective.Barrier && c.Count == 0 {
		return mismatch
	}
	var send, recv []uintptr
	if host {
		var err error
		if send, recv, err = e.stageIn(c); err != nil {
			return err
		}
	} else {
		send, recv = addresses(c.Send, c.SendLen(e.size)), addresses(c.Recv, c.RecvLen(e.size))
	}
	run, freeKeys := c, func() {}
	if goMinMax(c) {
		var err error
		if run, send, freeKeys, err = e.toKeys(c, send); err != nil {
			return err
		}
	}
	free, err := e.enqueue(run, send, recv)
	werr := e.wait(c, deadline, h.timeout)
	if err != nil && werr == nil {
		// NCCL refused the call: abort if that left a communicator in error.
		if aerr := e.asyncError(c); aerr != nil {
			e.abort(abortedBy(e, c, aerr))
		}
	}
	free()
	freeKeys()
	if err == nil {
		err = werr
	}
	if err == nil && run != c {
		err = e.fromKeys(c, recv)
	}
	if err == nil && host {
		err = e.stageOut(c)
	}
	if err == nil {
		err = mismatch
	}
	return err
}

// goMinMax reports whether c is a Min or Max of floats, which the engine
// runs as NCCL's unsigned Min or Max of order-preserving keys
// (sharding.MinMaxKeys) so that, as with Go's min and max and the other
// engines, a NaN on any rank gives NaN and -0 is below +0: NCCL's own float
// min and max drop NaNs.
func goMinMax(c *collective.Call) bool {
	return reduces(c.Kind) && (c.Op == collective.Min || c.Op == collective.Max) &&
		(c.Dtype == tensor.Float32 || c.Dtype == tensor.Float64)
}

// toKeys allocates the keys of every local rank's send buffer on its device
// and enqueues their computation on its stream. It returns the call to run
// on them (an unsigned dtype of the floats' width), their addresses and
// what frees them once the streams are done.
func (e *engine) toKeys(c *collective.Call, send []uintptr) (*collective.Call, []uintptr, func(), error) {
	run := *c
	run.Dtype = map[uintptr]tensor.Dtype{4: tensor.Uint32, 8: tensor.Uint64}[c.Dtype.Size()]
	n := c.SendLen(e.size)
	keys := make([]uintptr, len(e.local))
	ctxs := e.ctxs // wait may release the engine's (an aborted call), as in enqueue
	free := func() {
		for i, p := range keys {
			if p != 0 {
				_ = cu.SetCurrentContext(ctxs[i])
				_ = memFree(cu.DevicePtr(p))
			}
		}
	}
	for i := range e.local {
		err := cu.SetCurrentContext(e.ctxs[i])
		var p cu.DevicePtr
		if err == nil {
			p, err = cu.MemAlloc(int64(n) * int64(c.Dtype.Size()))
			keys[i] = uintptr(p)
		}
		if err == nil {
			err = sharding.MinMaxKeys(e.devices[i], e.streams[i], p, cu.DevicePtr(send[i]), n, c.Dtype, c.Op == collective.Max)
		}
		if err != nil {
			free()
			return nil, nil, nil, fmt.Errorf("%w: collective/nccl: %v on %s: the keys of Go's %v on gpu:%d: %v",
				collective.ErrEngine, c, e.what, c.Op, e.devices[i], err)
		}
	}
	return &run, keys, free, nil
}

// fromKeys maps the keys in every local rank's receive buffer back to
// floats, where c leaves a result (not in the zeros of Reduce off the
// root), and waits for it.
func (e *engine) fromKeys(c *collective.Call, recv []uintptr) error {
	fail := func(i int, err error) error {
		return fmt.Errorf("%w: collective/nccl: %v on %s: the result of Go's %v on gpu:%d: %v",
			collective.ErrEngine, c, e.what, c.Op, e.devices[i], err)
	}
	for i, rank := range e.local {
		if c.Kind == collective.Reduce && rank != c.Root {
			continue
		}
		err := cu.SetCurrentContext(e.ctxs[i])
		if err == nil {
			err = sharding.MinMaxValues(e.devices[i], e.streams[i], cu.DevicePtr(recv[i]), c.RecvLen(e.size), c.Dtype)
		}
		if err == nil {
			err = e.streams[i].Synchronize()
		}
		if err != nil {
			return fail(i, err)
		}
	}
	return nil
}

// agreeing is the part of a point-to-point call whose ends agree (the
// send, the receive, or nil for neither), after checkPair.
func agreeing(c *collective.Call, sendOK, recvOK bool) *collective.Call {
	if !sendOK && !recvOK {
		return nil
	}
	part := *c
	switch {
	case c.Kind == collective.SendRecv && sendOK && !recvOK:
		part.Kind, part.Src, part.Recv = collective.Send, nil, nil
	case c.Kind == collective.SendRecv && recvOK && !sendOK:
		part.Kind, part.Dest, part.Send = collective.Recv, nil, nil
	}
	return &part
}

// addresses are the device addresses of device buffers (nil when the call
// has no such side).
func addresses(bs []sharding.Buffer, n int) []uintptr {
	if n == 0 {
		return nil
	}
	out := make([]uintptr, len(bs))
	for i, b := range bs {
		out[i] = b.(*sharding.DeviceBuffer).Ptr()
	}
	return out
}

// enqueue issues c on the local ranks' streams, between the device
// addresses send and recv (one per local rank, for the sides c has); free
// releases the temporaries once the streams are done.
func (e *engine) enqueue(c *collective.Call, send, recv []uintptr) (free func(), err error) {
	free = func() {}
	// Zeros into the receive buffers that NCCL leaves alone.
	if c.Kind == collective.Reduce || c.Kind == collective.Gather {
		for i, r := range e.local {
			if r == c.Root {
				continue
			}
			if err := e.zero(i, recv[i], c.RecvLen(e.size)*int(c.Dtype.Size())); err != nil {
				return free, err
			}
		}
	}
	var ident []cu.DevicePtr
	if c.Kind == collective.Scan {
		if ident, err = e.identities(c); err != nil {
			return free, err
		}
		ctxs := e.ctxs // wait may release the engine's
		free = func() {
			for i, p := range ident {
				if p != 0 {
					_ = cu.SetCurrentContext(ctxs[i])
					_ = memFree(p)
				}
			}
		}
	}
	if c.Kind == collective.Barrier {
		if err := e.makeScratch(); err != nil {
			return free, err
		}
	}

	var first error
	note := func(fn string, r C.int, i int) {
		if r != ncclSuccess && r != ncclInProgress && first == nil {
			first = ncclErr(fn, r, e.comms[i])
		}
	}
	launch := func() error {
		if r := C.mgla_nccl_group_start(); r != ncclSuccess {
			return ncclErr("ncclGroupStart", r, 0)
		}
		e.enqueueRanks(c, send, recv, ident, note)
		if r := C.mgla_nccl_group_end(); r != ncclSuccess && r != ncclInProgress && first == nil {
			first = ncclErr("ncclGroupEnd", r, e.comms[0])
		}
		return nil
	}
	if len(e.local) > 1 {
		// One kernel per GPU, each waiting for the others, launched by
		// this thread: no cudaFree or synchronous copy may run beside it.
		err = cudaguard.MultiGPU(launch)
	} else {
		err = launch()
	}
	if err != nil {
		return free, err
	}
	return free, first
}

// enqueueRanks makes the NCCL calls of c for every local rank, inside the
// group that enqueue opened; note records the first failure.
func (e *engine) enqueueRanks(c *collective.Call, send, recv []uintptr, ident []cu.DevicePtr, note func(string, C.int, int)) {
	at := func(addrs []uintptr, i, off int) C.uintptr_t { return C.uintptr_t(addrs[i] + uintptr(off)) }
	typ, parts, _ := ncclType(c.Dtype) // checkCall checked it
	n := C.size_t(c.Count * parts)
	block := 0 // bytes of one rank's block
	if c.Kind != collective.Barrier {
		block = c.Count * int(c.Dtype.Size())
	}
	op := ncclOp(c.Op)
	root := C.int(c.Root)
	for i, rank := range e.local {
		comm, s := C.uintptr_t(e.comms[i]), e.stream(i)
		switch c.Kind {
		case collective.AllReduce:
			note("ncclAllReduce", C.mgla_nccl_all_reduce(at(send, i, 0), at(recv, i, 0), n, typ, op, comm, s), i)
		case collective.AllGather:
			note("ncclAllGather", C.mgla_nccl_all_gather(at(send, i, 0), at(recv, i, 0), n, typ, comm, s), i)
		case collective.ReduceScatter:
			note("ncclReduceScatter", C.mgla_nccl_reduce_scatter(at(send, i, 0), at(recv, i, 0), n, typ, op, comm, s), i)
		case collective.Bcast:
			note("ncclBroadcast", C.mgla_nccl_broadcast(at(send, i, 0), at(recv, i, 0), n, typ, root, comm, s), i)
		case collective.Reduce:
			note("ncclReduce", C.mgla_nccl_reduce(at(send, i, 0), at(recv, i, 0), n, typ, op, root, comm, s), i)
		case collective.AllToAll:
			for peer := range e.size {
				note("ncclSend", C.mgla_nccl_send(at(send, i, peer*block), n, typ, C.int(peer), comm, s), i)
				note("ncclRecv", C.mgla_nccl_recv(at(recv, i, peer*block), n, typ, C.int(peer), comm, s), i)
			}
		case collective.Gather:
			note("ncclSend", C.mgla_nccl_send(at(send, i, 0), n, typ, root, comm, s), i)
			if rank == c.Root {
				for peer := range e.size {
					note("ncclRecv", C.mgla_nccl_recv(at(recv, i, peer*block), n, typ, C.int(peer), comm, s), i)
				}
			}
		case collective.Scatter:
			if rank == c.Root {
				for peer := range e.size {
					note("ncclSend", C.mgla_nccl_send(at(send, i, peer*block), n, typ, C.int(peer), comm, s), i)
				}
			}
			note("ncclRecv", C.mgla_nccl_recv(at(recv, i, 0), n, typ, root, comm, s), i)
		case collective.SendRecv:
			note("ncclSend", C.mgla_nccl_send(at(send, i, 0), n, typ, C.int(c.Dest[i]), comm, s), i)
			note("ncclRecv", C.mgla_nccl_recv(at(recv, i, 0), n, typ, C.int(c.Src[i]), comm, s), i)
		case collective.Send:
			note("ncclSend", C.mgla_nccl_send(at(send, i, 0), n, typ, C.int(c.Dest[i]), comm, s), i)
		case collective.Recv:
			note("ncclRecv", C.mgla_nccl_recv(at(recv, i, 0), n, typ, C.int(c.Src[i]), comm, s), i)
		case collective.Scan:
			// Rank k's result is the reduction to root k of ranks 0…k,
			// ranks after k contributing the identity.
			for k := range e.size {
				src := at(send, i, 0)
				if rank > k {
					src = C.uintptr_t(ident[i])
				}
				note("ncclReduce", C.mgla_nccl_reduce(src, at(recv, i, 0), n, typ, op, C.int(k), comm, s), i)
			}
		case collective.Barrier:
			p := C.uintptr_t(e.scratch[i])
			note("ncclAllReduce", C.mgla_nccl_all_reduce(p, p, 1, 7, 0, comm, s), i)
		}
	}
}

// zero enqueues zeros into the first bytes at local rank i's address p.
func (e *engine) zero(i int, addr uintptr, bytes int) error {
	if err := cu.SetCurrentContext(e.ctxs[i]); err != nil {
		return fmt.Errorf("%w: collective/nccl: %v", collective.ErrEngine, err)
	}
	p := cu.DevicePtr(addr)
	if err := cu.MemsetD8Async(p, 0, int64(bytes), e.streams[i]); err != nil {
		return fmt.Errorf("%w: collective/nccl: zeroing a receive buffer on gpu:%d: %v", collective.ErrEngine, e.devices[i], err)
	}
	return nil
}

// makeScratch allocates the one-element buffers of Barrier.
func (e *engine) makeScratch() error {
	if e.scratch != nil {
		return nil
	}
	scratch := make([]cu.DevicePtr, len(e.local))
	for i := range scratch {
		err := cu.SetCurrentContext(e.ctxs[i])
		if err == nil {
			scratch[i], err = cu.MemAlloc(4)
		}
		if err == nil {
			err = cu.MemsetD8Async(scratch[i], 0, 4, e.streams[i])
		}
		if err != nil {
			for j := range i {
				_ = cu.SetCurrentContext(e.ctxs[j])
				_ = memFree(scratch[j])
			}
			return fmt.Errorf("%w: collective/nccl: barrier scratch on gpu:%d: %v", collective.ErrEngine, e.devices[i], err)
		}
	}
	e.scratch = scratch
	return nil
}

// identities returns, for every local rank after rank 0, Count elements of
// the identity of c.Op in device memory (0 where no rank needs one).
func (e *engine) identities(c *collective.Call) ([]cu.DevicePtr, error) {
	out := make([]cu.DevicePtr, len(e.local))
	bytes := c.Count * int(c.Dtype.Size())
	var host []byte
	if c.Op != collective.Sum {
		host = identityBytes(c.Dtype, c.Op, c.Count)
	}
	for i, rank := range e.local {
		if rank == 0 {
			continue
		}
		err := cu.SetCurrentContext(e.ctxs[i])
		if err == nil {
			out[i], err = cu.MemAlloc(int64(bytes))
		}
		if err == nil {
			if host == nil {
				err = cu.MemsetD8Async(out[i], 0, int64(bytes), e.streams[i])
			} else {
				// On the rank's stream, ordered before the reductions that read
				// it: a synchronous copy from pageable memory may return before
				// its DMA lands, and the non-blocking stream does not wait for
				// it (Scan min read an earlier call's identities, 1s of a
				// product, at the same address: call 16).
				err = cu.MemcpyHtoDAsync(out[i], unsafe.Pointer(&host[0]), int64(bytes), e.streams[i])
			}
		}
		if err != nil {
			for j, p := range out {
				if p != 0 {
					_ = cu.SetCurrentContext(e.ctxs[j])
					_ = memFree(p)
				}
			}
			return nil, fmt.Errorf("%w: collective/nccl: %v: identity buffer of %d bytes on gpu:%d: %v",
				collective.ErrEngine, c, bytes, e.devices[i], err)
		}
	}
	return out, nil
}

// wait returns once every local rank's stream has finished c. It polls the
// streams for spinWait; after that the calling thread blocks in
// cuStreamSynchronize, as a program calling NCCL directly would, while a
// watchdog goroutine checks the communicators' asynchronous errors every
// millisecond and, on an NCCL error or once deadline has passed, aborts the
// communicators (ncclCommAbort), which ends their kernels and so the
// synchronization. Non-blocking communicators (process communicators) are
// first polled until NCCL has launched the group.
func (e *engine) wait(c *collective.Call, deadline time.Time, timeout time.Duration) error {
	if e.nonblocking {
		if err := waitReady(e.comms, deadline, timeout, fmt.Sprintf("%v on %s", c, e.what)); err != nil {
			e.abort(abortedBy(e, c, err))
			return err
		}
	}
	// Short calls: poll the streams for up to spinWait, with no goroutine
	// or timer (on the H100 the watchdog path cost 20-70µs a call more
	// than the raw call, from goroutine and thread wake-ups).
	until := time.Now().Add(spinWait)
	if deadline.Before(until) {
		until = deadline
	}
	if done, err := e.spin(c, until); done || err != nil {
		return err
	}
	if !time.Now().Before(deadline) {
		// Not done at a deadline already past (a timeout shorter than the
		// spin): aborted now, as the watchdog would at its first look, which
		// on a busy host came after a 4 GiB call had finished.
		err := e.asyncError(c) // NCCL's own error first, as the watchdog reads it
		if err == nil {
			err = e.timedOut(c, timeout)
		}
		for _, comm := range e.comms {
			commAbort(comm)
		}
		e.aborted = true
		for i := range e.streams {
			_ = e.streams[i].Synchronize() // the abort ends the kernels
		}
		e.release()
		e.dead = abortedBy(e, c, err)
		return err
	}
	w := &watchdog{stop: make(chan struct{}), fired: make(chan error, 1)}
	go e.watch(c, deadline, timeout, w)
	var syncErr error
	for i := range e.streams {
		if err := e.streams[i].Synchronize(); err != nil && syncErr == nil {
			syncErr = fmt.Errorf("%w: collective/nccl: %v on %s: stream of gpu:%d: %v", collective.ErrEngine, c, e.what, e.devices[i], err)
		}
	}
	for !w.state.CompareAndSwap(watchRunning, watchFinished) {
		if w.state.Load() == watchAborted {
			err := <-w.fired
			e.release()
			e.dead = abortedBy(e, c, err)
			return err
		}
		// The watchdog is reading the communicators' errors, for
		// microseconds: it must be done before they may be destroyed.
		runtime.Gosched()
	}
	close(w.stop) // the watchdog leaves; nothing to wait for
	if syncErr != nil {
		e.abort(abortedBy(e, c, syncErr))
	}
	return syncErr
}

// watchdog is the state wait shares with its watchdog goroutine: whichever
// moves state from watchRunning first decides the call's outcome; while the
// watchdog reads the communicators' errors the state is watchChecking.
type watchdog struct {
	state atomic.Int32
	stop  chan struct{} // closed when the call finished first
	fired chan error    // the watchdog's error, once it aborted
}

const (
	watchRunning int32 = iota
	watchChecking
	watchFinished
	watchAborted
)

// spinWait is how long wait polls the streams before it blocks in
// cuStreamSynchronize under the watchdog.
const spinWait = time.Millisecond

// spin polls every stream with cuStreamQuery until all are done (true) or
// until (false). A stream error aborts the engine.
func (e *engine) spin(c *collective.Call, until time.Time) (bool, error) {
	next := 0 // streams before next are done
	for {
		for next < len(e.streams) {
			err := e.streams[next].Query()
			if err == cu.NotReady {
				break
			}
			if err != nil {
				err = fmt.Errorf("%w: collective/nccl: %v on %s: stream of gpu:%d: %v", collective.ErrEngine, c, e.what, e.devices[next], err)
				e.abort(abortedBy(e, c, err))
				return false, err
			}
			next++
		}
		if next == len(e.streams) {
			return true, nil
		}
		if time.Now().After(until) {
			return false, nil
		}
	}
}

// watch is wait's watchdog: every millisecond, unless the call finished,
// it checks the communicators' asynchronous errors and the deadline; on an
// error it aborts the NCCL communicators and sends why on w.fired.
func (e *engine) watch(c *collective.Call, deadline time.Time, timeout time.Duration, w *watchdog) {
	const period = time.Millisecond
	t := time.NewTimer(min(period, time.Until(deadline)))
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if !w.state.CompareAndSwap(watchRunning, watchChecking) {
			return // the call finished first
		}
		err := e.asyncError(c)
		if err == nil && time.Now().After(deadline) {
			err = e.timedOut(c, timeout)
		}
		if err != nil {
			for _, comm := range e.comms {
				commAbort(comm)
			}
			e.aborted = true
			w.fired <- err
			w.state.Store(watchAborted)
			return
		}
		w.state.Store(watchRunning)
		t.Reset(min(period, max(time.Until(deadline), 0)))
	}
}

// timedOut is the error of call c not done after timeout.
func (e *engine) timedOut(c *collective.Call, timeout time.Duration) error {
	return fmt.Errorf("%w: collective/nccl: %v on %s: not done after %v (peers missing or a mismatched call); the NCCL communicator was aborted",
		collective.ErrTimeout, c, e.what, timeout)
}

// asyncError reports the first asynchronous NCCL error of the communicators.
func (e *engine) asyncError(c *collective.Call) error {
	for _, comm := range e.comms {
		var ae C.int
		if r := C.mgla_nccl_comm_async_error(C.uintptr_t(comm), &ae); r != ncclSuccess {
			return ncclErr("ncclCommGetAsyncError", r, comm)
		}
		if ae != ncclSuccess && ae != ncclInProgress {
			return ncclErr(c.String(), ae, comm)
		}
	}
	return nil
}

// abortedBy is the error of the calls after c failed with err and the
// engine was aborted.
func abortedBy(e *engine, c *collective.Call, err error) error {
	return fmt.Errorf("%w: collective/nccl: %s was aborted when %v failed: %v", collective.ErrClosed, e.what, c, err)
}

// pause backs off while polling: spin for the first 50µs, then sleep a
// twentieth of the time waited so far, at most 200µs.
func pause(waited time.Duration) {
	if waited < 50*time.Microsecond {
		runtime.Gosched()
		return
	}
	time.Sleep(min(waited/20, 200*time.Microsecond))
}

// memFree and memcpyDtoH are cu's calls of those names, made
// through cudaguard.Blocking: each may wait for a GPU's work while it holds
// the driver's locks, which must not happen while a mesh's group of
// kernels is being launched (enqueue), by this engine or another.
func memFree(p cu.DevicePtr) error {
	return cudaguard.Blocking(func() error { return cu.MemFree(p) })
}

func memcpyDtoH(dst unsafe.Pointer, src cu.DevicePtr, bytes int64) error {
	return cudaguard.Blocking(func() error { return cu.MemcpyDtoH(dst, src, bytes) })
}

// commAbort aborts comm (ncclCommAbort), through cudaguard.Aborting: it ends
// the communicator's kernels, which may never end otherwise, and frees its
// device memory.
func commAbort(comm uintptr) {
	_ = cudaguard.Aborting(func() error { C.mgla_nccl_comm_abort(C.uintptr_t(comm)); return nil })
}
