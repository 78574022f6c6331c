// Package cusolver binds NVIDIA cuSOLVER for mgla: the multi-GPU cuSolverMg
// API (Cholesky factorization, solve and inverse, and the Hermitian
// eigensolver over a 1-D column block-cyclic layout on several GPUs of one
// host), the single-GPU dense cuSOLVER API as a baseline, the cuBLAS
// routines of the backward passes (Blas: gemm, syrkx, syr2k, trmm, trsm,
// geam, dgmm, scal on one GPU), cuBLASXt's (Xt: gemm, syrkx, trmm, trsm on
// host matrices, tiled over several GPUs), and a few CUDA runtime helpers
// (device count, malloc/free, memcpy, synchronize, memory info).
//
// Everything except this documentation is behind the `mglacuda` build tag (not
// `cuda`: that tag also switches Gorgonia to its own CUDA build, which needs cuDNN):
//
//	go build -tags mglacuda ./...
//
// Without the tag the package is empty, so the module builds and tests on
// machines with no CUDA at all.
//
// With the tag, nothing is linked against CUDA at build time (only -ldl): the
// libraries are loaded at run time with dlopen/dlsym by Load (every
// constructor calls it). The shared objects are tried in this order, and the
// first that opens is used:
//
//	CUDA runtime: libcudart.so.13, libcudart.so.12, libcudart.so.11.0, libcudart.so.11
//	cuSOLVER:     libcusolver.so.12, libcusolver.so.11
//	cuSolverMg:   libcusolverMg.so.12, libcusolverMg.so.11
//	cuBLAS:       libcublas.so.13, libcublas.so.12, libcublas.so.11 (cuSOLVER
//	              needs it, so the copy cuSOLVER loaded answers to its name)
//
// The candidate paths are tried in this order: every name in each directory
// of the environment variable MGLA_CUDA_LIB_DIR (a colon-separated list, when
// set); then every bare name (so LD_LIBRARY_PATH, the runpath and the ld.so
// cache apply); then every name in /usr/local/cuda/lib64 and in
// /usr/local/cuda/targets/<arch>-linux/lib. When none opens, Load's error
// lists every path tried with its dlerror(). Beyond a core set that Load
// checks, a symbol missing from an opened library fails only the calls that
// need it.
//
// # Layout
//
// cuSolverMg is used with a 1×ndev device grid and a 1-D column block-cyclic
// layout: the global N×M matrix is cut into column tiles of width T (the last
// one may be narrower), and tile g lives on the device at position g mod ndev
// of the device list. Device d stores its tiles d, d+ndev, d+2·ndev, …
// contiguously, column-major, with leading dimension N (the row count), so
// its buffer is N × LocalCols(M, T, ndev, d) elements.
//
// All calls block until the result is ready, and every method of Mg and Dn
// is safe for concurrent use (calls on one value are serialized). The
// cuSolverMg routines of a process run one at a time, and its cudaFree and
// synchronous copies never beside them (internal/cudaguard).
//
// The package may import kernels (the kernel API's errors),
// internal/libpath and internal/cudaguard.
package cusolver
