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

	"github.com/mgla/mgla/internal/cudaguard"
)

// onDevice runs f on a locked OS thread whose current device is device.
func onDevice(device int, f func() error) error {
	if err := Load(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(device))); err != nil {
		return err
	}
	return f()
}

// loadForDevices loads the libraries and checks that every one of devices
// exists, for the constructor fn.
func loadForDevices(fn string, devices ...int) error {
	if err := Load(); err != nil {
		return err
	}
	count, err := DeviceCount()
	if err != nil {
		return err
	}
	for _, d := range devices {
		if d < 0 || d >= count {
			return fmt.Errorf("cusolver: %s: device %d out of range (%d devices)", fn, d, count)
		}
	}
	return nil
}

// DeviceCount returns the number of CUDA devices (0, not an error, when the
// runtime reports no device).
func DeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var n C.int
	rc := C.mgla_cudaGetDeviceCount(&n)
	if rc == cudaNoDevice {
		C.mgla_cudaGetLastError()
		return 0, nil
	}
	if err := cudaErr("cudaGetDeviceCount", rc); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Versions returns the CUDA runtime and driver versions (e.g. 13000, 13000).
func Versions() (runtimeVersion, driverVersion int, err error) {
	if err := Load(); err != nil {
		return 0, 0, err
	}
	var r, d C.int
	if err := cudaErr("cudaRuntimeGetVersion", C.mgla_cudaRuntimeGetVersion(&r)); err != nil {
		return 0, 0, err
	}
	if err := cudaErr("cudaDriverGetVersion", C.mgla_cudaDriverGetVersion(&d)); err != nil {
		return 0, 0, err
	}
	return int(r), int(d), nil
}

// Malloc allocates bytes of device memory on device.
func Malloc(device int, bytes int) (uintptr, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("cusolver: Malloc: negative size %d", bytes)
	}
	var p uintptr
	err := onDevice(device, func() (err error) {
		p, err = deviceMalloc(device, bytes)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%w (device %d, %d bytes)", err, device, bytes)
	}
	return p, nil
}

// Free releases device memory obtained from Malloc on device. Free(d, 0) is a
// no-op.
func Free(device int, p uintptr) error {
	if p == 0 {
		return nil
	}
	return onDevice(device, func() error { return deviceFree(p) })
}

// held is the device memory that this package holds: every cudaMalloc it
// makes goes through deviceMalloc and every cudaFree through deviceFree.
// cudaMemGetInfo reports a device's free memory over all the processes that
// use it, so the tests that check that repeated calls allocate nothing more
// read this count of the process's own allocations instead (heldBytes).
var held = struct {
	sync.Mutex
	allocs map[uintptr]heldAlloc
}{allocs: map[uintptr]heldAlloc{}}

type heldAlloc struct {
	device int
	bytes  int
}

// deviceMalloc allocates bytes on the current device, which the caller has
// made device on a locked OS thread, and counts them as held.
func deviceMalloc(device, bytes int) (uintptr, error) {
	var q C.uintptr_t
	rc := C.mgla_cudaMalloc(&q, C.size_t(bytes))
	if rc == cudaErrorMemoryAllocation && Reclaim != nil && Reclaim() {
		C.mgla_cudaGetLastError() // clear the error, as cudaErr does
		// Reclaim's frees make their own devices current.
		if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(device))); err != nil {
			return 0, err
		}
		rc = C.mgla_cudaMalloc(&q, C.size_t(bytes))
	}
	if err := cudaErr("cudaMalloc", rc); err != nil {
		return 0, err
	}
	if q != 0 {
		held.Lock()
		held.allocs[uintptr(q)] = heldAlloc{device, bytes}
		held.Unlock()
	}
	return uintptr(q), nil
}

// cudaErrorMemoryAllocation is cudaMalloc's out-of-memory code.
const cudaErrorMemoryAllocation = 2

// Reclaim, set by package sharding, frees the device memory of buffers that
// are no longer reachable and reports whether it freed any: deviceMalloc
// calls it when the device has run out and tries once more.
var Reclaim func() bool

