//go:build mglacuda

// shim.c: function-pointer tables filled by dlsym, and the wrappers Go calls.
// Nothing here links against CUDA; everything is resolved at run time.

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

typedef int st; /* cudaError_t / cusolverStatus_t */

/* ---- function pointer types -------------------------------------------- */

typedef st (*t_cudaGetDeviceCount)(int *);
typedef st (*t_cudaSetDevice)(int);
typedef st (*t_cudaGetDevice)(int *);
typedef st (*t_cudaMalloc)(void **, size_t);
typedef st (*t_cudaFree)(void *);
typedef st (*t_cudaMemcpy)(void *, const void *, size_t, int);
typedef st (*t_cudaMemcpy2D)(void *, size_t, const void *, size_t, size_t, size_t, int);
typedef st (*t_cudaMemcpy2DAsync)(void *, size_t, const void *, size_t, size_t, size_t, int, void *);
typedef st (*t_cudaMemset)(void *, int, size_t);
typedef st (*t_cudaDeviceSynchronize)(void);
typedef st (*t_cudaMemGetInfo)(size_t *, size_t *);
typedef st (*t_cudaDeviceCanAccessPeer)(int *, int, int);
typedef st (*t_cudaDeviceEnablePeerAccess)(int, unsigned int);
typedef st (*t_cudaGetLastError)(void);
typedef st (*t_cudaRuntimeGetVersion)(int *);
typedef st (*t_cudaDriverGetVersion)(int *);
typedef st (*t_cudaHostGetFlags)(unsigned int *, void *);
typedef st (*t_cudaHostAlloc)(void **, size_t, unsigned int);
typedef st (*t_cudaFreeHost)(void *);
typedef st (*t_cudaHostRegister)(void *, size_t, unsigned int);
typedef st (*t_cudaHostUnregister)(void *);
typedef const char *(*t_cudaGetErrorString)(int);
typedef const char *(*t_cudaGetErrorName)(int);

typedef st (*t_cusolverMgCreate)(void **);
typedef st (*t_cusolverMgDestroy)(void *);
typedef st (*t_cusolverMgDeviceSelect)(void *, int, int *);
typedef st (*t_cusolverMgCreateDeviceGrid)(void **, int32_t, int32_t, const int32_t *, int);
typedef st (*t_cusolverMgDestroyGrid)(void *);
typedef st (*t_cusolverMgCreateMatrixDesc)(void **, int64_t, int64_t, int64_t, int64_t, int,
                                           void *);
typedef st (*t_cusolverMgDestroyMatrixDesc)(void *);
typedef st (*t_cusolverMgPotrf_bufferSize)(void *, int, int, void **, int, int, void *, int,
                                           int64_t *);
typedef st (*t_cusolverMgPotrf)(void *, int, int, void **, int, int, void *, int, void **,
                                int64_t, int *);
typedef st (*t_cusolverMgPotrs_bufferSize)(void *, int, int, int, void **, int, int, void *,
                                           void **, int, int, void *, int, int64_t *);
typedef st (*t_cusolverMgPotrs)(void *, int, int, int, void **, int, int, void *, void **, int,
                                int, void *, int, void **, int64_t, int *);
typedef st (*t_cusolverMgPotri_bufferSize)(void *, int, int, void **, int, int, void *, int,
                                           int64_t *);
typedef st (*t_cusolverMgPotri)(void *, int, int, void **, int, int, void *, int, void **,
                                int64_t, int *);
typedef st (*t_cusolverMgSyevd_bufferSize)(void *, int, int, int, void **, int, int, void *,
                                           void *, int, int, int64_t *);
typedef st (*t_cusolverMgSyevd)(void *, int, int, int, void **, int, int, void *, void *, int,
                                int, void **, int64_t, int *);

typedef st (*t_cusolverDnCreate)(void **);
typedef st (*t_cusolverDnDestroy)(void *);
typedef st (*t_cusolverDnCreateParams)(void **);
typedef st (*t_cusolverDnDestroyParams)(void *);
typedef st (*t_cusolverDnXpotrf_bufferSize)(void *, void *, int, int64_t, int, const void *,
                                            int64_t, int, size_t *, size_t *);
typedef st (*t_cusolverDnXpotrf)(void *, void *, int, int64_t, int, void *, int64_t, int,
                                 void *, size_t, void *, size_t, int *);
typedef st (*t_cusolverDnXpotrs)(void *, void *, int, int64_t, int64_t, int, const void *,
                                 int64_t, int, void *, int64_t, int *);
typedef st (*t_cusolverDnXsyevd_bufferSize)(void *, void *, int, int, int64_t, int,
                                            const void *, int64_t, int, const void *, int,
                                            size_t *, size_t *);
