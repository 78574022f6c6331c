//go:build mglacuda

package ops

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// gpuSolver runs the forward kernels on the GPUs of a mesh: cuSolverMg over
// every device, or single-GPU cuSOLVER on the mesh's first device, as its
// dispatch decides (dispatch.go). One cuSolverMg handle (with its device
// grid, descriptors and workspaces) is kept per list of devices — meshes
// over the same GPUs in the same order share it, so a program that makes
// meshes again and again does not pile up handles and their workspaces —
// and one cuSOLVER handle per device, and reused by every call.
type gpuSolver struct{ dispatch Dispatch }

var (
	handleMu sync.Mutex
	mgCache  = map[string]*cusolver.Mg{} // by Mesh.DevicesKey
	dnCache  = map[int]*cusolver.Dn{}
)

func init() { gpuSolverFor = func(d Dispatch) meshSolver { return gpuSolver{d} } }

func mgFor(m *sharding.Mesh) (*cusolver.Mg, error) {
	handleMu.Lock()
	defer handleMu.Unlock()
	key := m.DevicesKey()
	if h, ok := mgCache[key]; ok {
		return h, nil
	}
	if err := cusolver.Load(); err != nil {
		return nil, err
	}
	ids := make([]int, m.Size())
	for i, d := range m.Devices() {
		ids[i] = d.ID
	}
	h, err := cusolver.NewMg(ids)
	if err != nil && sharding.ReclaimDeviceMemory() {
		// cuSolverMg allocates device memory of its own (per device, in
		// cusolverMgDeviceSelect), which unreachable buffers may hold.
		h, err = cusolver.NewMg(ids)
	}
	if err != nil {
		return nil, err
	}
	mgCache[key] = h
	return h, nil
}

func dnFor(device int) (*cusolver.Dn, error) {
	handleMu.Lock()
	defer handleMu.Unlock()
	if h, ok := dnCache[device]; ok {
		return h, nil
	}
	h, err := cusolver.NewDn(device)
	if err != nil && sharding.ReclaimDeviceMemory() {
		h, err = cusolver.NewDn(device)
	}
	if err != nil {
		return nil, err
	}
	dnCache[device] = h
	return h, nil
}

func devicePtrs(t *sharding.Tensor) ([]uintptr, error) {
	ps := make([]uintptr, t.Mesh().Size())
	for d := range ps {
		b, ok := t.Shard(d).(*sharding.DeviceBuffer)
		if !ok {
			return nil, fmt.Errorf("ops: shard %d of %v is not on a GPU", d, t)
		}
		ps[d] = b.Ptr()
	}
	return ps, nil
}

// mgTile is the tile width cuSolverMg gets for t's column block-cyclic
// layout: a tile wider than the matrix (up to math.MaxInt) is one tile of
// all its columns, the same layout as a tile of exactly its width.
func mgTile(t *sharding.Tensor) int { return min(t.Layout().Tile, t.Cols()) }

// single reports whether kernel k on a (the n×n operand) runs on one GPU.
func (s gpuSolver) single(k solverKernel, a *sharding.Tensor, operands int) bool {
	ndev := a.Mesh().Size()
	switch {
	case !dnCanRun(k, a.Rows()):
		return false
	case ndev == 1:
		return true
	case k == solvePotrf && mgTile(a) < mgPotrfMinTile:
		return true // whatever the dispatch: cuSolverMg gets these wrong
	case s.dispatch == DispatchMesh:
		return false
	case s.dispatch == DispatchSingle:
		return true
	}
	return singleGPUFaster(k, a.Rows(), ndev) && fitsFirst(a, operands)
}

// fitsFirst reports whether dense copies of operands matrices of a's size
// fit on the mesh's first device next to the shards already there.
func fitsFirst(a *sharding.Tensor, operands int) bool {
	free, _, err := cusolver.MemGetInfo(a.Mesh().Device(0).ID)
	need := operands * a.Rows() * a.Cols() * int(a.Dtype().Size())
	return err == nil && need+need/8 < free
}

// onFirst runs a single-GPU call on dense copies of ins on the mesh's first
// device (no copy on a one-device mesh, where the shard is the dense matrix)
// and copies the first operand back into out when out is not nil.
func onFirst(out *sharding.Tensor, ins []*sharding.Tensor, call func(dn *cusolver.Dn, p []uintptr) error) error {
	dev := ins[0].Mesh().Device(0).ID
	dn, err := dnFor(dev)
	if err != nil {
		return err
	}
	p := make([]uintptr, len(ins))
	if ins[0].Mesh().Size() == 1 {
		for i, t := range ins {
			p[i] = t.Shard(0).(*sharding.DeviceBuffer).Ptr()
		}
		return call(dn, p)
	}
	bufs := make([]*sharding.DeviceBuffer, len(ins))
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}()
	for i, t := range ins {
		if bufs[i], err = t.ToDense(0); err != nil {
			return err
		}
		p[i] = bufs[i].Ptr()
	}
	if err := call(dn, p); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return out.FromDense(bufs[0])
}

