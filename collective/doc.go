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
// receive buffer per local rank. Buffers that hold one block per rank (the
// output of AllGather, the input of ReduceScatter and Scatter, both sides of
// AllToAll, the output of Gather) are the flat concatenation of the blocks in
// rank order, as in MPI.
//
// The package owns the Comm interface, the Call descriptor and its checks,
// the errors every engine returns, and the in-process CPU mesh engine. It may
// import sharding and cyclic; engines in sub-packages import it, never the
// reverse.
package collective
