//go:build mpi

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>

#include "hypre_shim.h"

static int mh_wait(MPI_Request *req, long long timeout_ns, char *err, int errlen);

struct mh_engine {
	MPI_Comm comm;
	int abandoned; // a timed-out exchange left a request on comm: never free it
	int n, ilower, nrows, nnz, size;
	int *ncols;            // entries per local row
	HYPRE_BigInt *rows;    // global row indices
	HYPRE_BigInt *cols;    // global column indices
	int *counts, *displs;  // row blocks of every rank, for gathers
	mh_config cfg;
	char **set_names;
	double *set_values;
	int assembled;
	HYPRE_IJMatrix ij;
	HYPRE_ParCSRMatrix A, AT;
	HYPRE_IJVector bij, xij;
	HYPRE_ParVector b, x;
	HYPRE_Solver amg[2], krylov[2];
};

static int fail(char *err, int errlen, const char *what, int code) {
	char desc[256] = "";
	if (code) {
		HYPRE_DescribeError(code, desc);
	}
	snprintf(err, errlen, "%s: hypre error %d (%s)", what, code, desc);
	HYPRE_ClearAllErrors();
	return code ? code : -1;
}

#define CHECK(call, what)                                  \
	do {                                                   \
		HYPRE_Int _c = (call);                             \
		if (_c) return fail(err, errlen, (what), _c);      \
	} while (0)

static HYPRE_Int noop_setup(HYPRE_Solver s, HYPRE_ParCSRMatrix A, HYPRE_ParVector b, HYPRE_ParVector x) {
	(void)s; (void)A; (void)b; (void)x;
	return 0;
}

typedef HYPRE_Int (*int_setter)(HYPRE_Solver, HYPRE_Int);
typedef HYPRE_Int (*real_setter)(HYPRE_Solver, HYPRE_Real);

static const struct {
	const char *name;
	int_setter i;
	real_setter r;
} settings[] = {
	{"MaxLevels", HYPRE_BoomerAMGSetMaxLevels, NULL},
	{"MaxCoarseSize", HYPRE_BoomerAMGSetMaxCoarseSize, NULL},
	{"MinCoarseSize", HYPRE_BoomerAMGSetMinCoarseSize, NULL},
	{"CoarsenType", HYPRE_BoomerAMGSetCoarsenType, NULL},
	{"InterpType", HYPRE_BoomerAMGSetInterpType, NULL},
	{"RelaxType", HYPRE_BoomerAMGSetRelaxType, NULL},
	{"CycleType", HYPRE_BoomerAMGSetCycleType, NULL},
	{"NumSweeps", HYPRE_BoomerAMGSetNumSweeps, NULL},
	{"AggNumLevels", HYPRE_BoomerAMGSetAggNumLevels, NULL},
	{"AggInterpType", HYPRE_BoomerAMGSetAggInterpType, NULL},
	{"PMaxElmts", HYPRE_BoomerAMGSetPMaxElmts, NULL},
	{"MeasureType", HYPRE_BoomerAMGSetMeasureType, NULL},
	{"RelaxOrder", HYPRE_BoomerAMGSetRelaxOrder, NULL},
	{"SmoothType", HYPRE_BoomerAMGSetSmoothType, NULL},
	{"SmoothNumLevels", HYPRE_BoomerAMGSetSmoothNumLevels, NULL},
	{"SmoothNumSweeps", HYPRE_BoomerAMGSetSmoothNumSweeps, NULL},
	{"Variant", HYPRE_BoomerAMGSetVariant, NULL},
	{"Overlap", HYPRE_BoomerAMGSetOverlap, NULL},
	{"DomainType", HYPRE_BoomerAMGSetDomainType, NULL},
	{"NumPaths", HYPRE_BoomerAMGSetNumPaths, NULL},
	{"InterpVecVariant", HYPRE_BoomerAMGSetInterpVecVariant, NULL},
	{"ChebyOrder", HYPRE_BoomerAMGSetChebyOrder, NULL},
	{"CoarsenCutFactor", HYPRE_BoomerAMGSetCoarsenCutFactor, NULL},
	{"IsTriangular", HYPRE_BoomerAMGSetIsTriangular, NULL},
	{"GSMG", HYPRE_BoomerAMGSetGSMG, NULL},
	{"NumFunctions", HYPRE_BoomerAMGSetNumFunctions, NULL},
	{"KeepTranspose", HYPRE_BoomerAMGSetKeepTranspose, NULL},
	{"RAP2", HYPRE_BoomerAMGSetRAP2, NULL},
	{"StrongThreshold", NULL, HYPRE_BoomerAMGSetStrongThreshold},
	{"MaxRowSum", NULL, HYPRE_BoomerAMGSetMaxRowSum},
	{"TruncFactor", NULL, HYPRE_BoomerAMGSetTruncFactor},
	{"RelaxWt", NULL, HYPRE_BoomerAMGSetRelaxWt},
	{"OuterWt", NULL, HYPRE_BoomerAMGSetOuterWt},
	{"SchwarzRlxWeight", NULL, HYPRE_BoomerAMGSetSchwarzRlxWeight},
	{"ChebyFraction", NULL, HYPRE_BoomerAMGSetChebyFraction},
	{"NonGalerkinTol", NULL, HYPRE_BoomerAMGSetNonGalerkinTol},
	{"ADropTol", NULL, HYPRE_BoomerAMGSetADropTol},
};

