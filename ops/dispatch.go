package ops

// Dispatch chooses, on a GPU mesh of several devices, between cuSolverMg
// across every device of the mesh and single-GPU cuSOLVER on the mesh's first
// device (after peer-copying the tiles there). CPU meshes ignore it; a
// one-GPU mesh always uses single-GPU cuSOLVER, which is faster than
// cuSolverMg on one device (see BENCHMARKS.md).
type Dispatch int

const (
	// DispatchAuto follows the measured rule of singleGPUFaster, and uses the
	// mesh whenever the matrix does not fit on the first device.
	DispatchAuto Dispatch = iota
	// DispatchMesh always runs cuSolverMg over the whole mesh.
	DispatchMesh
	// DispatchSingle always runs single-GPU cuSOLVER on the mesh's first
	// device (the matrix must fit there).
	DispatchSingle
)

func (d Dispatch) String() string {
	switch d {
	case DispatchAuto:
		return "auto"
	case DispatchMesh:
		return "mesh"
	case DispatchSingle:
		return "single"
	}
	return "dispatch?"
}

// KernelOption configures a kernel op.
type KernelOption func(*kernelOp)

// WithDispatch sets the op's dispatch on GPU meshes.
func WithDispatch(d Dispatch) KernelOption { return func(o *kernelOp) { o.dispatch = d } }

// solverKernel names the forward dense kernels for the dispatch rule.
type solverKernel int

const (
	solvePotrf solverKernel = iota
	solvePotrs
	solvePotri
	solveSyevd
)

// singleGPUFaster is the dispatch rule with its evidence: whether single-GPU
// cuSOLVER on the mesh's first device, including the peer copies of the
// tiles to and from it, beats cuSolverMg over ndev > 1 devices for an n×n
// problem. Measured with cmd/mgbench (float64, T = 1024) on 2×H200,
// 2026-11-21 (BENCHMARKS.md); the times are cuSolverMg on 2 GPUs against
// cuSOLVER on one GPU plus the copies:
//
//   - syevd: 0.80 s against 0.10 s at N = 4096, 2.7 s against 0.52 s at
//     N = 8192 (values only; vectors alike): single GPU, always.
//   - potri: 13.7 against 15.4 ms at N = 4096 and 58 against 66 ms at 8192,
//     but 314 against 240 ms at 16384 and 1.87 s against 1.11 s (+ copies)
//     at 32768: single GPU from N = 12288.
//   - potrf: 3.7 against 3.4 ms at N = 4096, 10.4 against 20.4 ms at 8192,
//     38.6 against 50.6 ms at 16384: single GPU only below N = 6144.
//   - potrs: the factor must be copied to one GPU for every solve: 1.1
//     against 2.1 ms at N = 4096 (K = 1), 2.7 against 12.9 ms at 8192:
//     never.
//
// 4-GPU machines were not available for these measurements; the rule is
// applied unchanged to any ndev > 1.
func singleGPUFaster(k solverKernel, n, ndev int) bool {
	switch k {
	case solveSyevd:
		return true
	case solvePotri:
		return n >= 12288
	case solvePotrf:
		return n < 6144
	}
	return false
}
