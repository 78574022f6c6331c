// Package sharding holds matrices spread over a mesh of devices.
//
// A Mesh is an ordered list of devices of one kind: virtual CPU devices
// (CPUMesh, the embedded default, always available) or NVIDIA GPUs (GPUMesh,
// built with the mglacuda tag). A *Tensor is a sharded value: one column-major
// shard per device of its mesh, a global shape (a matrix, or a vector held as
// an n×1 matrix), a dtype and a Layout (see package cyclic): replicated, row
// blocks, column blocks or the 1-D column block-cyclic layout that cuSolverMg
// needs.
//
// Dtypes. The element types everything computes with are Dtypes: float32,
// float64, complex64 and complex128 (CheckDtype). A tensor may also hold one
// of IntDtypes (int, int8, int16, int32, int64 and their unsigned twins) for
// storage and movement only (CheckStorageDtype): New, Put, Load, Gather,
// Relayout and ExecutePlan move integers (and so do package ops' Shard and
// Relayout and the collectives of package collective), while the kernels and
// the arithmetic (AddScaled, the triangle and diagonal routines, the products
// with a lower triangle) reject them. GPU meshes hold only elements of 4
// bytes or more: no int8, uint8, int16 or uint16 (CheckGPUDtype).
//
// Put moves a host tensor onto a mesh, Gather brings it back as a
// *tensor.Dense, and Relayout runs a cyclic.Plan on the shards: host copies
// for CPU meshes, peer copies for GPU meshes. No step copies the whole matrix
// to pad it.
//
// Device memory is freed by Tensor.Free or, for a tensor that is dropped
// (the values of a graph that is no longer used, say), once the garbage
// collector finds it unreachable. The collector does not see device memory,
// so an allocation that runs out of it collects garbage, frees what the
// dropped tensors held and tries again before it reports OutOfMemory.
//
// *Tensor is a gorgonia.Value (its Type is a Gorgonia TensorType, so nodes
// holding one type-check like ordinary matrices) and implements Clone, Zero
// and ZeroValue, which Gorgonia's LispMachine needs for dual values. It is
// deliberately not a tensor.Tensor: Gorgonia's generic tensor code would read
// its memory as one host slab. Package ops explains what that means for
// gradient summation.
//
// The package owns the meshes and devices, the sharded Tensor and its
// buffers (Buffer, HostBuffer, DeviceBuffer), the host ↔ device transfers
// (Put, Load, Gather, RegisterHost), and the backends that run a plan and
// the few element-wise kernels (triangle zeroing, mirroring, NaN and
// zero-pivot checks, axpy) and the products with a lower triangle that
// check a factor (MulLower, MulHermitian, MulCholesky, and their Into forms
// that reuse the caller's vectors) on shards: host copies on CPU meshes;
// with mglacuda, the CUDA driver (gorgonia.org/cu; kernels launch through
// the package's own cgo launcher), mgla's PTX kernels and the runtime
// helpers of the cuSolverMg shim. It also holds what every builder of the
// module's graph ops reads of their operands (ErrBadInput; InNodeShape for
// values that Let bound in an equivalent shape; GraphOf and InGraph for the
// operands' graph and the constants that join it). It may import cyclic, the
// kernels packages (the kernel API's errors; with mglacuda, the CUDA shim and
// the PTX) and internal/cudaguard; never ops, collective or the root
// package, which build on it.
package sharding