// notPD turns cuSolverMg's answer to a matrix that is not positive definite
// into ErrNotPositiveDefinite with the failing minor's order. Measured on
// CUDA 13 (4×H200): cusolverMgPotrf reports it as INTERNAL_ERROR, not as
// info > 0, so the minor is found on the host (on this error path only).
// When the host factors A, the error was cuSolverMg's own (the same race
// that gives wrong factors, or a matrix on the edge of definiteness): l
// holds the host's factor, which meshPotrf checks like any other, the error
// is dropped and counted as a wrong result.
func notPD(err error, a, l *sharding.Tensor) error {
	var se *cusolver.SolverError
	if !errors.As(err, &se) || se.Status.String() != "CUSOLVER_STATUS_INTERNAL_ERROR" {
		return err
	}
	if ferr := a.CheckFinite(true); ferr != nil {
		return ferr
	}
	if hostErr := (hostSolver{}).potrf(a, l); hostErr != nil {
		return hostErr
	}
	wrongFactors.Add(1)
	return nil
}

func (s gpuSolver) potrf(a, l *sharding.Tensor) error {
	if err := a.RelayoutInto(l); err != nil {
		return err
	}
	var err error
	if s.single(solvePotrf, a, 1) {
		err = singlePotrf(a, l)
	} else {
		err = s.meshPotrf(a, l)
	}
	if err != nil {
		return err
	}
	return l.ZeroStrictUpper()
}

// singlePotrf factors l, which holds A, with cuSOLVER on the mesh's first
// device.
func singlePotrf(a, l *sharding.Tensor) error {
	err := onFirst(l, []*sharding.Tensor{l}, func(dn *cusolver.Dn, p []uintptr) error {
		return dn.Potrf(a.Dtype(), a.Rows(), p[0], a.Rows())
	})
	if errors.Is(err, kernels.ErrNotPositiveDefinite) {
		// NaN and Inf also fail the factorization: say which it was.
		if ferr := a.CheckFinite(true); ferr != nil {
			return ferr
		}
	}
	return err
}

// potrfAttempts bounds the factorizations of one matrix on a mesh.
const potrfAttempts = 3

// spoilFactor, set by tests, may change the factor of each attempt before
// meshPotrf checks it; singleFallback, cleared by tests, stops meshPotrf
// from falling back to one GPU.
var (
	spoilFactor    func(l *sharding.Tensor, attempt int) error
	singleFallback = true
	// traceAttempt, set by tests, sees each attempt's check.
	traceAttempt func(attempt int, ratio float64, row int, right bool)
)

// meshPotrf factors l, which holds A, with cusolverMgPotrf and checks the
// factor (factorCheck). Measured on CUDA 13 with 2 to 4 H100s that
// other processes kept busy (TestMgPotrfPotrsRepeat in kernels/cusolver: 3
// wrong factors in 30 at N = 6000, T = 512, no mgla code in between),
// cusolverMgPotrf now and then returns a factor whose rows from some tile on
// are wrong, with no error; under heavier load (the GPU suite beside it) it
// was wrong three times in a row at 2 GPUs, T = 512; in single precision
// some are off by only a few hundred times the rounding (call 36). A factor
// that is not right (factorCheck.right) is computed again: a matrix that
// fits on the first device is factored there by cuSOLVER, which has not
// been wrong; a larger one on the mesh again, up to potrfAttempts times in
// all, and then the error wraps kernels.ErrWrongResult.
func (s gpuSolver) meshPotrf(a, l *sharding.Tensor) error {
	check, err := newFactorCheck(l)
	if err != nil {
		return err
	}
	defer check.release()
	for attempt := 1; ; attempt++ {
		if err := mgCall(l, func(h *cusolver.Mg, p []uintptr) error {
			return notPD(h.Potrf(a.Dtype(), a.Rows(), mgTile(l), p), a, l)
		}); err != nil {
			return err
		}
		if spoilFactor != nil {
			if err := spoilFactor(l, attempt); err != nil {
				return err
			}
		}
		ratio, row, err := check.worst(l)
		if err != nil {
			return err
		}
		if traceAttempt != nil {
			traceAttempt(attempt, ratio, row, check.right(ratio))
		}
		if check.right(ratio) {
			return nil
		}
		wrongFactors.Add(1)
		if attempt == potrfAttempts {
			return fmt.Errorf("cusolverMgPotrf, %d attempts: %w", attempt, check.wrong(ratio, row))
		}
		if err := a.RelayoutInto(l); err != nil {
			return err
		}
		if singleFallback && fitsFirst(a, 1) {
			return singlePotrf(a, l)
		}
	}
}

