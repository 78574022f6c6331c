//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include "mgla_mpi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
)

// The thread level MPI provides decides how Go calls into it (the package
// documentation, "Threads"): directly (MPI_THREAD_MULTIPLE), under one
// process-wide mutex (SERIALIZED), or on the one OS thread that initialised
// MPI (FUNNELED and SINGLE), which a goroutine locked to it serves.
type threadMode int

const (
	direct threadMode = iota
	serialized
	funneled
)

var engine struct {
	once      sync.Once
	initErr   error
	mode      threadMode
	provided  string
	mu        sync.Mutex  // serialized mode: held around every MPI call
	funnel    chan func() // funneled mode: the calls the MPI thread runs
	tagUB     int         // MPI_TAG_UB
	yield     C.int       // 1: yield the processor while polling (oversubscribed)
	final     sync.Mutex  // Finalize
	finalized bool        // guarded by final
	started   bool        // MPI initialised by World
	world     *commState  // the dup of MPI_COMM_WORLD every World view shares
	// lateSplits are the Splits whose exchange splitLate still polls,
	// guarded by final.
	lateSplits map[*commState]struct{}
}

// mpiCall runs f, which calls MPI, as the thread level requires.
func mpiCall(f func()) {
	switch engine.mode {
	case direct:
		f()
	case serialized:
		engine.mu.Lock()
		defer engine.mu.Unlock()
		f()
	default:
		done := make(chan struct{})
		engine.funnel <- func() { f(); close(done) }
		<-done
	}
}

// requiredLevel is the thread level World asks for: MPI_THREAD_MULTIPLE, or
// the level MGLA_MPI_THREAD_LEVEL names (single, funneled, serialized,
// multiple), which the tests use to run the fallbacks.
func requiredLevel() (C.int, error) {
	switch v := strings.ToLower(os.Getenv("MGLA_MPI_THREAD_LEVEL")); v {
	case "", "multiple":
		return C.mgla_thread_multiple(), nil
	case "serialized":
		return C.mgla_thread_serialized(), nil
	case "funneled":
		return C.mgla_thread_funneled(), nil
	case "single":
		return C.mgla_thread_single(), nil
	default:
		return 0, fmt.Errorf("%w: mpi: MGLA_MPI_THREAD_LEVEL=%q (want single, funneled, serialized or multiple)", collective.ErrBadCall, v)
	}
}

// initialise initialises MPI once, on a goroutine locked to its OS thread
// that stays to serve the calls when MPI provides less than
// MPI_THREAD_SERIALIZED.
func initialise() error {
	engine.once.Do(func() {
		required, err := requiredLevel()
		if err != nil {
			engine.initErr = err
			return
		}
		tuneLibnbc()
		ready := make(chan error)
		go func() {
			runtime.LockOSThread()
			var provided C.int
			if rc := C.mgla_init(required, &provided); rc != 0 {
				ready <- engineError("MPI_Init_thread", rc)
				return
			}
			switch {
			case provided >= C.mgla_thread_multiple():
				engine.mode, engine.provided = direct, "MPI_THREAD_MULTIPLE"
			case provided >= C.mgla_thread_serialized():
				engine.mode, engine.provided = serialized, "MPI_THREAD_SERIALIZED"
			default:
				engine.mode, engine.provided = funneled, "MPI_THREAD_FUNNELED"
				if provided == C.mgla_thread_single() {
					engine.provided = "MPI_THREAD_SINGLE"
				}
				engine.funnel = make(chan func())
			}
			var ub C.int
			C.mgla_tag_ub(&ub)
			engine.tagUB = int(ub)
			engine.started = true
			engine.lateSplits = map[*commState]struct{}{}
			engine.yield = oversubscribed()
			ready <- nil
			if engine.mode != funneled {
				runtime.UnlockOSThread()
				return
			}
			for f := range engine.funnel {
				f()
			}
		}()
		engine.initErr = <-ready
	})
	return engine.initErr
}

