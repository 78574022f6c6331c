//go:build mglacuda

package cusolver

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/tensor"
)

// Workspace sizes. Each solver call of Mg and Dn asks cuSOLVER for its
// workspace size (a _bufferSize call, cached per problem) and grows the
// handle's workspace to it; the helpers below make those queries, and the
// exported *Workspace methods make them without a matrix, so that callers
// can predict the device memory of a call before allocating anything
// (cmd/mgbench's capacity mode). In those queries the handle's own small
// buffers stand in for the matrix and eigenvalue pointers: the sizes depend
// on the order, the tiles, the types and the job only.

// lwork returns the cached workspace size (elements per device) of key k,
// asking cuSolverMg through query the first time. The caller holds m.mu.
func (m *Mg) lwork(k lworkKey, fn string, query func(l *C.int64_t) C.int) (int64, error) {
	if lw, ok := m.lworks[k]; ok {
		return lw, nil
	}
	var l C.int64_t
	if err := solverErr(fn+"_bufferSize", query(&l)); err != nil {
		return 0, err
	}
	m.lworks[k] = int64(l)
	return int64(l), nil
}

func (m *Mg) potrfLwork(ct C.int, n, tile int, pa []uintptr, da unsafe.Pointer) (int64, error) {
	return m.lwork(lworkKey{op: opPotrf, ctype: ct, n: n, tile: tile}, "cusolverMgPotrf", func(l *C.int64_t) C.int {
		return C.mgla_mgPotrf_bufferSize(m.handle, fillLower, C.int(n), cptrs(pa), C.int(len(pa)), da, ct, l)
	})
}

func (m *Mg) potrsLwork(ct C.int, n, nrhs, tile, tileB int, pa, pb []uintptr, da, db unsafe.Pointer) (int64, error) {
	k := lworkKey{op: opPotrs, ctype: ct, n: n, tile: tile, nrhs: nrhs, tileB: tileB}
	return m.lwork(k, "cusolverMgPotrs", func(l *C.int64_t) C.int {
		return C.mgla_mgPotrs_bufferSize(m.handle, fillLower, C.int(n), C.int(nrhs), cptrs(pa), da,
			cptrs(pb), db, C.int(len(pa)), ct, l)
	})
}

func (m *Mg) potriLwork(ct C.int, n, tile int, pa []uintptr, da unsafe.Pointer) (int64, error) {
	return m.lwork(lworkKey{op: opPotri, ctype: ct, n: n, tile: tile}, "cusolverMgPotri", func(l *C.int64_t) C.int {
		return C.mgla_mgPotri_bufferSize(m.handle, fillLower, C.int(n), cptrs(pa), C.int(len(pa)), da, ct, l)
	})
}

// syevdLwork needs wp, a host array of n eigenvalues of the real type rt.
func (m *Mg) syevdLwork(ct, rt C.int, n, tile int, vectors bool, pa []uintptr, da, wp unsafe.Pointer) (int64, error) {
	jobz, op := C.int(eigNoVector), opSyevdValues
	if vectors {
		jobz, op = eigVector, opSyevdVectors
	}
	return m.lwork(lworkKey{op: op, ctype: ct, n: n, tile: tile}, "cusolverMgSyevd", func(l *C.int64_t) C.int {
		return C.mgla_mgSyevd_bufferSize(m.handle, jobz, fillLower, C.int(n), cptrs(pa), C.int(len(pa)), da,
			wp, rt, ct, l)
	})
}

// workspace answers a workspace query for an n×n matrix with column tiles of
// width tile: query gets the compute type, the stand-in pointers and the
// matrix descriptor, and returns elements; workspace returns bytes per
// device.
func (m *Mg) workspace(fn string, dt tensor.Dtype, n, tile int, query func(ct, rt C.int, p []uintptr, da unsafe.Pointer) (int64, error)) (int64, error) {
	ct, es, rt, _, _, err := dtypeInfo(dt)
	if err != nil {
		return 0, err
	}
	if err := checkSizes(fn, n, tile); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	var lw int64
	err = m.do(func() error {
		da, err := m.desc(ct, n, n, tile)
		if err != nil {
			return err
		}
		lw, err = query(ct, rt, append([]uintptr(nil), m.dummy...), da)
		return err
	})
	return lw * int64(es), err
}

