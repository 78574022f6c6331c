//go:build mglacuda

package cusolver

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/tensor"

	"github.com/mgla/mgla/internal/cudaguard"
	"github.com/mgla/mgla/kernels"
)

// LocalCols returns how many columns of a matrix with cols columns, cut into
// column tiles of width tile (the last one may be narrower) and dealt
// round-robin over ndev devices, the device at position d (0-based, in the
// device list) holds: the sum of the widths of its tiles d, d+ndev, ….
// Its local buffer is rows × LocalCols elements, column-major, leading
// dimension rows.
func LocalCols(cols, tile, ndev, d int) int {
	if cols <= 0 || tile <= 0 || ndev <= 0 || d < 0 || d >= ndev {
		return 0
	}
	ntiles := (cols-1)/tile + 1 // (cols+tile-1)/tile overflows for tiles near math.MaxInt
	c := 0
	for g := d; g < ntiles; g += ndev {
		w := tile
		if rest := cols - g*tile; rest < w {
			w = rest
		}
		c += w
	}
	return c
}

type mgOp int

const (
	opPotrf mgOp = iota
	opPotrs
	opPotri
	opSyevdValues
	opSyevdVectors
)

type descKey struct {
	ctype            C.int
	rows, cols, tile int
}

type lworkKey struct {
	op                   mgOp
	ctype                C.int
	n, tile, nrhs, tileB int
}

// Mg is a cuSolverMg handle with a 1×ndev device grid bound to an ordered
// device list. Matrix descriptors, workspace sizes and the per-device
// workspaces are cached and reused across calls; the workspaces only grow.
// All methods are safe for concurrent use; calls on one Mg are serialized.
type Mg struct {
	mu        sync.Mutex
	devices   []int
	handle    unsafe.Pointer
	grid      unsafe.Pointer
	descs     map[descKey]unsafe.Pointer
	lworks    map[lworkKey]int64
	work      []uintptr // one workspace per device, workBytes each
	workBytes int
	dummy     []uintptr // small buffer per device, stands in for absent pointers
	noPeer    [][2]int
	closed    bool
}

// NewMg enables peer access between the devices (every ordered pair that
// supports it), creates a cuSolverMg handle, selects the devices and creates
// a 1×len(devices) column-major device grid. Device position d in the list
// holds column tiles d, d+ndev, … of every distributed matrix.
func NewMg(devices []int) (*Mg, error) {
	nd := len(devices)
	if nd == 0 || nd > maxMgDevices {
		return nil, fmt.Errorf("cusolver: NewMg: need 1 to %d devices, got %d", maxMgDevices, nd)
	}
	if err := loadForDevices("NewMg", devices...); err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, d := range devices {
		if seen[d] {
			return nil, fmt.Errorf("cusolver: NewMg: device %d listed twice", d)
		}
		seen[d] = true
	}
	m := &Mg{
		devices: append([]int(nil), devices...),
		descs:   map[descKey]unsafe.Pointer{},
		lworks:  map[lworkKey]int64{},
		work:    make([]uintptr, nd),
		dummy:   make([]uintptr, nd),
	}
	if nd > 1 {
		var err error
		if m.noPeer, err = EnablePeerAccess(m.devices); err != nil {
			return nil, err
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fail := func(err error) (*Mg, error) {
		m.release()
		return nil, err
	}
	var h unsafe.Pointer
	if err := solverErr("cusolverMgCreate", C.mgla_mgCreate(&h)); err != nil {
		return fail(err)
	}
	m.handle = h
	cdev := make([]C.int, nd)
	for i, d := range devices {
		cdev[i] = C.int(d)
	}
	if err := solverErr("cusolverMgDeviceSelect", C.mgla_mgDeviceSelect(m.handle, C.int(nd), &cdev[0])); err != nil {
		return fail(err)
	}
	var g unsafe.Pointer
	if err := solverErr("cusolverMgCreateDeviceGrid",
		C.mgla_mgCreateDeviceGrid(&g, 1, C.int(nd), &cdev[0], gridMappingCol)); err != nil {
		return fail(err)
	}
	m.grid = g
	for i, d := range m.devices {
		if err := m.mallocOn(d, minAllocBytes, &m.dummy[i]); err != nil {
			return fail(err)
		}
	}
	return m, nil
}

// Devices returns the ordered device list.
func (m *Mg) Devices() []int { return append([]int(nil), m.devices...) }

// NoPeerAccess lists the ordered device pairs for which the driver reported
// that peer access is impossible (normally empty).
func (m *Mg) NoPeerAccess() [][2]int { return append([][2]int(nil), m.noPeer...) }

// Close destroys the cached descriptors, the grid and the handle, and frees
// the workspaces. It is idempotent.
func (m *Mg) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return m.release()
}

// release frees everything; the caller holds the OS thread.
func (m *Mg) release() error {
	var errs []error
	for k, d := range m.descs {
		errs = append(errs, solverErr("cusolverMgDestroyMatrixDesc", C.mgla_mgDestroyMatrixDesc(d)))
		delete(m.descs, k)
	}
	if m.grid != nil {
		errs = append(errs, solverErr("cusolverMgDestroyGrid", C.mgla_mgDestroyGrid(m.grid)))
		m.grid = nil
	}
	if m.handle != nil {
		errs = append(errs, solverErr("cusolverMgDestroy", C.mgla_mgDestroy(m.handle)))
		m.handle = nil
	}
	for i, d := range m.devices {
		errs = append(errs, m.freeOn(d, &m.work[i]), m.freeOn(d, &m.dummy[i]))
	}
	m.workBytes = 0
	return errors.Join(errs...)
}

// mgLaunch runs a cuSolverMg routine, which launches kernels on every GPU
// of the handle that wait for one another, through cudaguard.MultiGPU: no
// cudaFree or synchronous copy of this process runs beside it.
func mgLaunch(routine func() C.int) C.int {
	var rc C.int
	_ = cudaguard.MultiGPU(func() error { rc = routine(); return nil })
	return rc
}

func (m *Mg) mallocOn(device, bytes int, p *uintptr) error {
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(device))); err != nil {
		return err
	}
	q, err := deviceMalloc(device, bytes)
	if err != nil {
		return fmt.Errorf("%w (device %d, %d bytes)", err, device, bytes)
	}
	*p = q
	return nil
}

