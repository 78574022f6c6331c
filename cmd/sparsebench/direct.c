//go:build mpi

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>

#include "direct.h"

direct_result direct_pcg(int n, const int *rowptr, const int *cols, const double *vals, const double *b,
                         double *x, double tol, int maxit, int coarsen, int interp, int relax, double strong,
                         int solves) {
	direct_result r = {0};
	MPI_Comm comm = MPI_COMM_SELF;
	double t0 = MPI_Wtime();
	HYPRE_IJMatrix ij;
	HYPRE_IJMatrixCreate(comm, 0, n - 1, 0, n - 1, &ij);
	HYPRE_IJMatrixSetObjectType(ij, HYPRE_PARCSR);
	int *ncols = malloc(n * sizeof(int));
	HYPRE_BigInt *rows = malloc(n * sizeof(HYPRE_BigInt));
	HYPRE_BigInt *bcols = malloc(rowptr[n] * sizeof(HYPRE_BigInt));
	for (int i = 0; i < n; i++) {
		ncols[i] = rowptr[i + 1] - rowptr[i];
		rows[i] = i;
	}
	for (int k = 0; k < rowptr[n]; k++) bcols[k] = cols[k];
	HYPRE_IJMatrixSetRowSizes(ij, ncols);
	HYPRE_IJMatrixInitialize(ij);
	HYPRE_IJMatrixSetValues(ij, n, ncols, rows, bcols, vals);
	HYPRE_IJMatrixAssemble(ij);
	HYPRE_ParCSRMatrix A;
	HYPRE_IJMatrixGetObject(ij, (void **)&A);
	HYPRE_IJVector bij, xij;
	HYPRE_IJVectorCreate(comm, 0, n - 1, &bij);
	HYPRE_IJVectorSetObjectType(bij, HYPRE_PARCSR);
	HYPRE_IJVectorInitialize(bij);
	HYPRE_IJVectorSetValues(bij, n, rows, b);
	HYPRE_IJVectorAssemble(bij);
	HYPRE_IJVectorCreate(comm, 0, n - 1, &xij);
	HYPRE_IJVectorSetObjectType(xij, HYPRE_PARCSR);
	HYPRE_IJVectorInitialize(xij);
	HYPRE_IJVectorAssemble(xij);
	HYPRE_ParVector pb, px;
	HYPRE_IJVectorGetObject(bij, (void **)&pb);
	HYPRE_IJVectorGetObject(xij, (void **)&px);
	double t1 = MPI_Wtime();

	HYPRE_Solver amg, pcg;
	HYPRE_BoomerAMGCreate(&amg);
	HYPRE_BoomerAMGSetCoarsenType(amg, coarsen);
	HYPRE_BoomerAMGSetInterpType(amg, interp);
	HYPRE_BoomerAMGSetRelaxType(amg, relax);
	HYPRE_BoomerAMGSetStrongThreshold(amg, strong);
	HYPRE_BoomerAMGSetTol(amg, 0.0);
	HYPRE_BoomerAMGSetMaxIter(amg, 1);
	HYPRE_ParCSRPCGCreate(comm, &pcg);
	HYPRE_PCGSetTwoNorm(pcg, 1);
	HYPRE_PCGSetTol(pcg, tol);
	HYPRE_PCGSetMaxIter(pcg, maxit);
	HYPRE_PCGSetLogging(pcg, 1);
	HYPRE_ParCSRPCGSetPrecond(pcg, HYPRE_BoomerAMGSolve, HYPRE_BoomerAMGSetup, amg);
	HYPRE_ParCSRPCGSetup(pcg, A, pb, px);
	double t2 = MPI_Wtime();
	r.setup = t2 - t1;
	r.build = t1 - t0;
	r.solve = 1e300;
	for (int s = 0; s < solves; s++) {
		HYPRE_ParVectorSetConstantValues(px, 0.0);
		double t3 = MPI_Wtime();
		HYPRE_ParCSRPCGSolve(pcg, A, pb, px);
		double t4 = MPI_Wtime();
		if (s == 0) r.first_solve = t4 - t3;
		if (t4 - t3 < r.solve) r.solve = t4 - t3;
	}
	r.error = HYPRE_GetError();
	HYPRE_ClearAllErrors();
	HYPRE_PCGGetNumIterations(pcg, &r.iters);
	HYPRE_PCGGetFinalRelativeResidualNorm(pcg, &r.residual);
	HYPRE_IJVectorGetValues(xij, n, rows, x);
	HYPRE_ParCSRPCGDestroy(pcg);
	HYPRE_BoomerAMGDestroy(amg);
	HYPRE_IJVectorDestroy(bij);
	HYPRE_IJVectorDestroy(xij);
	HYPRE_IJMatrixDestroy(ij);
	free(ncols);
	free(rows);
	free(bcols);
	return r;
}
