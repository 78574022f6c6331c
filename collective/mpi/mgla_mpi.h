//go:build mpi

// C side of package mpi: thin helpers around the MPI calls, so that Go
// never touches Open MPI's handle macros. Included by the cgo files of the
// package (mpi build tag).
#ifndef MGLA_MPI_H
#define MGLA_MPI_H
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// mgla_go_min and mgla_go_max are Go's min and max of floats (a NaN wins,
// -0 < +0) as MPI operations, made by mgla_create_ops (mgla_mpi.c) when MPI
// is initialised.
extern MPI_Op mgla_go_min, mgla_go_max;
int mgla_create_ops(void);

static inline MPI_Comm mgla_comm_world(void) { return MPI_COMM_WORLD; }
static inline MPI_Comm mgla_comm_null(void) { return MPI_COMM_NULL; }
static inline int mgla_thread_multiple(void) { return MPI_THREAD_MULTIPLE; }
static inline int mgla_thread_serialized(void) { return MPI_THREAD_SERIALIZED; }
static inline int mgla_thread_funneled(void) { return MPI_THREAD_FUNNELED; }
static inline int mgla_thread_single(void) { return MPI_THREAD_SINGLE; }

// mgla_init initialises MPI with the required thread level unless it is
// already initialised (then *provided is the level it has), and makes MPI
// failures on the predefined communicators return codes.
static inline int mgla_init(int required, int *provided) {
	int inited = 0, rc;
	MPI_Initialized(&inited);
	if (inited) {
		rc = MPI_Query_thread(provided);
	} else {
		rc = MPI_Init_thread(NULL, NULL, required, provided);
	}
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
	if (rc != MPI_SUCCESS) return rc;
	return mgla_create_ops();
}

static inline int mgla_finalize(void) {
	int done = 0;
	MPI_Finalized(&done);
	return done ? MPI_SUCCESS : MPI_Finalize();
}

static inline void mgla_error_string(int code, char *buf) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	buf[n] = 0;
}

static inline int mgla_tag_ub(int *ub) {
	int *v, flag = 0;
	int rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
	*ub = (rc == MPI_SUCCESS && flag) ? *v : 32767;
	return rc;
}

// mgla_dtype is the MPI type of a dtype code (record.go's dtypes). Go's int
// and uint are as wide as a pointer.
static inline MPI_Datatype mgla_dtype(int code) {
	switch (code) {
	case 0: return MPI_FLOAT;
	case 1: return MPI_DOUBLE;
	case 2: return MPI_C_FLOAT_COMPLEX;
	case 3: return MPI_C_DOUBLE_COMPLEX;
	case 4: return sizeof(void *) == 8 ? MPI_INT64_T : MPI_INT32_T; // int
	case 5: return MPI_INT8_T;
	case 6: return MPI_INT16_T;
	case 7: return MPI_INT32_T;
	case 8: return MPI_INT64_T;
	case 9: return sizeof(void *) == 8 ? MPI_UINT64_T : MPI_UINT32_T; // uint
	case 10: return MPI_UINT8_T;
	case 11: return MPI_UINT16_T;
	case 12: return MPI_UINT32_T;
	case 13: return MPI_UINT64_T;
	}
	return MPI_BYTE;
}

// mgla_op is the MPI operation of a reduction code (collective.ReduceOp) on
// a dtype code: min and max of floats are Go's, so that every engine agrees
// (MPI_MIN and MPI_MAX keep or drop a NaN depending on the order they meet it).
static inline MPI_Op mgla_op(int code, int dtype) {
	int isFloat = dtype == 0 || dtype == 1;
	switch (code) {
	case 1: return MPI_PROD;
	case 2: return isFloat ? mgla_go_min : MPI_MIN;
	case 3: return isFloat ? mgla_go_max : MPI_MAX;
	}
	return MPI_SUM;
}