typedef st (*t_cusolverDnXsyevd)(void *, void *, int, int, int64_t, int, void *, int64_t, int,
                                 void *, int, void *, size_t, void *, size_t, int *);
/* The typed potri functions all have this shape (element pointers as void*). */
typedef st (*t_potri_bufferSize)(void *, int, int, void *, int, int *);
typedef st (*t_potri)(void *, int, int, void *, int, void *, int, int *);
typedef t_potri_bufferSize t_cusolverDnSpotri_bufferSize;
typedef t_potri_bufferSize t_cusolverDnDpotri_bufferSize;
typedef t_potri_bufferSize t_cusolverDnCpotri_bufferSize;
typedef t_potri_bufferSize t_cusolverDnZpotri_bufferSize;
typedef t_potri t_cusolverDnSpotri;
typedef t_potri t_cusolverDnDpotri;
typedef t_potri t_cusolverDnCpotri;
typedef t_potri t_cusolverDnZpotri;

/* cuBLAS: element pointers and scalars as void* (the S and D functions of a
   routine have the same shape). */
typedef st (*t_cublasCreate_v2)(void **);
typedef st (*t_cublasDestroy_v2)(void *);
typedef st (*t_blasGemm)(void *, int, int, int, int, int, const void *, const void *, int,
                         const void *, int, const void *, void *, int);
typedef st (*t_blasSyrk2)(void *, int, int, int, int, const void *, const void *, int, const void *,
                          int, const void *, void *, int);
typedef st (*t_blasTrmm)(void *, int, int, int, int, int, int, const void *, const void *, int,
                         const void *, int, void *, int);
typedef st (*t_blasTrsm)(void *, int, int, int, int, int, int, const void *, const void *, int, void *,
                         int);
typedef st (*t_blasGeam)(void *, int, int, int, int, const void *, const void *, int, const void *,
                         const void *, int, void *, int);
typedef st (*t_blasDgmm)(void *, int, int, int, const void *, int, const void *, int, void *, int);
typedef st (*t_blasScal)(void *, int, const void *, void *, int);
typedef t_blasGemm t_cublasSgemm_v2;
typedef t_blasGemm t_cublasDgemm_v2;
typedef t_blasSyrk2 t_cublasSsyrkx;
typedef t_blasSyrk2 t_cublasDsyrkx;
typedef t_blasSyrk2 t_cublasSsyr2k_v2;
typedef t_blasSyrk2 t_cublasDsyr2k_v2;
typedef t_blasTrmm t_cublasStrmm_v2;
typedef t_blasTrmm t_cublasDtrmm_v2;
typedef t_blasTrsm t_cublasStrsm_v2;
typedef t_blasTrsm t_cublasDtrsm_v2;
typedef t_blasGeam t_cublasSgeam;
typedef t_blasGeam t_cublasDgeam;
typedef t_blasDgmm t_cublasSdgmm;
typedef t_blasDgmm t_cublasDdgmm;
typedef t_blasScal t_cublasSscal_v2;
typedef t_blasScal t_cublasDscal_v2;

/* cuBLASXt: host matrices, size_t dimensions. */
typedef st (*t_cublasXtCreate)(void **);
typedef st (*t_cublasXtDestroy)(void *);
typedef st (*t_cublasXtDeviceSelect)(void *, int, int *);
typedef st (*t_cublasXtSetBlockDim)(void *, int);
typedef st (*t_cublasXtSetPinningMemMode)(void *, int);
typedef st (*t_xtGemm)(void *, int, int, size_t, size_t, size_t, const void *, const void *, size_t,
                       const void *, size_t, const void *, void *, size_t);
typedef st (*t_xtSyrkx)(void *, int, int, size_t, size_t, const void *, const void *, size_t,
                        const void *, size_t, const void *, void *, size_t);
typedef st (*t_xtTrmm)(void *, int, int, int, int, size_t, size_t, const void *, const void *,
                       size_t, const void *, size_t, void *, size_t);
typedef st (*t_xtTrsm)(void *, int, int, int, int, size_t, size_t, const void *, const void *,
                       size_t, void *, size_t);
typedef t_xtGemm t_cublasXtSgemm;
typedef t_xtGemm t_cublasXtDgemm;
typedef t_xtSyrkx t_cublasXtSsyrkx;
typedef t_xtSyrkx t_cublasXtDsyrkx;
typedef t_xtTrmm t_cublasXtStrmm;
typedef t_xtTrmm t_cublasXtDtrmm;
typedef t_xtTrsm t_cublasXtStrsm;
typedef t_xtTrsm t_cublasXtDtrsm;

/* ---- symbol table (X-macro) -------------------------------------------- */

