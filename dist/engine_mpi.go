//go:build mpi

package dist

/*
#include <stdlib.h>
#include "scalapack.h"
*/
import "C"

import (
	"unsafe"

	"github.com/mgla/mgla/collective"
)

// The ScaLAPACK calls, one per routine, dispatched on the element type.
// Every matrix is used whole (IA = JA = 1) with its own descriptor.

var (
	lower = C.char('L')
	one   = C.int(1)
)

// data is the address of xs[0], or of a dummy for a process that holds
// nothing (ScaLAPACK does not read it then).
func data[T Scalar](xs []T) unsafe.Pointer {
	if len(xs) == 0 {
		return unsafe.Pointer(new(T))
	}
	return unsafe.Pointer(&xs[0])
}

// potrf factors the lower triangle of a in place; it returns INFO.
func potrf[T Scalar](a *Matrix[T]) int {
	n, info := C.int(a.Layout.Rows), C.int(0)
	p := data(a.Local)
	switch any(*new(T)).(type) {
	case float32:
		C.pspotrf_(&lower, &n, p, &one, &one, &a.desc[0], &info)
	case float64:
		C.pdpotrf_(&lower, &n, p, &one, &one, &a.desc[0], &info)
	case complex64:
		C.pcpotrf_(&lower, &n, p, &one, &one, &a.desc[0], &info)
	default:
		C.pzpotrf_(&lower, &n, p, &one, &one, &a.desc[0], &info)
	}
	return int(info)
}

// potrs solves L·Lᴴ·X = B in place of b, l from potrf; it returns INFO.
func potrs[T Scalar](l, b *Matrix[T]) int {
	n, nrhs, info := C.int(l.Layout.Rows), C.int(b.Layout.Cols), C.int(0)
	pl, pb := data(l.Local), data(b.Local)
	switch any(*new(T)).(type) {
	case float32:
		C.pspotrs_(&lower, &n, &nrhs, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0], &info)
	case float64:
		C.pdpotrs_(&lower, &n, &nrhs, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0], &info)
	case complex64:
		C.pcpotrs_(&lower, &n, &nrhs, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0], &info)
	default:
		C.pzpotrs_(&lower, &n, &nrhs, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0], &info)
	}
	return int(info)
}

// potri overwrites the lower triangle of l (from potrf) with that of the
// inverse; it returns INFO.
func potri[T Scalar](l *Matrix[T]) int {
	n, info := C.int(l.Layout.Rows), C.int(0)
	p := data(l.Local)
	switch any(*new(T)).(type) {
	case float32:
		C.pspotri_(&lower, &n, p, &one, &one, &l.desc[0], &info)
	case float64:
		C.pdpotri_(&lower, &n, p, &one, &one, &l.desc[0], &info)
	case complex64:
		C.pcpotri_(&lower, &n, p, &one, &one, &l.desc[0], &info)
	default:
		C.pzpotri_(&lower, &n, p, &one, &one, &l.desc[0], &info)
	}
	return int(info)
}

// addAdjoint sets c = c + aᴴ (PBLAS p?tran / p?tranc).
func addAdjoint[T Scalar](a, c *Matrix[T]) { tran(1, a, 1, c) }

// tran sets c = beta·c + alpha·aᴴ (PBLAS p?tran / p?tranc).
func tran[T Scalar](alpha T, a *Matrix[T], beta T, c *Matrix[T]) {
	m, n := C.int(c.Layout.Rows), C.int(c.Layout.Cols)
	pa, pc := data(a.Local), data(c.Local)
	ua, ub := unsafe.Pointer(&alpha), unsafe.Pointer(&beta)
	switch any(*new(T)).(type) {
	case float32:
		C.pstran_(&m, &n, ua, pa, &one, &one, &a.desc[0], ub, pc, &one, &one, &c.desc[0])
	case float64:
		C.pdtran_(&m, &n, ua, pa, &one, &one, &a.desc[0], ub, pc, &one, &one, &c.desc[0])
	case complex64:
		C.pctranc_(&m, &n, ua, pa, &one, &one, &a.desc[0], ub, pc, &one, &one, &c.desc[0])
	default:
		C.pztranc_(&m, &n, ua, pa, &one, &one, &a.desc[0], ub, pc, &one, &one, &c.desc[0])
	}
}

