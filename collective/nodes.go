package collective

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The graph ops. Each adds one collective node on comm to x's graph and
// returns it; the names end in Node because the Kinds own the plain names
// (package mgla has the builders under the plain names: mgla.AllReduce).
// Shapes are given per rank block b = (b₀, …) and Size() = s, as in the
// package doc: the node's value is that block for a process communicator and
// s stacked blocks (RowBlocks) for a mesh.

// AllReduceNode: every rank gets op over all ranks' blocks; shape b.
func AllReduceNode(x *gorgonia.Node, comm Comm, op ReduceOp, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: AllReduce, op: op}, nil, tensor.Dtype{}, opts)
}

// AllGatherNode: every rank gets every rank's block stacked along the first
// axis in rank order; shape (s·b₀, …) (jax.lax.all_gather with tiled=True).
func AllGatherNode(x *gorgonia.Node, comm Comm, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: AllGather}, nil, tensor.Dtype{}, opts)
}

// ReduceScatterNode: op over all ranks' blocks, cut along the first axis in
// s parts; rank r gets part r, shape (b₀/s, …). b₀ must be divisible by s.
func ReduceScatterNode(x *gorgonia.Node, comm Comm, op ReduceOp, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: ReduceScatter, op: op}, nil, tensor.Dtype{}, opts)
}

// AllToAllNode: each block is cut along the first axis into s parts; part j
// of rank i becomes part i of rank j. Shape b; b₀ divisible by s.
func AllToAllNode(x *gorgonia.Node, comm Comm, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: AllToAll}, nil, tensor.Dtype{}, opts)
}

// BcastNode: every rank gets the root's block; shape b.
func BcastNode(x *gorgonia.Node, comm Comm, root int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Bcast, root: root}, nil, tensor.Dtype{}, opts)
}

// ReduceNode: the root gets op over all ranks' blocks, the other ranks
// zeros; shape b. (The zeros make Reduce-sum and Bcast exact adjoints.)
func ReduceNode(x *gorgonia.Node, comm Comm, op ReduceOp, root int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Reduce, op: op, root: root}, nil, tensor.Dtype{}, opts)
}

// GatherNode: the root gets every rank's block stacked along the first axis,
// the other ranks zeros; shape (s·b₀, …) on every rank.
func GatherNode(x *gorgonia.Node, comm Comm, root int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Gather, root: root}, nil, tensor.Dtype{}, opts)
}

// ScatterNode: the root's block is cut along the first axis in s parts; rank
// r gets part r, shape (b₀/s, …) (every rank passes a block of the root's
// shape; only the root's values are read). b₀ divisible by s.
func ScatterNode(x *gorgonia.Node, comm Comm, root int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Scatter, root: root}, nil, tensor.Dtype{}, opts)
}

// ScanNode: rank r gets op over the blocks of ranks 0…r (inclusive); shape b.
func ScanNode(x *gorgonia.Node, comm Comm, op ReduceOp, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Scan, op: op}, nil, tensor.Dtype{}, opts)
}

// SendRecvNode: local rank i (of comm.LocalRanks()) sends its block to
// dest[i] and gets the block of src[i]; shape b. On a mesh dest and src have
// one entry per rank and must pair up (rank r receives from s exactly when s
// sends to r).
func SendRecvNode(x *gorgonia.Node, comm Comm, dest, src []int, tag int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: SendRecv, dest: append([]int(nil), dest...), src: append([]int(nil), src...), tag: tag}, nil, tensor.Dtype{}, opts)
}

// SendNode (process communicators only) sends x to rank dest; its value is
// a copy of x. It has no gradient (use SendRecv).
func SendNode(x *gorgonia.Node, comm Comm, dest, tag int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Send, dest: []int{dest}, tag: tag}, nil, tensor.Dtype{}, opts)
}

// RecvNode (process communicators only) adds to g a node that receives a
// tensor of the given shape and dtype from rank src. src and tag are a rank
// of comm and a tag, not MPI_ANY_SOURCE or MPI_ANY_TAG (mpi4jax's recv takes
// those, with a status): the two ends of a transfer check each other's
// records before any data moves (package collective/mpi, "Consistency
// checks"), so each must know its peer. To take blocks from several ranks,
// use Gather or SendRecv.
func RecvNode(g *gorgonia.ExprGraph, comm Comm, shape tensor.Shape, dt tensor.Dtype, src, tag int, opts ...Option) (*gorgonia.Node, error) {
	return newNode(g, nil, comm, spec{kind: Recv, src: []int{src}, tag: tag}, shape.Clone(), dt, opts)
}

// BarrierNode waits for every rank; its value is a copy of x (pass the
// node whose value must exist before the barrier), its gradient x's.
func BarrierNode(x *gorgonia.Node, comm Comm, opts ...Option) (*gorgonia.Node, error) {
	return newNode(nil, x, comm, spec{kind: Barrier}, nil, tensor.Dtype{}, opts)
}
