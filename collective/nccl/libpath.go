package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/internal/libpath"
)

// LibEnv names the environment variable that says where libnccl.so.2 is:
// the library file itself, or a directory that holds it. It is tried first.
const LibEnv = "MGLA_NCCL_LIB"

// libName is the NCCL 2 shared object.
const libName = "libnccl.so.2"

// wheelLibDir is the folder of the library inside the nvidia-nccl-cu13 (and
// -cu12) Python wheel, relative to site-packages.
const wheelLibDir = "nvidia/nccl/lib"

// libraryCandidates returns the paths tried for libnccl.so.2, in order (see
// the package documentation).
func libraryCandidates() []string {
	var first []string
	if p := os.Getenv(LibEnv); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			p = filepath.Join(p, libName)
		}
		first = append(first, p)
	}
	after := append(libpath.CUDADirs(), libpath.PythonPackageDirs(wheelLibDir)...)
	return append(first, libpath.Candidates([]string{libName}, libpath.EnvDirs(libpath.CUDALibDirEnv), after)...)
}

// notFoundError is the error of a failed search: tried holds one line per
// path ("path: why").
func notFoundError(tried []string) error {
	return fmt.Errorf("%w: collective/nccl: cannot load %s; tried:\n\t%s\n"+
		"Install NCCL with `pip install nvidia-nccl-cu13` (CUDA 13; nvidia-nccl-cu12 for CUDA 12), which puts it in "+
		"site-packages/%s of that Python, or from NVIDIA's packages (libnccl2), or set %s to the library file "+
		"(or its directory) or %s to directories holding it",
		collective.ErrUnavailable, libName, strings.Join(tried, "\n\t"), wheelLibDir, LibEnv, libpath.CUDALibDirEnv)
}
