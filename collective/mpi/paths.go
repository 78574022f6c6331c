//go:build mpi

package mpi

/*
#include <stdlib.h>
#include "mgla_mpi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
)

// The ways Do makes a large collective besides the default (one
// nonblocking MPI call, its local work after the transfer), measured in
// BENCHMARKS.md, "Collectives over MPI". Every rank must choose the same
// MPI calls, so what decides them is agreed when World starts (agreed) or
// set in the environment of every rank alike (mpirun -x).

// placement says where the local work of a call (the root's copy of Bcast,
// the zeros of the ranks other than the root of Reduce and Gather) goes
// when no processor is spare for it (MGLA_MPI_LOCAL_WORK).
type placement int

const (
	// placeAfter: once the transfer completes (or in place of the sleeps
	// while the rank waits for a late peer).
	placeAfter placement = iota
	// placeBefore: before the transfer starts.
	placeBefore
	// placeDuring: a chunk between every two tests from the start. Where
	// MPI moves the data by single copy (CMA, XPMEM, KNEM) the peers copy
	// and this rank only waits, so the work costs nothing.
	placeDuring
	// placePipeline (Bcast): the broadcast goes in chunks, every rank
	// posting the same MPI_Ibcasts; the root copies chunk k from Send to
	// Recv and broadcasts it from Recv, where MPI finds it in the cache,
	// before copying chunk k+1.
	placePipeline
)

var placements = map[string]placement{"after": placeAfter, "before": placeBefore, "during": placeDuring, "pipeline": placePipeline}

// agreed is what every rank of the world agreed on when World started
// (the minimum over the ranks): the choices that change which MPI calls a
// rank makes must be the same on all of them.
var agreed struct {
	singleCopy bool // MPI moves on-node data by single copy on every rank
	spare      bool // every rank has a processor to spare (spareProcessor)
	multiple   bool // every rank has MPI_THREAD_MULTIPLE
}

// SingleCopy says whether every rank's MPI moves large on-node messages by
// single copy (agreed when World started; false before), which decides
// where Do places its local work.
func SingleCopy() bool { return agreed.singleCopy }

// agree computes agreed over comm (the world) by the deadline.
func agree(comm C.MPI_Comm, deadline time.Time) error {
	flags := (*[3]C.int)(C.calloc(6, C.size_t(unsafe.Sizeof(C.int(0)))))
	out := (*[3]C.int)(unsafe.Add(unsafe.Pointer(flags), 3*unsafe.Sizeof(C.int(0))))
	for i, b := range []bool{singleCopy(), spareProcessor(), engine.mode == direct} {
		if b {
			flags[i] = 1
		}
	}
	reqs := newRequests(1)
	if err := call("MPI_Iallreduce", func() C.int { return C.mgla_iagree(&flags[0], &out[0], 3, comm, reqs.p) }); err != nil {
		return err
	}
	ok, err := wait(reqs, 1, deadline, hotTime(0), nil)
	if err != nil || !ok {
		// MPI still holds flags and reqs: leave them.
		if err == nil {
			err = fmt.Errorf("%w: mpi: World: agreeing on the engine's settings timed out (a process did not start)", collective.ErrTimeout)
		}
		return err
	}
	agreed.singleCopy, agreed.spare, agreed.multiple = out[0] != 0, out[1] != 0, out[2] != 0
	C.free(unsafe.Pointer(flags))
	reqs.free()
	return nil
}

// singleCopy says whether Open MPI's shared-memory transport moves large
// messages by single copy (XPMEM, CMA or KNEM: the receiver copies from the
// sender's memory), as MPI's tool interface reports the MCA parameter
// btl_vader_single_copy_mechanism (Open MPI 4; btl_sm_ in 5) after
// MPI_Init: 0, 1 and 2 are those mechanisms, 3 is none (also when the
// transport found CMA unusable). Without the parameter (a one-rank job,
// another MPI) it says no.
func singleCopy() bool {
	for _, name := range []string{"btl_vader_single_copy_mechanism", "btl_sm_single_copy_mechanism"} {
		if v, err := mcaInt(name); err == nil {
			return v >= 0 && v <= 2
		}
	}
	return false
}

// localPlacement is where the local work of a call of kind goes:
// MGLA_MPI_LOCAL_WORK (after, before, during, pipeline: for the tests and
// benchmarks; pipeline applies to Bcast, the other kinds then go after)
// or, by default: for Bcast and Gather during the transfer where MPI
// copies by single copy (their ranks with local work, the root of Bcast
// and the others of Gather, only send: the receivers copy), else the
// pipeline for Bcast unless every rank has a processor to spare for the
// copy, and before the transfer for Gather (the root copies its own block
// first, which the other ranks would wait for); after it for Reduce, whose
// ranks inside the tree reduce what they receive.
func localPlacement(kind collective.Kind) placement {
	p, ok := placements[os.Getenv("MGLA_MPI_LOCAL_WORK")]
	switch {
	case ok && p == placePipeline && kind != collective.Bcast:
		return placeAfter
	case ok:
		return p
	case agreed.singleCopy && kind != collective.Reduce:
		return placeDuring
	case kind == collective.Bcast && !agreed.spare:
		return placePipeline
	case kind == collective.Gather:
		return placeBefore
	}
	return placeAfter
}

// pipelineChunk is the least bytes of one chunk of a pipelined Bcast, and
// maxPipelineChunks the most chunks: larger broadcasts get larger chunks.
const (
	pipelineChunk     = 256 << 10
	maxPipelineChunks = 256
)

// pipelined says whether a Bcast of count elements in bytes goes in
// chunks, and how many elements each holds (the last fewer): with
// placePipeline, from two chunks up. Every rank computes the same.
func pipelined(kind collective.Kind, count, bytes int) (bool, int) {
	if kind != collective.Bcast || localPlacement(kind) != placePipeline || bytes < 2*pipelineChunk {
		return false, 0
	}
	elem := bytes / count
	chunk := max(pipelineChunk/elem, (count+maxPipelineChunks-1)/maxPipelineChunks)
	return true, chunk
}

// taken counts the calls made by pipelineBcast and doBlocking (the tests
// check that a switch takes its path).
var taken struct{ pipelined, blocking atomic.Int64 }

// pipelineBcast runs a Bcast in chunks of chunk elements (see
// placePipeline).
func (c *Comm) pipelineBcast(call *collective.Call, send, recv hostSpan, chunk int, deadline time.Time, label string) error {
	s := c.st
	taken.pipelined.Add(1)
	elem := int(call.Dtype.Size())
	n := (call.Count + chunk - 1) / chunk
	if s.pipe.n < n {
		if s.pipe.p != nil {
			s.pipe.free()
		}
		s.pipe = newRequests(max(n, maxPipelineChunks))
	}
	root := s.rank == call.Root
	var pin runtime.Pinner
	pinSpans(&pin, send, recv)
	dst, src := recv.slice(), send.slice()
	dt, rootC := C.int(collective.DtypeCode(call.Dtype)), C.int(call.Root)
	fail := func(err error) error {
		// MPI holds the chunks posted so far.
		keepPinned(&pin)
		s.breakWith(err)
		return err
	}
	for k := range n {
		lo, hi := k*chunk*elem, min((k+1)*chunk, call.Count)*elem
		if root {
			copy(dst[lo:hi], src[lo:hi])
		}
		p, count, req := unsafe.Add(recv.p, lo), C.int((hi-lo)/elem), s.pipe.at(k)
		if err := call0("MPI_Ibcast", func() C.int { return C.mgla_ibcast(p, count, dt, rootC, s.data, req) }); err != nil {
			return fail(err)
		}
		if root {
			// One test, so that MPI moves the chunks posted so far while
			// the next is copied.
			var rc C.int
			mpiCall(func() { C.mgla_poll(C.int(k+1), s.pipe.p, 0, engine.yield, &rc) })
			if rc != 0 {
				return fail(engineError("MPI_Testall", rc))
			}
		}
	}
	ok, err := wait(requests{p: s.pipe.p, n: n}, n, deadline, hotTime(recv.bytes), nil)
	if err != nil || !ok {
		if err == nil {
			err = c.transferTimeout(label)
		}
		return fail(err)
	}
	pin.Unpin()
	return nil
}

// blockingBytes is the least bytes (the largest buffer of a rank) for
// which a call of a blocking kind goes through MPI's blocking call.
const blockingBytes = 1 << 20

// blocking says whether a call of kind moving bytes goes through MPI's
// blocking call on a goroutine of its own (doBlocking): only where every
// rank has MPI_THREAD_MULTIPLE (the caller waits for it with the timeout),
// for the kinds MGLA_MPI_BLOCKING lists (comma-separated Kind names as in
// collective.Kind.String, case-insensitive; "none"), by default
// ReduceScatter, whose nonblocking MPI_Ireduce_scatter_block Open MPI's
// libnbc makes up to 1.8 times as slow as the blocking call with no
// algorithm to choose. Every rank computes the same (blocking and
// nonblocking collectives do not match in MPI).
func blocking(kind collective.Kind, bytes int) bool {
	if !agreed.multiple || bytes < blockingBytes {
		return false
	}
	list, set := os.LookupEnv("MGLA_MPI_BLOCKING")
	if !set {
		return kind == collective.ReduceScatter
	}
	return slices.ContainsFunc(strings.Split(list, ","), func(k string) bool {
		return strings.EqualFold(strings.TrimSpace(k), kind.String())
	})
}

// doBlocking makes the call with MPI's blocking call on a goroutine of its
// own (its cgo call holds an OS thread) while the caller waits for it by
// the deadline, doing the local work side (may be nil) before, beside or
// after it. On a timeout the call fails with ErrTimeout and the
// communicator is broken; the goroutine and its thread stay in MPI for
// the life of the process (MPI cannot cancel a collective), with the
// buffers pinned.
func (c *Comm) doBlocking(call *collective.Call, send, recv hostSpan, side *localWork, deadline time.Time, label string) error {
	s := c.st
	taken.blocking.Add(1)
	var pin runtime.Pinner
	pinSpans(&pin, send, recv)
	kind, count, dt, op, root := C.int(call.Kind), C.int(call.Count), C.int(collective.DtypeCode(call.Dtype)), C.int(call.Op), C.int(call.Root)
	if side != nil && !spareProcessor() && localPlacement(call.Kind) == placeBefore {
		side.finish()
		side = nil
	}
	done := make(chan C.int, 1)
	go func() {
		var rc C.int
		mpiCall(func() { rc = C.mgla_block(kind, send.p, recv.p, count, dt, op, root, s.data) })
		done <- rc
	}()
	if side != nil && spareProcessor() {
		side.finish() // beside MPI's thread
	}
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	select {
	case rc := <-done:
		if rc != 0 {
			err := engineError("MPI_"+call.Kind.String(), rc)
			s.breakWith(err)
			pin.Unpin()
			return err
		}
	case <-timer.C:
		keepPinned(&pin)
		err := c.transferTimeout(label)
		err = fmt.Errorf("%w (its thread stays in the blocking MPI call)", err)
		s.breakWith(err)
		return err
	}
	side.finish()
	pin.Unpin()
	return nil
}

// transferTimeout is the error of a call whose transfer did not finish by
// the deadline.
func (c *Comm) transferTimeout(label string) error {
	why := "ranks unknown: the checks are off"
	if c.cfg.checks {
		why = "every rank had arrived; a peer is stuck or gone"
	}
	return fmt.Errorf("%w: mpi: %s: the transfer did not finish within %v (%s)", collective.ErrTimeout, label, c.cfg.timeout, why)
}