// trsm sets b = op(L)⁻¹·b (side 'L') or b·op(L)⁻¹ (side 'R') for the
// lower triangle of l with a non-unit diagonal, op the identity ('N') or
// the transpose ('T'), PBLAS p?trsm.
func trsm[T Scalar](side, transA byte, l, b *Matrix[T]) {
	cs, ct, diag := C.char(side), C.char(transA), C.char('N')
	m, n := C.int(b.Layout.Rows), C.int(b.Layout.Cols)
	alpha := T(1)
	pl, pb, ua := data(l.Local), data(b.Local), unsafe.Pointer(&alpha)
	switch any(*new(T)).(type) {
	case float32:
		C.pstrsm_(&cs, &lower, &ct, &diag, &m, &n, ua, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0])
	case float64:
		C.pdtrsm_(&cs, &lower, &ct, &diag, &m, &n, ua, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0])
	case complex64:
		C.pctrsm_(&cs, &lower, &ct, &diag, &m, &n, ua, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0])
	default:
		C.pztrsm_(&cs, &lower, &ct, &diag, &m, &n, ua, pl, &one, &one, &l.desc[0], pb, &one, &one, &b.desc[0])
	}
}

// workspace turns this rank's workspace query of p?syevd / p?heevd into
// the sizes to allocate: the largest query of any rank plus a margin of
// what PxORMTR (PxUNMTR) itself asks for, and at least 7N+8Q+2 integers.
// ScaLAPACK 2.2's query underestimates what PxORMTR checks, on processes
// that own little or nothing and wherever NB is large against N (N = 9 in
// blocks of 64), and PxORMTR's complaint ("parameter number 16 had an
// illegal value") does not reach INFO: the eigenvectors come back wrong
// with INFO = 0. PxORMTR needs max(NB(NB−1)/2, (MpC0+NqC0)·NB) + NB² past
// the 5N that p?syevd keeps before it, MpC0 and NqC0 (local rows and
// columns) at most N+NB each. If the ranks cannot agree, every size is the
// local one plus the margin.
func (m *Matrix[T]) workspace(work, rwork float64, iwork int) (lwork, lrwork, liwork int) {
	n, nb := m.Layout.Rows, m.Layout.MB
	got, err := allReduce(m.Grid.comm, collective.Max, []float64{work, rwork, float64(iwork)})
	if err != nil {
		got = []float64{work, rwork, float64(iwork)}
	}
	margin := 5*n + max(nb*(nb-1)/2, 2*(n+nb)*nb) + nb*nb
	return int(got[0]) + margin, int(got[1]) + margin, max(int(got[2]), 7*n+8*m.Grid.q+2) + 1
}

// syevd computes the eigenvalues w (ascending) and eigenvectors z of the
// Hermitian a (its lower triangle; destroyed); it returns INFO.
func syevd[T Scalar](a, z *Matrix[T]) (w []float64, info int) {
	n, cinfo := C.int(a.Layout.Rows), C.int(0)
	jobz := C.char('V')
	pa, pz := data(a.Local), data(z.Local)
	w = make([]float64, a.Layout.Rows)
	minus := C.int(-1)
	var iwq C.int
	switch any(*new(T)).(type) {
	case float32:
		w32 := make([]float32, len(w))
		var wq float32
		C.pssyevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w32), pz, &one, &one, &z.desc[0], unsafe.Pointer(&wq), &minus, &iwq, &minus, &cinfo)
		lwork, _, liwork := a.workspace(float64(wq), 0, int(iwq))
		work, iwork := make([]float32, lwork), make([]C.int, liwork)
		lw, liw := C.int(len(work)), C.int(len(iwork))
		C.pssyevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w32), pz, &one, &one, &z.desc[0], data(work), &lw, &iwork[0], &liw, &cinfo)
		for i, v := range w32 {
			w[i] = float64(v)
		}
	case float64:
		var wq float64
		C.pdsyevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w), pz, &one, &one, &z.desc[0], unsafe.Pointer(&wq), &minus, &iwq, &minus, &cinfo)
		lwork, _, liwork := a.workspace(wq, 0, int(iwq))
		work, iwork := make([]float64, lwork), make([]C.int, liwork)
		lw, liw := C.int(len(work)), C.int(len(iwork))
		C.pdsyevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w), pz, &one, &one, &z.desc[0], data(work), &lw, &iwork[0], &liw, &cinfo)
	case complex64:
		w32 := make([]float32, len(w))
		var wq complex64
		var rq float32
		C.pcheevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w32), pz, &one, &one, &z.desc[0], unsafe.Pointer(&wq), &minus, unsafe.Pointer(&rq), &minus, &iwq, &minus, &cinfo)
		lwork, lrwork, liwork := a.workspace(float64(real(wq)), float64(rq), int(iwq))
		work, rwork, iwork := make([]complex64, lwork), make([]float32, lrwork), make([]C.int, liwork)
		lw, lrw, liw := C.int(len(work)), C.int(len(rwork)), C.int(len(iwork))
		C.pcheevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w32), pz, &one, &one, &z.desc[0], data(work), &lw, data(rwork), &lrw, &iwork[0], &liw, &cinfo)
		for i, v := range w32 {
			w[i] = float64(v)
		}
	default:
		var wq complex128
		var rq float64
		C.pzheevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w), pz, &one, &one, &z.desc[0], unsafe.Pointer(&wq), &minus, unsafe.Pointer(&rq), &minus, &iwq, &minus, &cinfo)
		lwork, lrwork, liwork := a.workspace(real(wq), rq, int(iwq))
		work, rwork, iwork := make([]complex128, lwork), make([]float64, lrwork), make([]C.int, liwork)
		lw, lrw, liw := C.int(len(work)), C.int(len(rwork)), C.int(len(iwork))
		C.pzheevd_(&jobz, &lower, &n, pa, &one, &one, &a.desc[0], data(w), pz, &one, &one, &z.desc[0], data(work), &lw, data(rwork), &lrw, &iwork[0], &liw, &cinfo)
	}
	return w, int(cinfo)
}

