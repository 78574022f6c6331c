// Package mpi is the MPI engine of package collective: a collective.Comm
// whose ranks are the processes of an MPI job, through cgo against Open MPI
// (Debian libopenmpi-dev) behind the build tag mpi. Without the tag the same
// names exist and World returns an error wrapping collective.ErrUnavailable.
//
// World initialises MPI on first use (MPI_Init_thread) and returns the
// communicator of every process; a program started without mpirun is a
// one-rank world (singleton init). Split makes sub-communicators, Fortran
// hands the communicator to C libraries in other cgo packages (ScaLAPACK,
// hypre) as a Fortran handle, and Finalize ends MPI at the end of the
// program. Every communicator the package makes has the MPI_ERRORS_RETURN
// error handler: an MPI failure is an error wrapping collective.ErrEngine
// with MPI's message, never an abort.
//
// # Calls
//
// Do runs a collective.Call on host buffers (sharding.HostBuffer) with
// MPI's nonblocking operations (MPI_Iallreduce, MPI_Iallgather, …,
// MPI_Isend and MPI_Irecv, MPI_Ibarrier) on MPI_FLOAT, MPI_DOUBLE,
// MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX and the fixed-width integers
// MPI_INT8_T … MPI_UINT64_T (Go's int and uint as the ones of their width),
// polled with MPI_Test until they
// complete or the communicator's timeout (WithTimeout, default
// collective.DefaultTimeout or MGLA_COLLECTIVE_TIMEOUT) passes. The poll
// spins (yielding the processor, as a blocking MPI call does on an
// oversubscribed node) for about as long as the transfer should take, then
// sleeps between tests with a backoff up to a millisecond, so that a rank
// waiting for a late peer leaves the processor to the others. A timeout is
// an error wrapping collective.ErrTimeout that names the call and, with the
// checks on, the ranks that did not arrive; MPI cannot cancel a collective,
// so the communicator is then broken: its pending operations keep their
// buffers (which the late peers may still write), later calls return
// collective.ErrClosed saying why, and Close does not free it (MPI could
// otherwise reuse its context while the late messages arrive).
//
// Bcast is not in place: the root copies Send to Recv. The ranks other
// than the root get zeros from Reduce and Gather. Where that local work
// goes follows how MPI moves the data (BENCHMARKS.md, "Collectives over
// MPI", measures the ways): on a goroutine of its own, beside the
// transfer, where the process has a processor to spare; else, where every
// rank's MPI moves on-node messages by single copy (CMA, XPMEM or KNEM:
// the receiver copies from the sender's memory; SingleCopy), Bcast's copy
// and Gather's zeros go a chunk between every two tests from the start,
// since those ranks only send and wait; otherwise the root of a Bcast of 512 KiB or more pipelines it (every
// rank posts the same MPI_Ibcast per chunk of 256 KiB or more; the root
// copies chunk k to Recv and broadcasts it from there, where MPI finds it
// in the cache, before copying chunk k+1), Gather's zeros go before the
// transfer (the root copies its own block first, which the others would
// wait for) and Reduce's after it, or while the rank waits for a late
// peer. MGLA_MPI_LOCAL_WORK (after, before, during or pipeline), the same
// on every rank, sets one placement for all. Send and receive buffers must
// not overlap.
//
// Where every rank has MPI_THREAD_MULTIPLE, a ReduceScatter of 1 MiB or
// more goes through MPI's blocking MPI_Reduce_scatter_block instead, on a
// goroutine of its own while the caller waits for it by the deadline: Open
// MPI's nonblocking one measured up to 1.8 times as slow, and its libnbc
// has no algorithm to choose. MGLA_MPI_BLOCKING lists the kinds that do so
// (collective.Kind names, comma-separated, or none), the same on every
// rank: blocking and nonblocking collectives do not match. A timeout
// breaks the communicator as above; the goroutine and its OS thread then
// stay in the blocking call for the life of the process. What decides the
// MPI calls a rank makes (single copy, a spare processor on every rank,
// the thread level) is agreed by all ranks when World starts.
//
// World sets Open MPI's MCA parameter coll_libnbc_ireduce_algorithm to 2
// (the binomial tree) in the environment before MPI_Init unless the
// environment sets it already: libnbc's own choice for 4 ranks or fewer,
// a segmented chain, made MPI_Ireduce 2 to 3 times as slow as MPI_Reduce
// on one node.
//
// # Consistency checks
//
// Unless the communicator was made WithoutChecks, every rank checks that
// all ranks make the same call before any data moves:
//
//   - Collectives (and Split, always): each rank sends a record of its call
//     (collective.Record, shared with the NCCL engine: kind, reduction,
//     root, dtype, count, the communicator's sequence number of the call,
//     the first 48 bytes of Call.Name and a hash of all of it; for Split a
//     hash of every rank's color and key) to every other
//     rank, and receives theirs, as point-to-point messages on a duplicate
//     of the communicator reserved for them. Every rank then holds the same
//     records and, when they differ, returns the same collective.ErrMismatch
//     message, naming the call (the one most ranks made) and the ranks and
//     values of each field that differs: "AllReduce "grad" #7: rank 2 has
//     count 5, ranks 0,1,3 have count 6". A rank whose record does not
//     arrive by the deadline is named in the ErrTimeout of those waiting for
//     it. The exchange is itself a barrier: Barrier with the checks on is
//     the exchange alone. It costs 2(size-1) messages of 128 bytes per call
//     per rank (BENCHMARKS.md, "Collectives over MPI", measures it); the
//     records are compared word for word and decoded only when they differ
//     (collective.RecordsAgree). It runs on every call, a graph node's
//     repeated runs included: ranks that run different graphs or machines
//     would otherwise meet in different calls with every node checked once,
//     and MPI does not catch that (a shorter message fills part of a longer
//     receive; BENCHMARKS.md, "Collectives as graph ops").
//   - Send, Recv and SendRecv: the two ends of each transfer swap their
//     records (dtype, count, shape, whether the gradient is built; the
//     names only for messages) on the metadata communicator with tags
//     2·Tag+1 (sender to receiver) and 2·Tag+2 (receiver to sender); data
//     moves only when they agree, and both ends return the same ErrMismatch
//     when they do not ("Send "x" rank 0 → rank 1 (tag 5): rank 0 sends 6
//     float64, rank 1 receives 5 float64"). So with the checks on a Send
//     completes only once its receiver has posted the Recv (like
//     MPI_Ssend): exchange with SendRecv, not with Sends that each wait for
//     the other. Tags go up to (MPI_TAG_UB-2)/2.
//
// # Threads
//
// World asks for MPI_THREAD_MULTIPLE (Debian's Open MPI provides it) and
// adapts to what MPI provides: with MPI_THREAD_MULTIPLE goroutines call MPI
// directly; with MPI_THREAD_SERIALIZED every MPI call holds one process-wide
// mutex; with MPI_THREAD_FUNNELED or SINGLE every MPI call runs on the OS
// thread that initialised MPI, which a goroutine locked to it serves. The
// environment variable MGLA_MPI_THREAD_LEVEL (single, funneled, serialized,
// multiple) asks for another level (the tests use it). Calls on one Comm
// run one at a time; calls on different communicators may run
// concurrently, but every rank must issue the calls of each communicator in
// the same order. Split ends in the blocking MPI_Comm_split, which every
// rank enters once the record exchange completes. A rank that timed out in
// the exchange finishes it on a goroutine of its own and joins the split,
// so that ranks that completed the exchange against its record get out; a
// second exchange after the split then gives them ErrTimeout too and
// breaks the communicator on every rank. Like any agreement by messages
// with deadlines, that one can still fail in a narrow window: a rank held
// up between the split and the second exchange for longer than the
// others' timeout succeeds where they time out (a review saw it in 1 of
// about 1,500 rounds of 1–8 ms timeouts, and by stalling a rank on
// purpose); and where a rank times out while the others find its colors
// differ, those return ErrMismatch. With MPI_THREAD_MULTIPLE the split
// itself runs on a goroutine that the caller waits for by the timeout (a
// rank that gave up and finalized before the others came costs them an
// ErrTimeout, and that goroutine's thread stays in MPI). Below
// MPI_THREAD_MULTIPLE a split holds MPI for the whole process: Splits of
// two communicators must be started in the same order on every rank (in
// another order the ranks wait in each other's split, as blocking MPI calls
// do), a Split waits, by its timeout, until no Split that timed out in
// this process may still make its split, and a rank that gave up and
// finalized before the others came leaves them in the split.
//
// The package may import collective and sharding.
package mpi