#define MGLA_SYMBOLS(X)                                                                      \
    X(MGLA_LIB_CUDART, cudaGetDeviceCount)                                                   \
    X(MGLA_LIB_CUDART, cudaSetDevice)                                                        \
    X(MGLA_LIB_CUDART, cudaGetDevice)                                                        \
    X(MGLA_LIB_CUDART, cudaMalloc)                                                           \
    X(MGLA_LIB_CUDART, cudaFree)                                                             \
    X(MGLA_LIB_CUDART, cudaMemcpy)                                                           \
    X(MGLA_LIB_CUDART, cudaMemcpy2D)                                                         \
    X(MGLA_LIB_CUDART, cudaMemcpy2DAsync)                                                    \
    X(MGLA_LIB_CUDART, cudaMemset)                                                           \
    X(MGLA_LIB_CUDART, cudaDeviceSynchronize)                                                \
    X(MGLA_LIB_CUDART, cudaMemGetInfo)                                                       \
    X(MGLA_LIB_CUDART, cudaDeviceCanAccessPeer)                                              \
    X(MGLA_LIB_CUDART, cudaDeviceEnablePeerAccess)                                           \
    X(MGLA_LIB_CUDART, cudaGetLastError)                                                     \
    X(MGLA_LIB_CUDART, cudaRuntimeGetVersion)                                                \
    X(MGLA_LIB_CUDART, cudaDriverGetVersion)                                                 \
    X(MGLA_LIB_CUDART, cudaHostGetFlags)                                                     \
    X(MGLA_LIB_CUDART, cudaHostAlloc)                                                        \
    X(MGLA_LIB_CUDART, cudaFreeHost)                                                         \
    X(MGLA_LIB_CUDART, cudaHostRegister)                                                     \
    X(MGLA_LIB_CUDART, cudaHostUnregister)                                                   \
    X(MGLA_LIB_CUDART, cudaGetErrorString)                                                   \
    X(MGLA_LIB_CUDART, cudaGetErrorName)                                                     \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgCreate)                                                 \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgDestroy)                                                \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgDeviceSelect)                                           \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgCreateDeviceGrid)                                       \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgDestroyGrid)                                            \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgCreateMatrixDesc)                                       \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgDestroyMatrixDesc)                                      \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgPotrf_bufferSize)                                       \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgPotrf)                                                  \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgPotrs_bufferSize)                                       \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgPotrs)                                                  \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgPotri_bufferSize)                                       \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgPotri)                                                  \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgSyevd_bufferSize)                                       \
    X(MGLA_LIB_CUSOLVERMG, cusolverMgSyevd)                                                  \
    X(MGLA_LIB_CUSOLVER, cusolverDnCreate)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnDestroy)                                                  \
    X(MGLA_LIB_CUSOLVER, cusolverDnCreateParams)                                             \
    X(MGLA_LIB_CUSOLVER, cusolverDnDestroyParams)                                            \
    X(MGLA_LIB_CUSOLVER, cusolverDnXpotrf_bufferSize)                                        \
    X(MGLA_LIB_CUSOLVER, cusolverDnXpotrf)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnXpotrs)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnXsyevd_bufferSize)                                        \
    X(MGLA_LIB_CUSOLVER, cusolverDnXsyevd)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnSpotri_bufferSize)                                        \
    X(MGLA_LIB_CUSOLVER, cusolverDnDpotri_bufferSize)                                        \
    X(MGLA_LIB_CUSOLVER, cusolverDnCpotri_bufferSize)                                        \
    X(MGLA_LIB_CUSOLVER, cusolverDnZpotri_bufferSize)                                        \
    X(MGLA_LIB_CUSOLVER, cusolverDnSpotri)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnDpotri)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnCpotri)                                                   \
    X(MGLA_LIB_CUSOLVER, cusolverDnZpotri)                                                   \
    X(MGLA_LIB_CUBLAS, cublasCreate_v2)                                                      \
    X(MGLA_LIB_CUBLAS, cublasDestroy_v2)                                                     \
    X(MGLA_LIB_CUBLAS, cublasSgemm_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasDgemm_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasSsyrkx)                                                         \
    X(MGLA_LIB_CUBLAS, cublasDsyrkx)                                                         \
    X(MGLA_LIB_CUBLAS, cublasSsyr2k_v2)                                                      \
    X(MGLA_LIB_CUBLAS, cublasDsyr2k_v2)                                                      \
    X(MGLA_LIB_CUBLAS, cublasStrmm_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasDtrmm_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasStrsm_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasDtrsm_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasSgeam)                                                          \
    X(MGLA_LIB_CUBLAS, cublasDgeam)                                                          \
    X(MGLA_LIB_CUBLAS, cublasSdgmm)                                                          \
    X(MGLA_LIB_CUBLAS, cublasDdgmm)                                                          \
    X(MGLA_LIB_CUBLAS, cublasSscal_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasDscal_v2)                                                       \
    X(MGLA_LIB_CUBLAS, cublasXtCreate)                                                       \
    X(MGLA_LIB_CUBLAS, cublasXtDestroy)                                                      \
    X(MGLA_LIB_CUBLAS, cublasXtDeviceSelect)                                                 \
    X(MGLA_LIB_CUBLAS, cublasXtSetBlockDim)                                                  \
    X(MGLA_LIB_CUBLAS, cublasXtSetPinningMemMode)                                            \
    X(MGLA_LIB_CUBLAS, cublasXtSgemm)                                                        \
    X(MGLA_LIB_CUBLAS, cublasXtDgemm)                                                        \
    X(MGLA_LIB_CUBLAS, cublasXtSsyrkx)                                                       \
    X(MGLA_LIB_CUBLAS, cublasXtDsyrkx)                                                       \
    X(MGLA_LIB_CUBLAS, cublasXtStrmm)                                                        \
    X(MGLA_LIB_CUBLAS, cublasXtDtrmm)                                                        \
    X(MGLA_LIB_CUBLAS, cublasXtStrsm)                                                        \
    X(MGLA_LIB_CUBLAS, cublasXtDtrsm)