int mh_check_setting(const char *name) {
	for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
		if (strcmp(settings[k].name, name) == 0) return 1;
	}
	return 0;
}

static int apply_setting(HYPRE_Solver s, const char *name, double v, char *err, int errlen) {
	for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
		if (strcmp(settings[k].name, name) != 0) continue;
		HYPRE_Int c = settings[k].i ? settings[k].i(s, (HYPRE_Int)(v < 0 ? v - 0.5 : v + 0.5)) : settings[k].r(s, v);
		if (c) {
			char what[128];
			snprintf(what, sizeof what, "BoomerAMG setting %s = %g", name, v);
			return fail(err, errlen, what, c);
		}
		return 0;
	}
	snprintf(err, errlen, "no BoomerAMG setting %s", name);
	return -1;
}

static int make_vector(mh_engine *e, HYPRE_IJVector *ij, HYPRE_ParVector *par, char *err, int errlen) {
	CHECK(HYPRE_IJVectorCreate(e->comm, e->ilower, e->ilower + e->nrows - 1, ij), "IJVectorCreate");
	CHECK(HYPRE_IJVectorSetObjectType(*ij, HYPRE_PARCSR), "IJVectorSetObjectType");
	CHECK(HYPRE_IJVectorInitialize(*ij), "IJVectorInitialize");
	CHECK(HYPRE_IJVectorAssemble(*ij), "IJVectorAssemble");
	void *obj;
	CHECK(HYPRE_IJVectorGetObject(*ij, &obj), "IJVectorGetObject");
	*par = (HYPRE_ParVector)obj;
	return 0;
}

static double *data_of(HYPRE_ParVector v) {
	return hypre_VectorData(hypre_ParVectorLocalVector((hypre_ParVector *)v));
}

