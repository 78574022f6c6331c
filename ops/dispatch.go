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
	// DispatchMesh always runs cuSolverMg over the whole mesh, except potrf
	// with tiles narrower than mgPotrfMinTile, which cuSolverMg gets wrong,
	// and a factorization whose cuSolverMg factor failed mgla's check,
	// which is done again on the first device when it fits there.
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

// forBackward marks a kernel op that a SymDiff makes for its own
// computation (kernelOp.backward).
func forBackward() KernelOption { return func(o *kernelOp) { o.backward = true } }

// solverKernel names the forward dense kernels for the dispatch rule.
type solverKernel int

const (
	solvePotrf solverKernel = iota
	solvePotrs
	solvePotri
	solveSyevd
)

// mgPotrfMinTile is the narrowest tile that cusolverMgPotrf is trusted
// with. Measured on CUDA 13 with 2 and 3 H200s (TestMgSmallTiles in
// kernels/cusolver): T = 1 gives a wrong factor even on idle GPUs, and
// while other processes kept the GPUs busy every tile from 1 to 64 gave
// wrong factors (residual ratios of 1e9 to 3e11) or
// CUSOLVER_STATUS_INTERNAL_ERROR, while 100, 128 and 256 were right; the
// shared op suite failed the same way. Potrs, Potri and Syevd through
// cuSolverMg were right at every tile. Narrower tiles are factored by
// single-GPU cuSOLVER on the mesh's first device, whatever the dispatch.
const mgPotrfMinTile = 256

// maxDnPotri is the largest order single-GPU cuSOLVER inverts: measured on
// CUDA 13 (H200), cusolverDnDpotri answers CUSOLVER_STATUS_INVALID_VALUE
// once N² passes 2³¹−1 (N = 48128 failed, 46080 ran), so larger inverses
// run on the mesh's solver (cuSolverMg), one GPU included.
const maxDnPotri = 46340

// On meshes of three GPUs or more the single-GPU inverse beats the mesh's
// block inverse below potriWideMeshFrom and from potriWideSingleFrom; on two
// GPUs at every order (singleGPUFaster).
const (
	potriWideMeshFrom   = 6144
	potriWideSingleFrom = 11264
)

// dnCanRun reports whether single-GPU cuSOLVER runs kernel k at order n.
func dnCanRun(k solverKernel, n int) bool { return k != solvePotri || n <= maxDnPotri }

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
// Re-measured on 2 and 4 H200s with T = 2048 (2026-11-21, BENCHMARKS.md),
// times of cuSolverMg through mgla against single-GPU cuSOLVER with the
// copies, on 4 GPUs:
//
//   - syevd: 9.3 s against 2.9 s (values) and 6.0 s against 3.2 s
//     (vectors) at N = 16384.
//   - potri: 268 against 239 ms at N = 16384, 1.39 against 1.16 s at 32768,
//     but 58 against 84 ms at 8192.
//   - potrf: 11.3 against 39.8 ms at N = 8192 and 163 against 309 ms at
//     32768; 3.6 against 3.4 ms at 4096.
//   - potrs (K = 1): 2.8 against 30.7 ms at N = 8192, 10.9 against 35.5 ms
//     at 32768.
//
// The rule holds for 2 and 4 GPUs alike. Since then potri on the mesh is no
// longer cusolverMgPotri, which returned wrong inverses on several GPUs at
// N = 6000 and 8192 (TestMgInverseLarge), but cusolverMgPotrs on blocks of
// the identity (gpuSolver.inverseByBlocks). Re-measured in three runs
// (T = 2048, 4×H200, 2026-11-21, docs/bench/gpu-4xH200-2026-11-21-c.csv),
// the block inverse on the mesh against single-GPU cuSOLVER with its
// copies, in ms:
//
//	N        2 GPUs: mesh  single        4 GPUs: mesh  single
//	4096             12.9   14.9                 14.4   15.1
//	8192             55.8   66-86                62.0   86
//	10240            92.9  116                  101    117
//	11264           123    109                  130    139
//	12288           140    131                  148    131-160
//	16384           270    240                  282    244
//	32768          1496   1140                 1440   1147
//
// On 4 GPUs the single path gathers from three peers and varies by ±10%
// between runs (at 12288 it won one run of three).
//
// Since 2026-11-28 the single-GPU inverse up to N = 16384 is potrs on the
// identity (potriBySolveMaxN), twice as fast as potri at N = 4096.
// Re-measured (mgbench potri, T = 2048, medians of 3; calls 88 and 89),
// the mesh's block inverse against the single GPU with its copies, in ms:
//
//	N        2 GPUs: mesh  single    3 GPUs: mesh  single    4 GPUs: mesh  single
//	2048                                     4.1     3.8              4.3     4.1
//	4096             14.0     9.7           15.2    10.4             15.6    10.4
//	8192             56.1    48.8           59.9    68.2             62.3    69.6
//	11264           122      90.3          130     117              133     118
//	14336                                  204     164              213     193
//	16384           271     226
//
// Single GPU at every order on 2 GPUs; on 3 and 4 below potriWideMeshFrom
// and from potriWideSingleFrom (the mesh won at 8192 by 12%).
func singleGPUFaster(k solverKernel, n, ndev int) bool {
	switch k {
	case solveSyevd:
		return true
	case solvePotri:
		if ndev == 2 {
			return true
		}
		return n < potriWideMeshFrom || n >= potriWideSingleFrom
	case solvePotrf:
		return n < 6144
	}
	return false
}