#define DECLARE(lib, name) static t_##name p_##name;
MGLA_SYMBOLS(DECLARE)
#undef DECLARE

typedef struct {
    int lib;
    const char *name;
    void **slot;
} sym_entry;

#define ENTRY(lib, name) {lib, #name, (void **)&p_##name},
static sym_entry syms[] = {MGLA_SYMBOLS(ENTRY)};
#undef ENTRY

static void *libs[MGLA_NLIBS];

int mgla_open(int lib, const char *path, char *err, size_t errlen) {
    if (lib < 0 || lib >= MGLA_NLIBS) {
        snprintf(err, errlen, "bad library slot %d", lib);
        return -1;
    }
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        return -1;
    }
    libs[lib] = h;
    return 0;
}

void mgla_resolve(int lib) {
    if (lib < 0 || lib >= MGLA_NLIBS || libs[lib] == NULL) {
        return;
    }
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        if (syms[i].lib == lib) {
            dlerror();
            *syms[i].slot = dlsym(libs[lib], syms[i].name);
        }
    }
}

int mgla_nsyms(void) { return (int)(sizeof(syms) / sizeof(syms[0])); }
const char *mgla_sym_name(int i) { return syms[i].name; }
int mgla_sym_lib(int i) { return syms[i].lib; }
int mgla_sym_present(int i) { return *syms[i].slot != NULL; }

/* ---- helpers ----------------------------------------------------------- */

#define CALL(name, ...) (p_##name ? p_##name(__VA_ARGS__) : MGLA_NOSYM)

static void to_ptrs(void **dst, const uintptr_t *src, int n) {
    for (int i = 0; i < n; i++) {
        dst[i] = (void *)src[i];
    }
}

/* ---- CUDA runtime ------------------------------------------------------ */

enum { memcpyHostToDevice = 1, memcpyDeviceToHost = 2 };

int mgla_cudaGetDeviceCount(int *n) { return CALL(cudaGetDeviceCount, n); }
int mgla_cudaSetDevice(int d) { return CALL(cudaSetDevice, d); }
int mgla_cudaGetDevice(int *d) { return CALL(cudaGetDevice, d); }
int mgla_cudaMalloc(uintptr_t *p, size_t bytes) {
    void *q = NULL;
    int rc = CALL(cudaMalloc, &q, bytes);
    *p = (uintptr_t)q;
    return rc;
}
int mgla_cudaFree(uintptr_t p) { return CALL(cudaFree, (void *)p); }
int mgla_cudaMemcpyHtoD(uintptr_t dst, const void *src, size_t bytes) {
    return CALL(cudaMemcpy, (void *)dst, src, bytes, memcpyHostToDevice);
}
int mgla_cudaMemcpy2DDtoH(void *dst, size_t dpitch, uintptr_t src, size_t spitch, size_t width, size_t height) {
    return CALL(cudaMemcpy2D, dst, dpitch, (const void *)src, spitch, width, height, memcpyDeviceToHost);
}
/* kind: memcpyHostToDevice or memcpyDeviceToHost; stream 0 is the legacy
   default stream of the current context. */