int mh_create(mh_engine **out, MPI_Fint fcomm, int n, int ilower, int nrows,
              const int *rowptr, const int *cols, const mh_config *cfg, long long timeout_ns, char *err, int errlen) {
	static int initialised = 0;
	if (!initialised) {
		CHECK(HYPRE_Init(), "HYPRE_Init");
		initialised = 1;
	}
	mh_engine *e = calloc(1, sizeof *e);
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = e;
	// A duplicate of the caller's communicator: the solver must not depend
	// on the caller keeping it open (hypre's objects use it until
	// mh_destroy), and its messages stay apart from the caller's. Blocking:
	// NewSolver's two timed agreements before it make every rank come (a
	// rank late to them times out in the second), and an abandoned
	// MPI_Comm_idup would hold Open MPI's context-id allocation, so that
	// every later communicator made in the process from one of higher id
	// (a Split, another solver) waited for ever.
	e->comm = MPI_COMM_NULL;
	int drc = MPI_Comm_dup(MPI_Comm_f2c(fcomm), &e->comm);
	if (drc != MPI_SUCCESS) {
		e->comm = MPI_COMM_NULL;
		snprintf(err, errlen, "MPI_Comm_dup failed (%d)", drc);
		return drc;
	}
	MPI_Comm_set_errhandler(e->comm, MPI_ERRORS_RETURN);
	e->n = n;
	e->ilower = ilower;
	e->nrows = nrows;
	e->nnz = rowptr[nrows];
	e->cfg = *cfg;
	e->cfg.set_names = NULL;
	e->cfg.set_values = NULL;
	if (cfg->nset > 0) {
		e->set_names = calloc(cfg->nset, sizeof(char *));
		e->set_values = calloc(cfg->nset, sizeof(double));
		for (int k = 0; k < cfg->nset; k++) {
			e->set_names[k] = strdup(cfg->set_names[k]);
			e->set_values[k] = cfg->set_values[k];
		}
	}
	int rc = MPI_Comm_size(e->comm, &e->size);
	if (rc != MPI_SUCCESS) {
		snprintf(err, errlen, "MPI_Comm_size failed (%d)", rc);
		return rc;
	}
	e->counts = calloc(e->size, sizeof(int));
	e->displs = calloc(e->size, sizeof(int));
	// Every rank's first row, row count and order N, so that every rank
	// finds the same fault in the same data (-2: the same message on every
	// rank) instead of some ranks going on into hypre and waiting there.
	int *all = calloc(3 * e->size + 3, sizeof(int)), *mine = all + 3 * e->size;
	if (!all) {
		snprintf(err, errlen, "out of memory");
		return MPI_ERR_NO_MEM;
	}
	mine[0] = ilower, mine[1] = nrows, mine[2] = n;
	MPI_Request req;
	rc = MPI_Iallgather(mine, 3, MPI_INT, all, 3, MPI_INT, e->comm, &req);
	if (rc != MPI_SUCCESS) {
		free(all);
		snprintf(err, errlen, "MPI_Iallgather failed (%d)", rc);
		return rc;
	}
	if ((rc = mh_wait(&req, timeout_ns, err, errlen)) != 0) {
		e->abandoned = 1; // the request may still be live: all stays with MPI
		return rc;
	}
	for (int r = 1; r < e->size; r++) {
		if (all[3 * r + 2] != all[2]) {
			snprintf(err, errlen, "the ranks disagree on the order of the matrix: rank %d has %d rows in all, rank 0 has %d", r, all[3 * r + 2], all[2]);
			free(all);
			return -2;
		}
	}
	int next = 0;
	for (int r = 0; r < e->size; r++) {
		if (all[3 * r] != next) {
			snprintf(err, errlen, "the row blocks do not tile the rows: rank %d starts at row %d, want %d", r, all[3 * r], next);
			free(all);
			return -2;
		}
		e->displs[r] = all[3 * r];
		e->counts[r] = all[3 * r + 1];
		next += all[3 * r + 1];
	}
	free(all);
	if (next != n) {
		snprintf(err, errlen, "the row blocks cover %d rows of %d", next, n);
		return -2;
	}
	e->ncols = calloc(nrows > 0 ? nrows : 1, sizeof(int));
	e->rows = calloc(nrows > 0 ? nrows : 1, sizeof(HYPRE_BigInt));
	e->cols = calloc(e->nnz > 0 ? e->nnz : 1, sizeof(HYPRE_BigInt));
	for (int i = 0; i < nrows; i++) {
		e->ncols[i] = rowptr[i + 1] - rowptr[i];
		e->rows[i] = ilower + i;
	}
	for (int k = 0; k < e->nnz; k++) e->cols[k] = cols[k];
	CHECK(HYPRE_IJMatrixCreate(e->comm, ilower, ilower + nrows - 1, ilower, ilower + nrows - 1, &e->ij), "IJMatrixCreate");
	CHECK(HYPRE_IJMatrixSetObjectType(e->ij, HYPRE_PARCSR), "IJMatrixSetObjectType");
	int rcv = make_vector(e, &e->bij, &e->b, err, errlen);
	if (rcv) return rcv;
	return make_vector(e, &e->xij, &e->x, err, errlen);
}

int mh_load(mh_engine *e, const double *vals, char *err, int errlen) {
	if (!e->assembled) {
		CHECK(HYPRE_IJMatrixSetRowSizes(e->ij, e->ncols), "IJMatrixSetRowSizes");
		CHECK(HYPRE_IJMatrixInitialize(e->ij), "IJMatrixInitialize");
	}
	// A rank whose rows hold no entries passes no values (hypre refuses a
	// NULL array), but still assembles: Assemble is collective.
	if (vals != NULL) {
		CHECK(HYPRE_IJMatrixSetValues(e->ij, e->nrows, e->ncols, e->rows, e->cols, vals), "IJMatrixSetValues");
	}
	CHECK(HYPRE_IJMatrixAssemble(e->ij), "IJMatrixAssemble");
	void *obj;
	CHECK(HYPRE_IJMatrixGetObject(e->ij, &obj), "IJMatrixGetObject");
	if (e->assembled && (HYPRE_ParCSRMatrix)obj != e->A) {
		// hypre made a new matrix object: hierarchies of the old one are void.
		mh_free_hierarchies(e);
	}
	e->A = (HYPRE_ParCSRMatrix)obj;
	e->assembled = 1;
	return 0;
}

