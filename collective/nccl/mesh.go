//go:build mglacuda

package nccl

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/internal/cudaguard"
	"github.com/mgla/mgla/sharding"
)

func init() {
	collective.GPUMeshComm = func(m *sharding.Mesh, timeout time.Duration) (collective.Comm, error) {
		return NewMesh(m, WithTimeout(timeout))
	}
}

// meshEngines holds the NCCL communicators of mesh communicators by
// Mesh.DevicesKey: one set per ordered list of GPUs (each set takes device
// memory on every GPU), so that a program that makes a mesh per run holds
// one set, not one per mesh.
var (
	meshMu      sync.Mutex
	meshEngines = map[string]*engine{}
)

// NewMesh returns a communicator whose ranks are the devices of the GPU mesh
// m, in mesh order, all driven by this process. The NCCL communicators
// (ncclCommInitAll) are made on the first NewMesh of a mesh over these GPUs
// in this order and shared by every later one, of this mesh or another over
// the same GPUs, until ReleaseMesh, or until a timeout or NCCL failure
// aborts them (the next NewMesh then makes new ones). Calls on them are
// serialized.
func NewMesh(m *sharding.Mesh, opts ...Option) (collective.Comm, error) {
	if m == nil || m.Kind() != sharding.GPU {
		return nil, fmt.Errorf("%w: collective/nccl: NewMesh needs a GPU mesh, got %v", collective.ErrBadCall, m)
	}
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := Load(); err != nil {
		return nil, err
	}
	key := m.DevicesKey()
	meshMu.Lock()
	defer meshMu.Unlock()
	e := meshEngines[key]
	if e != nil {
		e.mu.Lock()
		usable := e.dead == nil
		e.mu.Unlock()
		if !usable {
			e = nil
		}
	}
	if e == nil {
		if e, err = newMeshEngine(m); err != nil {
			return nil, err
		}
		meshEngines[key] = e
	}
	return &Comm{e: e, mesh: m, timeout: o.timeout}, nil
}