func (m *Mg) freeOn(device int, p *uintptr) error {
	if *p == 0 {
		return nil
	}
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(device))); err != nil {
		return err
	}
	err := deviceFree(*p)
	*p = 0
	return err
}

// do runs f with the lock held, on a locked OS thread whose current device is
// the first of the list. Every device of the list is synchronized before f,
// so that cuSolverMg, whose internal streams need not wait for the legacy
// default stream, reads finished inputs, and after f, so that no kernel of
// cuSolverMg still writes when the call returns. Without these, results
// came out wrong and cusolverMgPotrf failed with an internal error on
// 2 to 4 H200s that other processes kept busy.
func (m *Mg) do(f func() error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("cusolver: Mg is closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := m.syncAll(); err != nil {
		return err
	}
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(m.devices[0]))); err != nil {
		return err
	}
	err := f()
	if serr := m.syncAll(); err == nil {
		err = serr
	}
	return err
}

// syncAll waits for all work on every device of the list.
func (m *Mg) syncAll() error {
	for _, d := range m.devices {
		if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(d))); err != nil {
			return err
		}
		if err := cudaErr("cudaDeviceSynchronize", C.mgla_cudaDeviceSynchronize()); err != nil {
			return fmt.Errorf("%w (device %d)", err, d)
		}
	}
	return cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(m.devices[0])))
}

// ensureWork grows the per-device workspaces to at least bytes each.
func (m *Mg) ensureWork(bytes int64) error {
	if bytes < minAllocBytes {
		bytes = minAllocBytes
	}
	if int64(m.workBytes) >= bytes {
		return nil
	}
	for i, d := range m.devices {
		if err := m.freeOn(d, &m.work[i]); err != nil {
			return err
		}
	}
	m.workBytes = 0
	for i, d := range m.devices {
		if err := m.mallocOn(d, int(bytes), &m.work[i]); err != nil {
			for j := 0; j < i; j++ {
				m.freeOn(m.devices[j], &m.work[j])
			}
			return err
		}
	}
	m.workBytes = int(bytes)
	// cuSolverMg runs on the first device; leave it current.
	return cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(m.devices[0])))
}

// desc returns the cached descriptor of a rows×cols matrix with column tiles
// of width tile (row block = rows).
func (m *Mg) desc(ctype C.int, rows, cols, tile int) (unsafe.Pointer, error) {
	k := descKey{ctype, rows, cols, tile}
	if d, ok := m.descs[k]; ok {
		return d, nil
	}
	var d unsafe.Pointer
	rc := C.mgla_mgCreateMatrixDesc(&d, C.int64_t(rows), C.int64_t(cols), C.int64_t(rows),
		C.int64_t(tile), ctype, m.grid)
	if err := solverErr("cusolverMgCreateMatrixDesc", rc); err != nil {
		return nil, err
	}
	m.descs[k] = d
	return d, nil
}

