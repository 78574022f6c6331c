//go:build mpi

package mpi

/*
#include <stdlib.h>
#include "mgla_mpi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
)

// Comm is a communicator over MPI processes: this process is one rank of
// it. It implements collective.Comm; Do, Split and Close may be called from
// any goroutine (calls on one Comm run one at a time, in the order they take
// its lock).
type Comm struct {
	st     *commState
	cfg    config
	closed atomic.Bool
	hooks  collective.CloseHooks
}

var _ collective.Comm = (*Comm)(nil)

// commState is one MPI communicator and what the engine keeps for it. The
// views World returns share the world's.
type commState struct {
	mu    sync.Mutex // one call at a time
	data  C.MPI_Comm // the collectives and the user's point-to-point messages
	check C.MPI_Comm // a duplicate of data for the metadata messages
	rank  int
	size  int
	world bool
	seq   int64 // collectives (and Splits) issued so far

	// C memory: size+3 metadata records (the collective exchange's one
	// per rank, then the point-to-point's), and the requests.
	meta unsafe.Pointer
	reqs requests
	pipe requests // the chunks of a pipelined Bcast (nil until one)

	broken    error // set by a timeout: later calls fail with ErrClosed
	abandoned bool  // MPI may still use meta and reqs: never free them
	freed     bool
}

// World returns the communicator of every process of the job (a one-rank
// world in a program started without mpirun), initialising MPI on the first
// call (see the package documentation for the thread level). Every call
// returns a new view of the same communicator with its own options; all
// processes must make the first call.
func World(opts ...Option) (*Comm, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := initialise(); err != nil {
		return nil, err
	}
	engine.final.Lock()
	defer engine.final.Unlock()
	if engine.finalized {
		return nil, errFinalized
	}
	if engine.world == nil {
		deadline := time.Now().Add(cfg.timeout)
		data, err := dup(C.mgla_comm_world(), deadline, "World")
		if err != nil {
			return nil, err
		}
		st, err := newState(data, true, deadline, "World")
		if err != nil {
			return nil, err
		}
		if err := agree(data, deadline); err != nil {
			return nil, err
		}
		engine.world = st
	}
	return &Comm{st: engine.world, cfg: cfg}, nil
}

var errFinalized = fmt.Errorf("%w: mpi: MPI was finalized (it cannot be initialised again)", collective.ErrClosed)

// Finalize ends MPI for this process: call it once at the end of the
// program, after the last call on every Comm (later calls return
// ErrClosed). Calling it again, or when World never initialised MPI, does
// nothing.
func Finalize() error {
	engine.final.Lock()
	defer engine.final.Unlock()
	if engine.finalized || !engine.started {
		return nil
	}
	engine.finalized = true
	finalized.Store(true)
	for s := range engine.lateSplits {
		s.abandonExchange()
	}
	return call("MPI_Finalize", func() C.int { return C.mgla_finalize() })
}

// Finalized reports whether Finalize was called: C libraries that hold MPI
// objects (ScaLAPACK's BLACS, hypre) must not free them after it.
func Finalized() bool { return finalized.Load() }

// finalized mirrors engine.finalized for the calls' fast check.
var finalized atomic.Bool

// dup duplicates comm without blocking past the deadline.
func dup(comm C.MPI_Comm, deadline time.Time, what string) (C.MPI_Comm, error) {
	out := (*C.MPI_Comm)(C.malloc(C.size_t(unsafe.Sizeof(comm))))
	reqs := newRequests(1)
	if err := call("MPI_Comm_idup", func() C.int { return C.mgla_comm_idup(comm, out, reqs.p) }); err != nil {
		return nil, err
	}
	ok, err := wait(reqs, 1, deadline, hotTime(0), nil)
	if err != nil || !ok {
		// MPI still holds out and reqs: leave them.
		if err == nil {
			err = fmt.Errorf("%w: mpi: %s: duplicating the communicator timed out (a process did not make the call)", collective.ErrTimeout, what)
		}
		return nil, err
	}
	d := *out
	C.free(unsafe.Pointer(out))
	reqs.free()
	return d, nil
}

// newState wraps the communicator data, duplicating it for the metadata;
// what names the call for the errors.
func newState(data C.MPI_Comm, world bool, deadline time.Time, what string) (*commState, error) {
	s := &commState{data: data, world: world}
	var rank, size C.int
	if err := call("MPI_Comm_rank", func() C.int { return C.mgla_comm_rank_size(data, &rank, &size) }); err != nil {
		return nil, err
	}
	s.rank, s.size = int(rank), int(size)
	check, err := dup(data, deadline, what+": the metadata communicator")
	if err != nil {
		return nil, err
	}
	s.check = check
	s.meta = C.calloc(C.size_t(s.size+3), collective.RecordBytes)
	s.reqs = newRequests(2*s.size + 4) // the exchange's, then pair's or the collective's
	return s, nil
}

// Rank is this process's rank.
func (c *Comm) Rank() int { return c.st.rank }

// Size is the number of processes.
func (c *Comm) Size() int { return c.st.size }

// LocalRanks is this process's rank alone.
func (c *Comm) LocalRanks() []int { return []int{c.st.rank} }

// Fortran is the communicator's Fortran handle (MPI_Comm_c2f), for C code in
// other cgo packages (ScaLAPACK's BLACS, hypre) that turns it back into an
// MPI_Comm with MPI_Comm_f2c. It stays valid until Close (Finalize for the
// world); it is not MPI_COMM_WORLD but a duplicate of it.
func (c *Comm) Fortran() int {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	comm := c.st.data
	if c.st.freed {
		comm = C.mgla_comm_null()
	}
	var f C.int
	mpiCall(func() { f = C.mgla_comm_c2f(comm) })
	return int(f)
}

// usable returns why c cannot run a call, or nil. Call with st.mu held.
func (c *Comm) usable() error {
	switch {
	case finalized.Load():
		return errFinalized
	case c.closed.Load() || c.st.freed:
		return fmt.Errorf("%w: mpi: Close was called", collective.ErrClosed)
	case c.st.broken != nil:
		return fmt.Errorf("%w: mpi: communicator broken by an earlier failure: %v", collective.ErrClosed, c.st.broken)
	}
	return nil
}

// Close frees the communicator (one made by Split); the world's stays
// until Finalize, only this view is closed. A communicator broken by a
// timeout is only closed, not freed: MPI still holds its operations.
// Closing twice is not an error.
func (c *Comm) Close() error {
	c.hooks.Run()
	s := c.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed.Swap(true) || s.world || s.freed || finalized.Load() {
		return nil
	}
	s.freed = true
	if s.abandoned {
		// MPI still holds operations on these communicators that will
		// never complete: freeing them would let MPI reuse their context
		// ids while their messages may still arrive, and let libnbc
		// progress schedules on freed communicators. Keep them, with meta
		// and reqs, for the life of the process.
		return nil
	}
	err := call("MPI_Comm_free", func() C.int { return C.mgla_comm_free(&s.data) })
	if err2 := call("MPI_Comm_free", func() C.int { return C.mgla_comm_free(&s.check) }); err == nil {
		err = err2
	}
	C.free(s.meta)
	s.reqs.free()
	if s.pipe.p != nil {
		s.pipe.free()
	}
	return err
}

// Split partitions the ranks by color (ties by key, then rank; color < 0
// leaves a rank out) and returns this process's new communicator, or none.
// Every rank must call it; it always runs the metadata check (with the
// colors and keys of every rank as each computes them), WithoutChecks or
// not, so that a missing rank gives ErrTimeout rather than a hang, and a
// second exchange after MPI_Comm_split, so that every rank of c learns
// whether every other made the split: when one timed out, the others
// return ErrTimeout too and c is broken on every rank (the package
// documentation, "Threads", says how the blocking split is kept from
// hanging, and where that agreement can still fail).
func (c *Comm) Split(color, key func(rank int) int) ([]collective.Comm, error) {
	s := c.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(c.cfg.timeout)
	rec := collective.SplitRecord(s.seq, s.size, color, key)
	s.seq++
	if err := waitLateSplits(deadline, rec.Label(), c.cfg.timeout); err != nil {
		s.breakWith(err) // the others time out waiting for this rank's record
		return nil, err
	}
	myColor, myKey := C.int(color(s.rank)), C.int(key(s.rank))
	late := func() { s.startSplitLate(myColor, myKey) }
	if err := s.exchange(&rec, deadline, c.cfg.timeout, late); err != nil {
		return nil, err
	}
	// Every rank posted its record, so every rank comes to the split (by
	// its own call or by splitLate) unless it died or finalized: the split
	// and the confirmation each get a timeout of their own.
	out, err := s.split(myColor, myKey, rec.Label(), c.cfg.timeout)
	if err != nil {
		return nil, err
	}
	confirm := rec
	if err := s.exchange(&confirm, time.Now().Add(c.cfg.timeout), c.cfg.timeout, nil); err != nil {
		// A rank left by its timeout and made the split only to let the
		// others out of it (splitLate). out is left, as Close leaves
		// abandoned communicators.
		return nil, fmt.Errorf("%w (after the split, which a rank made only after giving up)", err)
	}
	if out == C.mgla_comm_null() {
		return nil, nil
	}
	ns, err := newState(out, false, time.Now().Add(c.cfg.timeout), rec.Label())
	if err != nil {
		if !errors.Is(err, collective.ErrTimeout) {
			call("MPI_Comm_free", func() C.int { return C.mgla_comm_free(&out) })
		}
		// After a timeout MPI still holds the duplication of out: freeing
		// out would let libnbc progress it on a freed communicator (a
		// SIGSEGV in a later poll), so out is left, as Close leaves
		// abandoned communicators.
		s.breakWith(err)
		return nil, err
	}
	return []collective.Comm{&Comm{st: ns, cfg: c.cfg}}, nil
}

// split makes the blocking MPI_Comm_split. With MPI_THREAD_MULTIPLE it runs
// on a goroutine of its own while the caller waits for it by the timeout:
// a rank that never comes (it finalized after giving up on the exchange)
// then costs an ErrTimeout, and the goroutine and its thread stay in MPI
// for the life of the process. Below MPI_THREAD_MULTIPLE a blocked split
// would hold MPI for the whole process anyway: it runs in the caller.
func (s *commState) split(color, key C.int, label string, timeout time.Duration) (C.MPI_Comm, error) {
	type result struct {
		out C.MPI_Comm
		rc  C.int
	}
	done := make(chan result, 1)
	run := func() {
		var r result
		mpiCall(func() { r.rc = C.mgla_comm_split(s.data, color, key, &r.out) })
		done <- r
	}
	if engine.mode == direct {
		go run()
	} else {
		run() // done is ready before the timer starts
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.rc != 0 {
			err := engineError("MPI_Comm_split", r.rc)
			s.breakWith(err)
			return nil, err
		}
		return r.out, nil
	case <-timer.C:
		err := fmt.Errorf("%w: mpi: %s: a rank that sent its record did not come to MPI_Comm_split within %v (it finalized or is stuck; this rank's thread stays in the blocking call)",
			collective.ErrTimeout, label, timeout)
		s.breakWith(err)
		return nil, err
	}
}

// waitLateSplits waits below MPI_THREAD_MULTIPLE, by the deadline, until
// no Split that timed out in this process may still make its blocking split
// (splitLate): that split would hold MPI for the whole process at a moment
// no rank can foresee, and a Split here could then wait for a rank that
// waits for this process's MPI. It returns ErrTimeout at the deadline.
func waitLateSplits(deadline time.Time, label string, timeout time.Duration) error {
	if engine.mode == direct {
		return nil
	}
	for sleep := 100 * time.Microsecond; ; sleep = min(2*sleep, 10*time.Millisecond) {
		engine.final.Lock()
		n := len(engine.lateSplits)
		engine.final.Unlock()
		if n == 0 {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w: mpi: %s: an earlier Split of this process timed out and may still make its blocking MPI_Comm_split, which below MPI_THREAD_MULTIPLE holds MPI for the whole process; it did not within %v", collective.ErrTimeout, label, timeout)
		}
		time.Sleep(min(sleep, left))
	}
}

// splitLate finishes, on its own goroutine, the record exchange of a Split
// that timed out here, and makes the split if the exchange completes with
// every rank's record alike. The other ranks may have completed their
// exchange against this rank's record (it was delivered, only theirs came
// late, or this rank's sends had not completed), and then wait in the
// blocking MPI_Comm_split, which no timeout covers: this rank must join
// them there. The exchange completes only if every rank posted its record,
// so every rank gets there, on its own call or here. The new communicator
// is left, and this rank makes no confirming exchange: the others' Split
// then times out in theirs, so they return ErrTimeout too. The goroutine
// polls until the exchange completes or MPI is finalized; s is broken, so
// no other call uses its requests.
func (s *commState) splitLate(color, key C.int) {
	sleep := 100 * time.Microsecond
	for {
		engine.final.Lock()
		if engine.finalized { // Finalize abandoned the requests
			engine.final.Unlock()
			return
		}
		var done, rc C.int
		mpiCall(func() { done = C.mgla_poll(C.int(2*s.size), s.reqs.p, 0, engine.yield, &rc) })
		if rc != 0 || done != 0 {
			// The split without final held: it waits for ranks that may
			// never come (one that finalized), and Finalize and World must
			// not wait with it. It stays in lateSplits until it returns,
			// for waitLateSplits.
			engine.final.Unlock()
			if rc == 0 && collective.RecordsAgree(s.records(), s.size) {
				var out C.MPI_Comm
				mpiCall(func() { C.mgla_comm_split(s.data, color, key, &out) })
			}
			engine.final.Lock()
			delete(engine.lateSplits, s)
			engine.final.Unlock()
			return
		}
		engine.final.Unlock()
		time.Sleep(sleep)
		sleep = min(2*sleep, 10*time.Millisecond)
	}
}

// startSplitLate registers s's late split, for Finalize and
// waitLateSplits, and starts splitLate.
func (s *commState) startSplitLate(color, key C.int) {
	engine.final.Lock()
	defer engine.final.Unlock()
	if !engine.finalized {
		engine.lateSplits[s] = struct{}{}
		go s.splitLate(color, key)
	}
}

// OnClose arranges for f to run when c is closed (collective.CloseNotifier),
// at once if it already is.
func (c *Comm) OnClose(f func()) { c.hooks.Add(f) }

// records is the metadata buffer as int64 words (size+3 records).
func (s *commState) records() []int64 {
	return unsafe.Slice((*int64)(s.meta), (s.size+3)*collective.RecordWords)
}

func (s *commState) recordAt(slot int) unsafe.Pointer {
	return unsafe.Add(s.meta, slot*collective.RecordBytes)
}

// breakWith marks the communicator broken by err after MPI was left holding
// requests (and the memory they use): later calls return ErrClosed.
func (s *commState) breakWith(err error) {
	s.broken = err
	s.abandoned = true
}

// exchange sends rec to every other rank and receives theirs by the
// deadline, and compares them: the collective check. It returns nil when
// every rank's record is this one's, ErrMismatch (collective.CompareRecords,
// the same text on every rank) when they differ, ErrTimeout when a rank's
// does not come. After a timeout the exchange's requests are abandoned, or,
// when late is not nil, left to late (which must not block).
func (s *commState) exchange(rec *collective.Record, deadline time.Time, timeout time.Duration, late func()) error {
	words := s.records()
	rec.Encode(words[s.rank*collective.RecordWords:])
	rank, size := C.int(s.rank), C.int(s.size)
	if err := call("MPI_Isend/MPI_Irecv", func() C.int {
		return C.mgla_exchange(s.check, rank, size, (*C.char)(s.meta), collective.RecordBytes, 0, s.reqs.p)
	}); err != nil {
		s.abandonExchange()
		s.breakWith(err)
		return err
	}
	ok, err := wait(s.reqs, 2*s.size, deadline, hotTime(0), nil)
	if err != nil {
		s.abandonExchange()
		s.breakWith(err)
		return err
	}
	if !ok {
		var missing []int
		if late == nil {
			missing = s.abandonExchange()
		} else {
			missing = s.missingRecords()
		}
		err := fmt.Errorf("%w: mpi: %s: no word from %s within %v (they did not make this call, or are stuck before it)",
			collective.ErrTimeout, rec.Label(), collective.RankList(missing), timeout)
		s.breakWith(err)
		if late != nil {
			late()
		}
		return err
	}
	if collective.RecordsAgree(words, s.size) {
		return nil
	}
	recs := make([]collective.Record, s.size)
	for r := range recs {
		var ok bool
		if recs[r], ok = collective.DecodeRecord(words[r*collective.RecordWords:]); !ok {
			err := fmt.Errorf("%w: mpi: %s: garbled metadata from rank %d", collective.ErrEngine, rec.Label(), r)
			s.breakWith(err)
			return err
		}
	}
	return collective.CompareRecords(recs)
}

// abandonExchange gives up on the exchange's requests that did not complete
// and returns the ranks whose record did not arrive.
func (s *commState) abandonExchange() []int {
	missing := s.missingRecords()
	for r := range s.size {
		if r == s.rank {
			continue
		}
		if !completed(s.reqs, r) {
			abandon(s.reqs, r, true)
		}
		if !completed(s.reqs, s.size+r) {
			abandon(s.reqs, s.size+r, false)
		}
	}
	return missing
}

// missingRecords returns the ranks whose record has not arrived.
func (s *commState) missingRecords() []int {
	var missing []int
	for r := range s.size {
		if r != s.rank && !completed(s.reqs, r) {
			missing = append(missing, r)
		}
	}
	return missing
}
