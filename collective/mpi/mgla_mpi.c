//go:build mpi

// The reductions of package mpi that MPI has no built-in operation for.
#include "mgla_mpi.h"

MPI_Op mgla_go_min = MPI_OP_NULL, mgla_go_max = MPI_OP_NULL;

// Go's min and max of floats (the CPU mesh engine's): a NaN in either
// operand gives NaN, and -0 is less than +0. MPI's MPI_MIN and MPI_MAX
// compare with < and > alone, so that whether a NaN survives depends on
// which rank holds it and in what order the reduction meets it.
#define GO_MIN(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) < (y) ? (x) : (y) < (x) ? (y) : signbit(x) ? (x) : (y))
#define GO_MAX(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) > (y) ? (x) : (y) > (x) ? (y) : signbit(x) ? (y) : (x))

#define REDUCE(NAME, PICK)                                                        \
	static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt) {       \
		int n = *len;                                                           \
		if (*dt == MPI_FLOAT) {                                                 \
			const float *a = in;                                                \
			float *b = inout;                                                   \
			for (int i = 0; i < n; i++) b[i] = PICK(a[i], b[i]);         \
		} else if (*dt == MPI_DOUBLE) {                                         \
			const double *a = in;                                               \
			double *b = inout;                                                  \
			for (int i = 0; i < n; i++) b[i] = PICK(a[i], b[i]);        \
		}                                                                       \
	}

REDUCE(go_min, GO_MIN)
REDUCE(go_max, GO_MAX)

int mgla_create_ops(void) {
	if (mgla_go_min != MPI_OP_NULL) return MPI_SUCCESS;
	int rc = MPI_Op_create(go_min, 1, &mgla_go_min);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Op_create(go_max, 1, &mgla_go_max);
}