// ptrs checks one device-pointer list and returns a copy in which the zero
// pointers of devices that hold no column are replaced by a small dummy
// buffer (cuSolverMg never reads it).
func (m *Mg) ptrs(fn, name string, p []uintptr, cols, tile int) ([]uintptr, error) {
	nd := len(m.devices)
	if len(p) != nd {
		return nil, fmt.Errorf("cusolver: %s: %d pointers for %s, want one per device (%d)", fn, len(p), name, nd)
	}
	out := make([]uintptr, nd)
	for i, q := range p {
		if q == 0 {
			if LocalCols(cols, tile, nd, i) > 0 {
				return nil, fmt.Errorf("cusolver: %s: %s pointer of device %d (position %d) is nil but it holds %d columns",
					fn, name, m.devices[i], i, LocalCols(cols, tile, nd, i))
			}
			q = m.dummy[i]
		}
		out[i] = q
	}
	return out, nil
}

func cptrs(p []uintptr) *C.uintptr_t { return (*C.uintptr_t)(unsafe.Pointer(&p[0])) }

func checkSizes(fn string, n, tile int) error {
	if n < 0 {
		return fmt.Errorf("cusolver: %s: negative order %d", fn, n)
	}
	if tile <= 0 {
		return fmt.Errorf("cusolver: %s: tile must be positive, got %d", fn, tile)
	}
	if n > 1<<31-1 {
		return fmt.Errorf("cusolver: %s: order %d overflows int32", fn, n)
	}
	return nil
}

func infoErr(fn string, info C.int) error {
	switch {
	case info == 0:
		return nil
	case info < 0:
		return &InfoError{Func: fn, Info: int(info), Msg: fmt.Sprintf("argument %d has an illegal value", -info)}
	}
	return nil
}

// Potrf computes the Cholesky factorization A = L·Lᴴ of the Hermitian
// positive definite n×n matrix distributed in a (1-D column block-cyclic,
// column tile width tile, a[d] = buffer of device position d). Only the lower
// triangle is read; it is overwritten by L. Do not rely on the strictly upper
// triangle afterwards (LAPACK leaves it untouched; the tests log whether
// cuSolverMg does). When a leading minor is not positive definite the error is
// a *kernels.NotPositiveDefiniteError (errors.Is(err,
// kernels.ErrNotPositiveDefinite)) with its order.
func (m *Mg) Potrf(dt tensor.Dtype, n, tile int, a []uintptr) error {
	const fn = "cusolverMgPotrf"
	ct, es, _, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkSizes(fn, n, tile); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return m.do(func() error {
		pa, err := m.ptrs(fn, "A", a, n, tile)
		if err != nil {
			return err
		}
		da, err := m.desc(ct, n, n, tile)
		if err != nil {
			return err
		}
		lw, err := m.potrfLwork(ct, n, tile, pa, da)
		if err != nil {
			return err
		}
		if err := m.ensureWork(lw * int64(es)); err != nil {
			return err
		}
		var info C.int
		rc := mgLaunch(func() C.int {
			return C.mgla_mgPotrf(m.handle, fillLower, C.int(n), cptrs(pa), C.int(len(pa)), da, ct,
				cptrs(m.work), C.int64_t(lw), &info)
		})
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		if info > 0 {
			return &kernels.NotPositiveDefiniteError{Order: int(info)}
		}
		return infoErr(fn, info)
	})
}

// Potrs solves A·X = B with the factor L from Potrf held in a (same n and
// tile). B is n×nrhs, distributed 1-D column block-cyclic over the same
// device list with the same column tile width: B's column tile g (columns
// g·tile … ) lives on device position g mod ndev, so when nrhs ≤ tile all of
// B is on the first device. Each b[d] is a buffer of n × LocalCols(nrhs,
// tile, ndev, d) elements, leading dimension n; b[d] may be 0 for a device
// that holds no column of B. X overwrites B.
func (m *Mg) Potrs(dt tensor.Dtype, n, nrhs, tile int, a, b []uintptr) error {
	return m.PotrsBlock(dt, n, nrhs, tile, tile, a, b)
}

// PotrsBlock is Potrs with a column tile width tileB for B that may differ
// from A's (tileB = nrhs puts all of B on the first device).
func (m *Mg) PotrsBlock(dt tensor.Dtype, n, nrhs, tile, tileB int, a, b []uintptr) error {
	const fn = "cusolverMgPotrs"
	ct, es, _, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkSizes(fn, n, tile); err != nil {
		return err
	}
	if nrhs < 0 || tileB <= 0 {
		return fmt.Errorf("cusolver: %s: bad nrhs %d or B tile %d", fn, nrhs, tileB)
	}
	if n == 0 || nrhs == 0 {
		return nil
	}
	return m.do(func() error {
		pa, err := m.ptrs(fn, "A", a, n, tile)
		if err != nil {
			return err
		}
		pb, err := m.ptrs(fn, "B", b, nrhs, tileB)
		if err != nil {
			return err
		}
		da, err := m.desc(ct, n, n, tile)
		if err != nil {
			return err
		}
		db, err := m.desc(ct, n, nrhs, tileB)
		if err != nil {
			return err
		}
		lw, err := m.potrsLwork(ct, n, nrhs, tile, tileB, pa, pb, da, db)
		if err != nil {
			return err
		}
		if err := m.ensureWork(lw * int64(es)); err != nil {
			return err
		}
		var info C.int
		rc := mgLaunch(func() C.int {
			return C.mgla_mgPotrs(m.handle, fillLower, C.int(n), C.int(nrhs), cptrs(pa), da, cptrs(pb), db,
				C.int(len(pa)), ct, cptrs(m.work), C.int64_t(lw), &info)
		})
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		if info > 0 {
			return &InfoError{Func: fn, Info: int(info), Msg: "unexpected positive info"}
		}
		return infoErr(fn, info)
	})
}

