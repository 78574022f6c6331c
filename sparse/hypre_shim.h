// The C side of the sparse package's hypre engine (build tag mpi): one
// matrix on a row partition, its BoomerAMG hierarchies and Krylov solvers
// for A and Aᵀ. Every function returns 0 or a hypre/MPI error code and
// writes a message into err.
#ifndef MGLA_HYPRE_SHIM_H
#define MGLA_HYPRE_SHIM_H

#include <mpi.h>

typedef struct mh_engine mh_engine;

typedef struct {
	int method;     // 0 PCG, 1 AMG, 2 BiCGStab, 3 GMRES
	double tol;
	int max_iter;
	int coarsen, interp, relax, cycle, agg_levels, restart, print_level;
	double strong;
	int nset;           // pass-through settings
	const char **set_names;
	const double *set_values;
} mh_config;

int mh_create(mh_engine **out, MPI_Fint fcomm, int n, int ilower, int nrows,
              const int *rowptr, const int *cols, const mh_config *cfg, long long timeout_ns, char *err, int errlen);
int mh_load(mh_engine *e, const double *vals, char *err, int errlen);
int mh_setup(mh_engine *e, int trans, char *err, int errlen);
// status: 0 converged, 1 not converged (hypre's convergence flag).
int mh_solve(mh_engine *e, int trans, const double *b, double *x, int *iters, double *res, int *status, char *err, int errlen);
int mh_vcycle(mh_engine *e, int trans, const double *r, double *z, char *err, int errlen);
int mh_matvec(mh_engine *e, int trans, const double *x, double *y, char *err, int errlen);
int mh_sum(mh_engine *e, double *v, char *err, int errlen);
#define MH_TIMEOUT (-3)
int mh_timed_reduce(mh_engine *e, double *v, int op, long long timeout_ns, char *err, int errlen);
int mh_gather(mh_engine *e, const double *local, double *global, char *err, int errlen);
void mh_free_hierarchies(mh_engine *e);
void mh_destroy(mh_engine *e);
int mh_check_setting(const char *name);
// MPI_COMM_SELF as a Fortran handle (MPI must be initialised).
MPI_Fint mh_self_fortran(void);
// The size and rank of a communicator given as a Fortran handle.
int mh_comm_size(MPI_Fint fcomm, int *size, int *rank);
// Broadcast of one 64-bit value from rank 0.
int mh_bcast_u64(MPI_Fint fcomm, unsigned long long *v);
// Maximum over the ranks of n doubles, in place, waiting at most timeout_ns
// (MH_TIMEOUT after that; the communicator then holds an abandoned request).
int mh_comm_max(MPI_Fint fcomm, double *v, int n, long long timeout_ns, char *err, int errlen);

#endif
