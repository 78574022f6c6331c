//go:build mglacuda

package sharding

/*
#cgo LDFLAGS: -lcuda
#cgo noescape mgla_launch
#cgo nocallback mgla_launch
#include <stdint.h>
#include <stdlib.h>
#include <cuda.h>

// mgla_load_module loads a PTX image into the current context.
static CUresult mgla_load_module(CUmodule *mod, const char *image) {
	return cuModuleLoadData(mod, image);
}

// mgla_launch launches f with nargs 64-bit kernel parameters. The array of
// parameter addresses that cuLaunchKernel takes is built here, in C: Go
// must not store pointers into C memory (see launchKernel). cuLaunchKernel
// copies the parameters before it returns, so args is not kept.
static CUresult mgla_launch(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by,
		CUstream s, const uint64_t *args, int nargs) {
	void *params[16];
	if (nargs < 0 || nargs > 16) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < nargs; i++) {
		params[i] = (void *)&args[i];
	}
	return cuLaunchKernel(f, gx, gy, 1, bx, by, 1, 0, s, params, NULL);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// maxKernelArgs is the most 64-bit parameters launchKernel passes.
const maxKernelArgs = 16

// kernelFunc is a kernel of a loaded module.
type kernelFunc struct {
	fn C.CUfunction
}

// loadKernels loads the PTX image into the current context and looks up
// the named kernels; the module stays loaded for the life of the context.
func loadKernels(image string, names []string) (map[string]kernelFunc, error) {
	cimage := C.CString(image)
	defer C.free(unsafe.Pointer(cimage))
	var mod C.CUmodule
	if err := cuError(C.mgla_load_module(&mod, cimage)); err != nil {
		return nil, err
	}
	fns := make(map[string]kernelFunc, len(names))
	for _, name := range names {
		cname := C.CString(name)
		var fn C.CUfunction
		res := C.cuModuleGetFunction(&fn, mod, cname)
		C.free(unsafe.Pointer(cname))
		if err := cuError(res); err != nil {
			return nil, fmt.Errorf("kernel %s: %w", name, err)
		}
		fns[name] = kernelFunc{fn}
	}
	return fns, nil
}

// launchKernel enqueues k on stream with the given grid and block (z = 1,
// no shared memory); args are the kernel's 64-bit parameters.
//
// gorgonia.org/cu's Function.Launch is not used: it stores Go pointers
// into C.malloc'd memory it has not cleared, and while the garbage
// collector marks, each such store hands the word it overwrites to the
// write barrier. A word left there by an earlier user of that memory that
// looks like an address in a freed part of the Go heap stops the process
// with "found bad pointer in Go heap" (it did once in the GPU suite on 4
// GPUs; TestLaunchKeepsGoPointersOutOfCMemory makes it happen through cu's
// launcher). Here the parameter array is built in C, from a Go array of
// plain integers.
func launchKernel(k kernelFunc, stream cu.Stream, gridX, gridY, blockX, blockY int, args []uint64) error {
	if len(args) > maxKernelArgs {
		return fmt.Errorf("%d kernel arguments, at most %d", len(args), maxKernelArgs)
	}
	var argv [maxKernelArgs]C.uint64_t
	for i, a := range args {
		argv[i] = C.uint64_t(a)
	}
	return cuError(C.mgla_launch(k.fn, C.uint(gridX), C.uint(gridY), C.uint(blockX), C.uint(blockY),
		C.CUstream(unsafe.Pointer(stream.C())), &argv[0], C.int(len(args))))
}

// cuError is the error of a CUDA driver result as gorgonia.org/cu reports
// it (so that it compares equal to cu's constants, such as cu.LaunchFailed),
// nil for success.
func cuError(res C.CUresult) error {
	return asResult(cu.Success, int(res))
}

// asResult converts code to the type of like, cu's unexported result type,
// nil for success.
func asResult[R interface {
	~int
	error
}](like R, code int) error {
	if code == 0 {
		return nil
	}
	return R(code)
}