static void free_side(mh_engine *e, int t) {
	if (e->krylov[t]) {
		switch (e->cfg.method) {
		case 0: HYPRE_ParCSRPCGDestroy(e->krylov[t]); break;
		case 2: HYPRE_ParCSRBiCGSTABDestroy(e->krylov[t]); break;
		case 3: HYPRE_ParCSRGMRESDestroy(e->krylov[t]); break;
		}
		e->krylov[t] = NULL;
	}
	if (e->amg[t]) {
		HYPRE_BoomerAMGDestroy(e->amg[t]);
		e->amg[t] = NULL;
	}
	if (t == 1 && e->AT) {
		HYPRE_ParCSRMatrixDestroy(e->AT);
		e->AT = NULL;
	}
}

// finalized: after MPI_Finalize hypre's objects must be left (destroying
// them frees MPI communicators, which makes Open MPI abort the job).
static int finalized(void) {
	int f = 0;
	MPI_Finalized(&f);
	return f;
}

void mh_free_hierarchies(mh_engine *e) {
	if (finalized()) return;
	free_side(e, 0);
	free_side(e, 1);
}

static HYPRE_ParCSRMatrix matrix_of(mh_engine *e, int t) { return t ? e->AT : e->A; }

int mh_setup(mh_engine *e, int t, char *err, int errlen) {
	if (!e->assembled) {
		snprintf(err, errlen, "no values loaded");
		return -1;
	}
	free_side(e, t);
	if (t) {
		hypre_ParCSRMatrix *at = NULL;
		CHECK(hypre_ParCSRMatrixTranspose((hypre_ParCSRMatrix *)e->A, &at, 1), "ParCSRMatrixTranspose");
		e->AT = (HYPRE_ParCSRMatrix)at;
		// BoomerAMG's smoothers read each row's diagonal entry first.
		CHECK(hypre_CSRMatrixReorder(hypre_ParCSRMatrixDiag(at)), "CSRMatrixReorder");
	}
	HYPRE_Solver amg;
	CHECK(HYPRE_BoomerAMGCreate(&amg), "BoomerAMGCreate");
	e->amg[t] = amg;
	const mh_config *c = &e->cfg;
	CHECK(HYPRE_BoomerAMGSetPrintLevel(amg, c->print_level & 1), "BoomerAMGSetPrintLevel");
	CHECK(HYPRE_BoomerAMGSetCoarsenType(amg, c->coarsen), "BoomerAMGSetCoarsenType");
	CHECK(HYPRE_BoomerAMGSetInterpType(amg, c->interp), "BoomerAMGSetInterpType");
	CHECK(HYPRE_BoomerAMGSetRelaxType(amg, c->relax), "BoomerAMGSetRelaxType");
	CHECK(HYPRE_BoomerAMGSetStrongThreshold(amg, c->strong), "BoomerAMGSetStrongThreshold");
	CHECK(HYPRE_BoomerAMGSetCycleType(amg, c->cycle), "BoomerAMGSetCycleType");
	CHECK(HYPRE_BoomerAMGSetAggNumLevels(amg, c->agg_levels), "BoomerAMGSetAggNumLevels");
	CHECK(HYPRE_BoomerAMGSetTol(amg, 0.0), "BoomerAMGSetTol");
	CHECK(HYPRE_BoomerAMGSetMaxIter(amg, 1), "BoomerAMGSetMaxIter");
	for (int k = 0; k < c->nset; k++) {
		int rc = apply_setting(amg, e->set_names[k], e->set_values[k], err, errlen);
		if (rc) return rc;
	}
	HYPRE_ParCSRMatrix A = matrix_of(e, t);
	CHECK(HYPRE_BoomerAMGSetup(amg, A, e->b, e->x), "BoomerAMGSetup");
	HYPRE_Solver k = NULL;
	switch (c->method) {
	case 0:
		CHECK(HYPRE_ParCSRPCGCreate(e->comm, &k), "PCGCreate");
		e->krylov[t] = k;
		CHECK(HYPRE_PCGSetTwoNorm(k, 1), "PCGSetTwoNorm");
		CHECK(HYPRE_PCGSetTol(k, c->tol), "PCGSetTol");
		// The recurrence's residual drifts from the true one on nearly
		// singular systems: hypre checks the true residual before it stops.
		CHECK(HYPRE_PCGSetRecomputeResidual(k, 1), "PCGSetRecomputeResidual");
		CHECK(HYPRE_PCGSetMaxIter(k, c->max_iter), "PCGSetMaxIter");
		CHECK(HYPRE_PCGSetLogging(k, 1), "PCGSetLogging");
		CHECK(HYPRE_PCGSetPrintLevel(k, (c->print_level & 2) ? 2 : 0), "PCGSetPrintLevel");
		CHECK(HYPRE_ParCSRPCGSetPrecond(k, HYPRE_BoomerAMGSolve, noop_setup, amg), "PCGSetPrecond");
		CHECK(HYPRE_ParCSRPCGSetup(k, A, e->b, e->x), "PCGSetup");
		break;
	case 2:
		CHECK(HYPRE_ParCSRBiCGSTABCreate(e->comm, &k), "BiCGSTABCreate");
		e->krylov[t] = k;
		CHECK(HYPRE_BiCGSTABSetTol(k, c->tol), "BiCGSTABSetTol");
		CHECK(HYPRE_BiCGSTABSetMaxIter(k, c->max_iter), "BiCGSTABSetMaxIter");
		CHECK(HYPRE_BiCGSTABSetLogging(k, 1), "BiCGSTABSetLogging");
		CHECK(HYPRE_BiCGSTABSetPrintLevel(k, (c->print_level & 2) ? 2 : 0), "BiCGSTABSetPrintLevel");
		CHECK(HYPRE_ParCSRBiCGSTABSetPrecond(k, HYPRE_BoomerAMGSolve, noop_setup, amg), "BiCGSTABSetPrecond");
		CHECK(HYPRE_ParCSRBiCGSTABSetup(k, A, e->b, e->x), "BiCGSTABSetup");
		break;
	case 3:
		CHECK(HYPRE_ParCSRGMRESCreate(e->comm, &k), "GMRESCreate");
		e->krylov[t] = k;
		CHECK(HYPRE_GMRESSetKDim(k, c->restart), "GMRESSetKDim");
		CHECK(HYPRE_GMRESSetTol(k, c->tol), "GMRESSetTol");
		CHECK(HYPRE_GMRESSetMaxIter(k, c->max_iter), "GMRESSetMaxIter");
		CHECK(HYPRE_GMRESSetLogging(k, 1), "GMRESSetLogging");
		CHECK(HYPRE_GMRESSetPrintLevel(k, (c->print_level & 2) ? 2 : 0), "GMRESSetPrintLevel");
		CHECK(HYPRE_ParCSRGMRESSetPrecond(k, HYPRE_BoomerAMGSolve, noop_setup, amg), "GMRESSetPrecond");
		CHECK(HYPRE_ParCSRGMRESSetup(k, A, e->b, e->x), "GMRESSetup");
		break;
	}
	return 0;
}