func mgCall(t *sharding.Tensor, call func(h *cusolver.Mg, p []uintptr) error) error {
	h, err := mgFor(t.Mesh())
	if err != nil {
		return err
	}
	p, err := devicePtrs(t)
	if err != nil {
		return err
	}
	return call(h, p)
}

func (s gpuSolver) potrs(l, b, x *sharding.Tensor) error {
	// cuSOLVER does not check the factor: a zero (or NaN) on its diagonal
	// would give Inf or NaN silently.
	if err := l.CheckDiagonal(); err != nil {
		return fmt.Errorf("factor: %w", err)
	}
	if err := b.CheckFinite(false); err != nil {
		return fmt.Errorf("right-hand side: %w", err)
	}
	if err := b.RelayoutInto(x); err != nil {
		return err
	}
	n, k := l.Rows(), x.Cols()
	var err error
	switch {
	case s.single(solvePotrs, l, 2):
		err = onFirst(x, []*sharding.Tensor{x, l}, func(dn *cusolver.Dn, p []uintptr) error {
			return dn.Potrs(l.Dtype(), n, k, p[1], n, p[0], n)
		})
	case k > mgTile(x): // B would span several devices: wrong (solveByBlocks)
		err = solveByBlocks(l, x, func(block *sharding.Tensor, c0 int) error {
			return block.CopyColumns(0, x, c0, block.Cols())
		})
	default:
		var lp []uintptr
		if lp, err = devicePtrs(l); err == nil {
			err = mgCall(x, func(h *cusolver.Mg, p []uintptr) error {
				return h.PotrsBlock(l.Dtype(), n, k, mgTile(l), mgTile(x), lp, p)
			})
		}
	}
	if err != nil {
		return err
	}
	return resultFinite(x.CheckFinite(false))
}

// resultFinite words the error of a result's finiteness check: the inputs
// were checked, so a NaN or Inf there is beyond the dtype's range (as the
// CPU kernels report it).
func resultFinite(err error) error {
	if err != nil {
		return fmt.Errorf("result beyond the dtype's range: %w", err)
	}
	return nil
}

func (s gpuSolver) potri(l, c *sharding.Tensor) error {
	// As for potrs: a zero or NaN on the factor's diagonal is not positive
	// definite, as the CPU kernels report it, not cuSOLVER's status or Inf.
	if err := l.CheckDiagonal(); err != nil {
		return fmt.Errorf("factor: %w", err)
	}
	var err error
	switch {
	case !s.single(solvePotri, l, 1):
		err = s.inverseByBlocks(l, c)
	case l.Rows() <= potriBySolveMaxN && (l.Mesh().Size() == 1 || fitsFirst(l, 2)):
		err = dnInverseBySolve(l, c)
	default:
		err = dnInverseByPotri(l, c)
	}
	if err != nil {
		return err
	}
	if err := resultFinite(c.CheckFinite(true)); err != nil {
		return err
	}
	// An exactly Hermitian result, from its lower triangle.
	return c.MirrorLower()
}

// potriBySolveMaxN is the largest order whose single-GPU inverse is
// cusolverDnXpotrs on the identity (dnInverseBySolve) rather than
// cusolverDnXpotri (dnInverseByPotri): three times potri's flops, but
// cuBLAS's triangular solves with n right-hand sides run nearer the GPU's
// peak than potri's blocked recursion. Measured with BenchmarkInversePaths
// on one H200 (CUDA 13, 2026-11-28, call 87), solve against potri, float64
// (float32 alike): 0.91 against 1.35 ms at N = 1024, 7.1 against 13.4 ms at
// 4096, 33 against 53 ms at 8192, 94 against 127 ms at 12288, 199 against
// 232 ms at 16384, but 656 against 568 ms at 24576.
var potriBySolveMaxN = 16384

// dnInverseByPotri overwrites c with (L·Lᴴ)⁻¹'s lower triangle by
// cusolverDnXpotri on a copy of the factor l, on the mesh's first GPU.
func dnInverseByPotri(l, c *sharding.Tensor) error {
	if err := l.RelayoutInto(c); err != nil {
		return err
	}
	n := l.Rows()
	return onFirst(c, []*sharding.Tensor{c}, func(dn *cusolver.Dn, p []uintptr) error {
		return dn.Potri(l.Dtype(), n, p[0], n)
	})
}

// dnInverseBySolve overwrites c with (L·Lᴴ)⁻¹ by cusolverDnXpotrs on the
// identity, on the mesh's first GPU.
func dnInverseBySolve(l, c *sharding.Tensor) error {
	if err := c.SetIdentityColumns(0); err != nil {
		return err
	}
	n := l.Rows()
	return onFirst(c, []*sharding.Tensor{c, l}, func(dn *cusolver.Dn, p []uintptr) error {
		return dn.Potrs(l.Dtype(), n, n, p[1], n, p[0], n)
	})
}

