//go:build mglacuda

package nccl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/collective"
)

// minVersion is the oldest NCCL with everything Load requires
// (ncclCommInitRankConfig and non-blocking communicators came in 2.14).
const minVersion = 21400

// optionalSymbols may be missing; the calls that need them say so.
var optionalSymbols = map[string]bool{"ncclCommSplit": true}

var (
	loadMu     sync.Mutex
	loadedPath string // where libnccl.so.2 was opened from, once loaded
	loadedVer  int
	missing    map[string]bool
)

// Load opens libnccl.so.2 (see the package documentation for where it is
// looked for) and resolves its symbols. After a success it returns nil at
// once; after a failure the next call searches again. Its errors wrap
// collective.ErrUnavailable.
func Load() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadedPath != "" {
		return nil
	}
	errbuf := (*C.char)(C.malloc(1024))
	defer C.free(unsafe.Pointer(errbuf))
	var tried []string
	path := ""
	for _, p := range libraryCandidates() {
		cp := C.CString(p)
		rc := C.mgla_nccl_open(cp, errbuf, 1024)
		C.free(unsafe.Pointer(cp))
		if rc == 0 {
			path = p
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %s", p, C.GoString(errbuf)))
	}
	if path == "" {
		return notFoundError(tried)
	}
	missing = map[string]bool{}
	var req []string
	for i := 0; i < int(C.mgla_nccl_nsyms()); i++ {
		if C.mgla_nccl_sym_present(C.int(i)) == 0 {
			name := C.GoString(C.mgla_nccl_sym_name(C.int(i)))
			missing[name] = true
			if !optionalSymbols[name] {
				req = append(req, name)
			}
		}
	}
	if len(req) > 0 {
		return fmt.Errorf("%w: collective/nccl: %s lacks %s (NCCL >= 2.14 needed)", collective.ErrUnavailable, path, strings.Join(req, ", "))
	}
	var v C.int
	if r := C.mgla_nccl_get_version(&v); r != 0 || v < minVersion {
		return fmt.Errorf("%w: collective/nccl: %s is NCCL %s, need 2.14 or newer", collective.ErrUnavailable, path, versionString(int(v)))
	}
	loadedPath, loadedVer = path, int(v)
	return nil
}

// Library returns the path libnccl.so.2 was loaded from and its version
// ("2.28.3"), loading it first.
func Library() (path, version string, err error) {
	if err := Load(); err != nil {
		return "", "", err
	}
	return loadedPath, versionString(loadedVer), nil
}

// versionString formats an NCCL version code (NCCL_VERSION(X, Y, Z)).
func versionString(v int) string {
	if v < 10000 { // before 2.9: X*1000 + Y*100 + Z
		return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// ncclResult values the engine looks at.
const (
	ncclSuccess    = 0
	ncclInProgress = 7
)

var resultNames = map[int]string{
	0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
	4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress",
	C.MGLA_NCCL_NOSYM: "symbol not exported by the loaded NCCL",
}

// ncclErr turns a failed NCCL call into an error wrapping
// collective.ErrEngine, with NCCL's own message (and the communicator's last
// error when comm is not 0).
func ncclErr(fn string, r C.int, comm uintptr) error {
	if r == ncclSuccess {
		return nil
	}
	name := resultNames[int(r)]
	if name == "" {
		name = fmt.Sprintf("ncclResult %d", int(r))
	}
	msg := C.GoString(C.mgla_nccl_error_string(r))
	if last := C.GoString(C.mgla_nccl_last_error(C.uintptr_t(comm))); last != "" {
		msg += ": " + last
	}
	return fmt.Errorf("%w: collective/nccl: %s: %s (%s)", collective.ErrEngine, fn, msg, name)
}
