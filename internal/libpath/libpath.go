// Package libpath lists the paths at which mgla's run-time loaded engines
// (the dlopen shims of kernels/cusolver and collective/nccl) look for a
// shared library, in the order they are tried. It is pure Go, has no build
// tag and imports only the standard library, so its search order is tested
// on machines without CUDA.
package libpath

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// CUDALibDirEnv names the environment variable whose directories (colon
// separated) are searched first for the CUDA libraries.
const CUDALibDirEnv = "MGLA_CUDA_LIB_DIR"

// EnvDirs returns the non-empty entries of the colon-separated list held by
// the environment variable name (none when it is unset).
func EnvDirs(name string) []string {
	var out []string
	for _, d := range strings.Split(os.Getenv(name), ":") {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// CUDADirs returns the library directories of a CUDA toolkit installed under
// /usr/local/cuda.
func CUDADirs() []string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "sbsa"}[runtime.GOARCH]
	return []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/" + arch + "-linux/lib"}
}

// Candidates returns the paths tried for a library known by names (tried in
// that order in each place): every name in each directory of before, then
// every bare name (so that LD_LIBRARY_PATH, the runpath and the ld.so cache
// apply), then every name in each directory of after.
func Candidates(names, before, after []string) []string {
	var out []string
	for _, d := range before {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	out = append(out, names...)
	for _, d := range after {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// PythonPrefixes returns the prefixes under which Python packages are
// installed, in the order searched: $VIRTUAL_ENV, $CONDA_PREFIX, the prefix
// of every python3 on $PATH (the parent of its bin directory, which finds a
// virtual environment that is on the path but not activated), ~/.local,
// /usr/local and /usr. Duplicates are dropped.
func PythonPrefixes() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(os.Getenv("VIRTUAL_ENV"))
	add(os.Getenv("CONDA_PREFIX"))
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "python3")); err == nil && !fi.IsDir() {
			add(filepath.Dir(filepath.Clean(d)))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(filepath.Join(home, ".local"))
	}
	add("/usr/local")
	add("/usr")
	return out
}

// PythonPackageDirs returns the directories sub (a slash-separated path
// such as "nvidia/nccl/lib") that exist inside the site-packages or
// dist-packages directory of a python3.* installation under one of
// PythonPrefixes: <prefix>/lib/python3.*/{site,dist}-packages/sub, and
// <prefix>/lib/python3/dist-packages/sub (Debian). Within one prefix, newer
// Python versions come first.
func PythonPackageDirs(sub string) []string {
	var out []string
	for _, prefix := range PythonPrefixes() {
		lib := filepath.Join(prefix, "lib")
		pys, _ := filepath.Glob(filepath.Join(lib, "python3*"))
		sort.Slice(pys, func(i, j int) bool { return pythonVersionLess(pys[j], pys[i]) })
		for _, py := range pys {
			for _, kind := range []string{"site-packages", "dist-packages"} {
				d := filepath.Join(py, kind, filepath.FromSlash(sub))
				if fi, err := os.Stat(d); err == nil && fi.IsDir() {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// pythonVersionLess orders ".../python3.9" before ".../python3.12" (minor
// versions compared as numbers, "python3" first).
func pythonVersionLess(a, b string) bool {
	minor := func(p string) int {
		v := strings.TrimPrefix(filepath.Base(p), "python3")
		v = strings.TrimPrefix(v, ".")
		n := -1
		for i, c := range v {
			if c < '0' || c > '9' {
				break
			}
			if i == 0 {
				n = 0
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	ma, mb := minor(a), minor(b)
	if ma != mb {
		return ma < mb
	}
	return a < b
}
