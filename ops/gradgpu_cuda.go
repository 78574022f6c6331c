//go:build mglacuda

package ops

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The backward computations of gradmath.go on a GPU mesh run on the mesh's
// first GPU with cuBLAS, on dense column-major copies of the operands there:
// the products the host code forms, by the same formulas (the symmetric
// ones by their lower triangle: syrkx, syr2k), the element-wise steps by
// cuBLAS (geam, dgmm, scal) and package sharding's kernels (zeroing and
// mirroring a triangle, the finiteness check, the eigenvector share's F∘M
// with the tests of the eigenvalue gaps). The result is checked for NaN and
// Inf on the device like the forward results; a float32 result beyond the
// range is left to the host code, which computes it again in float64
// (gradInRange). The host code's products then run on all the mesh's GPUs
// through cuBLASXt (gradproducts.go, xtFor).

func init() {
	gradOnDevice = gradOnGPU
	productsFor = xtFor
}

var (
	xtMu     sync.Mutex
	xtCache  = map[string]*cusolver.Xt{}
	failXtOn func() bool // set by tests: a cuBLASXt handle that cannot be had
)

// xtFor returns the cuBLASXt handle over mesh's GPUs, made on first use and
// kept for the process, or nil where cuBLASXt cannot be had (the host code's
// products then run on the CPU).
func xtFor(mesh *sharding.Mesh) deviceProducts {
	if failXtOn != nil && failXtOn() {
		return nil
	}
	xtMu.Lock()
	defer xtMu.Unlock()
	key := mesh.DevicesKey()
	if x, ok := xtCache[key]; ok {
		return x
	}
	ids := make([]int, mesh.Size())
	for i := range ids {
		ids[i] = mesh.Device(i).ID
	}
	x, err := cusolver.NewXt(ids...)
	if err != nil {
		return nil
	}
	xtCache[key] = x
	return x
}

// gradsOnDevice counts the backward computations that ran on a GPU; tests
// read it to see that the device path, not the host fallback, ran.
var gradsOnDevice atomic.Int64

// failGradAlloc, set by tests, fails the device path's allocation of a
// rows×cols temporary when it returns true, as an out-of-memory error.
var failGradAlloc func(rows, cols int) bool

var (
	blasMu    sync.Mutex
	blasCache = map[int]*cusolver.Blas{}
	alone     = map[int]*sharding.Mesh{} // one-GPU meshes that hold the dense copies
)

// blasOn returns the cuBLAS handle of device id and a mesh of that GPU
// alone, both made once and reused.
func blasOn(id int) (*cusolver.Blas, *sharding.Mesh, error) {
	blasMu.Lock()
	defer blasMu.Unlock()
	if b, ok := blasCache[id]; ok {
		return b, alone[id], nil
	}
	m, err := sharding.GPUMesh(id)
	if err != nil {
		return nil, nil, err
	}
	b, err := cusolver.NewBlas(id)
	if err != nil && sharding.ReclaimDeviceMemory() {
		b, err = cusolver.NewBlas(id)
	}
	if err != nil {
		return nil, nil, err
	}
	blasCache[id], alone[id] = b, m
	return b, m, nil
}

// outOfMemory reports whether err is a device allocation that failed: the
// device path then leaves the computation to the host.
func outOfMemory(err error) bool {
	var ce *cusolver.CUDAError
	var be *cusolver.BlasError
	return errors.Is(err, cu.OutOfMemory) ||
		errors.As(err, &ce) && ce.Code == cudaErrorMemoryAllocation ||
		errors.As(err, &be) && be.Status == cublasStatusAllocFailed
}

// CUDA's and cuBLAS's out-of-memory codes.
const (
	cudaErrorMemoryAllocation = 2
	cublasStatusAllocFailed   = 3
)

// gradSpreadTile is the tile of the column block-cyclic copies on a mesh
// through which an operand or result in a layout without whole columns
// passes: spread over the devices, not all on the first one beside the
// dense copies.
const gradSpreadTile = 1024

