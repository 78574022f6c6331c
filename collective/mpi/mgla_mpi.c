//go:build mpi

// The reductions of package mpi that MPI has no built-in operation for.

// Vectorised, the loops keep up with MPI's own MPI_MIN and MPI_MAX; GCC
// vectorises their selects only at -O3 without trapping math (no code here
// relies on floating-point traps).
#pragma GCC optimize("O3", "no-trapping-math")

#include "mgla_mpi.h"

MPI_Op mgla_go_min = MPI_OP_NULL, mgla_go_max = MPI_OP_NULL;

// Go's min and max of floats (those of the CPU mesh engine): a NaN in either
// operand gives NaN, and -0 is less than +0. MPI's MPI_MIN and MPI_MAX
// compare with < and > alone, so that whether a NaN survives depends on
// which rank holds it and in what order the reduction meets it. Two zeros
// combine by arithmetic: -(-x + -y) is -0 unless both are +0, x + y is +0
// unless both are -0.
#define GO_MIN_MAX(T, SUFFIX)                                                        \
	static inline T go_min_##SUFFIX(T x, T y) {                                 \
		T r = x < y ? x : y, zeros = -(-x + -y);                              \
		r = x == y ? (x == 0 ? zeros : x) : r;                                \
		r = y != y ? y : r;                                                   \
		return x != x ? x : r;                                                \
	}                                                                           \
	static inline T go_max_##SUFFIX(T x, T y) {                                 \
		T r = x > y ? x : y, zeros = x + y;                                   \
		r = x == y ? (x == 0 ? zeros : x) : r;                                \
		r = y != y ? y : r;                                                   \
		return x != x ? x : r;                                                \
	}
GO_MIN_MAX(float, f)
GO_MIN_MAX(double, d)

// REDUCE defines the MPI user function NAME: inout[i] = PICK(in[i], inout[i]).
#define REDUCE(NAME, PICK)                                                           \
	static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt) {          \
		int n = *len;                                                              \
		if (*dt == MPI_FLOAT) {                                                    \
			const float *restrict a = in;                                          \
			float *restrict b = inout;                                             \
			for (int i = 0; i < n; i++) b[i] = PICK##_f(a[i], b[i]);               \
		} else if (*dt == MPI_DOUBLE) {                                            \
			const double *restrict a = in;                                         \
			double *restrict b = inout;                                            \
			for (int i = 0; i < n; i++) b[i] = PICK##_d(a[i], b[i]);               \
		}                                                                          \
	}
REDUCE(go_min, go_min)
REDUCE(go_max, go_max)

int mgla_create_ops(void) {
	if (mgla_go_min != MPI_OP_NULL) return MPI_SUCCESS;
	int rc = MPI_Op_create(go_min, 1, &mgla_go_min);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Op_create(go_max, 1, &mgla_go_max);
}