// mgla_start issues one nonblocking collective (kind: collective.Kind);
// Bcast broadcasts from send at the root (which MPI only reads) into recv
// elsewhere.
static inline int mgla_start(int kind, const void *send, void *recv, int count, int dtype, int op, int root,
		MPI_Comm comm, MPI_Request *req) {
	MPI_Datatype dt = mgla_dtype(dtype);
	MPI_Op o = mgla_op(op, dtype);
	switch (kind) {
	case 0: return MPI_Iallreduce(send, recv, count, dt, o, comm, req);
	case 1: return MPI_Iallgather(send, count, dt, recv, count, dt, comm, req);
	case 2: return MPI_Ireduce_scatter_block(send, recv, count, dt, o, comm, req);
	case 3: return MPI_Ialltoall(send, count, dt, recv, count, dt, comm, req);
	case 4: {
		int rank;
		MPI_Comm_rank(comm, &rank);
		return MPI_Ibcast(rank == root ? (void *)send : recv, count, dt, root, comm, req);
	}
	case 5: return MPI_Ireduce(send, recv, count, dt, o, root, comm, req);
	case 6: return MPI_Igather(send, count, dt, recv, count, dt, root, comm, req);
	case 7: return MPI_Iscatter(send, count, dt, recv, count, dt, root, comm, req);
	case 8: return MPI_Iscan(send, recv, count, dt, o, comm, req);
	case 12: return MPI_Ibarrier(comm, req);
	}
	return MPI_ERR_ARG;
}

// mgla_block makes one collective (kind: collective.Kind) with MPI's
// blocking call, as mgla_start describes for the nonblocking ones.
static inline int mgla_block(int kind, const void *send, void *recv, int count, int dtype, int op, int root, MPI_Comm comm) {
	MPI_Datatype dt = mgla_dtype(dtype);
	MPI_Op o = mgla_op(op, dtype);
	switch (kind) {
	case 0: return MPI_Allreduce(send, recv, count, dt, o, comm);
	case 1: return MPI_Allgather(send, count, dt, recv, count, dt, comm);
	case 2: return MPI_Reduce_scatter_block(send, recv, count, dt, o, comm);
	case 3: return MPI_Alltoall(send, count, dt, recv, count, dt, comm);
	case 4: {
		int rank;
		MPI_Comm_rank(comm, &rank);
		return MPI_Bcast(rank == root ? (void *)send : recv, count, dt, root, comm);
	}
	case 5: return MPI_Reduce(send, recv, count, dt, o, root, comm);
	case 6: return MPI_Gather(send, count, dt, recv, count, dt, root, comm);
	case 7: return MPI_Scatter(send, count, dt, recv, count, dt, root, comm);
	case 8: return MPI_Scan(send, recv, count, dt, o, comm);
	case 12: return MPI_Barrier(comm);
	}
	return MPI_ERR_ARG;
}

// mgla_ibcast broadcasts count elements of buf from root (one chunk of a
// pipelined Bcast).
static inline int mgla_ibcast(void *buf, int count, int dtype, int root, MPI_Comm comm, MPI_Request *req) {
	return MPI_Ibcast(buf, count, mgla_dtype(dtype), root, comm, req);
}

// mgla_iagree starts the minimum over the ranks of n ints (the flags the
// ranks must agree on).
static inline int mgla_iagree(const int *in, int *out, int n, MPI_Comm comm, MPI_Request *req) {
	return MPI_Iallreduce(in, out, n, MPI_INT, MPI_MIN, comm, req);
}

// mgla_exchange posts the metadata exchange of a collective check: a
// receive of one record of bytes from every other rank into its slot of
// buf, then a send of this rank's slot to every other rank. reqs[r] is the
// receive from rank r, reqs[size+r] the send to it (null for this rank).
static inline int mgla_exchange(MPI_Comm comm, int rank, int size, char *buf, int bytes, int tag, MPI_Request *reqs) {
	int rc;
	reqs[rank] = reqs[size + rank] = MPI_REQUEST_NULL;
	for (int r = 0; r < size; r++) {
		if (r == rank) continue;
		if ((rc = MPI_Irecv(buf + (size_t)r * bytes, bytes, MPI_BYTE, r, tag, comm, &reqs[r])) != MPI_SUCCESS) return rc;
	}
	for (int i = 1; i < size; i++) {
		int r = (rank + i) % size;
		if ((rc = MPI_Isend(buf + (size_t)rank * bytes, bytes, MPI_BYTE, r, tag, comm, &reqs[size + r])) != MPI_SUCCESS) return rc;
	}
	return MPI_SUCCESS;
}