// solveByBlocks overwrites X (n×k) with (L·Lᴴ)⁻¹·B on the mesh one block of
// at most T columns at a time, T being X's tile: fill puts columns c0 …
// c0+w−1 of B into a block held on the first device, cusolverMgPotrs solves
// it there and the block is copied into X's columns. Measured on CUDA 13 with
// 2 to 4 H200s (TestMgInverseLarge in kernels/cusolver), cusolverMgPotrs
// with B spread over several devices, and cusolverMgPotri, return wrong
// results (residual ratios of 1e9 to 4e10 at N = 6000 and 8192), while
// solves whose right-hand sides sit on the first device are right.
func solveByBlocks(l, x *sharding.Tensor, fill func(block *sharding.Tensor, c0 int) error) error {
	n, k := l.Rows(), x.Cols()
	w := min(mgTile(x), k)
	lp, err := devicePtrs(l)
	if err != nil {
		return err
	}
	var block *sharding.Tensor
	defer func() {
		if block != nil {
			block.Free()
		}
	}()
	for c0 := 0; c0 < k; c0 += w {
		bw := min(w, k-c0)
		if block == nil || block.Cols() != bw {
			if block != nil {
				block.Free()
			}
			if block, err = sharding.New(l.Mesh(), tensor.Shape{n, bw}, l.Dtype(), sharding.Cyclic(bw)); err != nil {
				return err
			}
		}
		if err := fill(block, c0); err != nil {
			return err
		}
		if err := mgCall(block, func(h *cusolver.Mg, p []uintptr) error {
			return h.PotrsBlock(l.Dtype(), n, bw, mgTile(l), bw, lp, p)
		}); err != nil {
			return err
		}
		if err := x.CopyColumns(c0, block, 0, bw); err != nil {
			return err
		}
	}
	return nil
}

// inverseByBlocks computes C = (L·Lᴴ)⁻¹ on the mesh by solveByBlocks on the
// identity, three times potri's flops (cusolverMgPotri is wrong, above).
func (s gpuSolver) inverseByBlocks(l, c *sharding.Tensor) error {
	return solveByBlocks(l, c, func(block *sharding.Tensor, c0 int) error { return block.SetIdentityColumns(c0) })
}

func (s gpuSolver) syevd(a *sharding.Tensor, w []float64, v *sharding.Tensor) error {
	if err := a.CheckFinite(true); err != nil {
		return err
	}
	work := v
	if work == nil {
		var err error
		if work, err = sharding.New(a.Mesh(), a.Shape(), a.Dtype(), a.Layout()); err != nil {
			return err
		}
		defer work.Free()
	}
	if err := a.RelayoutInto(work); err != nil {
		return err
	}
	var err error
	if !s.single(solveSyevd, a, 1) {
		err = mgCall(work, func(h *cusolver.Mg, p []uintptr) error {
			return h.Syevd(a.Dtype(), a.Rows(), mgTile(a), p, w, v != nil)
		})
	} else {
		err = onFirst(v, []*sharding.Tensor{work}, func(dn *cusolver.Dn, p []uintptr) error {
			return dnSyevd(dn, a.Dtype(), a.Rows(), p[0], w, v != nil)
		})
	}
	if err != nil {
		return err
	}
	for i, x := range w {
		if x-x != 0 { // ±Inf or NaN
			return resultFinite(fmt.Errorf("eigenvalue %d is %v: %w", i, x, kernels.ErrNonFinite))
		}
	}
	return nil
}

// dnSyevd runs single-GPU syevd with the eigenvalues in a device array and
// returns them in w.
func dnSyevd(dn *cusolver.Dn, dt tensor.Dtype, n int, a uintptr, w []float64, vectors bool) error {
	single := dt == tensor.Float32 || dt == tensor.Complex64
	size := 8
	if single {
		size = 4
	}
	dev := dn.Device()
	dw, err := cusolver.Malloc(dev, n*size)
	if err != nil {
		return err
	}
	defer cusolver.Free(dev, dw)
	if err := dn.Syevd(dt, n, a, n, dw, vectors); err != nil {
		return err
	}
	if single {
		w32 := make([]float32, n)
		if err := cusolver.MemcpyDtoH(dev, unsafe.Pointer(&w32[0]), dw, n*4); err != nil {
			return err
		}
		for i, x := range w32 {
			w[i] = float64(x)
		}
		return nil
	}
	return cusolver.MemcpyDtoH(dev, unsafe.Pointer(&w[0]), dw, n*8)
}