func newMeshEngine(m *sharding.Mesh) (*engine, error) {
	n := m.Size()
	e := &engine{what: m.String(), isMesh: true, mesh: m, size: n}
	for i, d := range m.Devices() {
		e.local = append(e.local, i)
		e.devices = append(e.devices, d.ID)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := e.setup(); err != nil {
		e.release()
		return nil, err
	}
	comms := make([]C.uintptr_t, n)
	devs := make([]C.int, n)
	for i, d := range e.devices {
		devs[i] = C.int(d)
	}
	// ncclCommInitAll allocates and frees device memory, and on failure
	// the shim aborts what it made: a blocking call (cudaguard).
	initAll := func() error {
		return cudaguard.Blocking(func() error {
			return ncclErr("ncclCommInitAll", C.mgla_nccl_comm_init_all(&comms[0], C.int(n), &devs[0]), 0)
		})
	}
	err := initAll()
	if err != nil && sharding.ReclaimDeviceMemory() {
		// NCCL allocates device memory of its own, which unreachable
		// buffers may hold.
		err = initAll()
	}
	if err != nil {
		e.release()
		return nil, fmt.Errorf("%w (on %v)", err, m)
	}
	for _, c := range comms {
		e.comms = append(e.comms, uintptr(c))
	}
	return e, nil
}

// ReleaseMesh destroys the cached NCCL communicators of m's GPUs, which every
// mesh over the same GPUs in the same order shares; the handles that use
// them, of any such mesh, return collective.ErrClosed from then on.
// Releasing a mesh that has none is not an error.
func ReleaseMesh(m *sharding.Mesh) error {
	if m == nil || m.Kind() != sharding.GPU {
		return nil
	}
	key := m.DevicesKey()
	meshMu.Lock()
	e := meshEngines[key]
	delete(meshEngines, key)
	meshMu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.destroy(fmt.Errorf("%w: collective/nccl: the communicators of %v were released", collective.ErrClosed, m))
}

// Split makes the sub-communicators of the local ranks with ncclCommSplit
// (ranks of one color ordered by key, then rank). Each owns its NCCL
// communicators: close it when done.
func (h *Comm) Split(color, key func(rank int) int) ([]collective.Comm, error) {
	e := h.e
	if h.closed.Load() {
		return nil, fmt.Errorf("%w: collective/nccl: Split on closed %s", collective.ErrClosed, e.what)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead != nil {
		return nil, fmt.Errorf("Split: %w", e.dead)
	}
	if missing["ncclCommSplit"] {
		return nil, fmt.Errorf("%w: collective/nccl: Split needs ncclCommSplit (NCCL >= 2.18); %s is NCCL %s",
			collective.ErrUnavailable, loadedPath, versionString(loadedVer))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !e.isMesh {
		// Like a collective, and always: ranks whose colors or keys differ
		// get ErrMismatch, a missing rank ErrTimeout, not a hang.
		rec := collective.SplitRecord(e.seq, e.size, color, key)
		e.seq++
		if err := e.checkCollective(&rec, time.Now().Add(h.timeout), h.timeout); err != nil {
			return nil, err
		}
	}
	colors := make([]int, len(e.local))
	// Inside a group NCCL writes the new communicators at ncclGroupEnd,
	// so they go to C memory that outlives the ncclCommSplit calls.
	mem := C.malloc(C.size_t(len(e.local)) * C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	defer C.free(mem)
	news := unsafe.Slice((*C.uintptr_t)(mem), len(e.local))
	var first error
	if r := C.mgla_nccl_group_start(); r != ncclSuccess {
		return nil, ncclErr("ncclGroupStart", r, 0)
	}
	for i, r := range e.local {
		colors[i] = max(color(r), -1) // NCCL_SPLIT_NOCOLOR is -1
		rc := C.mgla_nccl_comm_split(C.uintptr_t(e.comms[i]), C.int(colors[i]), C.int(key(r)), &news[i])
		if rc != ncclSuccess && rc != ncclInProgress && first == nil {
			first = ncclErr("ncclCommSplit", rc, e.comms[i])
		}
	}
	if r := C.mgla_nccl_group_end(); r != ncclSuccess && r != ncclInProgress && first == nil {
		first = ncclErr("ncclGroupEnd", r, e.comms[0])
	}
	if first == nil && e.nonblocking {
		// A non-blocking split finishes in the background: NCCL writes
		// the new communicators only when the parents are ready again.
		first = waitReady(e.comms, time.Now().Add(h.timeout), h.timeout, e.what+" Split")
	}
	var made []uintptr
	for _, c := range news {
		if c != 0 {
			made = append(made, uintptr(c))
		}
	}
	if first == nil {
		first = waitReady(made, time.Now().Add(h.timeout), h.timeout, e.what+" Split")
	}
	if first != nil {
		for _, c := range made {
			commAbort(c)
		}
		return nil, first
	}
	// One engine per color, its local ranks in their new rank order.
	byColor := map[int][]int{}
	for i, c := range colors {
		if c >= 0 {
			byColor[c] = append(byColor[c], i)
		}
	}
	var order []int
	for c := range byColor {
		order = append(order, c)
	}
	sort.Ints(order)
	var out []collective.Comm
	for _, col := range order {
		sub := &engine{isMesh: e.isMesh, nonblocking: e.nonblocking}
		for _, i := range byColor[col] {
			var r, n C.int
			if err := ncclErr("ncclCommUserRank", C.mgla_nccl_comm_user_rank(news[i], &r), uintptr(news[i])); err != nil {
				first = err
			}
			if err := ncclErr("ncclCommCount", C.mgla_nccl_comm_count(news[i], &n), uintptr(news[i])); err != nil {
				first = err
			}
			sub.size = int(n)
			sub.local = append(sub.local, int(r))
			sub.devices = append(sub.devices, e.devices[i])
			sub.comms = append(sub.comms, uintptr(news[i]))
		}
		idx := make([]int, len(sub.local))
		for j := range idx {
			idx[j] = j
		}
		sort.Slice(idx, func(a, b int) bool { return sub.local[idx[a]] < sub.local[idx[b]] })
		sub.local, sub.devices, sub.comms = permute(sub.local, idx), permute(sub.devices, idx), permute(sub.comms, idx)
		sub.what = fmt.Sprintf("%s split (color %d, ranks %v of %d)", e.what, col, sub.local, sub.size)
		if first == nil && sub.isMesh {
			sub.mesh, first = sharding.GPUMesh(sub.devices...)
		}
		if first == nil {
			first = sub.setup()
		}
		out = append(out, &Comm{e: sub, timeout: h.timeout, checks: h.checks, owned: true})
	}
	if first != nil {
		for _, c := range out {
			c.(*Comm).e.abort(first)
		}
		return nil, first
	}
	return out, nil
}

func permute[T any](s []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = s[i]
	}
	return out
}

// waitReady polls the asynchronous errors of new communicators until none is
// in progress (non-blocking initialization), at most until deadline.
func waitReady(comms []uintptr, deadline time.Time, timeout time.Duration, what string) error {
	start := time.Now()
	for {
		busy := false
		for _, c := range comms {
			var ae C.int
			if r := C.mgla_nccl_comm_async_error(C.uintptr_t(c), &ae); r != ncclSuccess {
				return ncclErr("ncclCommGetAsyncError", r, c)
			}
			switch ae {
			case ncclSuccess:
			case ncclInProgress:
				busy = true
			default:
				return ncclErr(what, ae, c)
			}
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: collective/nccl: %s: not every rank joined within %v", collective.ErrTimeout, what, timeout)
		}
		pause(time.Since(start))
	}
}