static int ready(mh_engine *e, int t, char *err, int errlen) {
	if (!e->amg[t]) {
		snprintf(err, errlen, "no hierarchy set up");
		return -1;
	}
	return 0;
}

int mh_solve(mh_engine *e, int t, const double *b, double *x, int *iters, double *res, int *status, char *err, int errlen) {
	int rc = ready(e, t, err, errlen);
	if (rc) return rc;
	memcpy(data_of(e->b), b, e->nrows * sizeof(double));
	memset(data_of(e->x), 0, e->nrows * sizeof(double));
	HYPRE_ParCSRMatrix A = matrix_of(e, t);
	HYPRE_Int it = 0, code = 0;
	HYPRE_Real r = 0;
	HYPRE_ClearAllErrors();
	switch (e->cfg.method) {
	case 0:
		HYPRE_ParCSRPCGSolve(e->krylov[t], A, e->b, e->x);
		code = HYPRE_GetError();
		HYPRE_PCGGetNumIterations(e->krylov[t], &it);
		HYPRE_PCGGetFinalRelativeResidualNorm(e->krylov[t], &r);
		break;
	case 1: {
		HYPRE_Solver amg = e->amg[t];
		HYPRE_BoomerAMGSetTol(amg, e->cfg.tol);
		HYPRE_BoomerAMGSetMaxIter(amg, e->cfg.max_iter);
		HYPRE_BoomerAMGSetPrintLevel(amg, e->cfg.print_level);
		HYPRE_BoomerAMGSetLogging(amg, 1);
		HYPRE_BoomerAMGSolve(amg, A, e->b, e->x);
		code = HYPRE_GetError();
		HYPRE_BoomerAMGGetNumIterations(amg, &it);
		HYPRE_BoomerAMGGetFinalRelativeResidualNorm(amg, &r);
		HYPRE_BoomerAMGSetTol(amg, 0.0);
		HYPRE_BoomerAMGSetMaxIter(amg, 1);
		HYPRE_BoomerAMGSetPrintLevel(amg, 0);
		HYPRE_BoomerAMGSetLogging(amg, 0);
		break;
	}
	case 2:
		HYPRE_ParCSRBiCGSTABSolve(e->krylov[t], A, e->b, e->x);
		code = HYPRE_GetError();
		HYPRE_BiCGSTABGetNumIterations(e->krylov[t], &it);
		HYPRE_BiCGSTABGetFinalRelativeResidualNorm(e->krylov[t], &r);
		break;
	case 3:
		HYPRE_ParCSRGMRESSolve(e->krylov[t], A, e->b, e->x);
		code = HYPRE_GetError();
		HYPRE_GMRESGetNumIterations(e->krylov[t], &it);
		HYPRE_GMRESGetFinalRelativeResidualNorm(e->krylov[t], &r);
		break;
	}
	HYPRE_ClearAllErrors();
	*iters = it;
	*res = r;
	*status = (code & HYPRE_ERROR_CONV) ? 1 : 0;
	memcpy(x, data_of(e->x), e->nrows * sizeof(double));
	code &= ~HYPRE_ERROR_CONV;
	if (code) return fail(err, errlen, "solve", code);
	return 0;
}

