//go:build mpi

package mpi

/*
#include <stdlib.h>
#include "mgla_mpi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
)

// hostSpan is one host buffer as MPI sees it.
type hostSpan struct {
	p     unsafe.Pointer // first element (nil: no buffer)
	bytes int            // bytes the call uses
}

// span checks that b is a host buffer of dt and returns its first n
// elements' memory.
func span(c *collective.Call, what string, bs []sharding.Buffer, n int) (hostSpan, error) {
	if n == 0 && len(bs) == 0 {
		return hostSpan{}, nil
	}
	hb, ok := bs[0].(*sharding.HostBuffer)
	if !ok {
		return hostSpan{}, fmt.Errorf("%w: %v: the %s buffer is in %v memory; the MPI engine moves host buffers (GPU buffers: the NCCL engine)",
			collective.ErrBadCall, c, what, bs[0].Device().Kind)
	}
	if dt := hb.Dtype(); dt != c.Dtype {
		return hostSpan{}, fmt.Errorf("%w: %v: the %s buffer holds %v, the call is %v", collective.ErrBadCall, c, what, dt, c.Dtype)
	}
	return hostSpan{p: unsafe.Pointer(unsafe.SliceData(hb.Bytes())), bytes: n * int(c.Dtype.Size())}, nil
}

func (h hostSpan) overlaps(o hostSpan) bool {
	if h.bytes == 0 || o.bytes == 0 {
		return false
	}
	a, b := uintptr(h.p), uintptr(o.p)
	return a < b+uintptr(o.bytes) && b < a+uintptr(h.bytes)
}

func (h hostSpan) slice() []byte { return unsafe.Slice((*byte)(h.p), h.bytes) }

// Do runs one call (collective.Comm). With the checks on (the default) it
// first checks that every rank makes the same call (package documentation);
// then it starts the nonblocking MPI operation and polls it until it
// completes or the communicator's timeout passes.
func (c *Comm) Do(call *collective.Call) error {
	s := c.st
	if err := call.Check(s.size, []int{s.rank}); err != nil {
		return err
	}
	if blocks := max(call.SendLen(s.size), call.RecvLen(s.size)); blocks > math.MaxInt32 {
		return fmt.Errorf("%w: %v: %d elements exceed MPI's int counts (split the call)", collective.ErrBadCall, call, blocks)
	}
	send, err := span(call, "send", call.Send, call.SendLen(s.size))
	if err != nil {
		return err
	}
	recv, err := span(call, "receive", call.Recv, call.RecvLen(s.size))
	if err != nil {
		return err
	}
	if send.overlaps(recv) {
		return fmt.Errorf("%w: %v: the send and receive buffers overlap", collective.ErrBadCall, call)
	}
	isPair := call.Kind == collective.Send || call.Kind == collective.Recv || call.Kind == collective.SendRecv
	if c.cfg.checks && (call.Kind == collective.Send && call.Dest[0] == s.rank || call.Kind == collective.Recv && call.Src[0] == s.rank) {
		// A checked Send waits for its Recv (and a Recv for its Send), which
		// this process could only post after it: the call would wait out
		// the timeout and break the communicator.
		return fmt.Errorf("%w: %v: a Send to (or Recv from) its own rank %d on a checked communicator never completes; use SendRecv", collective.ErrBadCall, call, s.rank)
	}
	if isPair {
		if limit := c.maxTag(); call.Tag > limit {
			return fmt.Errorf("%w: %v: tag %d above %d (MPI_TAG_UB %d)", collective.ErrBadCall, call, call.Tag, limit, engine.tagUB)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	deadline := time.Now().Add(c.cfg.timeout)
	if isPair {
		return c.pair(call, send, recv, deadline)
	}
	rec := collective.CallRecord(call, s.seq)
	s.seq++
	if c.cfg.checks {
		if err := s.exchange(&rec, deadline, c.cfg.timeout, nil); err != nil {
			return err
		}
		if call.Kind == collective.Barrier {
			return nil // the exchange was one
		}
	}
	// The root of Bcast broadcasts from Send (MPI only reads it there) and
	// copies it to Recv; the ranks other than the root of Reduce and Gather
	// zero Recv (MPI does not touch it there). localPlacement says when.
	var side *localWork
	switch {
	case call.Kind == collective.Bcast && s.rank == call.Root:
		side = &localWork{dst: recv.slice(), src: send.slice()}
	case (call.Kind == collective.Reduce || call.Kind == collective.Gather) && s.rank != call.Root:
		side = &localWork{dst: recv.slice()}
	}
	// The spans' sizes follow from the call alone: every rank decides alike.
	if blocking(call.Kind, max(send.bytes, recv.bytes)) {
		return c.doBlocking(call, send, recv, side, deadline, rec.Label())
	}
	if ok, chunk := pipelined(call.Kind, call.Count, recv.bytes); ok {
		return c.pipelineBcast(call, send, recv, chunk, deadline, rec.Label())
	}
	// With a processor of its own for it, the local work runs beside the
	// transfer on another goroutine; otherwise where localPlacement says.
	var beside chan struct{}
	if side != nil && len(side.dst) >= besideBytes && spareProcessor() {
		beside = make(chan struct{})
		go func(w *localWork) {
			w.finish()
			close(beside)
		}(side)
		side = nil
	}
	if side != nil {
		switch localPlacement(call.Kind) {
		case placeBefore:
			side.finish()
		case placeDuring:
			side.eager = true
		}
	}
	var pin runtime.Pinner
	pinSpans(&pin, send, recv)
	kind, count, dt, op, root := C.int(call.Kind), C.int(call.Count), C.int(collective.DtypeCode(call.Dtype)), C.int(call.Op), C.int(call.Root)
	req := s.reqs.at(2 * s.size)
	if err := call0("MPI_I"+call.Kind.String(), func() C.int {
		return C.mgla_start(kind, send.p, recv.p, count, dt, op, root, s.data, req)
	}); err != nil {
		if beside != nil {
			<-beside
		}
		pin.Unpin()
		return err
	}
	reqs := requests{p: req, n: 1}
	ok, err := wait(reqs, 1, deadline, hotTime(max(send.bytes, recv.bytes)), side)
	if beside != nil {
		<-beside // Recv is the caller's again only when the work is done
	}
	if err != nil || !ok {
		// MPI cannot cancel a collective: it keeps the buffers and the
		// request, and the communicator is done for.
		keepPinned(&pin)
		if err == nil {
			err = c.transferTimeout(rec.Label())
		}
		s.breakWith(err)
		return err
	}
	pin.Unpin()
	return nil
}

// call0 is call under another name: Do's variable call shadows it.
var call0 = call

func pinSpans(pin *runtime.Pinner, spans ...hostSpan) {
	for _, h := range spans {
		if h.p != nil {
			pin.Pin(h.p)
		}
	}
}

// maxTag is the largest user tag: with the checks on, the metadata of tag t
// travels with tags 2t+1 and 2t+2.
func (c *Comm) maxTag() int {
	if c.cfg.checks {
		return (engine.tagUB - 2) / 2
	}
	return engine.tagUB
}

// pair runs Send, Recv and SendRecv. With the checks on, the two ends of
// each transfer first swap records (dtype, count, name) on the metadata
// communicator; an end moves data only when they agree, and both ends of a
// transfer that disagrees return the same ErrMismatch.
func (c *Comm) pair(call *collective.Call, send, recv hostSpan, deadline time.Time) error {
	s := c.st
	dest, src := -1, -1
	if call.Kind != collective.Recv {
		dest = call.Dest[0]
	}
	if call.Kind != collective.Send {
		src = call.Src[0]
	}
	tag, rec := call.Tag, collective.CallRecord(call, 0)
	sendOK, recvOK := dest >= 0, src >= 0
	var msgs []string
	if c.cfg.checks {
		const mine, fromDest, fromSrc = 0, 1, 2 // records after the collective exchange's
		rec.Encode(s.records()[(s.size+mine)*collective.RecordWords:])
		var posts []post
		if dest >= 0 {
			posts = append(posts, post{record: mine, peer: dest, tag: 2*tag + 1},
				post{record: fromDest, peer: dest, tag: 2*tag + 2, recv: true, missing: "did not post the matching receive"})
		}
		if src >= 0 {
			posts = append(posts, post{record: fromSrc, peer: src, tag: 2*tag + 1, recv: true, missing: "did not post the matching send"},
				post{record: mine, peer: src, tag: 2*tag + 2})
		}
		if err := c.transfer(call, posts, deadline, "metadata"); err != nil {
			return err
		}
		words := s.records()
		read := func(slot int) (collective.Record, error) {
			r, ok := collective.DecodeRecord(words[(s.size+slot)*collective.RecordWords:])
			if !ok {
				err := fmt.Errorf("%w: mpi: %v: garbled metadata", collective.ErrEngine, call)
				s.breakWith(err)
				return r, err
			}
			return r, nil
		}
		if dest >= 0 {
			theirs, err := read(fromDest)
			if err != nil {
				return err
			}
			if msg := collective.PairMismatch(&rec, &theirs, s.rank, dest, tag); msg != "" {
				msgs, sendOK = append(msgs, msg), false
			}
		}
		if src >= 0 {
			theirs, err := read(fromSrc)
			if err != nil {
				return err
			}
			if msg := collective.PairMismatch(&theirs, &rec, src, s.rank, tag); msg != "" {
				msgs, recvOK = append(msgs, msg), false
			}
		}
	}
	var posts []post
	if sendOK {
		posts = append(posts, post{data: send, peer: dest, tag: tag})
	}
	if recvOK {
		posts = append(posts, post{data: recv, peer: src, tag: tag, recv: true, missing: "did not send"})
	}
	if err := c.transfer(call, posts, deadline, "data"); err != nil {
		return err
	}
	if msgs != nil {
		return fmt.Errorf("%w: %s", collective.ErrMismatch, strings.Join(msgs, "; "))
	}
	return nil
}

// A post is one point-to-point message of pair: a metadata record (on the
// metadata communicator) or the call's data (on the data communicator).
type post struct {
	record  int      // metadata: record slot past the collective exchange's
	data    hostSpan // data: the buffer (record unused)
	peer    int
	tag     int
	recv    bool
	missing string // what a receive that does not complete says of the peer
}

// transfer posts the messages, waits for them by the deadline, and on a
// timeout gives them up, breaks the communicator and names the peers.
func (c *Comm) transfer(call *collective.Call, posts []post, deadline time.Time, phase string) error {
	s := c.st
	if len(posts) == 0 {
		return nil
	}
	base := 2 * s.size
	var pin runtime.Pinner
	bytes := 0
	for i, p := range posts {
		ptr, count, dtype, comm := s.recordAt(s.size+p.record), C.int(collective.RecordBytes), C.int(-1), s.check
		if phase == "data" {
			ptr, count, dtype, comm = p.data.p, C.int(call.Count), C.int(collective.DtypeCode(call.Dtype)), s.data
			pinSpans(&pin, p.data)
			bytes = max(bytes, p.data.bytes)
		}
		peer, tag, req := C.int(p.peer), C.int(p.tag), s.reqs.at(base+i)
		var rc C.int
		mpiCall(func() {
			if p.recv {
				rc = C.mgla_irecv(ptr, count, dtype, peer, tag, comm, req)
			} else {
				rc = C.mgla_isend(ptr, count, dtype, peer, tag, comm, req)
			}
		})
		if rc != 0 {
			err := engineError("MPI_Isend/MPI_Irecv", rc)
			c.abandonPosts(posts[:i])
			keepPinned(&pin)
			s.breakWith(err)
			return err
		}
	}
	reqs := requests{p: s.reqs.at(base), n: len(posts)}
	ok, err := wait(reqs, len(posts), deadline, hotTime(bytes), nil)
	if err == nil && ok {
		pin.Unpin()
		return nil
	}
	missing := c.abandonPosts(posts)
	keepPinned(&pin)
	if err == nil {
		err = fmt.Errorf("%w: mpi: %v (tag %d): %s within %v", collective.ErrTimeout, call, call.Tag, strings.Join(missing, "; "), c.cfg.timeout)
	}
	s.breakWith(err)
	return err
}

// abandonPosts gives up on the posts that did not complete and says which
// peers let them down.
func (c *Comm) abandonPosts(posts []post) []string {
	s := c.st
	var missing []string
	for i, p := range posts {
		if completed(s.reqs, 2*s.size+i) {
			continue
		}
		abandon(s.reqs, 2*s.size+i, p.recv)
		if p.recv {
			missing = append(missing, fmt.Sprintf("rank %d %s", p.peer, p.missing))
		} else if p.missing == "" {
			missing = append(missing, fmt.Sprintf("rank %d did not take the message", p.peer))
		}
	}
	return missing
}

// abandonedPins keeps the buffers of calls MPI was left holding pinned, and
// their Pinners reachable, for the life of the process.
var abandonedPins struct {
	sync.Mutex
	pins []*runtime.Pinner
}

func keepPinned(p *runtime.Pinner) {
	abandonedPins.Lock()
	abandonedPins.pins = append(abandonedPins.pins, p)
	abandonedPins.Unlock()
}