// mgla_isend and mgla_irecv move count elements of dtype (-1: bytes).
static inline int mgla_isend(const void *buf, int count, int dtype, int peer, int tag, MPI_Comm comm, MPI_Request *req) {
	return MPI_Isend(buf, count, mgla_dtype(dtype), peer, tag, comm, req);
}
static inline int mgla_irecv(void *buf, int count, int dtype, int peer, int tag, MPI_Comm comm, MPI_Request *req) {
	return MPI_Irecv(buf, count, mgla_dtype(dtype), peer, tag, comm, req);
}

static inline long mgla_online_cpus(void) { return sysconf(_SC_NPROCESSORS_ONLN); }

static inline int64_t mgla_now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// mgla_poll tests the n requests until all are complete (returns 1) or
// spin_ns passed (returns 0), yielding the processor between tests after
// the first few when yield is set, as Open MPI's own wait does on an
// oversubscribed node.
// *rc is the MPI error code of a failed test.
static inline int mgla_poll(int n, MPI_Request *reqs, int64_t spin_ns, int yield, int *rc) {
	int64_t start = mgla_now_ns();
	for (int i = 0;; i++) {
		int flag = 0;
		*rc = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
		if (*rc != MPI_SUCCESS) return 0;
		if (flag) return 1;
		if ((i & 15) == 0 && mgla_now_ns() - start >= spin_ns) return 0;
		if (yield && i >= 64) sched_yield();
	}
}

static inline int mgla_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }

// mgla_abandon gives up on a request that did not complete: receives are
// cancelled, then the request is freed (MPI completes or drops it later).
static inline void mgla_abandon(MPI_Request *req, int recv) {
	if (*req == MPI_REQUEST_NULL) return;
	if (recv) MPI_Cancel(req);
	MPI_Request_free(req);
}

// mgla_cvar_int reads the integer MPI_T control variable name (an MCA
// parameter in Open MPI) into *value; it returns an MPI_T error code.
static inline int mgla_cvar_int(const char *name, int *value) {
	int provided, index, count, rc;
	MPI_T_cvar_handle handle;
	if ((rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) != MPI_SUCCESS) return rc;
	rc = MPI_T_cvar_get_index(name, &index);
	if (rc == MPI_SUCCESS) rc = MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
	if (rc == MPI_SUCCESS) {
		rc = count == 1 ? MPI_T_cvar_read(handle, value) : MPI_T_ERR_INVALID;
		MPI_T_cvar_handle_free(&handle);
	}
	MPI_T_finalize();
	return rc;
}

static inline int mgla_comm_idup(MPI_Comm comm, MPI_Comm *out, MPI_Request *req) {
	int rc = MPI_Comm_idup(comm, out, req);
	if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}

static inline int mgla_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
	int rc = MPI_Comm_split(comm, color < 0 ? MPI_UNDEFINED : color, key, out);
	if (rc == MPI_SUCCESS && *out != MPI_COMM_NULL) rc = MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}

static inline int mgla_comm_free(MPI_Comm *comm) { return MPI_Comm_free(comm); }
static inline int mgla_comm_rank_size(MPI_Comm comm, int *rank, int *size) {
	int rc = MPI_Comm_rank(comm, rank);
	return rc == MPI_SUCCESS ? MPI_Comm_size(comm, size) : rc;
}
static inline int mgla_comm_c2f(MPI_Comm comm) { return (int)MPI_Comm_c2f(comm); }
#endif