int mgla_cudaMemcpy2DAsync(uintptr_t dst, size_t dpitch, uintptr_t src, size_t spitch, size_t width,
                           size_t height, int up, uintptr_t stream) {
    return CALL(cudaMemcpy2DAsync, (void *)dst, dpitch, (const void *)src, spitch, width, height,
                up ? memcpyHostToDevice : memcpyDeviceToHost, (void *)stream);
}
int mgla_cudaMemcpyDtoH(void *dst, uintptr_t src, size_t bytes) {
    return CALL(cudaMemcpy, dst, (const void *)src, bytes, memcpyDeviceToHost);
}
int mgla_cudaMemset(uintptr_t p, int v, size_t bytes) {
    return CALL(cudaMemset, (void *)p, v, bytes);
}
int mgla_cudaDeviceSynchronize(void) { return CALL(cudaDeviceSynchronize); }
/* flags 1 = cudaHostAllocPortable / cudaHostRegisterPortable: pinned for
   every context of the process. */
int mgla_cudaHostAlloc(void **p, size_t bytes) { return CALL(cudaHostAlloc, p, bytes, 1u); }
int mgla_cudaFreeHost(void *p) { return CALL(cudaFreeHost, p); }
int mgla_cudaHostRegister(void *p, size_t bytes) { return CALL(cudaHostRegister, p, bytes, 1u); }
int mgla_cudaHostUnregister(void *p) { return CALL(cudaHostUnregister, p); }
int mgla_cudaMemGetInfo(size_t *free_b, size_t *total_b) {
    return CALL(cudaMemGetInfo, free_b, total_b);
}
int mgla_cudaDeviceCanAccessPeer(int *can, int d, int peer) {
    return CALL(cudaDeviceCanAccessPeer, can, d, peer);
}
int mgla_cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
    return CALL(cudaDeviceEnablePeerAccess, peer, flags);
}
int mgla_cudaGetLastError(void) { return CALL(cudaGetLastError); }
int mgla_cudaRuntimeGetVersion(int *v) { return CALL(cudaRuntimeGetVersion, v); }
int mgla_cudaDriverGetVersion(int *v) { return CALL(cudaDriverGetVersion, v); }
/* cudaHostGetFlags succeeds only for page-locked memory that the runtime
   knows (cudaHostAlloc or cudaHostRegister). */
int mgla_hostRegistered(const void *p, int *registered) {
    unsigned int flags = 0;
    int rc = CALL(cudaHostGetFlags, &flags, (void *)p);
    *registered = rc == 0;
    return rc;
}
const char *mgla_cudaGetErrorString(int e) {
    return p_cudaGetErrorString ? p_cudaGetErrorString(e) : NULL;
}
const char *mgla_cudaGetErrorName(int e) {
    return p_cudaGetErrorName ? p_cudaGetErrorName(e) : NULL;
}

/* ---- cuSolverMg -------------------------------------------------------- */

int mgla_mgCreate(void **h) { return CALL(cusolverMgCreate, h); }
int mgla_mgDestroy(void *h) { return CALL(cusolverMgDestroy, h); }
int mgla_mgDeviceSelect(void *h, int ndev, const int *devs) {
    int d[MGLA_MAX_DEVICES];
    if (ndev > MGLA_MAX_DEVICES) {
        return 3; /* CUSOLVER_STATUS_INVALID_VALUE */
    }
    memcpy(d, devs, sizeof(int) * (size_t)ndev);
    return CALL(cusolverMgDeviceSelect, h, ndev, d);
}
int mgla_mgCreateDeviceGrid(void **grid, int rows, int cols, const int *devs, int mapping) {
    return CALL(cusolverMgCreateDeviceGrid, grid, rows, cols, (const int32_t *)devs, mapping);
}
int mgla_mgDestroyGrid(void *grid) { return CALL(cusolverMgDestroyGrid, grid); }
int mgla_mgCreateMatrixDesc(void **desc, int64_t rows, int64_t cols, int64_t rowBlock,
                            int64_t colBlock, int dtype, void *grid) {
    return CALL(cusolverMgCreateMatrixDesc, desc, rows, cols, rowBlock, colBlock, dtype, grid);
}
int mgla_mgDestroyMatrixDesc(void *desc) { return CALL(cusolverMgDestroyMatrixDesc, desc); }

#define PTRS(var, src, n)                                                                    \
    void *var[MGLA_MAX_DEVICES];                                                             \
    if ((n) > MGLA_MAX_DEVICES) return 3;                                                    \
    to_ptrs(var, src, n)

int mgla_mgPotrf_bufferSize(void *h, int uplo, int n, const uintptr_t *a, int ndev,
                            void *descA, int ctype, int64_t *lwork) {
    PTRS(pa, a, ndev);
    return CALL(cusolverMgPotrf_bufferSize, h, uplo, n, pa, 1, 1, descA, ctype, lwork);
}

