package mgla

import (
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Collectives: communication between ranks as differentiable graph ops (see
// package collective for the value model, the shapes and the gradients). A
// Comm comes from NewMeshComm (the devices of a mesh, in this process), from
// collective/mpi.World (build tag mpi: one rank per process) or from
// collective/nccl (build tag mglacuda). These builders forward to package
// collective.

// Comm is a communicator (collective.Comm).
type Comm = collective.Comm

// ReduceOp is the reduction of AllReduce, ReduceScatter, Reduce and Scan.
type ReduceOp = collective.ReduceOp

// The reductions; min and max for real dtypes only (floats and integers).
// Only sums of floating values have gradients.
const (
	ReduceSum  = collective.Sum
	ReduceProd = collective.Prod
	ReduceMin  = collective.Min
	ReduceMax  = collective.Max
)

// CollectiveOption configures a collective op (collective.WithName); nil
// options are skipped.
type CollectiveOption = collective.Option

// CollectiveName names a collective op in its errors.
func CollectiveName(name string) CollectiveOption { return collective.WithName(name) }

// NewMeshComm returns the communicator of the devices of m, all driven by
// this process (collective.NewMesh).
func NewMeshComm(m *sharding.Mesh) (collective.MeshComm, error) { return collective.NewMesh(m) }

// Errors of collectives, matched through Cause.
var (
	ErrBadCall     = collective.ErrBadCall     // a call that does not fit the communicator
	ErrMismatch    = collective.ErrMismatch    // ranks issued different calls
	ErrTimeout     = collective.ErrTimeout     // peers did not arrive in time
	ErrClosed      = collective.ErrClosed      // the communicator was closed
	ErrUnavailable = collective.ErrUnavailable // engine not built in or library missing
	ErrEngine      = collective.ErrEngine      // the MPI or NCCL library failed
)

// AllReduce: every rank gets op over all ranks' blocks.
func AllReduce(x *gorgonia.Node, comm Comm, op ReduceOp, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.AllReduceNode(x, comm, op, opts...)
}

// AllGather: every rank gets the ranks' blocks stacked along the first axis.
func AllGather(x *gorgonia.Node, comm Comm, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.AllGatherNode(x, comm, opts...)
}

// ReduceScatter: rank r gets part r (first axis) of op over the blocks.
func ReduceScatter(x *gorgonia.Node, comm Comm, op ReduceOp, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.ReduceScatterNode(x, comm, op, opts...)
}

// AllToAll: part j of rank i's block becomes part i of rank j's.
func AllToAll(x *gorgonia.Node, comm Comm, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.AllToAllNode(x, comm, opts...)
}

// Bcast: every rank gets the root's block.
func Bcast(x *gorgonia.Node, comm Comm, root int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.BcastNode(x, comm, root, opts...)
}

// Reduce: the root gets op over the blocks, the other ranks zeros.
func Reduce(x *gorgonia.Node, comm Comm, op ReduceOp, root int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.ReduceNode(x, comm, op, root, opts...)
}

// Gather: the root gets the blocks stacked along the first axis, the other
// ranks zeros.
func Gather(x *gorgonia.Node, comm Comm, root int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.GatherNode(x, comm, root, opts...)
}

// Scatter: rank r gets part r (first axis) of the root's block.
func Scatter(x *gorgonia.Node, comm Comm, root int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.ScatterNode(x, comm, root, opts...)
}

// Scan: rank r gets op over the blocks of ranks 0…r.
func Scan(x *gorgonia.Node, comm Comm, op ReduceOp, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.ScanNode(x, comm, op, opts...)
}

// SendRecv: local rank i sends to dest[i] and receives from src[i].
func SendRecv(x *gorgonia.Node, comm Comm, dest, src []int, tag int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.SendRecvNode(x, comm, dest, src, tag, opts...)
}

// Send sends x to rank dest (process communicators).
func Send(x *gorgonia.Node, comm Comm, dest, tag int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.SendNode(x, comm, dest, tag, opts...)
}

// Recv receives a tensor of the given shape and dtype from rank src
// (process communicators).
func Recv(g *gorgonia.ExprGraph, comm Comm, shape tensor.Shape, dt tensor.Dtype, src, tag int, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.RecvNode(g, comm, shape, dt, src, tag, opts...)
}

// Barrier waits for every rank; its value is a copy of x.
func Barrier(x *gorgonia.Node, comm Comm, opts ...CollectiveOption) (*gorgonia.Node, error) {
	return collective.BarrierNode(x, comm, opts...)
}