// deviceFree frees p (from deviceMalloc) on its device, which the caller has
// made current; memory that cudaFree fails to free stays counted as held.
func deviceFree(p uintptr) error {
	err := cudaguard.Blocking(func() error { return cudaErr("cudaFree", C.mgla_cudaFree(C.uintptr_t(p))) })
	if err != nil {
		return err
	}
	held.Lock()
	delete(held.allocs, p)
	held.Unlock()
	return nil
}

// heldBytes returns the bytes of device memory on device that this package
// has allocated and not freed (Malloc, and the handles' workspaces).
func heldBytes(device int) int {
	held.Lock()
	defer held.Unlock()
	n := 0
	for _, a := range held.allocs {
		if a.device == device {
			n += a.bytes
		}
	}
	return n
}

// MemcpyHtoD copies bytes from host memory src to device memory dst on
// device. src must not point to memory holding Go pointers.
func MemcpyHtoD(device int, dst uintptr, src unsafe.Pointer, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return onDevice(device, func() error {
		return cudaguard.Blocking(func() error {
			return cudaErr("cudaMemcpy(HostToDevice)", C.mgla_cudaMemcpyHtoD(C.uintptr_t(dst), src, C.size_t(bytes)))
		})
	})
}

// MemcpyDtoH copies bytes from device memory src on device to host memory
// dst. dst must not point to memory holding Go pointers.
func MemcpyDtoH(device int, dst unsafe.Pointer, src uintptr, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return onDevice(device, func() error {
		return cudaguard.Blocking(func() error {
			return cudaErr("cudaMemcpy(DeviceToHost)", C.mgla_cudaMemcpyDtoH(dst, C.uintptr_t(src), C.size_t(bytes)))
		})
	})
}

// Memcpy2DDtoH copies height rows of width bytes from device memory with
// pitch spitch to host memory with pitch dpitch (cudaMemcpy2D).
func Memcpy2DDtoH(device int, dst unsafe.Pointer, dpitch int, src uintptr, spitch, width, height int) error {
	if width == 0 || height == 0 {
		return nil
	}
	return onDevice(device, func() error {
		return cudaguard.Blocking(func() error {
			return cudaErr("cudaMemcpy2D(DeviceToHost)", C.mgla_cudaMemcpy2DDtoH(dst, C.size_t(dpitch), C.uintptr_t(src), C.size_t(spitch), C.size_t(width), C.size_t(height)))
		})
	})
}

// Memcpy2DAsync enqueues, on stream (0: the legacy default stream) of the
// calling thread's current context, a copy of height rows of width bytes
// from src (row pitch spitch) to dst (row pitch dpitch): host to device when
// up, else device to host. The host side must be page-locked (HostAlloc or
// HostRegister) for the copy to be asynchronous, and must stay alive and
// unchanged until the stream is synchronized. Addresses are passed as
// integers: the host memory may be a Go slice that the DMA reads after the
// call returns.
func Memcpy2DAsync(dst uintptr, dpitch int, src uintptr, spitch, width, height int, up bool, stream uintptr) error {
	// It keeps the caller's device (no onDevice), so it loads the runtime
	// itself: it may be a process's first call into it.
	if err := Load(); err != nil {
		return err
	}
	u := C.int(0)
	if up {
		u = 1
	}
	return cudaErr("cudaMemcpy2DAsync", C.mgla_cudaMemcpy2DAsync(C.uintptr_t(dst), C.size_t(dpitch), C.uintptr_t(src),
		C.size_t(spitch), C.size_t(width), C.size_t(height), u, C.uintptr_t(stream)))
}

// Memset sets bytes of device memory at p on device to the byte value v.
func Memset(device int, p uintptr, v byte, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return onDevice(device, func() error {
		if err := cudaErr("cudaMemset", C.mgla_cudaMemset(C.uintptr_t(p), C.int(v), C.size_t(bytes))); err != nil {
			return err
		}
		return cudaErr("cudaDeviceSynchronize", C.mgla_cudaDeviceSynchronize())
	})
}

// Synchronize waits for all work on device to finish.
func Synchronize(device int) error {
	return onDevice(device, func() error {
		return cudaErr("cudaDeviceSynchronize", C.mgla_cudaDeviceSynchronize())
	})
}

