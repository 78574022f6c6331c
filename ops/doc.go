// Package ops holds the sharded-level Gorgonia ops of mgla: moving a matrix
// onto a mesh (Shard), between layouts (Relayout) and back to the host
// (Gather), the dense kernels (Cholesky, CholSolve, Potrs, Potri, LogDet,
// GaussianLogDensity, Eigen) that run on matrices in the 1-D column
// block-cyclic layout, and CheckFinite, the range check of a host result.
//
// Every op here produces a *sharding.Tensor (except Gather and the scalar and
// eigenvalue outputs, which are host values), so a matrix placed on a mesh
// once can feed several solves, an inverse and an eigensolve without
// returning to the host. Ops never overwrite their inputs; an op reuses its own
// output buffers from one run of a machine to the next, so a sharded node's
// value is valid until the machine runs again.
//
// Gorgonia's own ops read host tensors only: given a sharded value some
// panic on the machine's goroutine (Sum, Mul, Transpose), which ends the
// program, and some return no value and no error (Exp, Neg). So an op of
// this package whose output is sharded refuses to run, with ErrBadInput
// naming Gather, when its node feeds one of them (CheckReaders; gorgonia.Read
// is allowed). A sharded input node (Input) has no op to refuse: give it
// to Gorgonia's ops through Gather.
//
// Gradients. Every op is an SDOp (gorgonia.Grad + TapeMachine) and an ADOp
// (LispMachine). The gradient of Shard is Gather, of Gather is Shard, of
// Relayout the inverse Relayout, and the kernels' backward passes are sharded
// ops on the same mesh. One rule comes from Gorgonia itself: when a node has
// several consumers, gorgonia.Grad sums their gradients with its own Add, which
// only accepts host tensors (tensor.Tensor). A sharded value cannot be a
// tensor.Tensor: Gorgonia's tensor code and its CloneValue treat every
// tensor.Tensor as one host slab (we tried an engine-backed wrapper; the
// LispMachine then panics in CloneValue). So when a sharded node has more than
// one consumer (counting an op that takes it twice twice: Gorgonia sums one
// gradient per input), the symbolic gradients its consumers send it are gathered to
// the host first (Gather), summed by Gorgonia, and the gradient ops of Shard
// and Relayout accept such host gradients. The O(N³) backward kernels still
// run sharded; only the N×N results are gathered. A sharded node with one
// consumer keeps its gradient on the mesh, unless it is a host node's Shard,
// whose gradient ends on the host anyway: the backward op then writes it
// there directly. The LispMachine accumulates dual values in place and never
// needs this.
//
// Host scratch. The host kernels of a CPU mesh of several devices work on
// the global column-major matrix, gathered from the shards (the kernel runs
// in place on that private copy) and scattered back; those matrices, the
// backward computations' temporaries and the factor check's vectors are
// lent by one pool (host.go, lend) and given back after each call, so
// repeated runs do not pay for fresh memory. TestScratchPeak pins how many
// n×n matrices each op borrows at once.
//
// The package owns the sharded-level ops, their gradients, the choice
// between cuSolverMg over a mesh and single-GPU cuSOLVER (dispatch.go) and
// the checks of the ops' inputs. It may import sharding, cyclic, the
// kernels packages (the kernel API; with mglacuda, the cuSolverMg and
// cuSOLVER shim) and internal/failedruns (its kernels' failures count
// there); never the root package mgla, which builds on it.
package ops
