//go:build mglacuda

// shim.h declares the C side of package cusolver: dlopen/dlsym loading of
// the CUDA runtime, cuSOLVER (dense) and cuSolverMg, and thin wrappers that
// Go calls through cgo. No CUDA header is included: the few types used are
// declared here (handles are opaque pointers, enums are int, which is the ABI
// of a C enum on every platform CUDA supports).

#ifndef MGLA_CUSOLVER_SHIM_H
#define MGLA_CUSOLVER_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* Returned by a wrapper whose symbol was not resolved. It collides with no
   cudaError_t nor cusolverStatus_t value. */
#define MGLA_NOSYM (-999)

/* Library slots. */
#define MGLA_LIB_CUDART 0
#define MGLA_LIB_CUSOLVER 1
#define MGLA_LIB_CUSOLVERMG 2
#define MGLA_LIB_CUBLAS 3
#define MGLA_NLIBS 4

/* Most devices one cuSolverMg call can span (cuSolverMg supports 16). */
#define MGLA_MAX_DEVICES 64

/* Loading. mgla_open returns 0 and keeps the handle, or -1 and copies
   dlerror() into err. mgla_resolve fills every function pointer of lib from
   the opened handle; mgla_sym_* describe the symbol table. */
int mgla_open(int lib, const char *path, char *err, size_t errlen);
void mgla_resolve(int lib);
int mgla_nsyms(void);
const char *mgla_sym_name(int i);
int mgla_sym_lib(int i);
int mgla_sym_present(int i);

/* CUDA runtime. */
int mgla_cudaGetDeviceCount(int *n);
int mgla_cudaSetDevice(int d);
int mgla_cudaGetDevice(int *d);
int mgla_cudaMalloc(uintptr_t *p, size_t bytes);
int mgla_cudaFree(uintptr_t p);
int mgla_cudaMemcpyHtoD(uintptr_t dst, const void *src, size_t bytes);
int mgla_cudaMemcpyDtoH(void *dst, uintptr_t src, size_t bytes);
int mgla_cudaMemcpy2DDtoH(void *dst, size_t dpitch, uintptr_t src, size_t spitch, size_t width, size_t height);
int mgla_cudaMemcpy2DAsync(uintptr_t dst, size_t dpitch, uintptr_t src, size_t spitch, size_t width,
                           size_t height, int up, uintptr_t stream);
int mgla_cudaMemset(uintptr_t p, int v, size_t bytes);
int mgla_cudaDeviceSynchronize(void);
int mgla_cudaHostAlloc(void **p, size_t bytes);
int mgla_cudaFreeHost(void *p);
int mgla_cudaHostRegister(void *p, size_t bytes);
int mgla_cudaHostUnregister(void *p);
int mgla_cudaMemGetInfo(size_t *free_b, size_t *total_b);
int mgla_cudaDeviceCanAccessPeer(int *can, int d, int peer);
int mgla_cudaDeviceEnablePeerAccess(int peer, unsigned int flags);
int mgla_cudaGetLastError(void);
int mgla_cudaRuntimeGetVersion(int *v);
int mgla_cudaDriverGetVersion(int *v);
int mgla_hostRegistered(const void *p, int *registered);
const char *mgla_cudaGetErrorString(int e);
const char *mgla_cudaGetErrorName(int e);

/* cuSolverMg. Device pointer arrays are passed as uintptr_t arrays of length
   ndev and converted to void*[] on the C stack. */
int mgla_mgCreate(void **h);
int mgla_mgDestroy(void *h);
int mgla_mgDeviceSelect(void *h, int ndev, const int *devs);
int mgla_mgCreateDeviceGrid(void **grid, int rows, int cols, const int *devs, int mapping);
int mgla_mgDestroyGrid(void *grid);
int mgla_mgCreateMatrixDesc(void **desc, int64_t rows, int64_t cols, int64_t rowBlock,
                            int64_t colBlock, int dtype, void *grid);
int mgla_mgDestroyMatrixDesc(void *desc);

int mgla_mgPotrf_bufferSize(void *h, int uplo, int n, const uintptr_t *a, int ndev,
                            void *descA, int ctype, int64_t *lwork);
int mgla_mgPotrf(void *h, int uplo, int n, const uintptr_t *a, int ndev, void *descA,
                 int ctype, const uintptr_t *work, int64_t lwork, int *info);
int mgla_mgPotrs_bufferSize(void *h, int uplo, int n, int nrhs, const uintptr_t *a,
                            void *descA, const uintptr_t *b, void *descB, int ndev,
                            int ctype, int64_t *lwork);
int mgla_mgPotrs(void *h, int uplo, int n, int nrhs, const uintptr_t *a, void *descA,
                 const uintptr_t *b, void *descB, int ndev, int ctype,
                 const uintptr_t *work, int64_t lwork, int *info);
int mgla_mgPotri_bufferSize(void *h, int uplo, int n, const uintptr_t *a, int ndev,
                            void *descA, int ctype, int64_t *lwork);
int mgla_mgPotri(void *h, int uplo, int n, const uintptr_t *a, int ndev, void *descA,
                 int ctype, const uintptr_t *work, int64_t lwork, int *info);
int mgla_mgSyevd_bufferSize(void *h, int jobz, int uplo, int n, const uintptr_t *a,
                            int ndev, void *descA, void *w, int wtype, int ctype,
                            int64_t *lwork);