int mh_vcycle(mh_engine *e, int t, const double *r, double *z, char *err, int errlen) {
	int rc = ready(e, t, err, errlen);
	if (rc) return rc;
	memcpy(data_of(e->b), r, e->nrows * sizeof(double));
	memset(data_of(e->x), 0, e->nrows * sizeof(double));
	CHECK(HYPRE_BoomerAMGSolve(e->amg[t], matrix_of(e, t), e->b, e->x), "BoomerAMGSolve (V-cycle)");
	memcpy(z, data_of(e->x), e->nrows * sizeof(double));
	return 0;
}

int mh_matvec(mh_engine *e, int t, const double *x, double *y, char *err, int errlen) {
	if (!e->assembled) {
		snprintf(err, errlen, "no values loaded");
		return -1;
	}
	memcpy(data_of(e->x), x, e->nrows * sizeof(double));
	if (t) {
		CHECK(HYPRE_ParCSRMatrixMatvecT(1.0, e->A, e->x, 0.0, e->b), "ParCSRMatrixMatvecT");
	} else {
		CHECK(HYPRE_ParCSRMatrixMatvec(1.0, e->A, e->x, 0.0, e->b), "ParCSRMatrixMatvec");
	}
	memcpy(y, data_of(e->b), e->nrows * sizeof(double));
	return 0;
}

// mh_sum replaces *v by its sum over the ranks.
int mh_sum(mh_engine *e, double *v, char *err, int errlen) {
	double in = *v;
	int rc = MPI_Allreduce(&in, v, 1, MPI_DOUBLE, MPI_SUM, e->comm);
	if (rc != MPI_SUCCESS) {
		snprintf(err, errlen, "MPI_Allreduce failed (%d)", rc);
		return rc;
	}
	return 0;
}