// libnbcReduce is the Open MPI MCA parameter that picks the algorithm of
// MPI_Ireduce in the libnbc component: "2" is the binomial tree. Left to
// itself (0) libnbc picks a segmented chain for 4 ranks or fewer and
// messages of 64 KiB or more, which on one node measured 2 to 3 times as
// slow as the blocking MPI_Reduce (BENCHMARKS.md, "Collectives over MPI");
// the binomial tree is within a few percent of it.
const libnbcReduce = "OMPI_MCA_coll_libnbc_ireduce_algorithm"

// tuneLibnbc sets libnbcReduce to the binomial tree before MPI starts,
// unless the environment already sets it (the user's choice wins). Open
// MPI reads MCA parameters from the environment at MPI_Init; other MPIs
// ignore the variable.
func tuneLibnbc() {
	if _, set := os.LookupEnv(libnbcReduce); !set {
		os.Setenv(libnbcReduce, "2")
	}
}

// mcaInt reads the integer MCA parameter name (without the OMPI_MCA_
// prefix) as MPI's tool interface (MPI_T) reports it: the value MPI uses.
func mcaInt(name string) (int, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var v, rc C.int
	mpiCall(func() { rc = C.mgla_cvar_int(cname, &v) })
	if rc != 0 {
		return 0, fmt.Errorf("%w: mpi: MPI_T control variable %s: error %d", collective.ErrEngine, name, int(rc))
	}
	return int(v), nil
}

// oversubscribed says whether this node runs more ranks than it has
// processors online (OMPI_COMM_WORLD_LOCAL_SIZE, set by mpirun, against
// the node's processors, not runtime.NumCPU: mpirun binds each rank to a
// core, so that counts one), or what
// MGLA_MPI_YIELD (0 or 1) says: then polls yield the processor between
// tests.
func oversubscribed() C.int {
	switch os.Getenv("MGLA_MPI_YIELD") {
	case "0":
		return 0
	case "1":
		return 1
	}
	local, err := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
	if err == nil && local > int(C.mgla_online_cpus()) {
		return 1
	}
	return 0
}

// engineError wraps MPI error code rc from the named MPI function.
func engineError(what string, rc C.int) error {
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	C.mgla_error_string(rc, &buf[0])
	return fmt.Errorf("%w: mpi: %s: %s (code %d)", collective.ErrEngine, what, C.GoString(&buf[0]), int(rc))
}

// call runs one C function returning an MPI error code as mpiCall requires
// and turns a failure into an ErrEngine error.
func call(what string, f func() C.int) error {
	var rc C.int
	mpiCall(func() { rc = f() })
	if rc != 0 {
		return engineError(what, rc)
	}
	return nil
}

// requests is C memory for n MPI requests (MPI keeps their addresses while
// they are active, so they cannot live in Go memory).
type requests struct {
	p *C.MPI_Request
	n int
}

func newRequests(n int) requests {
	return requests{p: (*C.MPI_Request)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.MPI_Request(nil))))), n: n}
}

func (r requests) at(i int) *C.MPI_Request {
	return (*C.MPI_Request)(unsafe.Add(unsafe.Pointer(r.p), uintptr(i)*unsafe.Sizeof(C.MPI_Request(nil))))
}

func (r requests) free() { C.free(unsafe.Pointer(r.p)) }

// pollSlice is how long one C poll spins before Go checks the deadline.
const pollSlice = 200 * time.Microsecond