// MemGetInfo returns the free and total memory of device in bytes.
func MemGetInfo(device int) (free, total int, err error) {
	var f, t C.size_t
	err = onDevice(device, func() error {
		return cudaErr("cudaMemGetInfo", C.mgla_cudaMemGetInfo(&f, &t))
	})
	return int(f), int(t), err
}

// EnablePeerAccess enables peer access between every ordered pair of the
// devices that can access each other (an already enabled pair is not an
// error). It returns the pairs (i, j) for which cudaDeviceCanAccessPeer
// reported no access.
func EnablePeerAccess(devices []int) (noAccess [][2]int, err error) {
	if err := Load(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, i := range devices {
		if err := cudaErr("cudaSetDevice", C.mgla_cudaSetDevice(C.int(i))); err != nil {
			return nil, err
		}
		for _, j := range devices {
			if i == j {
				continue
			}
			var can C.int
			if err := cudaErr("cudaDeviceCanAccessPeer", C.mgla_cudaDeviceCanAccessPeer(&can, C.int(i), C.int(j))); err != nil {
				return nil, err
			}
			if can == 0 {
				noAccess = append(noAccess, [2]int{i, j})
				continue
			}
			rc := C.mgla_cudaDeviceEnablePeerAccess(C.int(j), 0)
			if rc == peerAlreadyOn {
				C.mgla_cudaGetLastError() // clear the non-sticky error
				continue
			}
			if err := cudaErr("cudaDeviceEnablePeerAccess", rc); err != nil {
				return nil, fmt.Errorf("%w (device %d -> peer %d)", err, i, j)
			}
		}
	}
	return noAccess, nil
}

// HostAlloc returns bytes of pinned (page-locked) host memory, usable for
// asynchronous copies with every device (cudaHostAlloc, portable). Free it
// with FreeHost.
func HostAlloc(bytes int) (unsafe.Pointer, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := cudaErr("cudaHostAlloc", C.mgla_cudaHostAlloc(&p, C.size_t(bytes))); err != nil {
		return nil, fmt.Errorf("%w (%d bytes of pinned host memory)", err, bytes)
	}
	return p, nil
}

// FreeHost releases memory from HostAlloc.
func FreeHost(p unsafe.Pointer) error {
	return cudaguard.Blocking(func() error { return cudaErr("cudaFreeHost", C.mgla_cudaFreeHost(p)) })
}

// HostRegister page-locks bytes of existing host memory at p (for example
// the backing array of a Go slice, which Go's garbage collector never moves)
// so that devices copy it at full speed; undo with HostUnregister.
func HostRegister(p unsafe.Pointer, bytes int) error {
	if err := Load(); err != nil {
		return err
	}
	return cudaErr("cudaHostRegister", C.mgla_cudaHostRegister(p, C.size_t(bytes)))
}

// RegisterHost page-locks bytes at p like HostRegister and returns the
// function that undoes it. Memory that is already registered (by the caller,
// say) is used as it is, and the returned function then leaves it
// registered.
func RegisterHost(p unsafe.Pointer, bytes int) (unregister func() error, err error) {
	err = HostRegister(p, bytes)
	var ce *CUDAError
	if errors.As(err, &ce) && ce.Code == cudaErrorHostMemoryAlreadyRegistered {
		return func() error { return nil }, nil
	}
	if err != nil {
		return nil, err
	}
	return func() error { return HostUnregister(p) }, nil
}

// cudaErrorHostMemoryAlreadyRegistered is cudaHostRegister's answer for a
// range that is registered already.
const cudaErrorHostMemoryAlreadyRegistered = 712

// HostRegistered reports whether the host address p is page-locked memory
// that the CUDA runtime knows (HostAlloc or HostRegister).
func HostRegistered(p unsafe.Pointer) bool {
	if Load() != nil {
		return false
	}
	var r C.int
	if C.mgla_hostRegistered(p, &r) != 0 {
		C.mgla_cudaGetLastError() // the expected answer for ordinary memory
	}
	return r != 0
}

// HostUnregister undoes HostRegister.
func HostUnregister(p unsafe.Pointer) error {
	return cudaguard.Blocking(func() error { return cudaErr("cudaHostUnregister", C.mgla_cudaHostUnregister(p)) })
}