int mgla_mgPotrf(void *h, int uplo, int n, const uintptr_t *a, int ndev, void *descA,
                 int ctype, const uintptr_t *work, int64_t lwork, int *info) {
    PTRS(pa, a, ndev);
    PTRS(pw, work, ndev);
    return CALL(cusolverMgPotrf, h, uplo, n, pa, 1, 1, descA, ctype, pw, lwork, info);
}

int mgla_mgPotrs_bufferSize(void *h, int uplo, int n, int nrhs, const uintptr_t *a,
                            void *descA, const uintptr_t *b, void *descB, int ndev,
                            int ctype, int64_t *lwork) {
    PTRS(pa, a, ndev);
    PTRS(pb, b, ndev);
    return CALL(cusolverMgPotrs_bufferSize, h, uplo, n, nrhs, pa, 1, 1, descA, pb, 1, 1,
                descB, ctype, lwork);
}

int mgla_mgPotrs(void *h, int uplo, int n, int nrhs, const uintptr_t *a, void *descA,
                 const uintptr_t *b, void *descB, int ndev, int ctype,
                 const uintptr_t *work, int64_t lwork, int *info) {
    PTRS(pa, a, ndev);
    PTRS(pb, b, ndev);
    PTRS(pw, work, ndev);
    return CALL(cusolverMgPotrs, h, uplo, n, nrhs, pa, 1, 1, descA, pb, 1, 1, descB, ctype,
                pw, lwork, info);
}

int mgla_mgPotri_bufferSize(void *h, int uplo, int n, const uintptr_t *a, int ndev,
                            void *descA, int ctype, int64_t *lwork) {
    PTRS(pa, a, ndev);
    return CALL(cusolverMgPotri_bufferSize, h, uplo, n, pa, 1, 1, descA, ctype, lwork);
}

int mgla_mgPotri(void *h, int uplo, int n, const uintptr_t *a, int ndev, void *descA,
                 int ctype, const uintptr_t *work, int64_t lwork, int *info) {
    PTRS(pa, a, ndev);
    PTRS(pw, work, ndev);
    return CALL(cusolverMgPotri, h, uplo, n, pa, 1, 1, descA, ctype, pw, lwork, info);
}

int mgla_mgSyevd_bufferSize(void *h, int jobz, int uplo, int n, const uintptr_t *a,
                            int ndev, void *descA, void *w, int wtype, int ctype,
                            int64_t *lwork) {
    PTRS(pa, a, ndev);
    return CALL(cusolverMgSyevd_bufferSize, h, jobz, uplo, n, pa, 1, 1, descA, w, wtype, ctype,
                lwork);
}

int mgla_mgSyevd(void *h, int jobz, int uplo, int n, const uintptr_t *a, int ndev,
                 void *descA, void *w, int wtype, int ctype, const uintptr_t *work,
                 int64_t lwork, int *info) {
    PTRS(pa, a, ndev);
    PTRS(pw, work, ndev);
    return CALL(cusolverMgSyevd, h, jobz, uplo, n, pa, 1, 1, descA, w, wtype, ctype, pw, lwork,
                info);
}

/* ---- cuSOLVER dense ---------------------------------------------------- */

int mgla_dnCreate(void **h) { return CALL(cusolverDnCreate, h); }
int mgla_dnDestroy(void *h) { return CALL(cusolverDnDestroy, h); }
int mgla_dnCreateParams(void **p) { return CALL(cusolverDnCreateParams, p); }
int mgla_dnDestroyParams(void *p) { return CALL(cusolverDnDestroyParams, p); }

int mgla_dnXpotrf_bufferSize(void *h, void *params, int uplo, int64_t n, int dtype,
                             uintptr_t a, int64_t lda, int ctype, size_t *dbytes,
                             size_t *hbytes) {
    return CALL(cusolverDnXpotrf_bufferSize, h, params, uplo, n, dtype, (const void *)a, lda,
                ctype, dbytes, hbytes);
}

int mgla_dnXpotrf(void *h, void *params, int uplo, int64_t n, int dtype, uintptr_t a,
                  int64_t lda, int ctype, uintptr_t dwork, size_t dbytes, void *hwork,
                  size_t hbytes, uintptr_t dinfo) {
    return CALL(cusolverDnXpotrf, h, params, uplo, n, dtype, (void *)a, lda, ctype,
                (void *)dwork, dbytes, hwork, hbytes, (int *)dinfo);
}

int mgla_dnXpotrs(void *h, void *params, int uplo, int64_t n, int64_t nrhs, int dtype,
                  uintptr_t a, int64_t lda, uintptr_t b, int64_t ldb, uintptr_t dinfo) {
    return CALL(cusolverDnXpotrs, h, params, uplo, n, nrhs, dtype, (const void *)a, lda, dtype,
                (void *)b, ldb, (int *)dinfo);
}

