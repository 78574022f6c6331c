//go:build mglacuda

package cusolver

/*
#include <stdlib.h>
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

type dnOp int

const (
	dnPotrf dnOp = iota
	dnPotri
	dnSyevdValues
	dnSyevdVectors
)

type dnKey struct {
	op     dnOp
	ctype  C.int
	n, lda int
}

type dnSize struct{ dev, host int64 }

// Dn is a single-GPU dense cuSOLVER handle on one device, with cached
// workspace sizes and device/host workspaces that only grow. It works on the
// legacy default stream and every call blocks until the result is ready.
// All methods are safe for concurrent use; calls on one Dn are serialized.
type Dn struct {
	mu         sync.Mutex
	device     int
	handle     unsafe.Pointer
	params     unsafe.Pointer
	dwork      uintptr
	dworkBytes int64
	hwork      unsafe.Pointer // C memory
	hworkBytes int64
	dinfo      uintptr
	sizes      map[dnKey]dnSize
	closed     bool
}

// NewDn creates a cuSOLVER dense handle on device.
func NewDn(device int) (*Dn, error) {
	if err := loadForDevices("NewDn", device); err != nil {
		return nil, err
	}
	if err := need("cusolverDnCreateParams", "cusolverDnDestroyParams"); err != nil {
		return nil, err
	}
	d := &Dn{device: device, sizes: map[dnKey]dnSize{}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(device))); err != nil {
		return nil, err
	}
	var h, p unsafe.Pointer
	if err := solverErr("cusolverDnCreate", C.mgla_dnCreate(&h)); err != nil {
		return nil, err
	}
	d.handle = h
	if err := solverErr("cusolverDnCreateParams", C.mgla_dnCreateParams(&p)); err != nil {
		d.release()
		return nil, err
	}
	d.params = p
	q, err := deviceMalloc(device, minAllocBytes)
	if err != nil {
		d.release()
		return nil, err
	}
	d.dinfo = q
	return d, nil
}

// Device returns the device of the handle.
func (d *Dn) Device() int { return d.device }

// Close destroys the handle and frees the workspaces. It is idempotent.
func (d *Dn) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return d.release()
}

func (d *Dn) release() error {
	var errs []error
	errs = append(errs, cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(d.device))))
	if d.params != nil {
		errs = append(errs, solverErr("cusolverDnDestroyParams", C.mgla_dnDestroyParams(d.params)))
		d.params = nil
	}
	if d.handle != nil {
		errs = append(errs, solverErr("cusolverDnDestroy", C.mgla_dnDestroy(d.handle)))
		d.handle = nil
	}
	for _, p := range []*uintptr{&d.dwork, &d.dinfo} {
		if *p != 0 {
			errs = append(errs, deviceFree(*p))
			*p = 0
		}
	}
	d.dworkBytes = 0
	if d.hwork != nil {
		C.free(d.hwork)
		d.hwork = nil
		d.hworkBytes = 0
	}
	return errors.Join(errs...)
}

func (d *Dn) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("cusolver: Dn is closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(d.device))); err != nil {
		return err
	}
	return f()
}

func (d *Dn) ensure(dev, host int64) error {
	if dev < minAllocBytes {
		dev = minAllocBytes
	}
	if dev > d.dworkBytes {
		if d.dwork != 0 {
			if err := deviceFree(d.dwork); err != nil {
				return err
			}
			d.dwork, d.dworkBytes = 0, 0
		}
		q, err := deviceMalloc(d.device, int(dev))
		if err != nil {
			return fmt.Errorf("%w (device %d, %d bytes)", err, d.device, dev)
		}
		d.dwork, d.dworkBytes = q, dev
	}
	if host > d.hworkBytes {
		if d.hwork != nil {
			C.free(d.hwork)
			d.hwork, d.hworkBytes = nil, 0
		}
		p := C.malloc(C.size_t(host))
		if p == nil {
			return fmt.Errorf("cusolver: cannot allocate %d bytes of host workspace", host)
		}
		d.hwork, d.hworkBytes = p, host
	}
	return nil
}

// info reads back the device info written by the last call.
func (d *Dn) info() (int, error) {
	var v C.int
	if err := cudaguard.Blocking(func() error {
		return cudaErr("cudaMemcpy(DeviceToHost)", C.mgla_cudaMemcpyDtoH(unsafe.Pointer(&v), C.uintptr_t(d.dinfo), 4))
	}); err != nil {
		return 0, err
	}
	return int(v), nil
}

func checkLd(fn string, n, ld int, name string) error {
	if n < 0 {
		return fmt.Errorf("cusolver: %s: negative order %d", fn, n)
	}
	if ld < 1 || ld < n {
		return fmt.Errorf("cusolver: %s: %s = %d, want >= max(1, n = %d)", fn, name, ld, n)
	}
	return nil
}

// Potrf computes the Cholesky factorization A = L·Lᴴ of the Hermitian
// positive definite n×n column-major matrix at a (leading dimension lda).
// Only the lower triangle is read and overwritten by L. A non positive
// definite leading minor gives a *kernels.NotPositiveDefiniteError.
func (d *Dn) Potrf(dt tensor.Dtype, n int, a uintptr, lda int) error {
	const fn = "cusolverDnXpotrf"
	ct, _, _, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkLd(fn, n, lda, "lda"); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return d.do(func() error {
		if err := need("cusolverDnXpotrf_bufferSize", "cusolverDnXpotrf"); err != nil {
			return err
		}
		sz, err := d.potrfSize(ct, n, a, lda)
		if err != nil {
			return err
		}
		if err := d.ensure(sz.dev, sz.host); err != nil {
			return err
		}
		rc := C.mgla_dnXpotrf(d.handle, d.params, fillLower, C.int64_t(n), ct, C.uintptr_t(a), C.int64_t(lda), ct,
			C.uintptr_t(d.dwork), C.size_t(sz.dev), d.hwork, C.size_t(sz.host), C.uintptr_t(d.dinfo))
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		info, err := d.info()
		if err != nil {
			return err
		}
		if info > 0 {
			return &kernels.NotPositiveDefiniteError{Order: info}
		}
		return infoErr(fn, C.int(info))
	})
}

// Potrs solves A·X = B with the factor L from Potrf at a (leading dimension
// lda); B is n×nrhs at b with leading dimension ldb and is overwritten by X.
func (d *Dn) Potrs(dt tensor.Dtype, n, nrhs int, a uintptr, lda int, b uintptr, ldb int) error {
	const fn = "cusolverDnXpotrs"
	ct, _, _, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkLd(fn, n, lda, "lda"); err != nil {
		return err
	}
	if err := checkLd(fn, n, ldb, "ldb"); err != nil {
		return err
	}
	if nrhs < 0 {
		return fmt.Errorf("cusolver: %s: negative nrhs %d", fn, nrhs)
	}
	if n == 0 || nrhs == 0 {
		return nil
	}
	return d.do(func() error {
		if err := need(fn); err != nil {
			return err
		}
		rc := C.mgla_dnXpotrs(d.handle, d.params, fillLower, C.int64_t(n), C.int64_t(nrhs), ct, C.uintptr_t(a),
			C.int64_t(lda), C.uintptr_t(b), C.int64_t(ldb), C.uintptr_t(d.dinfo))
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		info, err := d.info()
		if err != nil {
			return err
		}
		return infoErr(fn, C.int(info))
	})
}

var potriNames = [4]string{"cusolverDnSpotri", "cusolverDnDpotri", "cusolverDnCpotri", "cusolverDnZpotri"}

// Potri overwrites the lower triangle (diagonal included) of a, which holds
// the factor L from Potrf, by the lower triangle of A⁻¹. The strictly upper
// triangle is left untouched.
func (d *Dn) Potri(dt tensor.Dtype, n int, a uintptr, lda int) error {
	ct, es, _, _, kind, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	fn := potriNames[kind]
	if err := checkLd(fn, n, lda, "lda"); err != nil {
		return err
	}
	if n > 1<<31-1 || lda > 1<<31-1 {
		return fmt.Errorf("cusolver: %s: n = %d, lda = %d overflow int32", fn, n, lda)
	}
	if n == 0 {
		return nil
	}
	return d.do(func() error {
		if err := need(fn+"_bufferSize", fn); err != nil {
			return err
		}
		sz, err := d.potriSize(kind, ct, fn, n, a, lda) // elements
		if err != nil {
			return err
		}
		if err := d.ensure(sz.dev*int64(es), 0); err != nil {
			return err
		}
		rc := C.mgla_dnPotri(kind, d.handle, fillLower, C.int(n), C.uintptr_t(a), C.int(lda), C.uintptr_t(d.dwork),
			C.int(sz.dev), C.uintptr_t(d.dinfo))
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		info, err := d.info()
		if err != nil {
			return err
		}
		if info > 0 {
			return &InfoError{Func: fn, Info: info, Msg: "a diagonal element of the factor is zero: A is singular"}
		}
		return infoErr(fn, C.int(info))
	})
}

// Syevd computes all eigenvalues (ascending), and with vectors the
// orthonormal eigenvectors, of the Hermitian n×n matrix at a (leading
// dimension lda; only the lower triangle is read). w is a device array of n
// elements of the real type (float32 for Float32 and Complex64, float64
// otherwise). With vectors, a is overwritten by the eigenvectors; without,
// its contents are destroyed.
func (d *Dn) Syevd(dt tensor.Dtype, n int, a uintptr, lda int, w uintptr, vectors bool) error {
	const fn = "cusolverDnXsyevd"
	ct, _, rt, _, _, err := dtypeInfo(dt)
	if err != nil {
		return err
	}
	if err := checkLd(fn, n, lda, "lda"); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if w == 0 {
		return fmt.Errorf("cusolver: %s: nil eigenvalue array", fn)
	}
	jobz := C.int(eigNoVector)
	if vectors {
		jobz = eigVector
	}
	return d.do(func() error {
		if err := need("cusolverDnXsyevd_bufferSize", fn); err != nil {
			return err
		}
		sz, err := d.syevdSize(ct, rt, n, a, lda, w, vectors)
		if err != nil {
			return err
		}
		if err := d.ensure(sz.dev, sz.host); err != nil {
			return err
		}
		rc := C.mgla_dnXsyevd(d.handle, d.params, jobz, fillLower, C.int64_t(n), ct, C.uintptr_t(a), C.int64_t(lda),
			rt, C.uintptr_t(w), ct, C.uintptr_t(d.dwork), C.size_t(sz.dev), d.hwork, C.size_t(sz.host),
			C.uintptr_t(d.dinfo))
		if err := solverErr(fn, rc); err != nil {
			return err
		}
		info, err := d.info()
		if err != nil {
			return err
		}
		if info > 0 {
			return &InfoError{Func: fn, Info: info, Msg: "the eigensolver did not converge"}
		}
		return infoErr(fn, C.int(info))
	})
}