// mh_wait polls req until it completes, at most timeout_ns: 0 when done,
// MH_TIMEOUT when a rank did not come in time, an MPI code on error. After
// a timeout the request stays with MPI (Open MPI 4.1 refuses to free an
// incomplete collective's request, MPI_ERR_REQUEST, which is ignored), and
// MPI may still complete it against a late rank: the caller leaves its
// buffers to MPI, as after an error.
static int mh_wait(MPI_Request *req, long long timeout_ns, char *err, int errlen) {
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0;; i++) {
		int flag = 0;
		int rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			snprintf(err, errlen, "MPI_Test failed (%d)", rc);
			return rc;
		}
		if (flag) return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long long ns = (long long)(t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec);
		if (ns >= timeout_ns) {
			MPI_Request_free(req);
			return MH_TIMEOUT;
		}
		if (ns > 10000000) { // past 10 ms, poll every 100 µs
			struct timespec nap = {0, 100000};
			nanosleep(&nap, NULL);
		} else if (i >= 64) { // a rank that comes within 10 ms costs no sleep's slack
			sched_yield();
		}
	}
}

// mh_timed_allreduce replaces v[0..n) by their reduction by op over the
// ranks of comm, waiting at most timeout_ns (mh_wait's results). After a
// timeout or an error its buffers are left to MPI (16n bytes).
static int mh_timed_allreduce(MPI_Comm comm, double *v, int n, MPI_Op op, long long timeout_ns, char *err, int errlen) {
	double *buf = malloc(2 * n * sizeof(double));
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return MPI_ERR_NO_MEM;
	}
	memcpy(buf, v, n * sizeof(double));
	MPI_Request req;
	int rc = MPI_Iallreduce(buf, buf + n, n, MPI_DOUBLE, op, comm, &req);
	if (rc != MPI_SUCCESS) {
		free(buf);
		snprintf(err, errlen, "MPI_Iallreduce failed (%d)", rc);
		return rc;
	}
	if ((rc = mh_wait(&req, timeout_ns, err, errlen)) == 0) {
		memcpy(v, buf + n, n * sizeof(double));
		free(buf);
	}
	return rc;
}

// mh_timed_reduce replaces *v by its largest (op 0) or smallest (op 1)
// value over the ranks, waiting at most timeout_ns (mh_wait's results); a
// failure marks the engine's communicator abandoned.
int mh_timed_reduce(mh_engine *e, double *v, int op, long long timeout_ns, char *err, int errlen) {
	int rc = mh_timed_allreduce(e->comm, v, 1, op ? MPI_MIN : MPI_MAX, timeout_ns, err, errlen);
	if (rc != 0) e->abandoned = 1; // a request may still be live on e->comm
	return rc;
}

int mh_gather(mh_engine *e, const double *local, double *global, char *err, int errlen) {
	int rc = MPI_Allgatherv(local, e->nrows, MPI_DOUBLE, global, e->counts, e->displs, MPI_DOUBLE, e->comm);
	if (rc != MPI_SUCCESS) {
		snprintf(err, errlen, "MPI_Allgatherv failed (%d)", rc);
		return rc;
	}
	return 0;
}

void mh_destroy(mh_engine *e) {
	if (!e) return;
	int done = finalized();
	if (!done) {
		mh_free_hierarchies(e);
		if (e->ij) HYPRE_IJMatrixDestroy(e->ij);
		if (e->bij) HYPRE_IJVectorDestroy(e->bij);
		if (e->xij) HYPRE_IJVectorDestroy(e->xij);
	}
	for (int k = 0; k < e->cfg.nset; k++) free(e->set_names[k]);
	free(e->set_names);
	free(e->set_values);
	free(e->ncols);
	free(e->rows);
	free(e->cols);
	free(e->counts);
	free(e->displs);
	// A communicator that a timed-out exchange left a request on is not
	// freed: MPI may still complete the request against a late rank, and
	// freeing the communicator under it crashed the next MPI call.
	if (e->comm != MPI_COMM_NULL && !done && !e->abandoned) MPI_Comm_free(&e->comm);
	free(e);
}

MPI_Fint mh_self_fortran(void) { return MPI_Comm_c2f(MPI_COMM_SELF); }

int mh_comm_size(MPI_Fint fcomm, int *size, int *rank) {
	MPI_Comm c = MPI_Comm_f2c(fcomm);
	int rc = MPI_Comm_size(c, size);
	return rc ? rc : MPI_Comm_rank(c, rank);
}

int mh_bcast_u64(MPI_Fint fcomm, unsigned long long *v) {
	return MPI_Bcast(v, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_Comm_f2c(fcomm));
}

int mh_comm_max(MPI_Fint fcomm, double *v, int n, long long timeout_ns, char *err, int errlen) {
	return mh_timed_allreduce(MPI_Comm_f2c(fcomm), v, n, MPI_MAX, timeout_ns, err, errlen);
}
