//go:build mpi

package dist

/*
#cgo pkg-config: ompi-c
#cgo LDFLAGS: -lscalapack-openmpi
#include <stdlib.h>
#include "scalapack.h"
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// Grid is a P×Q grid of the processes of an MPI communicator, rank r at
// process row r/Q and column r mod Q (BLACS row-major order), with its
// BLACS context. Close frees the context; the communicator stays the
// caller's.
//
// A Grid keeps, between calls, what its operations would otherwise make
// afresh on every call: one scratch array, as long as the largest input a
// factorization on the grid has copied so far (the copy that Potrs,
// LogDet, Potri and Syevd factor and throw away; an element type other
// than the last one's or a larger input replaces it), and the BLACS
// contexts of the data moves through p?gemr2d (a 1×1 grid per root rank, a
// P·Q×1 grid for row blocks). Close frees them all.
type Grid struct {
	comm       *mpi.Comm // the grid's own (a split of parent), for its agreements and moves
	parent     *mpi.Comm // the communicator it was made from
	p, q       int
	prow, pcol int
	ctxt       C.int
	closed     bool

	scratch any           // []T, the factorizations' working copy
	single  map[int]C.int // rank → context of the 1×1 grid on it (-1 elsewhere)
	column  *C.int        // context of the size×1 grid, nil until made
}

// NewGrid makes the P×Q grid of comm's processes; p = q = 0 picks the
// near-square grid (cyclic.NearSquareGrid). Every rank of comm must call it
// with the same p and q, and p·q must be comm's size: otherwise every rank
// gets the same error (ErrBadInput or ErrMismatch). The grid agrees on its
// calls over a communicator of its own (a Split of comm, freed by Close),
// so that grids made on one communicator stay apart; make and close grids
// in the same order on every rank, as any collective.
func NewGrid(comm *mpi.Comm, p, q int) (*Grid, error) {
	defer exclusive()()
	if comm == nil {
		return nil, fmt.Errorf("%w: dist: NewGrid needs a communicator", ErrBadInput)
	}
	n := comm.Size()
	if p == 0 && q == 0 {
		p, q = cyclic.NearSquareGrid(n)
	}
	code := 0.0
	if p < 1 || q < 1 || p > n || q > n || p*q != n { // (p, q ≤ n: p·q cannot wrap round)
		code = 1
	}
	got, err := allReduce(comm, collective.Max, []float64{code, float64(p), -float64(p), float64(q), -float64(q)})
	if err != nil {
		return nil, err
	}
	if got[1] != -got[2] || got[3] != -got[4] {
		return nil, fmt.Errorf("%w: dist: NewGrid: ranks ask for different grids (p in [%g, %g], q in [%g, %g])", ErrMismatch, -got[2], got[1], -got[4], got[3])
	}
	if got[0] != 0 {
		return nil, fmt.Errorf("%w: dist: NewGrid: a %d×%d grid does not fit %d processes", ErrBadInput, p, q, n)
	}
	// The grid's own communicator for its agreements: two grids made on one
	// communicator and used from two goroutines would otherwise pair their
	// agreements (same op, same shapes) and then wait in each other's
	// ScaLAPACK calls for ever.
	cs, err := comm.Split(func(int) int { return 0 }, func(r int) int { return r })
	if err != nil {
		return nil, fmt.Errorf("dist: NewGrid: %w", err)
	}
	own, ok := cs[0].(*mpi.Comm)
	if !ok {
		return nil, fmt.Errorf("%w: dist: NewGrid: a split of an MPI communicator is a %T", ErrEngine, cs[0])
	}
	g := &Grid{comm: own, parent: comm, p: p, q: q}
	// BLACS on the grid's own communicator too: the caller may close
	// comm while the grid lives (the contexts made later, for p?gemr2d, use
	// the handle; on a freed communicator they crashed).
	g.ctxt = g.blacsHandle()
	row := C.CString("Row")
	defer C.free(unsafe.Pointer(row))
	C.Cblacs_gridinit(&g.ctxt, row, C.int(p), C.int(q))
	var np, nq, mr, mc C.int
	C.Cblacs_gridinfo(g.ctxt, &np, &nq, &mr, &mc)
	g.prow, g.pcol = int(mr), int(mc)
	if int(np) != p || int(nq) != q || g.prow*q+g.pcol != comm.Rank() {
		C.Cfree_blacs_system_handle(g.blacsHandle())
		own.Close()
		return nil, fmt.Errorf("%w: dist: BLACS made a %d×%d grid with this rank %d at (%d,%d), want %d×%d", ErrEngine, np, nq, comm.Rank(), mr, mc, p, q)
	}
	return g, nil
}

// Shape is the grid's P×Q.
func (g *Grid) Shape() (p, q int) { return g.p, g.q }

// Coords is this process's row and column in the grid.
func (g *Grid) Coords() (prow, pcol int) { return g.prow, g.pcol }

// blacsHandle is the BLACS system handle of the grid's communicator, looked
// up on every use: BLACS compacts its table of handles when many are freed
// (Cfree_blacs_system_handle), which renumbers the live ones, so a stored
// index went stale once some 20 grids had been closed while others lived
// (BLACS then aborted the job).
func (g *Grid) blacsHandle() C.int {
	return C.Csys2blacs_handle(C.mgla_comm_f2c(C.int(g.comm.Fortran())))
}

// Meet is a checked barrier of the grid's ranks for the op called name,
// saying whether its gradient was built (collective.Call.Differentiated):
// ranks that meet in different ops, or in one op with and without its
// gradient, get ErrMismatch on every rank. Package distops meets so before
// each op that has a gradient. Collective.
func (g *Grid) Meet(name string, differentiated bool) error {
	defer exclusive()()
	if g.closed {
		return fmt.Errorf("%w: dist: %s: the grid is closed", ErrBadInput, name)
	}
	return g.comm.Do(&collective.Call{Kind: collective.Barrier, Name: name, Differentiated: differentiated})
}

// Comm is the communicator the grid was made from.
func (g *Grid) Comm() *mpi.Comm { return g.parent }

// Close frees the grid's BLACS contexts and its scratch array
// (collective: every rank calls it). Operations on a closed grid return an
// error matching ErrBadInput. After mpi.Finalize it only marks the grid
// closed (BLACS would free MPI communicators, which MPI forbids then: the
// job aborted).
func (g *Grid) Close() error {
	defer exclusive()()
	if g == nil || g.closed {
		return nil
	}
	g.closed = true
	g.scratch = nil
	defer g.comm.Close()
	if mpi.Finalized() {
		return nil
	}
	for _, c := range g.single {
		if c >= 0 {
			C.Cblacs_gridexit(c)
		}
	}
	g.single = nil
	if g.column != nil {
		C.Cblacs_gridexit(*g.column)
		g.column = nil
	}
	C.Cblacs_gridexit(g.ctxt)
	C.Cfree_blacs_system_handle(g.blacsHandle()) // then g.comm, deferred above
	return nil
}

// workCopy is a copy of m (on the same grid, with its layout) whose local
// array is the grid's scratch array, and whether m's local elements are
// all finite: one pass that copies and checks. The copy lives until the
// next operation on the grid; it must not be returned to the caller.
func workCopy[T Scalar](m *Matrix[T]) (*Matrix[T], bool) {
	g := m.Grid
	buf, _ := g.scratch.([]T)
	if cap(buf) < len(m.Local) {
		buf = make([]T, len(m.Local))
		g.scratch = buf
	}
	c := *m
	c.Local = buf[:len(m.Local)]
	return &c, copyFinite(c.Local, m.Local)
}

// singleContext is the context of the 1×1 grid on rank root, made on first
// use (collective: BLACS makes an MPI communicator), -1 on other ranks.
func (g *Grid) singleContext(root int) C.int {
	if c, ok := g.single[root]; ok {
		return c
	}
	ctxt := g.blacsHandle()
	usermap := C.int(root)
	C.Cblacs_gridmap(&ctxt, &usermap, 1, 1, 1)
	if g.comm.Rank() != root {
		ctxt = -1
	}
	if g.single == nil {
		g.single = map[int]C.int{}
	}
	g.single[root] = ctxt
	return ctxt
}

// columnContext is the context of the size×1 grid, rank r in process row
// r, made on first use (collective).
func (g *Grid) columnContext() C.int {
	if g.column == nil {
		ctxt := g.blacsHandle()
		col := C.CString("Col")
		defer C.free(unsafe.Pointer(col))
		C.Cblacs_gridinit(&ctxt, col, C.int(g.comm.Size()), 1)
		g.column = &ctxt
	}
	return *g.column
}

// engineMu keeps the other goroutines of the process out of BLACS and
// ScaLAPACK while one is in a call of this package: they keep process-wide
// state and are not thread-safe (two grids used from two goroutines at once
// crashed in pdpotrf). A call holds it from its first agreement to its end
// (exclusive), so two ranks never wait in ScaLAPACK, which has no timeout,
// for each other's other grid: ranks whose goroutines take their grids in
// different orders meet in the timed agreements instead and get ErrTimeout
// or ErrMismatch. The exported functions and methods take it; nothing in
// the package calls them.
var engineMu sync.Mutex

// exclusive takes engineMu and returns its release.
func exclusive() func() {
	engineMu.Lock()
	return engineMu.Unlock
}

// allReduce is op over every rank's xs, on every rank.
func allReduce(comm *mpi.Comm, op collective.ReduceOp, xs []float64) ([]float64, error) {
	return allReduceNamed(comm, op, xs, "dist")
}

// allReduceNamed is allReduce under the collective call name name, which
// the communicator compares across the ranks (ErrMismatch).
func allReduceNamed(comm *mpi.Comm, op collective.ReduceOp, xs []float64, name string) ([]float64, error) {
	out := make([]float64, len(xs))
	send, err := sharding.NewHostBuffer(xs)
	if err != nil {
		return nil, err
	}
	recv, err := sharding.NewHostBuffer(out)
	if err != nil {
		return nil, err
	}
	call := &collective.Call{Kind: collective.AllReduce, Op: op, Dtype: tensor.Float64, Count: len(xs),
		Send: []sharding.Buffer{send}, Recv: []sharding.Buffer{recv}, Name: name}
	if err := comm.Do(call); err != nil {
		return nil, err
	}
	return out, nil
}

// failure is one rank's verdict before or after a ScaLAPACK call, in an
// order of precedence: the largest code on any rank wins on every rank.
type failure struct {
	code  int // 0: none; see the constants
	minor int // for notSPD: ScaLAPACK's INFO (global 1-based order)
	msg   string
}

const (
	okCode = iota
	notSPDCode
	nonFiniteCode
	resultNonFiniteCode // a result beyond the dtype's range (finite inputs)
	engineCode
	mismatchCode
	badInputCode
)

// agree combines every rank's failure into one error, the same on every
// rank, in one AllReduce: ErrMismatch if the ranks are in different ops
// or pass different nums
// (shapes, block sizes, dtype codes), else the worst code, the smallest
// minor for that code, and the message of that code (text agreed by code,
// not sent). On a closed grid it returns ErrBadInput without
// communicating (Close is collective, so every rank does the same).
func (g *Grid) agree(op string, f failure, nums ...num) error {
	return g.agreeMax(op, f, nil, nums...)
}

// num is a number that every rank must pass alike to a call, and what it
// is, for the message when they do not.
type num struct {
	what string
	v    int
}

// matrixNums are the numbers of a rows×cols matrix in blocks of nb of the
// element type with code dt (dtypeCode).
func matrixNums(rows, cols, nb, dt int) []num {
	return []num{{"rows", rows}, {"columns", cols}, {"block size", nb}, {"element type", dt}}
}

// describe is v as the number nm stands for: a dtype's name for the
// element type.
func (nm num) describe(v int) string {
	if nm.what == "element type" && v >= 1 && v <= len(dtypeNames) {
		return dtypeNames[v-1]
	}
	return fmt.Sprint(v)
}

var dtypeNames = [...]string{"float32", "float64", "complex64", "complex128"} // by dtypeCode

// agreeMax is agree that also replaces each of xs by its maximum over the
// ranks, in the same AllReduce.
func (g *Grid) agreeMax(op string, f failure, xs []float64, nums ...num) error {
	if g.closed {
		return fmt.Errorf("%w: dist: %s: the grid is closed", ErrBadInput, op)
	}
	minor := math.Inf(1)
	if f.code == notSPDCode {
		minor = float64(f.minor)
	}
	v := make([]float64, 0, 2+2*len(nums)+len(xs))
	v = append(v, float64(f.code), -minor)
	for _, n := range nums {
		v = append(v, float64(n.v), -float64(n.v))
	}
	v = append(v, xs...)
	// The call carries op's name: ranks in different operations on
	// matrices of the same shapes fail here, before ScaLAPACK, whose calls
	// have no timeout, pairs them.
	got, err := allReduceNamed(g.comm, collective.Max, v, "dist: "+op)
	if err != nil {
		return fmt.Errorf("dist: %s: agreeing on the outcome: %w", op, err)
	}
	for i, n := range nums {
		if hi, lo := got[2+2*i], -got[3+2*i]; hi != lo {
			return fmt.Errorf("%w: dist: %s: ranks disagree on the %s (from %s to %s)", ErrMismatch, op, n.what, n.describe(int(lo)), n.describe(int(hi)))
		}
	}
	copy(xs, got[2+2*len(nums):])
	switch int(got[0]) {
	case okCode:
		return nil
	case notSPDCode:
		return fmt.Errorf("dist: %s: %w", op, &kernels.NotPositiveDefiniteError{Order: int(-got[1])})
	case nonFiniteCode:
		return fmt.Errorf("%w: dist: %s: the input holds NaN or Inf", ErrNonFinite, op)
	case resultNonFiniteCode:
		return fmt.Errorf("%w: dist: %s: a result is beyond the dtype's range", ErrNonFinite, op)
	case engineCode:
		return fmt.Errorf("%w: dist: %s: ScaLAPACK failed on some rank", ErrEngine, op)
	case mismatchCode:
		return fmt.Errorf("%w: dist: %s: ranks disagree on shapes, block sizes or element types", ErrMismatch, op)
	default:
		return fmt.Errorf("%w: dist: %s: bad shapes on some rank", ErrBadInput, op)
	}
}