int mgla_dnXsyevd_bufferSize(void *h, void *params, int jobz, int uplo, int64_t n,
                             int dtype, uintptr_t a, int64_t lda, int wtype, uintptr_t w,
                             int ctype, size_t *dbytes, size_t *hbytes) {
    return CALL(cusolverDnXsyevd_bufferSize, h, params, jobz, uplo, n, dtype, (const void *)a,
                lda, wtype, (const void *)w, ctype, dbytes, hbytes);
}

int mgla_dnXsyevd(void *h, void *params, int jobz, int uplo, int64_t n, int dtype,
                  uintptr_t a, int64_t lda, int wtype, uintptr_t w, int ctype,
                  uintptr_t dwork, size_t dbytes, void *hwork, size_t hbytes,
                  uintptr_t dinfo) {
    return CALL(cusolverDnXsyevd, h, params, jobz, uplo, n, dtype, (void *)a, lda, wtype,
                (void *)w, ctype, (void *)dwork, dbytes, hwork, hbytes, (int *)dinfo);
}

int mgla_dnPotri_bufferSize(int kind, void *h, int uplo, int n, uintptr_t a, int lda,
                            int *lwork) {
    switch (kind) {
    case 0: return CALL(cusolverDnSpotri_bufferSize, h, uplo, n, (void *)a, lda, lwork);
    case 1: return CALL(cusolverDnDpotri_bufferSize, h, uplo, n, (void *)a, lda, lwork);
    case 2: return CALL(cusolverDnCpotri_bufferSize, h, uplo, n, (void *)a, lda, lwork);
    case 3: return CALL(cusolverDnZpotri_bufferSize, h, uplo, n, (void *)a, lda, lwork);
    }
    return 3; /* CUSOLVER_STATUS_INVALID_VALUE */
}

int mgla_dnPotri(int kind, void *h, int uplo, int n, uintptr_t a, int lda, uintptr_t work,
                 int lwork, uintptr_t dinfo) {
    switch (kind) {
    case 0:
        return CALL(cusolverDnSpotri, h, uplo, n, (void *)a, lda, (void *)work, lwork,
                    (int *)dinfo);
    case 1:
        return CALL(cusolverDnDpotri, h, uplo, n, (void *)a, lda, (void *)work, lwork,
                    (int *)dinfo);
    case 2:
        return CALL(cusolverDnCpotri, h, uplo, n, (void *)a, lda, (void *)work, lwork,
                    (int *)dinfo);
    case 3:
        return CALL(cusolverDnZpotri, h, uplo, n, (void *)a, lda, (void *)work, lwork,
                    (int *)dinfo);
    }
    return 3; /* CUSOLVER_STATUS_INVALID_VALUE */
}

/* ---- cuBLAS ------------------------------------------------------------ */

int mgla_blasCreate(void **h) { return CALL(cublasCreate_v2, h); }
int mgla_blasDestroy(void *h) { return CALL(cublasDestroy_v2, h); }

/* SCALARS declares the host scalars of one call in the routine's type:
   s_alpha and s_beta point to floats for kind 0, to doubles otherwise. */
#define SCALARS(alpha, beta)                                                                   \
    float f_alpha = (float)(alpha), f_beta = (float)(beta);                                   \
    double d_alpha = (alpha), d_beta = (beta);                                                 \
    const void *s_alpha = kind == 0 ? (const void *)&f_alpha : (const void *)&d_alpha;         \
    const void *s_beta = kind == 0 ? (const void *)&f_beta : (const void *)&d_beta;            \
    (void)s_beta;

#define PICK(sname, dname, ...) (kind == 0 ? CALL(sname, __VA_ARGS__) : CALL(dname, __VA_ARGS__))