// PotrfWorkspace returns the workspace, in bytes per device, that Potrf of
// an n×n matrix with column tiles of width tile allocates.
func (m *Mg) PotrfWorkspace(dt tensor.Dtype, n, tile int) (int64, error) {
	return m.workspace("PotrfWorkspace", dt, n, tile, func(ct, _ C.int, p []uintptr, da unsafe.Pointer) (int64, error) {
		return m.potrfLwork(ct, n, tile, p, da)
	})
}

// PotrsWorkspace returns the workspace, in bytes per device, that
// PotrsBlock(dt, n, nrhs, tile, tileB, …) allocates.
func (m *Mg) PotrsWorkspace(dt tensor.Dtype, n, nrhs, tile, tileB int) (int64, error) {
	if nrhs <= 0 || tileB <= 0 {
		return 0, fmt.Errorf("cusolver: PotrsWorkspace: bad nrhs %d or B tile %d", nrhs, tileB)
	}
	return m.workspace("PotrsWorkspace", dt, n, tile, func(ct, _ C.int, p []uintptr, da unsafe.Pointer) (int64, error) {
		db, err := m.desc(ct, n, nrhs, tileB)
		if err != nil {
			return 0, err
		}
		return m.potrsLwork(ct, n, nrhs, tile, tileB, p, p, da, db)
	})
}

// PotriWorkspace returns the workspace, in bytes per device, that Potri of an
// n×n matrix with column tiles of width tile allocates.
func (m *Mg) PotriWorkspace(dt tensor.Dtype, n, tile int) (int64, error) {
	if err := need("cusolverMgPotri_bufferSize"); err != nil {
		return 0, err
	}
	return m.workspace("PotriWorkspace", dt, n, tile, func(ct, _ C.int, p []uintptr, da unsafe.Pointer) (int64, error) {
		return m.potriLwork(ct, n, tile, p, da)
	})
}

// SyevdWorkspace returns the workspace, in bytes per device, that Syevd of
// an n×n matrix with column tiles of width tile allocates (with or without
// eigenvectors).
func (m *Mg) SyevdWorkspace(dt tensor.Dtype, n, tile int, vectors bool) (int64, error) {
	if err := need("cusolverMgSyevd_bufferSize"); err != nil {
		return 0, err
	}
	if tile > maxSyevdTile {
		return 0, fmt.Errorf("cusolver: SyevdWorkspace: tile %d exceeds %d", tile, maxSyevdTile)
	}
	w := make([]float64, max(n, 1)) // room for n eigenvalues of either real type
	return m.workspace("SyevdWorkspace", dt, n, tile, func(ct, rt C.int, p []uintptr, da unsafe.Pointer) (int64, error) {
		return m.syevdLwork(ct, rt, n, tile, vectors, p, da, unsafe.Pointer(&w[0]))
	})
}

// size returns the cached workspace sizes of key k, asking cuSOLVER through
// query the first time. The caller holds d.mu.
func (d *Dn) size(k dnKey, fn string, query func(sz *dnSize) C.int) (dnSize, error) {
	if sz, ok := d.sizes[k]; ok {
		return sz, nil
	}
	var sz dnSize
	if err := solverErr(fn+"_bufferSize", query(&sz)); err != nil {
		return dnSize{}, err
	}
	d.sizes[k] = sz
	return sz, nil
}