// Potri computes the inverse of A from the factor L held in a (Potrf's
// output, same n and tile). The lower triangle (diagonal included) of a is
// overwritten by the lower triangle of A⁻¹ (A⁻¹ is Hermitian: its upper
// triangle is the conjugate transpose). The strictly upper triangle of a must
// be treated as unspecified.
func (m *Mg) Potri(dt tensor.Dtype, n, tile int, a []uintptr) error {
	const fn = "cusolverMgPotri"
	ct, es, _, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkSizes(fn, n, tile); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return m.do(func() error {
		if err := need("cusolverMgPotri_bufferSize", "cusolverMgPotri"); err != nil {
			return err
		}
		pa, err := m.ptrs(fn, "A", a, n, tile)
		if err != nil {
			return err
		}
		da, err := m.desc(ct, n, n, tile)
		if err != nil {
			return err
		}
		lw, err := m.potriLwork(ct, n, tile, pa, da)
		if err != nil {
			return err
		}
		if err := m.ensureWork(lw * int64(es)); err != nil {
			return err
		}
		var info C.int
		rc := mgLaunch(func() C.int {
			return C.mgla_mgPotri(m.handle, fillLower, C.int(n), cptrs(pa), C.int(len(pa)), da, ct,
				cptrs(m.work), C.int64_t(lw), &info)
		})
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		if info > 0 {
			return &InfoError{Func: fn, Info: int(info), Msg: "a diagonal element of the factor is zero: A is singular"}
		}
		return infoErr(fn, info)
	})
}

// Syevd computes all eigenvalues, and with vectors also the eigenvectors, of
// the Hermitian n×n matrix distributed in a (only its lower triangle is
// read). w receives the n eigenvalues in ascending order as float64 (computed
// in float32 for Float32 and Complex64). With vectors, a is overwritten by
// the orthonormal eigenvectors (column j belongs to w[j]) in the same
// distributed layout; without, a's contents are destroyed. cuSolverMg limits
// the tile width to 1024 here.
func (m *Mg) Syevd(dt tensor.Dtype, n, tile int, a []uintptr, w []float64, vectors bool) error {
	const fn = "cusolverMgSyevd"
	ct, es, rt, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkSizes(fn, n, tile); err != nil {
		return err
	}
	if tile > maxSyevdTile {
		return fmt.Errorf("cusolver: %s: tile %d exceeds %d, the largest tile cuSolverMg's syevd accepts", fn, tile, maxSyevdTile)
	}
	if len(w) < n {
		return fmt.Errorf("cusolver: %s: w has %d elements, want %d", fn, len(w), n)
	}
	if n == 0 {
		return nil
	}
	jobz := C.int(eigNoVector)
	if vectors {
		jobz = eigVector
	}
	var w32 []float32
	var wp unsafe.Pointer
	if rt == cudaR32F {
		w32 = make([]float32, n)
		wp = unsafe.Pointer(&w32[0])
	} else {
		wp = unsafe.Pointer(&w[0])
	}
	err = m.do(func() error {
		if err := need("cusolverMgSyevd_bufferSize", "cusolverMgSyevd"); err != nil {
			return err
		}
		pa, err := m.ptrs(fn, "A", a, n, tile)
		if err != nil {
			return err
		}
		da, err := m.desc(ct, n, n, tile)
		if err != nil {
			return err
		}
		lw, err := m.syevdLwork(ct, rt, n, tile, vectors, pa, da, wp)
		if err != nil {
			return err
		}
		if err := m.ensureWork(lw * int64(es)); err != nil {
			return err
		}
		var info C.int
		rc := mgLaunch(func() C.int {
			return C.mgla_mgSyevd(m.handle, jobz, fillLower, C.int(n), cptrs(pa), C.int(len(pa)), da, wp, rt, ct,
				cptrs(m.work), C.int64_t(lw), &info)
		})
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		if info > 0 {
			return &InfoError{Func: fn, Info: int(info), Msg: "the eigensolver did not converge"}
		}
		return infoErr(fn, info)
	})
	if err != nil {
		return err
	}
	for i, v := range w32 {
		w[i] = float64(v)
	}
	return nil
}
