//go:build mglacuda

// shim.c: the NCCL function-pointer table filled by dlsym, and the wrappers
// Go calls. Nothing here links against NCCL or CUDA.

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

typedef int st; /* ncclResult_t */

typedef struct {
    char internal[MGLA_NCCL_ID_BYTES];
} mgla_nccl_id;

/* The leading fields of ncclConfig_t (NCCL >= 2.14). NCCL reads `size`
   bytes of it and, for a `version` below 2.17, takes its defaults for every
   later field. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
} mgla_nccl_config;

#define MGLA_NCCL_API_MAGIC 0xcafebeef
#define MGLA_NCCL_CONFIG_VERSION 21400 /* NCCL_VERSION(2, 14, 0) */

typedef st (*t_ncclGetVersion)(int *);
typedef const char *(*t_ncclGetErrorString)(st);
typedef const char *(*t_ncclGetLastError)(void *);
typedef st (*t_ncclGetUniqueId)(mgla_nccl_id *);
typedef st (*t_ncclCommInitAll)(void **, int, const int *);
typedef st (*t_ncclCommInitRankConfig)(void **, int, mgla_nccl_id, int, mgla_nccl_config *);
typedef st (*t_ncclCommSplit)(void *, int, int, void **, mgla_nccl_config *);
typedef st (*t_ncclCommDestroy)(void *);
typedef st (*t_ncclCommAbort)(void *);
typedef st (*t_ncclCommGetAsyncError)(void *, st *);
typedef st (*t_ncclCommUserRank)(void *, int *);
typedef st (*t_ncclCommCount)(void *, int *);
typedef st (*t_ncclGroupStart)(void);
typedef st (*t_ncclGroupEnd)(void);
typedef st (*t_ncclAllReduce)(const void *, void *, size_t, int, int, void *, void *);
typedef st (*t_ncclAllGather)(const void *, void *, size_t, int, void *, void *);
typedef st (*t_ncclReduceScatter)(const void *, void *, size_t, int, int, void *, void *);
typedef st (*t_ncclBroadcast)(const void *, void *, size_t, int, int, void *, void *);
typedef st (*t_ncclReduce)(const void *, void *, size_t, int, int, int, void *, void *);
typedef st (*t_ncclSend)(const void *, size_t, int, int, void *, void *);
typedef st (*t_ncclRecv)(void *, size_t, int, int, void *, void *);

#define MGLA_NCCL_SYMBOLS(X)                                                                        \
    X(ncclGetVersion)                                                                               \
    X(ncclGetErrorString)                                                                           \
    X(ncclGetLastError)                                                                             \
    X(ncclGetUniqueId)                                                                              \
    X(ncclCommInitAll)                                                                              \
    X(ncclCommInitRankConfig)                                                                       \
    X(ncclCommSplit)                                                                                \
    X(ncclCommDestroy)                                                                              \
    X(ncclCommAbort)                                                                                \
    X(ncclCommGetAsyncError)                                                                        \
    X(ncclCommUserRank)                                                                             \
    X(ncclCommCount)                                                                                \
    X(ncclGroupStart)                                                                               \
    X(ncclGroupEnd)                                                                                 \
    X(ncclAllReduce)                                                                                \
    X(ncclAllGather)                                                                                \
    X(ncclReduceScatter)                                                                            \
    X(ncclBroadcast)                                                                                \
    X(ncclReduce)                                                                                   \
    X(ncclSend)                                                                                     \
    X(ncclRecv)

#define DECLARE(name) static t_##name p_##name;
MGLA_NCCL_SYMBOLS(DECLARE)
#undef DECLARE

typedef struct {
    const char *name;
    void **slot;
} sym_entry;

#define ENTRY(name) {#name, (void **)&p_##name},
static sym_entry syms[] = {MGLA_NCCL_SYMBOLS(ENTRY)};
#undef ENTRY

static void *lib;

int mgla_nccl_open(const char *path, char *err, size_t errlen) {
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        return -1;
    }
    lib = h;
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        dlerror();
        *syms[i].slot = dlsym(lib, syms[i].name);
    }
    return 0;
}

int mgla_nccl_nsyms(void) { return (int)(sizeof(syms) / sizeof(syms[0])); }
const char *mgla_nccl_sym_name(int i) { return syms[i].name; }
int mgla_nccl_sym_present(int i) { return *syms[i].slot != NULL; }

#define CALL(name, ...) (p_##name ? p_##name(__VA_ARGS__) : MGLA_NCCL_NOSYM)
#define P(x) ((void *)(x))