int mgla_mgSyevd(void *h, int jobz, int uplo, int n, const uintptr_t *a, int ndev,
                 void *descA, void *w, int wtype, int ctype, const uintptr_t *work,
                 int64_t lwork, int *info);

/* cuSOLVER dense (64-bit generic API, plus the typed potri). */
int mgla_dnCreate(void **h);
int mgla_dnDestroy(void *h);
int mgla_dnCreateParams(void **p);
int mgla_dnDestroyParams(void *p);
int mgla_dnXpotrf_bufferSize(void *h, void *params, int uplo, int64_t n, int dtype,
                             uintptr_t a, int64_t lda, int ctype, size_t *dbytes,
                             size_t *hbytes);
int mgla_dnXpotrf(void *h, void *params, int uplo, int64_t n, int dtype, uintptr_t a,
                  int64_t lda, int ctype, uintptr_t dwork, size_t dbytes, void *hwork,
                  size_t hbytes, uintptr_t dinfo);
int mgla_dnXpotrs(void *h, void *params, int uplo, int64_t n, int64_t nrhs, int dtype,
                  uintptr_t a, int64_t lda, uintptr_t b, int64_t ldb, uintptr_t dinfo);
int mgla_dnXsyevd_bufferSize(void *h, void *params, int jobz, int uplo, int64_t n,
                             int dtype, uintptr_t a, int64_t lda, int wtype, uintptr_t w,
                             int ctype, size_t *dbytes, size_t *hbytes);
int mgla_dnXsyevd(void *h, void *params, int jobz, int uplo, int64_t n, int dtype,
                  uintptr_t a, int64_t lda, int wtype, uintptr_t w, int ctype,
                  uintptr_t dwork, size_t dbytes, void *hwork, size_t hbytes,
                  uintptr_t dinfo);
/* kind: 0 S, 1 D, 2 C, 3 Z. lwork is in elements. */
int mgla_dnPotri_bufferSize(int kind, void *h, int uplo, int n, uintptr_t a, int lda,
                            int *lwork);
int mgla_dnPotri(int kind, void *h, int uplo, int n, uintptr_t a, int lda, uintptr_t work,
                 int lwork, uintptr_t dinfo);

/* cuBLAS (level 3 and a few helpers, real types). kind: 0 S, 1 D; alpha and
   beta are passed as doubles and narrowed for S; enums are cuBLAS's
   (operation 0 N, 1 T; fill 0 lower; side 0 left, 1 right; diag 0 non-unit). */
int mgla_blasCreate(void **h);
int mgla_blasDestroy(void *h);
int mgla_blasGemm(int kind, void *h, int ta, int tb, int m, int n, int k, double alpha, uintptr_t a,
                  int lda, uintptr_t b, int ldb, double beta, uintptr_t c, int ldc);
int mgla_blasSyrkx(int kind, void *h, int uplo, int trans, int n, int k, double alpha, uintptr_t a,
                   int lda, uintptr_t b, int ldb, double beta, uintptr_t c, int ldc);
int mgla_blasSyr2k(int kind, void *h, int uplo, int trans, int n, int k, double alpha, uintptr_t a,
                   int lda, uintptr_t b, int ldb, double beta, uintptr_t c, int ldc);
int mgla_blasTrmm(int kind, void *h, int side, int uplo, int trans, int diag, int m, int n,
                  double alpha, uintptr_t a, int lda, uintptr_t b, int ldb, uintptr_t c, int ldc);
int mgla_blasTrsm(int kind, void *h, int side, int uplo, int trans, int diag, int m, int n,
                  double alpha, uintptr_t a, int lda, uintptr_t b, int ldb);
int mgla_blasGeam(int kind, void *h, int ta, int tb, int m, int n, double alpha, uintptr_t a, int lda,
                  double beta, uintptr_t b, int ldb, uintptr_t c, int ldc);
int mgla_blasDgmm(int kind, void *h, int side, int m, int n, uintptr_t a, int lda, uintptr_t x,
                  int incx, uintptr_t c, int ldc);
int mgla_blasScal(int kind, void *h, int n, double alpha, uintptr_t x, int incx);

/* cuBLASXt (real level 3 on host matrices, tiled over the selected devices).
   kind, scalars and enums as for cuBLAS above. */
int mgla_xtCreate(void **h);
int mgla_xtDestroy(void *h);
int mgla_xtDeviceSelect(void *h, int n, int *ids);
int mgla_xtSetBlockDim(void *h, int dim);
int mgla_xtSetPinning(void *h, int on);
int mgla_xtGemm(int kind, void *h, int ta, int tb, size_t m, size_t n, size_t k, double alpha,
                const void *a, size_t lda, const void *b, size_t ldb, double beta, void *c,
                size_t ldc);
int mgla_xtSyrkx(int kind, void *h, int uplo, int trans, size_t n, size_t k, double alpha,
                 const void *a, size_t lda, const void *b, size_t ldb, double beta, void *c,
                 size_t ldc);
int mgla_xtTrmm(int kind, void *h, int side, int uplo, int trans, int diag, size_t m, size_t n,
                double alpha, const void *a, size_t lda, const void *b, size_t ldb, void *c,
                size_t ldc);
int mgla_xtTrsm(int kind, void *h, int side, int uplo, int trans, int diag, size_t m, size_t n,
                double alpha, const void *a, size_t lda, void *b, size_t ldb);

#endif /* MGLA_CUSOLVER_SHIM_H */