// errLeaveToHost stops a device computation that the host code must do.
var errLeaveToHost = errors.New("left to the host")

// gradOnGPU is gradOnDevice for GPU meshes.
func gradOnGPU(kind gradKind, mesh *sharding.Mesh, vals []gorgonia.Value, out *sharding.Tensor, hostOut *tensor.Dense) (bool, error) {
	var dt tensor.Dtype
	var n int
	if out != nil {
		dt, n = out.Dtype(), out.Rows()
	} else {
		dt, n = hostOut.Dtype(), hostOut.Shape()[0]
	}
	if isComplex(dt) {
		return false, ErrComplexGradient
	}
	// No estimate of the memory first: free memory (cudaMemGetInfo) does
	// not count the unreachable tensors that an allocation reclaims, and
	// an allocation that fails after that is a fallback like any other.
	b, one, err := blasOn(mesh.Device(0).ID)
	if outOfMemory(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	g := &gpuGrad{blas: b, one: one, dt: dt, n: n}
	defer g.release()
	var res *sharding.Tensor
	switch dt {
	case tensor.Float64:
		res, err = gpuGradCompute[float64](g, kind, vals)
	case tensor.Float32:
		res, err = gpuGradCompute[float32](g, kind, vals)
	default:
		return false, sharding.CheckDtype(dt)
	}
	// Out of device memory at any step (here, in the finiteness check and
	// in the store below): the host code writes every element of the
	// result, also over a copy into a host result that failed half way.
	if errors.Is(err, errLeaveToHost) || outOfMemory(err) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if err := res.CheckFinite(false); err != nil {
		if outOfMemory(err) || dt == tensor.Float32 && errors.Is(err, kernels.ErrNonFinite) {
			return false, nil // the host code tries float64
		}
		return true, fmt.Errorf("%s: %w", errGradRange, err)
	}
	if hostOut != nil {
		err = res.GatherInto(hostOut)
	} else {
		err = g.store(res, out)
	}
	if outOfMemory(err) {
		return false, nil
	}
	if err == nil {
		gradsOnDevice.Add(1)
	}
	return true, err
}

// gpuGrad holds one computation's handle, its one-GPU mesh and the device
// buffers it made.
type gpuGrad struct {
	blas  *cusolver.Blas
	one   *sharding.Mesh
	dt    tensor.Dtype
	n     int
	temps []*sharding.Tensor
	// owned maps the address of an operand that is the computation's own
	// dense copy (of a value on several GPUs or in another layout, or of a
	// host value) to that copy, which the computation may overwrite once it
	// no longer reads the operand: so Cholesky's, Potri's and the
	// eigenvector share's need no more than three N×N matrices on the first
	// GPU, operands included.
	owned map[uintptr]*sharding.Tensor
}

// scratchOr returns the operand at p to overwrite when it is the
// computation's own copy, else a new n×n matrix.
func (g *gpuGrad) scratchOr(p uintptr) (*sharding.Tensor, uintptr, error) {
	if t, ok := g.owned[p]; ok {
		return t, p, nil
	}
	return g.matrix(g.n, g.n)
}

func (g *gpuGrad) release() {
	for _, t := range g.temps {
		t.Free()
	}
}

// matrix is a new rows×cols matrix on the first GPU (its only shard is the
// dense column-major matrix) and its address.
func (g *gpuGrad) matrix(rows, cols int) (*sharding.Tensor, uintptr, error) {
	if failGradAlloc != nil && failGradAlloc(rows, cols) {
		return nil, 0, fmt.Errorf("a test's allocation: %w", cu.OutOfMemory)
	}
	t, err := sharding.New(g.one, tensor.Shape{rows, cols}, g.dt, sharding.Cyclic(max(cols, 1)))
	if err != nil {
		return nil, 0, err
	}
	g.temps = append(g.temps, t)
	return t, t.Shard(0).(*sharding.DeviceBuffer).Ptr(), nil
}

// wholeColumns reports whether every device holds whole columns of t's
// layout, so that t has a dense copy (ToDense, FromDense).
func wholeColumns(t *sharding.Tensor) bool {
	k := t.Layout().Kind
	return k == cyclic.ColCyclic || k == cyclic.ColBlocks
}

// operand returns the address of a dense column-major copy of the matrix
// (or vector: one column) value v with n rows on the first GPU, and its
// columns: the shard itself on a one-GPU mesh in a layout of whole columns,
// else a copy of the computation's own (g.owned). A host value is loaded; a
// tensor on another mesh's devices is left to the host code.
func (g *gpuGrad) operand(v gorgonia.Value) (uintptr, int, error) {
	switch x := unwrapEigen(v).(type) {
	case *sharding.Tensor:
		if x.Rows() != g.n || x.Dtype() != g.dt {
			return 0, 0, fmt.Errorf("%v %v, want %d rows of %v", x.Shape(), x.Dtype(), g.n, g.dt)
		}
		m := x.Mesh()
		if m.Kind() != sharding.GPU || m.Device(0) != g.one.Device(0) {
			return 0, 0, errLeaveToHost
		}
		if m.Size() == 1 && wholeColumns(x) {
			d, ok := x.Shard(0).(*sharding.DeviceBuffer) // nil when x was freed
			if !ok {
				return 0, 0, fmt.Errorf("%v: %w", x, sharding.ErrFreed)
			}
			return d.Ptr(), x.Cols(), nil
		}
		src := x
		if !wholeColumns(x) {
			// Through columns spread over the mesh, freed once copied.
			c, err := sharding.New(m, x.Shape(), g.dt, sharding.Cyclic(gradSpreadTile))
			if err != nil {
				return 0, 0, err
			}
			defer c.Free()
			if err := x.RelayoutInto(c); err != nil {
				return 0, 0, err
			}
			src = c
		}
		t, p, err := g.matrix(g.n, x.Cols())
		if err != nil {
			return 0, 0, err
		}
		if err := src.IntoDense(t.Shard(0).(*sharding.DeviceBuffer)); err != nil {
			return 0, 0, err
		}
		g.own(p, t)
		return p, x.Cols(), nil
	case tensor.Tensor:
		d, err := toHost(x)
		if err != nil {
			return 0, 0, err
		}
		s := d.Shape()
		cols := 1
		switch {
		case len(s) == 2 && s[0] == g.n:
			cols = s[1]
		case len(s) != 1 || s[0] != g.n:
			return 0, 0, fmt.Errorf("host value of shape %v, want %d rows", s, g.n)
		}
		t, p, err := g.matrix(g.n, cols)
		if err != nil {
			return 0, 0, err
		}
		if err := t.Load(tensor.New(tensor.WithShape(g.n, cols), tensor.WithBacking(d.Data()))); err != nil {
			return 0, 0, err
		}
		g.own(p, t)
		return p, cols, nil
	}
	return 0, 0, fmt.Errorf("unsupported value %T", v)
}

func (g *gpuGrad) own(p uintptr, t *sharding.Tensor) {
	if g.owned == nil {
		g.owned = map[uintptr]*sharding.Tensor{}
	}
	g.owned[p] = t
}

// operands returns the addresses and the columns of kind's matrix inputs,
// indexed by input (zero for LogDet's scalar ḡ and the eigenvalue gradient),
// after gradCheckColumns has checked the columns as the host code does.
func (g *gpuGrad) operands(kind gradKind, vals []gorgonia.Value) ([]uintptr, []int, error) {
	ps, cols := make([]uintptr, len(vals)), make([]int, len(vals))
	for i, v := range vals {
		if !gradMatrixInput(kind, i) {
			continue
		}
		var err error
		if ps[i], cols[i], err = g.operand(v); err != nil {
			if errors.Is(err, errLeaveToHost) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("input %d: %w", i, err)
		}
	}
	if err := gradCheckColumns(kind, g.n, cols, vals); err != nil {
		return nil, nil, err
	}
	return ps, cols, nil
}

// store copies the dense result res into the sharded out.
func (g *gpuGrad) store(res, out *sharding.Tensor) error {
	dense := res.Shard(0).(*sharding.DeviceBuffer)
	if wholeColumns(out) {
		return out.FromDense(dense)
	}
	c, err := sharding.New(out.Mesh(), out.Shape(), g.dt, sharding.Cyclic(gradSpreadTile))
	if err != nil {
		return err
	}
	defer c.Free()
	if err := c.FromDense(dense); err != nil {
		return err
	}
	return c.RelayoutInto(out)
}

// gpuGradCompute runs the backward computation kind on the first GPU and
// returns its n×n result there, whole (the strict upper triangle zero for
// CholSolve's L̄, the symmetric results mirrored).
func gpuGradCompute[T gradReal](g *gpuGrad, kind gradKind, vals []gorgonia.Value) (*sharding.Tensor, error) {
	if len(vals) != gradArity[kind] {
		return nil, fmt.Errorf("want %d inputs, got %d", gradArity[kind], len(vals))
	}
	n, dt, b := g.n, g.dt, g.blas
	res, r, err := g.matrix(n, n)
	if err != nil {
		return nil, err
	}
	ps, cols, err := g.operands(kind, vals)
	if err != nil {
		return nil, err
	}
	elem := uintptr(dt.Size())
	at := func(p uintptr, i, j int) uintptr { return p + uintptr(i+j*n)*elem }
	var errs []error
	do := func(err error) { errs = append(errs, err) }
	lower := false // only res's lower triangle is computed: mirror it
	switch kind {
	case gSymOuter:
		do(b.Syr2k(dt, n, cols[0], -0.5, ps[0], n, ps[1], n, 0, r, n))
		lower = true

	case gCholSolveL:
		bbar, x, l, k := ps[0], ps[1], ps[2], cols[0]
		_, u, err := g.matrix(n, k) // LᵀX
		if err != nil {
			return nil, err
		}
		_, w, err := g.matrix(n, k) // LᵀB̄
		if err != nil {
			return nil, err
		}
		do(b.TrmmLowerLeft(dt, true, n, k, 1, l, n, x, n, u, n))
		do(b.TrmmLowerLeft(dt, true, n, k, 1, l, n, bbar, n, w, n))
		do(b.Gemm(dt, false, true, n, n, k, -1, bbar, n, u, n, 0, r, n))
		do(b.Gemm(dt, false, true, n, n, k, -1, x, n, w, n, 1, r, n))
		if err := errors.Join(append(errs, b.Sync())...); err != nil {
			return nil, err
		}
		return res, res.ZeroStrictUpper()

	case gSandwich:
		c, cbar := ps[0], ps[1]
		// sym(C̄) in r, T = C·sym(C̄) in C̄'s place where it is a copy of
		// the computation's own, then the lower triangle of −T·C in r (the
		// calls run in order on the device).
		_, t, err := g.scratchOr(cbar)
		if err != nil {
			return nil, err
		}
		do(b.Geam(dt, false, true, n, n, 0.5, cbar, n, 0.5, cbar, n, r, n)) // sym(C̄)
		do(b.Gemm(dt, false, false, n, n, n, 1, c, n, r, n, 0, t, n))
		// −T·C = −T·Cᵀ: C, Potri's result, is exactly symmetric.
		do(b.Syrkx(dt, n, n, -1, t, n, c, n, 0, r, n))
		lower = true

	case gScale:
		s, err := gScalarOf(vals[1])
		if err != nil {
			return nil, err
		}
		do(b.Geam(dt, false, false, n, n, float64(T(s)), ps[0], n, 0, ps[0], n, r, n))

	case gLogDensity:
		s, err := gScalarOf(vals[2])
		if err != nil {
			return nil, err
		}
		k := cols[1]
		// a·C, then b·X·Xᵀ added into its lower triangle, mirrored below.
		do(b.Geam(dt, false, false, n, n, float64(T(-s*float64(k)/2)), ps[0], n, 0, ps[0], n, r, n))
		do(b.Syrkx(dt, n, k, float64(T(s/2)), ps[1], n, ps[1], n, 1, r, n))
		lower = true

	case gCholesky:
		l, lbar := ps[0], ps[1]
		// P = Φ(Lᵀ·L̄) by column blocks J from J's first row down, on a copy
		// of L̄'s lower triangle (see gradCompute), then S = L⁻ᵀ·P·L⁻¹ by
		// two triangular solves around a transpose; Ā = sym(S).
		// P in L̄'s place where it is a copy of the computation's own.
		pt, p, err := g.scratchOr(lbar)
		if err != nil {
			return nil, err
		}
		if p != lbar {
			do(b.Geam(dt, false, false, n, n, 1, lbar, n, 0, lbar, n, p, n))
		}
		if err := errors.Join(append(errs, b.Sync())...); err != nil {
			return nil, err
		}
		errs = errs[:0]
		if err := pt.ZeroStrictUpper(); err != nil {
			return nil, err
		}
		for j0 := 0; j0 < n; j0 += gpuLowerBlock {
			blk := at(p, j0, j0)
			do(b.TrmmLowerLeft(dt, true, n-j0, min(gpuLowerBlock, n-j0), 1, at(l, j0, j0), n, blk, n, blk, n))
		}
		if err := errors.Join(append(errs, b.Sync())...); err != nil {
			return nil, err
		}
		if err := pt.ZeroStrictUpper(); err != nil {
			return nil, err
		}
		errs = errs[:0]
		do(b.Scal(dt, n, 0.5, p, n+1)) // the diagonal
		do(b.TrsmLowerLeft(dt, true, n, n, 1, l, n, p, n))
		do(b.Geam(dt, true, false, n, n, 1, p, n, 0, p, n, r, n))
		do(b.TrsmLowerLeft(dt, true, n, n, 1, l, n, r, n))
		do(b.Geam(dt, false, true, n, n, 0.5, r, n, 0.5, r, n, p, n))
		if err := errors.Join(append(errs, b.Sync())...); err != nil {
			return nil, err
		}
		return pt, nil

	case gEigValues:
		wbar, err := gVectorOf[T](vals[1], n)
		if err != nil {
			return nil, fmt.Errorf("eigenvalue gradient: %w", err)
		}
		v := ps[0]
		wt, w, err := g.matrix(n, 1)
		if err != nil {
			return nil, err
		}
		if err := wt.Load(tensor.New(tensor.WithShape(n, 1), tensor.WithBacking(wbar))); err != nil {
			return nil, err
		}
		_, t, err := g.matrix(n, n)
		if err != nil {
			return nil, err
		}
		do(b.DgmmRight(dt, n, n, v, n, w, t, n))      // V·diag(w̄)
		do(b.Syrkx(dt, n, n, 1, t, n, v, n, 0, r, n)) // ·Vᵀ
		lower = true

	case gEigVectors:
		e := vals[0].(*eigenValue) // gradCheckColumns checked it
		v, vbar := ps[0], ps[1]
		// M = Vᵀ·V̄ in r, T = V·(F∘M) in V̄'s place where it is a copy of
		// the computation's own, then the lower triangle of T·Vᵀ in r.
		if err := errors.Join(b.Gemm(dt, true, false, n, n, n, 1, v, n, vbar, n, 0, r, n), b.Sync()); err != nil {
			return nil, err
		}
		// F∘M with the eigenvalue gaps' tests, as the host's
		// gEigenvectorWeights, bit for bit.
		i, j, ok, err := sharding.EigenvectorTerms(res, e.w, eigenGap(e))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, repeatedEigenvalues(e, i, j)
		}
		_, t, err := g.scratchOr(vbar)
		if err != nil {
			return nil, err
		}
		do(b.Gemm(dt, false, false, n, n, n, 1, v, n, r, n, 0, t, n))
		do(b.Syrkx(dt, n, n, 1, t, n, v, n, 0, r, n))
		lower = true

	default:
		return nil, fmt.Errorf("unknown backward computation %d", kind)
	}
	if err := errors.Join(append(errs, b.Sync())...); err != nil {
		return nil, err
	}
	if lower {
		return res, res.MirrorLower()
	}
	return res, nil
}
