// Package collective is mgla's collective communication: a communicator type
// (Comm) with one implementation per engine, and the Gorgonia graph ops
// (AllReduce, AllGather, …) built on it.
//
// A Comm is a group of Size() ranks. A process drives one or more of them,
// its LocalRanks():
//
//   - a process communicator (package collective/mpi, build tag mpi; NCCL
//     with one GPU per process, build tag mglacuda) drives exactly one rank,
//     and every process runs the same graph (SPMD);
//   - a mesh communicator (NewMesh) drives every rank in one process: the
//     devices of a sharding.Mesh are the ranks, memory copies between shards
//     on CPU meshes, NCCL on GPU meshes.
//
// Engines implement one method, Do, that runs one Call: what to do (Kind,
// ReduceOp, root, peers), the element type and count, and one send and one
// receive buffer per local rank. The element types are float32, float64,
// complex64 and complex128 (sharding.Dtypes) and the integers int, int8,
// int16, int32, int64, uint, uint8, uint16, uint32 and uint64
// (sharding.IntDtypes; Go's int and uint are pointer-sized: int64 and
// uint64, MPI_INT64_T and ncclInt64, on amd64 and arm64). Every reduction
// applies to the integers (overflow wraps on the CPU mesh, is the
// library's in MPI and NCCL: keep sums and products in range); Min and Max
// are undefined for complex values. Min and Max of floats are Go's min and
// max on every engine: a NaN on any rank gives NaN, and -0 is below +0
// (MPI's MPI_MIN and MPI_MAX keep or drop a NaN by the order they meet it,
// NCCL's drop it; the MPI engine reduces with its own MPI operations, the
// NCCL engine reduces order-preserving integer keys of the floats). Sums and
// products of floats are IEEE arithmetic, as in MPI and NCCL: an overflow is
// ±Inf and a NaN on any rank reaches the result; the collectives move and
// combine values without checking them (a check would cost a pass over every
// buffer), where the linear-algebra ops refuse NaN and Inf (ErrNonFinite).
// The NCCL engine moves the 32- and 64-bit integers only (GPU meshes hold no
// 1- or 2-byte elements:
// sharding.CheckGPUDtype). Buffers that hold one block per rank (the
// output of AllGather, the input of ReduceScatter and Scatter, both sides of
// AllToAll, the output of Gather) are the flat concatenation of the blocks in
// rank order, as in MPI.
//
// # Graph ops
//
// AllReduceNode, AllGatherNode, ReduceScatterNode, AllToAllNode, BcastNode,
// ReduceNode, GatherNode, ScatterNode, ScanNode, SendRecvNode, SendNode,
// RecvNode and BarrierNode add one collective node to a Gorgonia graph
// (package mgla has them as mgla.AllReduce …). They return new values and
// never overwrite their inputs; a node reuses its output buffers from one run
// of a machine to the next (a process communicator's node also its engine
// call and the buffer over its input, while the input's memory, shape and
// dtype stay the same). The value of a node depends on the communicator:
//
//   - process communicator (one local rank: MPI, NCCL with one GPU per
//     process): the value is a host *tensor.Dense of any rank ≥ 1 holding
//     this rank's block b = (b₀, b₁, …), and every process builds the same
//     graph (the NCCL engine copies it to its GPU and the result back). A
//     scalar node (a per-rank loss: float64, float32, int, int64, int32 or
//     uint8) takes part in the collectives that keep their shape (AllReduce,
//     Bcast, Reduce, Scan, SendRecv, Send, Recv, Barrier) as one element and
//     its value is a Gorgonia scalar; the others need rank ≥ 1 (reshape it
//     to (1));
//   - mesh communicator (NewMesh, MeshComm): the value is a
//     *sharding.Tensor on the communicator's mesh in RowBlocks layout with
//     equal blocks: global shape (s·b₀, b₁) or (s·b₀) for s = Size() ranks,
//     block r (rows r·b₀ …) being rank r's data. Results are again RowBlocks
//     with one block per rank, so ops.Gather of a result gives the per-rank
//     results stacked in rank order. A host value reaching a mesh op (a
//     gradient Gorgonia summed) is placed in RowBlocks first.
//
// With s ranks and a rank block b (shapes as in jax.lax with tiled=True):
//
//	AllReduce(op)      b → b            op over the ranks' blocks
//	AllGather          b → (s·b₀, …)    the blocks stacked in rank order
//	ReduceScatter(op)  b → (b₀/s, …)    part r of op over the blocks (s | b₀)
//	AllToAll           b → b            part j of rank i → part i of rank j (s | b₀)
//	Bcast(root)        b → b            the root's block
//	Reduce(op, root)   b → b            op at the root, zeros elsewhere
//	Gather(root)       b → (s·b₀, …)    the stack at the root, zeros elsewhere
//	Scatter(root)      b → (b₀/s, …)    part r of the root's block (s | b₀)
//	Scan(op)           b → b            op over ranks 0…r (inclusive)
//	SendRecv(dest,src) b → b            the block of src[i], ours to dest[i]
//	Send(dest)         b → b            sends; the value is a copy of x
//	Recv(shape, src)   → shape          receives
//	Barrier            b → b            waits for every rank; a copy of x
//
// "Part r" cuts the first axis in s equal parts. A first axis that does not
// divide is an error when the node is built (ErrBadCall). Shapes and dtypes
// that differ between ranks are the engine's to catch (ErrMismatch on every
// rank; the MPI and NCCL process engines exchange and compare a Record of
// each call, every call and not only a node's first run, see CompareRecords;
// the ops give the engines their input's shape, so that blocks of one size
// but different shapes, (2, 3) on one rank and (3, 2) on another, are caught
// too). Send and Recv alone are
// for process communicators; on a mesh use SendRecv, whose peers must pair up.
//
// # Gradients
//
// The linear collectives are differentiable, with Grad + TapeMachine and with
// the LispMachine: the gradient of AllReduce-sum is AllReduce-sum, AllGather
// and ReduceScatter-sum are each other's adjoints, so are Bcast and Reduce-sum
// to the root, Scatter and Gather (the zeros that Reduce and Gather leave on
// the other ranks make these exact adjoints), AllToAll is its own adjoint,
// SendRecv's is the reverse SendRecv (dest and src swapped), Scan-sum's the
// reverse inclusive scan (a Split of the communicator with its ranks numbered
// backwards, made on the first run, once per Comm value of more than one
// rank, and freed when that Comm is closed: a program that builds each graph
// on a new mpi.World() view keeps one per view unless it closes the view),
// Barrier passes the gradient
// through. Prod, min and max reductions, Send and Recv have none, and no
// collective of integers has one: Grad fails with an error wrapping
// ErrBadCall. (gorgonia.Grad of an integer cost returns no gradients and no
// error without asking any op, in Gorgonia v0.9.18; Backpropagate and the
// LispMachine do ask.)
//
// # Order
//
// Every rank must run a communicator's collectives in the same order. The
// graph ops make that hold by construction: each collective node of a
// communicator takes the collective node of the same communicator built
// before it in the graph as a hidden second input (not differentiated,
// value unused), so the collectives of one communicator form a chain that
// any topological order — TapeMachine's, the LispMachine's, forward and
// backward — runs in build order, whatever else the graphs of the ranks
// hold. Build the collectives of a communicator in the same order on every
// rank (as an SPMD program does); a rank that builds them in another order
// gets ErrMismatch (the checks compare each call's kind, name, dtype, count,
// shape, op and root) or ErrTimeout, both naming the op, not a hang. Calls
// alike in all of those cannot be told apart: two same-shaped sums built in
// swapped order exchange each other's data with no error. Give each
// collective its own name (CollectiveName) where ranks could build alike
// ones in different orders, and alike point-to-point calls between the same
// ranks different tags (their checks compare dtype, count and shape only,
// since the two ends' names differ by construction).
//
// Gradient collectives are built by Grad, in the same order on every rank,
// for the collectives on the path to each rank's cost. So every rank's cost
// must depend on the same collectives (add 0·Σy where a rank's cost leaves
// a collective's y out): with the checks on, a collective whose gradient
// some ranks build and others do not is ErrMismatch at its forward call on
// every rank that takes part in it (the Record compares
// Call.Differentiated), where it used to be a wrong gradient on the ranks
// that skipped the gradient collective and ErrTimeout on the others. The
// LispMachine, which differentiates at run time, is not checked for this.
//
// The package owns the Comm interface, the Call descriptor and its checks,
// the Record that engines exchange to check that every rank makes the same
// call (one encoding and one comparison, with the same messages, for every
// engine), the errors every engine returns, the in-process CPU mesh engine and the
// graph ops. It may import sharding, cyclic, ops and internal/failedruns;
// engines in sub-packages import it, never the reverse.
package collective