// potrfSize is in bytes (device and host).
func (d *Dn) potrfSize(ct C.int, n int, a uintptr, lda int) (dnSize, error) {
	return d.size(dnKey{dnPotrf, ct, n, lda}, "cusolverDnXpotrf", func(sz *dnSize) C.int {
		var db, hb C.size_t
		rc := C.mgla_dnXpotrf_bufferSize(d.handle, d.params, fillLower, C.int64_t(n), ct, C.uintptr_t(a),
			C.int64_t(lda), ct, &db, &hb)
		*sz = dnSize{int64(db), int64(hb)}
		return rc
	})
}

// potriSize is in elements (device only).
func (d *Dn) potriSize(kind, ct C.int, fn string, n int, a uintptr, lda int) (dnSize, error) {
	return d.size(dnKey{dnPotri, ct, n, lda}, fn, func(sz *dnSize) C.int {
		var lw C.int
		rc := C.mgla_dnPotri_bufferSize(kind, d.handle, fillLower, C.int(n), C.uintptr_t(a), C.int(lda), &lw)
		*sz = dnSize{dev: int64(lw)}
		return rc
	})
}

// syevdSize is in bytes (device and host); w is a device array of n
// eigenvalues of the real type rt.
func (d *Dn) syevdSize(ct, rt C.int, n int, a uintptr, lda int, w uintptr, vectors bool) (dnSize, error) {
	jobz, op := C.int(eigNoVector), dnSyevdValues
	if vectors {
		jobz, op = eigVector, dnSyevdVectors
	}
	return d.size(dnKey{op, ct, n, lda}, "cusolverDnXsyevd", func(sz *dnSize) C.int {
		var db, hb C.size_t
		rc := C.mgla_dnXsyevd_bufferSize(d.handle, d.params, jobz, fillLower, C.int64_t(n), ct, C.uintptr_t(a),
			C.int64_t(lda), rt, C.uintptr_t(w), ct, &db, &hb)
		*sz = dnSize{int64(db), int64(hb)}
		return rc
	})
}

// PotrfWorkspace returns the device and host workspace, in bytes, that
// Potrf of an n×n matrix (lda = n) allocates.
func (d *Dn) PotrfWorkspace(dt tensor.Dtype, n int) (device, host int64, err error) {
	ct, _, _, _, _, err := dtypeInfo(dt)
	if err != nil || n <= 0 {
		return 0, 0, err
	}
	var sz dnSize
	err = d.do(func() (err error) {
		if err := need("cusolverDnXpotrf_bufferSize"); err != nil {
			return err
		}
		sz, err = d.potrfSize(ct, n, d.dinfo, n)
		return err
	})
	return sz.dev, sz.host, err
}

// PotriWorkspace returns the device workspace, in bytes, that Potri of an
// n×n matrix (lda = n) allocates.
func (d *Dn) PotriWorkspace(dt tensor.Dtype, n int) (int64, error) {
	ct, es, _, _, kind, err := dtypeInfo(dt)
	if err != nil || n <= 0 {
		return 0, err
	}
	if n > 1<<31-1 {
		return 0, fmt.Errorf("cusolver: PotriWorkspace: n = %d overflows int32", n)
	}
	fn := potriNames[kind]
	var sz dnSize
	err = d.do(func() (err error) {
		if err := need(fn + "_bufferSize"); err != nil {
			return err
		}
		sz, err = d.potriSize(kind, ct, fn, n, d.dinfo, n)
		return err
	})
	return sz.dev * int64(es), err
}

// SyevdWorkspace returns the device and host workspace, in bytes, that Syevd
// of an n×n matrix (lda = n) allocates, with or without eigenvectors.
func (d *Dn) SyevdWorkspace(dt tensor.Dtype, n int, vectors bool) (device, host int64, err error) {
	ct, _, rt, _, _, err := dtypeInfo(dt)
	if err != nil || n <= 0 {
		return 0, 0, err
	}
	var sz dnSize
	err = d.do(func() (err error) {
		if err := need("cusolverDnXsyevd_bufferSize"); err != nil {
			return err
		}
		sz, err = d.syevdSize(ct, rt, n, d.dinfo, n, d.dinfo, vectors)
		return err
	})
	return sz.dev, sz.host, err
}
