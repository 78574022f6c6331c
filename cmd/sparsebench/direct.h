// The baseline of cmd/sparsebench: the hypre calls a C program makes to
// solve a CSR system with BoomerAMG-preconditioned PCG on MPI_COMM_SELF,
// timed with MPI_Wtime.
#ifndef SPARSEBENCH_DIRECT_H
#define SPARSEBENCH_DIRECT_H

typedef struct {
	double build, setup, solve; // seconds: IJ matrix and vectors, AMG + PCG setup, best solve
	double first_solve;         // seconds: the first solve
	int iters;
	double residual;
	int error;
} direct_result;

direct_result direct_pcg(int n, const int *rowptr, const int *cols, const double *vals, const double *b,
                         double *x, double tol, int maxit, int coarsen, int interp, int relax, double strong,
                         int solves);

#endif
