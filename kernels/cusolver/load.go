//go:build mglacuda

package cusolver

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/internal/libpath"
)

// LibDirEnv names the environment variable whose directories (colon
// separated) are searched first for the CUDA libraries.
const LibDirEnv = libpath.CUDALibDirEnv

// library describes one shared object Load opens, with the names tried in
// order.
type library struct {
	slot  C.int
	what  string
	names []string
}

var libraries = []library{
	{C.MGLA_LIB_CUDART, "CUDA runtime", []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so.11"}},
	{C.MGLA_LIB_CUSOLVER, "cuSOLVER", []string{"libcusolver.so.12", "libcusolver.so.11"}},
	{C.MGLA_LIB_CUSOLVERMG, "cuSolverMg", []string{"libcusolverMg.so.12", "libcusolverMg.so.11"}},
	// cuSOLVER needs cuBLAS: once cuSOLVER is open, its soname opens the
	// copy cuSOLVER loaded, wherever that was found.
	{C.MGLA_LIB_CUBLAS, "cuBLAS", []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}},
}

// requiredSymbols must resolve for Load to succeed; any other symbol of the
// table that is missing only fails the call that needs it.
var requiredSymbols = []string{
	"cudaGetDeviceCount", "cudaSetDevice", "cudaGetDevice", "cudaMalloc", "cudaFree",
	"cudaMemcpy", "cudaDeviceSynchronize", "cudaMemGetInfo", "cudaGetLastError",
	"cudaGetErrorString",
	"cusolverMgCreate", "cusolverMgDestroy", "cusolverMgDeviceSelect",
	"cusolverMgCreateDeviceGrid", "cusolverMgDestroyGrid", "cusolverMgCreateMatrixDesc",
	"cusolverMgDestroyMatrixDesc",
	"cusolverDnCreate", "cusolverDnDestroy",
	"cublasCreate_v2", "cublasDestroy_v2",
}

var (
	loadMu    sync.Mutex
	loadDone  bool
	loadedLib [C.MGLA_NLIBS]string // path each slot was opened from
	missing   map[string]bool      // symbols of the table that did not resolve
)

// candidates returns the paths tried for one library, in order.
func candidates(names []string) []string {
	return libpath.Candidates(names, libpath.EnvDirs(LibDirEnv), libpath.CUDADirs())
}

// Load opens the CUDA runtime, cuSOLVER, cuSolverMg and cuBLAS with dlopen and
// resolves their symbols. It is idempotent: after a success it returns nil at
// once; after a failure the next call tries again. The error lists every
// path tried with its dlerror().
func Load() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadDone {
		return nil
	}
	errbuf := (*C.char)(C.malloc(1024))
	defer C.free(unsafe.Pointer(errbuf))
	for _, lib := range libraries {
		if loadedLib[lib.slot] != "" {
			continue
		}
		var tried []string
		for _, p := range candidates(lib.names) {
			cp := C.CString(p)
			rc := C.mgla_open(lib.slot, cp, errbuf, 1024)
			C.free(unsafe.Pointer(cp))
			if rc == 0 {
				loadedLib[lib.slot] = p
				break
			}
			tried = append(tried, fmt.Sprintf("%s: %s", p, C.GoString(errbuf)))
		}
		if loadedLib[lib.slot] == "" {
			return fmt.Errorf("cusolver: cannot load the %s; tried (set %s to a directory holding it):\n\t%s",
				lib.what, LibDirEnv, strings.Join(tried, "\n\t"))
		}
		C.mgla_resolve(lib.slot)
	}
	missing = map[string]bool{}
	for i := 0; i < int(C.mgla_nsyms()); i++ {
		if C.mgla_sym_present(C.int(i)) == 0 {
			missing[C.GoString(C.mgla_sym_name(C.int(i)))] = true
		}
	}
	var req []string
	for _, s := range requiredSymbols {
		if missing[s] {
			req = append(req, s)
		}
	}
	if len(req) > 0 {
		return fmt.Errorf("cusolver: symbols missing from %v: %s", LoadedLibraries(), strings.Join(req, ", "))
	}
	loadDone = true
	return nil
}

// LoadedLibraries returns the paths the CUDA runtime, cuSOLVER, cuSolverMg
// and cuBLAS were opened from (empty strings for those not loaded yet).
func LoadedLibraries() []string {
	return []string{loadedLib[C.MGLA_LIB_CUDART], loadedLib[C.MGLA_LIB_CUSOLVER], loadedLib[C.MGLA_LIB_CUSOLVERMG], loadedLib[C.MGLA_LIB_CUBLAS]}
}

// missingSymbols lists the symbols of the table that did not resolve.
func missingSymbols() []string {
	loadMu.Lock()
	defer loadMu.Unlock()
	var out []string
	for s := range missing {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// need reports an error naming the first of the symbols that did not
// resolve. It must be called after a successful Load.
func need(symbols ...string) error {
	for _, s := range symbols {
		if missing[s] {
			return fmt.Errorf("cusolver: %s is not exported by the loaded libraries %v", s, LoadedLibraries())
		}
	}
	return nil
}
