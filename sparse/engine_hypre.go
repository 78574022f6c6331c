//go:build mpi

package sparse

/*
#cgo pkg-config: ompi-c
#cgo CFLAGS: -I/usr/include/hypre -O2
#cgo LDFLAGS: -lHYPRE
#include <stdlib.h>
#include "hypre_shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

// defaultPrecond: with hypre the Go Krylov ops default to one AMG V-cycle.
const defaultPrecond = AMGPrecond

const errLen = 512

// hypreMu serialises every call into hypre in the process: hypre keeps
// global state (its error flag, its memory pools), so two solvers must not
// run at once. It does not order runs across ranks: MPI-mode solvers run
// from one goroutine at a time (Solver's doc), or two ranks that took it
// for different solvers wait for each other for ever.
var hypreMu sync.Mutex

// hypreEngine is a hypre IJ/ParCSR matrix on this rank's row block, with
// BoomerAMG hierarchies and Krylov solvers for A and Aᵀ (hypre_shim.c).
type hypreEngine struct {
	p       *Pattern
	e       *C.mh_engine
	tol     float64
	maxIter int
	timeout time.Duration // of meet
	broken  error         // a timed-out meet: the communicator holds an abandoned request
}

func hypreErr(what string, rc C.int, buf []C.char) error {
	return fmt.Errorf("%w: %s: %s (code %d)", ErrHypre, what, C.GoString(&buf[0]), int(rc))
}

func newEngine(p *Pattern, cfg *config) (engine, error) {
	comm, err := cfg.commOrSelf()
	if err != nil {
		return nil, err
	}
	if comm.size == 1 && p.Rows() != p.n {
		return nil, fmt.Errorf("%w: %v on one process: give every row (or WithComm to distribute)", ErrBadMatrix, p)
	}
	ccfg := C.mh_config{
		method: C.int(cfg.method), tol: C.double(cfg.tol), max_iter: C.int(cfg.maxIter),
		coarsen: C.int(cfg.coarsen), interp: C.int(cfg.interp), relax: C.int(cfg.smoother),
		cycle: C.int(cfg.cycle), agg_levels: C.int(cfg.aggLevels), restart: C.int(cfg.restart),
		print_level: C.int(cfg.printLevel), strong: C.double(cfg.strong),
	}
	names := HypreSettings()
	var cnames []*C.char
	var cvals []C.double
	for _, name := range names {
		v, ok := cfg.set[name]
		if !ok {
			continue
		}
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		if C.mh_check_setting(cs) == 0 {
			return nil, fmt.Errorf("%w: BoomerAMG setting %q unknown to the shim", ErrBadInput, name)
		}
		cnames = append(cnames, cs)
		cvals = append(cvals, C.double(v))
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(cnames) > 0 {
		ccfg.nset = C.int(len(cnames))
		// C copies the names and values in mh_create; the arrays live in C
		// memory for the call.
		na := (**C.char)(C.malloc(C.size_t(len(cnames)) * C.size_t(unsafe.Sizeof(cnames[0]))))
		defer C.free(unsafe.Pointer(na))
		copy(unsafe.Slice(na, len(cnames)), cnames)
		ccfg.set_names = na
		ccfg.set_values = &cvals[0]
		pin.Pin(&cvals[0])
	}
	rowPtr := make([]C.int, len(p.rowPtr))
	for i, v := range p.rowPtr {
		rowPtr[i] = C.int(v)
	}
	cols := make([]C.int, max(len(p.colInd), 1))
	for i, v := range p.colInd {
		cols[i] = C.int(v)
	}
	buf := make([]C.char, errLen)
	var e *C.mh_engine
	hypreMu.Lock()
	defer hypreMu.Unlock()
	rc := C.mh_create(&e, comm.fortran, C.int(p.n), C.int(p.firstRow), C.int(p.Rows()),
		&rowPtr[0], &cols[0], &ccfg, C.longlong(cfg.timeout.Nanoseconds()), &buf[0], errLen)
	if rc != 0 {
		C.mh_destroy(e)
		switch rc {
		case -2:
			return nil, fmt.Errorf("%w: %s", ErrBadMatrix, C.GoString(&buf[0]))
		case C.MH_TIMEOUT:
			return nil, fmt.Errorf("%w: sparse: NewSolver: a rank did not join the exchange of the row blocks within %v", collective.ErrTimeout, cfg.timeout)
		}
		return nil, hypreErr("creating the matrix", rc, buf)
	}
	return &hypreEngine{p: p, e: e, tol: cfg.tol, maxIter: cfg.maxIter, timeout: cfg.timeout}, nil
}

func (h *hypreEngine) load(vals []float64) error {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	buf := make([]C.char, errLen)
	if rc := C.mh_load(h.e, (*C.double)(ptrOf(vals)), &buf[0], errLen); rc != 0 {
		return hypreErr("loading values", rc, buf)
	}
	return nil
}

func (h *hypreEngine) setup(trans bool) error {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	buf := make([]C.char, errLen)
	if rc := C.mh_setup(h.e, cbool(trans), &buf[0], errLen); rc != 0 {
		return hypreErr("AMG setup", rc, buf)
	}
	return nil
}

func (h *hypreEngine) solve(trans bool, b, x []float64) (Info, error) {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	buf := make([]C.char, errLen)
	var iters, status C.int
	var res C.double
	rc := C.mh_solve(h.e, cbool(trans), (*C.double)(ptrOf(b)), (*C.double)(ptrOf(x)), &iters, &res, &status, &buf[0], errLen)
	info := Info{Iterations: int(iters), Residual: float64(res)}
	info.Status = finalStatus(info, h.tol, h.maxIter, status == 0)
	if rc != 0 {
		info.Status = Failed
		return info, hypreErr("solve", rc, buf)
	}
	return info, nil
}

func (h *hypreEngine) vcycle(trans bool, r, z []float64) error {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	buf := make([]C.char, errLen)
	if rc := C.mh_vcycle(h.e, cbool(trans), (*C.double)(ptrOf(r)), (*C.double)(ptrOf(z)), &buf[0], errLen); rc != 0 {
		return hypreErr("V-cycle", rc, buf)
	}
	return nil
}

func (h *hypreEngine) matvec(trans bool, x, y []float64) error {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	buf := make([]C.char, errLen)
	if rc := C.mh_matvec(h.e, cbool(trans), (*C.double)(ptrOf(x)), (*C.double)(ptrOf(y)), &buf[0], errLen); rc != 0 {
		return hypreErr("product", rc, buf)
	}
	return nil
}

func (h *hypreEngine) dot(a, b []float64) (float64, error) {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	var s float64
	for i, x := range a {
		s += x * b[i]
	}
	return h.sum(s)
}

// sum is x summed over the ranks (untimed: inside a solve, see doc.go).
func (h *hypreEngine) sum(x float64) (float64, error) {
	buf := make([]C.char, errLen)
	v := C.double(x)
	if rc := C.mh_sum(h.e, &v, &buf[0], errLen); rc != 0 {
		return 0, fmt.Errorf("%w: %s", ErrHypre, C.GoString(&buf[0]))
	}
	return float64(v), nil
}

func (h *hypreEngine) gather(local []float64) ([]float64, error) {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	global := make([]float64, h.p.n)
	buf := make([]C.char, errLen)
	if rc := C.mh_gather(h.e, (*C.double)(ptrOf(local)), (*C.double)(ptrOf(global)), &buf[0], errLen); rc != 0 {
		return nil, fmt.Errorf("%w: %s", ErrHypre, C.GoString(&buf[0]))
	}
	return global, nil
}

// maxAll and agree are the run's own exchanges, before and between hypre's
// collective calls, and wait for the other ranks at most the solver's
// timeout (timedReduce).
func (h *hypreEngine) maxAll(x float64) (float64, error) {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	return h.timedReduce(x, 0)
}

func (h *hypreEngine) agree(ok bool) (bool, error) {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	v := 0.0
	if ok {
		v = 1
	}
	all, err := h.timedReduce(v, 1)
	return all == 1, err
}

// timedReduce is the largest (op 0) or smallest (op 1) x of the ranks,
// waiting at most the solver's timeout; the caller holds hypreMu. A timeout
// breaks the engine: MPI keeps the abandoned request, which a late rank may
// still complete, so no later call may use the communicator. A rank that
// comes after the others gave up completes the exchange against their
// abandoned requests and times out in the next, which they never make.
func (h *hypreEngine) timedReduce(x float64, op int) (float64, error) {
	if h.broken != nil {
		return 0, h.brokenErr()
	}
	buf := make([]C.char, errLen)
	v := C.double(x)
	switch rc := C.mh_timed_reduce(h.e, &v, C.int(op), C.longlong(h.timeout.Nanoseconds()), &buf[0], errLen); rc {
	case 0:
		return float64(v), nil
	case C.MH_TIMEOUT:
		h.broken = fmt.Errorf("%w: sparse: a rank of the solver's communicator did not come to an exchange of the run within %v (it skipped the run, came later or stopped); the solver is broken on this rank: make a new one",
			collective.ErrTimeout, h.timeout)
		return 0, h.broken
	default:
		return 0, fmt.Errorf("%w: %s", ErrHypre, C.GoString(&buf[0]))
	}
}

func (h *hypreEngine) free() {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	C.mh_free_hierarchies(h.e)
}

// usable: after mpi.Finalize an MPI call aborts the job (Open MPI), so a
// run then is an error instead.
func (h *hypreEngine) usable() error {
	if mpi.Finalized() {
		return fmt.Errorf("%w: mpi.Finalize was called", collective.ErrClosed)
	}
	hypreMu.Lock()
	defer hypreMu.Unlock()
	if h.broken != nil {
		return h.brokenErr()
	}
	return nil
}

// brokenErr is the error of every call after a timed-out meet; the caller
// holds hypreMu.
func (h *hypreEngine) brokenErr() error {
	return fmt.Errorf("%w: sparse: the solver was broken by an earlier timeout (%w)", collective.ErrClosed, h.broken)
}

func (h *hypreEngine) close() {
	hypreMu.Lock()
	defer hypreMu.Unlock()
	C.mh_destroy(h.e)
	h.e = nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// ptrOf is the address of a slice's first element (nil for an empty slice,
// which the shim never reads).
func ptrOf(s []float64) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// HypreAvailable reports whether this build has hypre (the mpi build tag).
func HypreAvailable() bool { return true }
