//go:build mpi

// C side of package dist: the BLACS, PBLAS and ScaLAPACK entry points it
// calls (Fortran interface of Debian's libscalapack-openmpi), declared here
// because ScaLAPACK ships no C header. Arrays are column-major; complex
// arrays are passed as void* (interleaved real, imaginary).
#ifndef MGLA_SCALAPACK_H
#define MGLA_SCALAPACK_H
#include <mpi.h>

int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridmap(int *ctxt, int *usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);

int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
int indxg2p_(const int *g, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
int indxg2l_(const int *g, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);

#define MGLA_POTRF(p) void p##potrf_(const char *uplo, const int *n, void *a, const int *ia, const int *ja, const int *desca, int *info);
#define MGLA_POTRS(p) void p##potrs_(const char *uplo, const int *n, const int *nrhs, const void *a, const int *ia, const int *ja, const int *desca, void *b, const int *ib, const int *jb, const int *descb, int *info);
#define MGLA_POTRI(p) void p##potri_(const char *uplo, const int *n, void *a, const int *ia, const int *ja, const int *desca, int *info);
#define MGLA_TRAN(p, name) void p##name##_(const int *m, const int *n, const void *alpha, const void *a, const int *ia, const int *ja, const int *desca, const void *beta, void *c, const int *ic, const int *jc, const int *descc);
#define MGLA_TRSM(p) void p##trsm_(const char *side, const char *uplo, const char *transa, const char *diag, const int *m, const int *n, const void *alpha, const void *a, const int *ia, const int *ja, const int *desca, void *b, const int *ib, const int *jb, const int *descb);
#define MGLA_GEMM(p) void p##gemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const void *alpha, const void *a, const int *ia, const int *ja, const int *desca, const void *b, const int *ib, const int *jb, const int *descb, const void *beta, void *c, const int *ic, const int *jc, const int *descc);
MGLA_GEMM(ps) MGLA_GEMM(pd) MGLA_GEMM(pc) MGLA_GEMM(pz)
MGLA_POTRF(ps) MGLA_POTRF(pd) MGLA_POTRF(pc) MGLA_POTRF(pz)
MGLA_POTRS(ps) MGLA_POTRS(pd) MGLA_POTRS(pc) MGLA_POTRS(pz)
MGLA_POTRI(ps) MGLA_POTRI(pd) MGLA_POTRI(pc) MGLA_POTRI(pz)
MGLA_TRAN(ps, tran) MGLA_TRAN(pd, tran) MGLA_TRAN(pc, tranc) MGLA_TRAN(pz, tranc)
MGLA_TRSM(ps) MGLA_TRSM(pd) MGLA_TRSM(pc) MGLA_TRSM(pz)

void pssyevd_(const char *jobz, const char *uplo, const int *n, void *a, const int *ia, const int *ja, const int *desca, void *w, void *z, const int *iz, const int *jz, const int *descz, void *work, const int *lwork, int *iwork, const int *liwork, int *info);
void pdsyevd_(const char *jobz, const char *uplo, const int *n, void *a, const int *ia, const int *ja, const int *desca, void *w, void *z, const int *iz, const int *jz, const int *descz, void *work, const int *lwork, int *iwork, const int *liwork, int *info);
void pcheevd_(const char *jobz, const char *uplo, const int *n, void *a, const int *ia, const int *ja, const int *desca, void *w, void *z, const int *iz, const int *jz, const int *descz, void *work, const int *lwork, void *rwork, const int *lrwork, int *iwork, const int *liwork, int *info);
void pzheevd_(const char *jobz, const char *uplo, const int *n, void *a, const int *ia, const int *ja, const int *desca, void *w, void *z, const int *iz, const int *jz, const int *descz, void *work, const int *lwork, void *rwork, const int *lrwork, int *iwork, const int *liwork, int *info);

void psgemr2d_(const int *m, const int *n, const void *a, const int *ia, const int *ja, const int *desca, void *b, const int *ib, const int *jb, const int *descb, const int *ictxt);
void pdgemr2d_(const int *m, const int *n, const void *a, const int *ia, const int *ja, const int *desca, void *b, const int *ib, const int *jb, const int *descb, const int *ictxt);
void pcgemr2d_(const int *m, const int *n, const void *a, const int *ia, const int *ja, const int *desca, void *b, const int *ib, const int *jb, const int *descb, const int *ictxt);
void pzgemr2d_(const int *m, const int *n, const void *a, const int *ia, const int *ja, const int *desca, void *b, const int *ib, const int *jb, const int *descb, const int *ictxt);

static inline MPI_Comm mgla_comm_f2c(int f) { return MPI_Comm_f2c(f); }
#endif