// scalapackIndex is what ScaLAPACK's own NUMROC, INDXG2P and INDXG2L say
// for global index g (zero-based) of n in blocks of nb over nprocs
// processes, seen from process p: the local count on p, g's owner and its
// local index (zero-based). The tests compare package cyclic with it.
func scalapackIndex(n, nb, p, nprocs, g int) (count, owner, local int) {
	cn, cnb, cp, zero, cnp, cg := C.int(n), C.int(nb), C.int(p), C.int(0), C.int(nprocs), C.int(g+1)
	count = int(C.numroc_(&cn, &cnb, &cp, &zero, &cnp))
	owner = int(C.indxg2p_(&cg, &cnb, &cp, &zero, &cnp))
	local = int(C.indxg2l_(&cg, &cnb, &cp, &zero, &cnp)) - 1
	return count, owner, local
}

// gemm sets c = alpha·op(a)·op(b) + beta·c, op being the identity ('N'),
// the transpose ('T') or the adjoint ('C'), PBLAS p?gemm.
func gemm[T Scalar](transA, transB byte, alpha T, a, b *Matrix[T], beta T, c *Matrix[T]) {
	ta, tb := C.char(transA), C.char(transB)
	k := a.Layout.Cols
	if transA != 'N' {
		k = a.Layout.Rows
	}
	m, n, ck := C.int(c.Layout.Rows), C.int(c.Layout.Cols), C.int(k)
	pa, pb, pc := data(a.Local), data(b.Local), data(c.Local)
	ua, ub := unsafe.Pointer(&alpha), unsafe.Pointer(&beta)
	switch any(*new(T)).(type) {
	case float32:
		C.psgemm_(&ta, &tb, &m, &n, &ck, ua, pa, &one, &one, &a.desc[0], pb, &one, &one, &b.desc[0], ub, pc, &one, &one, &c.desc[0])
	case float64:
		C.pdgemm_(&ta, &tb, &m, &n, &ck, ua, pa, &one, &one, &a.desc[0], pb, &one, &one, &b.desc[0], ub, pc, &one, &one, &c.desc[0])
	case complex64:
		C.pcgemm_(&ta, &tb, &m, &n, &ck, ua, pa, &one, &one, &a.desc[0], pb, &one, &one, &b.desc[0], ub, pc, &one, &one, &c.desc[0])
	default:
		C.pzgemm_(&ta, &tb, &m, &n, &ck, ua, pa, &one, &one, &a.desc[0], pb, &one, &one, &b.desc[0], ub, pc, &one, &one, &c.desc[0])
	}
}

// gemr2d copies the rows×cols matrix a (descriptor da) into b
// (descriptor db), on another grid or in another distribution, through
// ScaLAPACK's p?gemr2d: every element goes once from its owner in a to its
// owner in b. Collective over every process of the grid g, which holds
// both grids; a process outside a grid passes a descriptor whose context
// is -1 (and no array).
func gemr2d[T Scalar](g *Grid, rows, cols int, a []T, da [9]C.int, b []T, db [9]C.int) {
	m, n := C.int(rows), C.int(cols)
	pa, pb := data(a), data(b)
	switch any(*new(T)).(type) {
	case float32:
		C.psgemr2d_(&m, &n, pa, &one, &one, &da[0], pb, &one, &one, &db[0], &g.ctxt)
	case float64:
		C.pdgemr2d_(&m, &n, pa, &one, &one, &da[0], pb, &one, &one, &db[0], &g.ctxt)
	case complex64:
		C.pcgemr2d_(&m, &n, pa, &one, &one, &da[0], pb, &one, &one, &db[0], &g.ctxt)
	default:
		C.pzgemr2d_(&m, &n, pa, &one, &one, &da[0], pb, &one, &one, &db[0], &g.ctxt)
	}
}