int mgla_nccl_get_version(int *v) { return CALL(ncclGetVersion, v); }

const char *mgla_nccl_error_string(int r) {
    return p_ncclGetErrorString ? p_ncclGetErrorString(r) : "unknown NCCL error";
}

const char *mgla_nccl_last_error(uintptr_t comm) {
    return p_ncclGetLastError ? p_ncclGetLastError(P(comm)) : "";
}

int mgla_nccl_get_unique_id(void *id) { return CALL(ncclGetUniqueId, (mgla_nccl_id *)id); }

int mgla_nccl_comm_init_all(uintptr_t *comms, int n, const int *devs) {
    void *c[n > 0 ? n : 1];
    memset(c, 0, sizeof c);
    st r = CALL(ncclCommInitAll, c, n, devs);
    for (int i = 0; i < n; i++) {
        if (r == 0) {
            comms[i] = (uintptr_t)c[i];
        } else if (c[i] != NULL) {
            CALL(ncclCommAbort, c[i]); /* a failed init leaves its communicators to the caller */
        }
    }
    return r;
}

int mgla_nccl_comm_init_rank(uintptr_t *comm, int nranks, const void *id, int rank, int blocking) {
    if (!p_ncclCommInitRankConfig) {
        return MGLA_NCCL_NOSYM;
    }
    mgla_nccl_id uid;
    memcpy(uid.internal, id, MGLA_NCCL_ID_BYTES);
    mgla_nccl_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.magic = MGLA_NCCL_API_MAGIC;
    cfg.version = MGLA_NCCL_CONFIG_VERSION;
    cfg.blocking = blocking;
    void *c = NULL;
    st r = p_ncclCommInitRankConfig(&c, nranks, uid, rank, &cfg);
    *comm = (uintptr_t)c;
    return r;
}

int mgla_nccl_comm_split(uintptr_t comm, int color, int key, uintptr_t *out) {
    *out = 0;
    return CALL(ncclCommSplit, P(comm), color, key, (void **)out, NULL);
}

int mgla_nccl_comm_destroy(uintptr_t comm) { return CALL(ncclCommDestroy, P(comm)); }
int mgla_nccl_comm_abort(uintptr_t comm) { return CALL(ncclCommAbort, P(comm)); }

int mgla_nccl_comm_async_error(uintptr_t comm, int *err) {
    st e = 0;
    st r = CALL(ncclCommGetAsyncError, P(comm), &e);
    *err = e;
    return r;
}

int mgla_nccl_comm_user_rank(uintptr_t comm, int *rank) { return CALL(ncclCommUserRank, P(comm), rank); }
int mgla_nccl_comm_count(uintptr_t comm, int *count) { return CALL(ncclCommCount, P(comm), count); }
int mgla_nccl_group_start(void) { return CALL(ncclGroupStart); }
int mgla_nccl_group_end(void) { return CALL(ncclGroupEnd); }

int mgla_nccl_all_reduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t comm,
                         uintptr_t stream) {
    return CALL(ncclAllReduce, P(send), P(recv), count, dtype, op, P(comm), P(stream));
}

int mgla_nccl_all_gather(uintptr_t send, uintptr_t recv, size_t count, int dtype, uintptr_t comm,
                         uintptr_t stream) {
    return CALL(ncclAllGather, P(send), P(recv), count, dtype, P(comm), P(stream));
}

int mgla_nccl_reduce_scatter(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op,
                             uintptr_t comm, uintptr_t stream) {
    return CALL(ncclReduceScatter, P(send), P(recv), count, dtype, op, P(comm), P(stream));
}

int mgla_nccl_broadcast(uintptr_t send, uintptr_t recv, size_t count, int dtype, int root, uintptr_t comm,
                        uintptr_t stream) {
    return CALL(ncclBroadcast, P(send), P(recv), count, dtype, root, P(comm), P(stream));
}

int mgla_nccl_reduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, int root,
                     uintptr_t comm, uintptr_t stream) {
    return CALL(ncclReduce, P(send), P(recv), count, dtype, op, root, P(comm), P(stream));
}

int mgla_nccl_send(uintptr_t send, size_t count, int dtype, int peer, uintptr_t comm, uintptr_t stream) {
    return CALL(ncclSend, P(send), count, dtype, peer, P(comm), P(stream));
}

int mgla_nccl_recv(uintptr_t recv, size_t count, int dtype, int peer, uintptr_t comm, uintptr_t stream) {
    return CALL(ncclRecv, P(recv), count, dtype, peer, P(comm), P(stream));
}
