// Package nccl is mgla's NCCL engine for package collective: communicators
// whose ranks are NVIDIA GPUs, with the data staying in GPU memory.
//
//   - NewMesh: one process drives every device of a GPU sharding.Mesh, each
//     device a rank (ncclCommInitAll). The NCCL communicators of a mesh are
//     made on first use and cached by the mesh's ordered GPUs for the rest
//     of the process (ReleaseMesh frees them); every NewMesh handle of a
//     mesh over those GPUs in that order shares them, and its calls are
//     serialized. Importing this package sets collective.GPUMeshComm, so
//     collective.NewMesh returns this engine for GPU meshes.
//   - NewProcess: one GPU per process, every process a rank
//     (ncclCommInitRank). Rank 0's ncclUniqueId reaches the other ranks
//     through a Bootstrap: another communicator of the same processes
//     (CommBootstrap, e.g. the MPI engine's) or a file on a shared file
//     system (FileBootstrap).
//
// Buffers of a Call are *sharding.DeviceBuffer on the rank's GPU. A process
// communicator also takes calls whose buffers are all host buffers
// (*sharding.HostBuffer: the values of the graph ops of package collective
// on a process communicator are host tensors): it copies the send elements
// to GPU memory of its own (kept, grown to the largest call), runs the call
// there and copies the received elements back, so such a call costs two
// copies over PCIe on top of NCCL. Pass device buffers to keep data on the
// GPU. A call is
// enqueued on one stream per local rank (ncclGroupStart/End around the
// per-device calls) and waited for: the streams are polled for 1 ms (or
// until the deadline, when the timeout is shorter: a call not done then is
// aborted at once), then the caller blocks in cuStreamSynchronize while a
// watchdog goroutine watches the communicators' asynchronous errors and the
// communicator's timeout (collective.Timeout by default). On timeout or an NCCL failure the
// NCCL communicators are aborted (ncclCommAbort), the call returns
// collective.ErrTimeout or collective.ErrEngine, and every later call
// returns collective.ErrClosed.
//
// How each Kind maps to NCCL:
//
//	AllReduce, AllGather, ReduceScatter  the NCCL collective of that name
//	Bcast                                ncclBroadcast (out of place)
//	Reduce                               ncclReduce; the non-root receive buffers are zeroed
//	AllToAll, Gather, Scatter, SendRecv  grouped ncclSend/ncclRecv (also to the rank itself);
//	                                     Gather zeroes the non-root receive buffers
//	Send, Recv                           ncclSend, ncclRecv (process communicators only: on a
//	                                     mesh one call drives every rank, so use SendRecv)
//	Scan                                 NCCL has no scan: one ncclReduce per rank k, to root k,
//	                                     in one group, where ranks after k send the identity
//	                                     of the reduction (0, 1, +Inf or the type's largest
//	                                     integer, -Inf or its smallest); NCCL does the
//	                                     arithmetic, and the cost is Size reductions
//	Barrier                              a one-element ncclAllReduce, waited for
//
// # Consistency checks
//
// Unless it was made WithoutChecks, a process communicator checks before
// each call that every rank makes the same one, as the MPI engine does
// (collective/mpi), with the same records (collective.Record) and the same
// messages:
//
//   - Collectives (and Split, always): each rank's record of its call
//     (kind, reduction, root, dtype, count, the call's number on the
//     communicator, its name) is all-gathered over NCCL on the
//     communicator's own stream (one ncclAllGather of 128 bytes a rank
//     between GPU buffers kept by the communicator, a copy in and a copy
//     out, waited for like any call) and compared on the host. When they
//     differ no data moves and every rank returns the same
//     collective.ErrMismatch: "AllReduce "grad" #7: rank 2 has count 5,
//     ranks 0,1,3 have count 6". A rank that does not come gives the others
//     ErrTimeout after the timeout (the communicator is then aborted). The
//     exchange is a barrier: Barrier with the checks on is the exchange
//     alone.
//   - Send, Recv and SendRecv: the two ends of each transfer swap their
//     records with ncclSend/ncclRecv and compare dtype and count; the
//     transfers that agree move their data, and both ends of one that does
//     not return the same ErrMismatch ("Send rank 0 → rank 1: rank 0 sends
//     6 float64, rank 1 receives 5 float64"). A Send therefore completes
//     only once its receiver has come to the matching Recv.
//
// The cost is fixed per call, whatever its size: one ncclAllGather of 128
// bytes a rank (NCCL's small-message latency, microseconds between the GPUs
// of one host), two copies of a few hundred bytes and one more stream
// synchronization before the call is issued. It matters for calls of a few
// KiB and not for large ones. BenchmarkProcessChecks (run-gpu.sh
// nccl-bench) measures it on one GPU: Do with and without the checks on the
// same communicator, and their ratio.
// A mesh communicator has nothing to check: one process makes every rank's
// call.
//
// NCCL has no tags: Send/Recv pairs between two ranks match in the order
// they are issued, and Call.Tag is not used. Complex values are reduced as
// interleaved real and imaginary parts, which is right for Sum only: a
// complex Prod is collective.ErrUnavailable (Min and Max are undefined for
// complex values and rejected by Call.Check). Min and Max of floats are Go's
// (a NaN wins, -0 < +0), which NCCL's float min and max are not (they drop
// NaNs): the engine maps the floats to order-preserving unsigned keys of
// their width on each rank's stream (sharding.MinMaxKeys, a NaN to the key
// that wins), reduces the keys with NCCL's unsigned Min or Max and maps the
// result back; it costs a key buffer and two passes over the data on the
// GPU. The engine moves the 32- and
// 64-bit integers (Go's int and uint as ncclInt64 and ncclUint64): NCCL has
// no 16-bit ones (collective.ErrBadCall), and GPU buffers do not hold 1- or
// 2-byte elements (sharding.CheckGPUDtype), so int8 and uint8 stay on the
// CPU mesh and MPI engines too.
//
// The library is loaded at run time with dlopen (nothing is linked at build
// time, like kernels/cusolver), from the first of: $MGLA_NCCL_LIB (the
// library file, or a directory holding libnccl.so.2); libnccl.so.2 in each
// directory of $MGLA_CUDA_LIB_DIR; the bare name (LD_LIBRARY_PATH, the ld.so
// cache); /usr/local/cuda's library directories; and the nvidia/nccl/lib
// folder of the nvidia-nccl-cu13 (or -cu12) Python wheel in the
// site-packages or dist-packages of every python3.* under $VIRTUAL_ENV,
// $CONDA_PREFIX, the prefix of each python3 on $PATH, ~/.local, /usr/local
// and /usr. When none opens, the error wraps collective.ErrUnavailable, lists
// every path tried and says how to install the library.
//
// Everything that needs CUDA is behind the mglacuda build tag; without it,
// NewMesh and NewProcess return collective.ErrUnavailable saying so, and
// NewProcessMPI does without either of the mglacuda and mpi tags. The
// library search and the bootstraps are plain Go and tested without a GPU.
// The package may import collective, collective/mpi (the bootstrap over
// MPI), sharding, internal/libpath, internal/cudaguard and gorgonia.org/cu.
package nccl