// wait polls reqs[0:n] until they complete (true), the deadline passes
// (false) or a test fails. It spins (yielding the processor) for hot, about
// as long as the transfer should take, then sleeps between polls with a
// backoff up to a millisecond, never more than a sixteenth of the time
// waited so far, so that a rank waiting for a late peer leaves the
// processor to the others.
//
// The local work side (may be nil) runs where it costs the transfer
// nothing: a chunk at a time instead of those sleeps, while this rank waits
// for a late peer, and the rest once the requests complete, before wait
// returns true. Done during the spin, between tests, it would compete with
// MPI's own copies on the same core and hold back the peers (BENCHMARKS.md,
// "Collectives over MPI", measures the ways), unless MPI moves the data by
// single copy: then the peers copy, this rank only waits, and side.eager
// has a chunk done between every two tests from the start (placeDuring).
// Where the process has a processor to spare, Do runs the work on a
// goroutine of its own instead (spareProcessor) and passes side nil.
func wait(reqs requests, n int, deadline time.Time, hot time.Duration, side *localWork) (bool, error) {
	start := time.Now()
	sleep := 20 * time.Microsecond
	idle := false // past the spin: the peers are late
	for {
		spin := pollSlice
		if (idle || side.eagerly()) && side.step() {
			spin = 0 // one test between chunks
		}
		var done, rc C.int
		mpiCall(func() { done = C.mgla_poll(C.int(n), reqs.p, C.int64_t(spin), engine.yield, &rc) })
		if rc != 0 {
			return false, engineError("MPI_Testall", rc)
		}
		if done != 0 {
			side.finish()
			return true, nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return false, nil
		}
		waited := now.Sub(start)
		if waited < hot {
			continue
		}
		idle = true
		if side.pending() {
			continue
		}
		time.Sleep(min(sleep, waited/16, deadline.Sub(now)))
		sleep = min(2*sleep, time.Millisecond)
	}
}

// besideBytes is the smallest local work worth a goroutine of its own.
const besideBytes = 256 << 10

// spareProcessor says whether this process may run on more than one
// processor (runtime.NumCPU follows the affinity mask that mpirun's binding
// sets) and polls do not yield it (the node is not oversubscribed): then
// the local work of a call runs beside MPI's transfer on another
// goroutine. MGLA_MPI_BESIDE (0 or 1) overrides.
func spareProcessor() bool {
	switch os.Getenv("MGLA_MPI_BESIDE") {
	case "0":
		return false
	case "1":
		return true
	}
	return runtime.NumCPU() > 1 && engine.yield == 0
}

// localWork is a copy (src set) or a clear (src nil) of dst that a call
// does besides MPI's transfer: the root's copy of Bcast, the zeros of the
// ranks other than the root of Reduce and Gather (see wait).
type localWork struct {
	dst, src []byte
	done     int
	eager    bool // a chunk between every two tests from the start (placeDuring)
}

// localChunk is how many bytes localWork.step handles between two tests.
const localChunk = 256 << 10

// step does the next chunk and reports whether there was one.
func (w *localWork) step() bool {
	if !w.pending() {
		return false
	}
	end := min(w.done+localChunk, len(w.dst))
	if w.src != nil {
		copy(w.dst[w.done:end], w.src[w.done:end])
	} else {
		clear(w.dst[w.done:end])
	}
	w.done = end
	return true
}

func (w *localWork) pending() bool { return w != nil && w.done < len(w.dst) }

func (w *localWork) eagerly() bool { return w != nil && w.eager }

// finish does what is left of the work (nothing when w is nil).
func (w *localWork) finish() {
	for w.step() {
	}
}

// hotTime is how long wait spins for a call that moves bytes per rank: a
// millisecond plus the bytes at a pessimistic 250 MB/s.
func hotTime(bytes int) time.Duration {
	return time.Millisecond + time.Duration(bytes)*4*time.Nanosecond
}

// completed tests reqs[i] alone (after wait gave up) and says whether it
// completed.
func completed(reqs requests, i int) bool {
	var flag C.int
	var rc C.int
	mpiCall(func() { rc = C.mgla_test(reqs.at(i), &flag) })
	return rc == 0 && flag != 0
}

// abandon gives up on reqs[i] (a receive when recv).
func abandon(reqs requests, i int, recv bool) {
	r := C.int(0)
	if recv {
		r = 1
	}
	mpiCall(func() { C.mgla_abandon(reqs.at(i), r) })
}
