//go:build mglacuda

// shim.h declares the C side of package nccl: dlopen/dlsym loading of
// libnccl.so.2 and thin wrappers that Go calls through cgo. No NCCL header is
// included: handles (communicators, streams) and device addresses are passed
// as uintptr_t, enums as int (the ABI of a C enum), and the two structs NCCL
// takes (the unique id, by value, and the communicator config) are declared
// here with NCCL's layout. Every name starts with mgla_nccl_ so that it never
// collides with the cuSOLVER shim linked into the same binary.

#ifndef MGLA_NCCL_SHIM_H
#define MGLA_NCCL_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* Returned by a wrapper whose symbol was not resolved; no ncclResult_t has
   this value. */
#define MGLA_NCCL_NOSYM (-999)

/* Bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES). */
#define MGLA_NCCL_ID_BYTES 128

/* Loading: mgla_nccl_open returns 0 and resolves every symbol of the table,
   or -1 with dlerror() copied into err. */
int mgla_nccl_open(const char *path, char *err, size_t errlen);
int mgla_nccl_nsyms(void);
const char *mgla_nccl_sym_name(int i);
int mgla_nccl_sym_present(int i);

int mgla_nccl_get_version(int *v);
const char *mgla_nccl_error_string(int r);
const char *mgla_nccl_last_error(uintptr_t comm);
int mgla_nccl_get_unique_id(void *id);
int mgla_nccl_comm_init_all(uintptr_t *comms, int n, const int *devs);
/* blocking: 0 makes a non-blocking communicator (calls may return
   ncclInProgress; poll mgla_nccl_comm_async_error). */
int mgla_nccl_comm_init_rank(uintptr_t *comm, int nranks, const void *id, int rank, int blocking);
/* out must stay valid until ncclGroupEnd (NCCL writes it then inside a
   group): C memory, never Go memory. */
int mgla_nccl_comm_split(uintptr_t comm, int color, int key, uintptr_t *out);
int mgla_nccl_comm_destroy(uintptr_t comm);
int mgla_nccl_comm_abort(uintptr_t comm);
int mgla_nccl_comm_async_error(uintptr_t comm, int *err);
int mgla_nccl_comm_user_rank(uintptr_t comm, int *rank);
int mgla_nccl_comm_count(uintptr_t comm, int *count);
int mgla_nccl_group_start(void);
int mgla_nccl_group_end(void);

int mgla_nccl_all_reduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t comm,
                         uintptr_t stream);
int mgla_nccl_all_gather(uintptr_t send, uintptr_t recv, size_t count, int dtype, uintptr_t comm,
                         uintptr_t stream);
int mgla_nccl_reduce_scatter(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op,
                             uintptr_t comm, uintptr_t stream);
int mgla_nccl_broadcast(uintptr_t send, uintptr_t recv, size_t count, int dtype, int root, uintptr_t comm,
                        uintptr_t stream);
int mgla_nccl_reduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, int root,
                     uintptr_t comm, uintptr_t stream);
int mgla_nccl_send(uintptr_t send, size_t count, int dtype, int peer, uintptr_t comm, uintptr_t stream);
int mgla_nccl_recv(uintptr_t recv, size_t count, int dtype, int peer, uintptr_t comm, uintptr_t stream);

#endif /* MGLA_NCCL_SHIM_H */
