// Package sharding holds matrices spread over a mesh of devices.
//
// A Mesh is an ordered list of devices of one kind: virtual CPU devices
// (CPUMesh, the embedded default, always available) or NVIDIA GPUs (GPUMesh,
// built with the cuda tag). A *Tensor is a sharded value: one column-major
// shard per device of its mesh, a global shape (a matrix, or a vector held as
// an n×1 matrix), a dtype (float32, float64, complex64 or complex128) and a
// Layout (see package cyclic): replicated, row blocks, column blocks or the
// 1-D column block-cyclic layout that cuSolverMg needs.
//
// Put moves a host tensor onto a mesh, Gather brings it back as a
// *tensor.Dense, and Relayout runs a cyclic.Plan on the shards: host copies
// for CPU meshes, peer copies for GPU meshes. No step copies the whole matrix
// to pad it.
//
// *Tensor is a gorgonia.Value (its Type is a Gorgonia TensorType, so nodes
// holding one type-check like ordinary matrices) and implements Clone, Zero
// and ZeroValue, which Gorgonia's LispMachine needs for dual values. It is
// deliberately not a tensor.Tensor: Gorgonia's generic tensor code would read
// its memory as one host slab. Package ops explains what that means for
// gradient summation.
package sharding