int mgla_blasGemm(int kind, void *h, int ta, int tb, int m, int n, int k, double alpha, uintptr_t a,
                  int lda, uintptr_t b, int ldb, double beta, uintptr_t c, int ldc) {
    SCALARS(alpha, beta)
    return PICK(cublasSgemm_v2, cublasDgemm_v2, h, ta, tb, m, n, k, s_alpha, (const void *)a, lda,
                (const void *)b, ldb, s_beta, (void *)c, ldc);
}
int mgla_blasSyrkx(int kind, void *h, int uplo, int trans, int n, int k, double alpha, uintptr_t a,
                   int lda, uintptr_t b, int ldb, double beta, uintptr_t c, int ldc) {
    SCALARS(alpha, beta)
    return PICK(cublasSsyrkx, cublasDsyrkx, h, uplo, trans, n, k, s_alpha, (const void *)a, lda,
                (const void *)b, ldb, s_beta, (void *)c, ldc);
}
int mgla_blasSyr2k(int kind, void *h, int uplo, int trans, int n, int k, double alpha, uintptr_t a,
                   int lda, uintptr_t b, int ldb, double beta, uintptr_t c, int ldc) {
    SCALARS(alpha, beta)
    return PICK(cublasSsyr2k_v2, cublasDsyr2k_v2, h, uplo, trans, n, k, s_alpha, (const void *)a,
                lda, (const void *)b, ldb, s_beta, (void *)c, ldc);
}
int mgla_blasTrmm(int kind, void *h, int side, int uplo, int trans, int diag, int m, int n,
                  double alpha, uintptr_t a, int lda, uintptr_t b, int ldb, uintptr_t c, int ldc) {
    SCALARS(alpha, 0.0)
    return PICK(cublasStrmm_v2, cublasDtrmm_v2, h, side, uplo, trans, diag, m, n, s_alpha,
                (const void *)a, lda, (const void *)b, ldb, (void *)c, ldc);
}
int mgla_blasTrsm(int kind, void *h, int side, int uplo, int trans, int diag, int m, int n,
                  double alpha, uintptr_t a, int lda, uintptr_t b, int ldb) {
    SCALARS(alpha, 0.0)
    return PICK(cublasStrsm_v2, cublasDtrsm_v2, h, side, uplo, trans, diag, m, n, s_alpha,
                (const void *)a, lda, (void *)b, ldb);
}
int mgla_blasGeam(int kind, void *h, int ta, int tb, int m, int n, double alpha, uintptr_t a, int lda,
                  double beta, uintptr_t b, int ldb, uintptr_t c, int ldc) {
    SCALARS(alpha, beta)
    return PICK(cublasSgeam, cublasDgeam, h, ta, tb, m, n, s_alpha, (const void *)a, lda, s_beta,
                (const void *)b, ldb, (void *)c, ldc);
}
int mgla_blasDgmm(int kind, void *h, int side, int m, int n, uintptr_t a, int lda, uintptr_t x,
                  int incx, uintptr_t c, int ldc) {
    return PICK(cublasSdgmm, cublasDdgmm, h, side, m, n, (const void *)a, lda, (const void *)x, incx,
                (void *)c, ldc);
}
int mgla_blasScal(int kind, void *h, int n, double alpha, uintptr_t x, int incx) {
    SCALARS(alpha, 0.0)
    return PICK(cublasSscal_v2, cublasDscal_v2, h, n, s_alpha, (void *)x, incx);
}

/* ---- cuBLASXt ---------------------------------------------------------- */

int mgla_xtCreate(void **h) { return CALL(cublasXtCreate, h); }
int mgla_xtDestroy(void *h) { return CALL(cublasXtDestroy, h); }
int mgla_xtDeviceSelect(void *h, int n, int *ids) { return CALL(cublasXtDeviceSelect, h, n, ids); }
int mgla_xtSetBlockDim(void *h, int dim) { return CALL(cublasXtSetBlockDim, h, dim); }
int mgla_xtSetPinning(void *h, int on) { return CALL(cublasXtSetPinningMemMode, h, on); }
int mgla_xtGemm(int kind, void *h, int ta, int tb, size_t m, size_t n, size_t k, double alpha,
                const void *a, size_t lda, const void *b, size_t ldb, double beta, void *c,
                size_t ldc) {
    SCALARS(alpha, beta)
    return PICK(cublasXtSgemm, cublasXtDgemm, h, ta, tb, m, n, k, s_alpha, a, lda, b, ldb, s_beta, c,
                ldc);
}
int mgla_xtSyrkx(int kind, void *h, int uplo, int trans, size_t n, size_t k, double alpha,
                 const void *a, size_t lda, const void *b, size_t ldb, double beta, void *c,
                 size_t ldc) {
    SCALARS(alpha, beta)
    return PICK(cublasXtSsyrkx, cublasXtDsyrkx, h, uplo, trans, n, k, s_alpha, a, lda, b, ldb,
                s_beta, c, ldc);
}
int mgla_xtTrmm(int kind, void *h, int side, int uplo, int trans, int diag, size_t m, size_t n,
                double alpha, const void *a, size_t lda, const void *b, size_t ldb, void *c,
                size_t ldc) {
    SCALARS(alpha, 0.0)
    return PICK(cublasXtStrmm, cublasXtDtrmm, h, side, uplo, trans, diag, m, n, s_alpha, a, lda, b,
                ldb, c, ldc);
}
int mgla_xtTrsm(int kind, void *h, int side, int uplo, int trans, int diag, size_t m, size_t n,
                double alpha, const void *a, size_t lda, void *b, size_t ldb) {
    SCALARS(alpha, 0.0)
    return PICK(cublasXtStrsm, cublasXtDtrsm, h, side, uplo, trans, diag, m, n, s_alpha, a, lda, b,
                ldb);
}
