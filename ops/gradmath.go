package ops

import (
	"errors"
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the sharded math of the kernels' backward passes (see
// linalg_grad.go for the formulas and where each is used). Each computation is
// a Gorgonia op whose output is an N×N *sharding.Tensor placed like the matrix
// it is the gradient of, so the symbolic backward graph stays on the mesh; the
// LispMachine's DoDiff runs the same computations directly (runGrad). When
// that matrix is a sharded node with several consumers, Gorgonia needs its
// gradient on the host (see gradFor and the package doc), and when it is a
// host node's Shard its gradient is gathered to the host: the op then writes
// its result straight into a reused row-major host tensor instead of into
// shards that a Gather would copy out again.
//
// Execution. On a CPU mesh the computation assembles the global column-major
// operands from the shards (no copy on a one-device mesh), runs the host
// kernels of package kernels (Gemm, triangular solves) and scatters the result
// into the output's shards: that is the CPU mesh's execution, as for the
// forward kernels. On a GPU mesh (the mglacuda build) the computation runs on
// the mesh's first GPU with cuBLAS (gradgpu_cuda.go, gradOnDevice): dense
// copies of the operands there, the products, the result copied into the
// output's shards. It falls back to the host code above (operands gathered
// through the host, colMajor/storeColMajor) only where the device cannot:
// an allocation on that GPU that fails (after package sharding reclaimed
// unreachable tensors), at any step, an operand on another mesh, or a
// float32 result beyond the range, which the host computes again in
// float64 (gradInRange). The host code's cubic products then run on every
// GPU of the mesh through cuBLASXt, on host memory (gradproducts.go).
//
// Operands may be sharded (any layout on the op's mesh) or host values (a
// gradient Gorgonia summed on the host); scalars and the eigenvalue gradient
// are host values. Only float32 and float64 are supported: gradients of
// complex ops are rejected before these ops are built (ErrComplexGradient).

// gradKind names the backward computations.
type gradKind int

const (
	gSymOuter   gradKind = iota // (P, Q) → −½(P·Qᵀ + Q·Pᵀ): Potrs' Ā with P = B̄, Q = X
	gCholSolveL                 // (B̄, X, L) → −tril((B̄·Xᵀ + X·B̄ᵀ)·tril(L)): CholSolve's L̄
	gSandwich                   // (C, C̄) → −C·sym(C̄)·C: Potri's Ā
	gScale                      // (C, ḡ) → ḡ·C: LogDet's Ā with C = A⁻¹
	gCholesky                   // (L, L̄) → sym(L⁻ᵀ·Φ(Lᵀ·tril(L̄))·L⁻¹): Cholesky's Ā
	gEigValues                  // (E, w̄) → V·diag(w̄)·Vᵀ: the eigenvalues' share of Ā
	gEigVectors                 // (E, V̄) → sym(V·(F∘(Vᵀ·V̄))·Vᵀ): the eigenvectors' share of Ā
	gLogDensity                 // (C, X, ḡ) → ḡ·(½·X·Xᵀ − (k/2)·C): GaussianLogDensity's Ā with C = A⁻¹, X = A⁻¹B (k columns)
)

var gradNames = [...]string{"PotrsGrad", "CholSolveGradL", "PotriGrad", "LogDetGrad", "CholeskyGrad", "EigenValuesGrad", "EigenVectorsGrad", "GaussianLogDensityGrad"}

var gradArity = [...]int{2, 3, 2, 2, 2, 2, 2, 3}

// gradOp is one backward computation; its n×n output is placed on pl, or is
// a row-major host tensor when host is set, and its buffers are reused from
// one run of a machine to the next.
type gradOp struct {
	base
	kind    gradKind
	dt      tensor.Dtype
	pl      Placement
	n       int
	host    bool
	out     *sharding.Tensor
	hostOut *tensor.Dense
}

// gradNode applies the backward computation kind to ins; the result is the
// n×n gradient of the sharded node of, of dtype dt, placed like of. When of
// has several consumers its gradient must reach Gorgonia as a host value (see
// gradFor), and when of is a host node's Shard its gradient is gathered to
// the host (moveOp.SymDiff); the result is then written straight into a host
// tensor, which saves a sharded copy and a Gather of N×N values.
func gradNode(kind gradKind, of *gorgonia.Node, dt tensor.Dtype, ins ...*gorgonia.Node) (*gorgonia.Node, error) {
	if len(ins) != gradArity[kind] {
		return nil, fmt.Errorf("ops: %s takes %d inputs, got %d", gradNames[kind], gradArity[kind], len(ins))
	}
	if isComplex(dt) {
		return nil, fmt.Errorf("ops: %s: %w", gradNames[kind], ErrComplexGradient)
	}
	pl, ok := PlacementOf(of)
	if !ok {
		return nil, fmt.Errorf("ops: %s: %v is not sharded", gradNames[kind], of)
	}
	s := of.Shape()
	if len(s) != 2 || s[0] != s[1] {
		return nil, fmt.Errorf("ops: %s: %v is not square", gradNames[kind], of)
	}
	o := &gradOp{base: base{name: gradNames[kind]}, kind: kind, dt: dt, pl: pl, n: s[0], host: consumers(of) > 1 || shardOfHost(of)}
	if o.host {
		o.name += "→host"
	}
	return applyOp(o, ins...)
}

// shardOfHost reports whether x is the Shard of a host node.
func shardOfHost(x *gorgonia.Node) bool {
	if _, ok := x.Op().(*moveOp); !ok {
		return false
	}
	in := x.Graph().From(x.ID())
	return in.Next() && !IsSharded(in.Node().(*gorgonia.Node))
}

func (o *gradOp) Placement() (Placement, bool) { return o.pl, !o.host }
func (o *gradOp) Arity() int                   { return gradArity[o.kind] }

// Type: the inputs are matrices, vectors or scalars depending on the kind;
// each gets its own type variable (not 'b', which Gorgonia's inference uses
// for the result). The output is a matrix of the op's dtype.
func (o *gradOp) Type() hm.Type {
	ts := make([]hm.Type, 0, o.Arity()+1)
	for i := range o.Arity() {
		ts = append(ts, hm.TypeVariable(rune('x'+i)))
	}
	return hm.NewFnType(append(ts, matType(o.dt))...)
}

func (o *gradOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{o.n, o.n}, nil
}

func (o *gradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|%v|%d|%t", o.name, o.dt, o.n, o.host)
	writePlacement(h, o.pl)
}
func (o *gradOp) Hashcode() uint32 { return hashOf(o) }

func (o *gradOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	if err := CheckReaders(o.node); err != nil {
		return nil, err
	}
	if o.host {
		if o.hostOut == nil || o.hostOut.Dtype() != o.dt {
			o.hostOut = tensor.New(tensor.Of(o.dt), tensor.WithShape(o.n, o.n))
		}
		if err := runGradHost(o.kind, o.pl.Mesh, o.hostOut, vals...); err != nil {
			return nil, fmt.Errorf("ops: %s: %w", o.name, err)
		}
		return o.hostOut, nil
	}
	out, err := sharding.Reuse(o.out, o.pl.Mesh, tensor.Shape{o.n, o.n}, o.dt, o.pl.Layout)
	if err != nil {
		return nil, err
	}
	o.out = out
	if err := runGrad(o.kind, out, vals...); err != nil {
		return nil, fmt.Errorf("ops: %s: %w", o.name, err)
	}
	return out, nil
}

// Second-order gradients are not supported: the backward ops are not
// differentiable (DiffWRT is all false, so building further gradients over a
// graph that holds them still works; they are simply not traversed).
func (o *gradOp) DiffWRT(n int) []bool { return make([]bool, n) }

func (o *gradOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("ops: %s: second-order gradients are not supported", o.name)
}

// gradOnDevice, set by the mglacuda build, runs the backward computation
// kind of vals on the devices of a GPU mesh, into out or, when out is nil,
// into the row-major host hostOut. done is false, with no error, where it
// leaves the computation to the host code, which then writes every element
// of the result (a copy into it may have failed half way).
var gradOnDevice func(kind gradKind, mesh *sharding.Mesh, vals []gorgonia.Value, out *sharding.Tensor, hostOut *tensor.Dense) (done bool, err error)

// runGrad computes the backward computation kind of vals into the sharded
// n×n out: on its mesh's devices where they can, else on the host.
func runGrad(kind gradKind, out *sharding.Tensor, vals ...gorgonia.Value) error {
	if m := out.Mesh(); gradOnDevice != nil && m.Kind() == sharding.GPU {
		if done, err := gradOnDevice(kind, m, vals, out, nil); done || err != nil {
			return err
		}
	}
	switch out.Dtype() {
	case tensor.Float64:
		return gradSharded[float64](kind, out, vals, meshProducts(out.Mesh()))
	case tensor.Float32:
		return gradSharded[float32](kind, out, vals, meshProducts(out.Mesh()))
	case tensor.Complex64, tensor.Complex128:
		return ErrComplexGradient
	}
	return sharding.CheckDtype(out.Dtype())
}

// runGradHost computes the backward computation kind of vals into the
// row-major host n×n out: on the devices of mesh (the op's, which may be
// nil) where they can, else on the host.
func runGradHost(kind gradKind, mesh *sharding.Mesh, out *tensor.Dense, vals ...gorgonia.Value) error {
	if gradOnDevice != nil && mesh != nil && mesh.Kind() == sharding.GPU {
		if done, err := gradOnDevice(kind, mesh, vals, nil, out); done || err != nil {
			return err
		}
	}
	switch out.Dtype() {
	case tensor.Float64:
		return gradDense[float64](kind, out, vals, meshProducts(mesh))
	case tensor.Float32:
		return gradDense[float32](kind, out, vals, meshProducts(mesh))
	case tensor.Complex64, tensor.Complex128:
		return ErrComplexGradient
	}
	return sharding.CheckDtype(out.Dtype())
}

func gradSharded[T gradReal](kind gradKind, out *sharding.Tensor, vals []gorgonia.Value, dev deviceProducts) error {
	n := out.Rows()
	if out.Cols() != n {
		return fmt.Errorf("output %v is not square", out.Shape())
	}
	mats, cols, releaseOperands, err := gradOperands[T](kind, n, vals)
	if err != nil {
		return err
	}
	defer releaseOperands()
	// The operands are read: dst may now be out's own shard.
	dst, release := writable[T](out)
	defer release()
	if err := gradInRange(kind, n, mats, cols, vals, dst, dev); err != nil {
		return err
	}
	return storeColMajor(dst, out)
}

func gradDense[T gradReal](kind gradKind, out *tensor.Dense, vals []gorgonia.Value, dev deviceProducts) error {
	s := out.Shape()
	if len(s) != 2 || s[0] != s[1] {
		return fmt.Errorf("output of shape %v is not square", s)
	}
	n := s[0]
	data, ok := out.Data().([]T)
	if !ok {
		return fmt.Errorf("output holds %T", out.Data())
	}
	mats, cols, releaseOperands, err := gradOperands[T](kind, n, vals)
	if err != nil {
		return err
	}
	defer releaseOperands()
	if kind != gCholSolveL {
		// Exactly symmetric results: column-major is row-major.
		return gradInRange(kind, n, mats, cols, vals, data, dev)
	}
	tmp, releaseTmp := lend[T](n * n) // gradCompute writes all of it
	defer releaseTmp()
	if err := gradInRange(kind, n, mats, cols, vals, tmp, dev); err != nil {
		return err
	}
	kernels.Transpose(n, n, tmp, n, data, n)
	return nil
}

// gradOperands reads the matrix operands of vals (n rows each) in global
// column-major order, with their column counts; the entries for a scalar or
// the eigenvalue gradient are left empty (gradCompute reads those). release
// gives back the buffers the scratch pool lent for them.
func gradOperands[T gradReal](kind gradKind, n int, vals []gorgonia.Value) (mats [][]T, cols []int, release func(), err error) {
	if len(vals) != gradArity[kind] {
		return nil, nil, nil, fmt.Errorf("want %d inputs, got %d", gradArity[kind], len(vals))
	}
	mats, cols = make([][]T, len(vals)), make([]int, len(vals))
	releases := make([]func(), 0, len(vals))
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for i, v := range vals {
		if !gradMatrixInput(kind, i) {
			continue
		}
		var r func()
		if mats[i], cols[i], r, err = gMatrixOf[T](v, n); err != nil {
			release()
			return nil, nil, nil, fmt.Errorf("input %d: %w", i, err)
		}
		releases = append(releases, r)
	}
	return mats, cols, release, nil
}

// gradMatrixInput reports whether input i of the backward computation kind
// is a matrix (or vector) of n rows; the others are LogDet's and
// GaussianLogDensity's scalar ḡ and the eigenvalue gradient.
func gradMatrixInput(kind gradKind, i int) bool {
	switch kind {
	case gScale, gEigValues:
		return i != 1
	case gLogDensity:
		return i != 2
	}
	return true
}

// gradCheckColumns checks the columns of kind's matrix inputs (cols
// indexed by input, n rows each) and, for the eigenvector share, the
// number of eigenvalues; the host and the device paths both call it.
func gradCheckColumns(kind gradKind, n int, cols []int, vals []gorgonia.Value) error {
	switch kind {
	case gSymOuter:
		if cols[1] != cols[0] {
			return fmt.Errorf("operands with %d and %d columns", cols[0], cols[1])
		}
	case gCholSolveL:
		if cols[1] != cols[0] || cols[2] != n {
			return fmt.Errorf("operands with %d, %d and %d columns", cols[0], cols[1], cols[2])
		}
	case gSandwich, gCholesky:
		if cols[0] != n || cols[1] != n {
			return fmt.Errorf("operands with %d and %d columns", cols[0], cols[1])
		}
	case gScale, gEigValues, gLogDensity:
		if cols[0] != n {
			return fmt.Errorf("operand with %d columns", cols[0])
		}
	case gEigVectors:
		e, ok := vals[0].(*eigenValue)
		if !ok {
			return fmt.Errorf("want the value of an Eigen node, got %T", vals[0])
		}
		if cols[0] != n || cols[1] != n || len(e.w) != n {
			return fmt.Errorf("operands with %d and %d columns and %d eigenvalues", cols[0], cols[1], len(e.w))
		}
	}
	return nil
}

// symOuterDirect is the most right-hand sides for which PotrsGrad uses a
// direct loop rather than two gemms and a symmetrisation pass.
const symOuterDirect = 8

// gradReal is the element type of the backward computations.
type gradReal interface{ float32 | float64 }

// gradInRange is gradCompute, which works in T, for results that fit T: in
// float32 an intermediate product can overflow where the gradient does not
// (C·sym(C̄) in Potri's, the sum of two entries near the largest float32), so
// a float32 result that gradCompute finds beyond the range is computed again
// in float64 from the same operands and rounded. ErrNonFinite then means what
// its message says, as for the forward kernels, which compute float32 in
// float64: the gradient itself is beyond float32's range, or an upstream
// gradient held NaN or Inf. (The first try stays in float32: twice as fast.)
//
// The products run on dev where it is not nil; where one of its calls
// fails, the whole result is computed again with the CPU's.
func gradInRange[T gradReal](kind gradKind, n int, mats [][]T, cols []int, vals []gorgonia.Value, dst []T, dev deviceProducts) error {
	if dev != nil {
		counted := &callCounter{deviceProducts: dev}
		err := gradInRangeOn(kind, n, mats, cols, vals, dst, counted)
		if !errors.Is(err, errDeviceProducts) {
			if err == nil && counted.calls > 0 {
				gradsWithDeviceProducts.Add(1)
			}
			return err
		}
	}
	return gradInRangeOn(kind, n, mats, cols, vals, dst, nil)
}

// gradInRangeOn is gradInRange with the products on dev (the CPU where nil).
func gradInRangeOn[T gradReal](kind gradKind, n int, mats [][]T, cols []int, vals []gorgonia.Value, dst []T, dev deviceProducts) error {
	err := gradCompute(kind, n, mats, cols, vals, dst, dev)
	narrow, single := any(dst).([]float32)
	if !single || !errors.Is(err, kernels.ErrNonFinite) {
		return err
	}
	wide := make([][]float64, len(mats))
	for i, m := range any(mats).([][]float32) {
		if m == nil {
			continue // a scalar's or the eigenvalues' place
		}
		w, release := lend[float64](len(m))
		defer release()
		for k, v := range m {
			w[k] = float64(v)
		}
		wide[i] = w
	}
	d, release := lend[float64](n * n) // gradCompute writes all of it
	defer release()
	if err := gradCompute(kind, n, wide, cols, vals, d, dev); err != nil {
		return err
	}
	for i, v := range d {
		narrow[i] = float32(v)
	}
	if err := kernels.CheckFinite(n, n, narrow, n, false); err != nil {
		return fmt.Errorf("%s: %w", errGradRange, err)
	}
	return nil
}

// errGradRange begins the message of a gradient that is ErrNonFinite. In
// float64 (and in float32 where the float64 pass overflows too) a product
// on the way can be what overflowed.
const errGradRange = "the gradient, or a product on the way to it, beyond the dtype's range, or from a NaN or Inf upstream gradient"

// gradCompute writes the n×n column-major result of the backward
// computation kind into dst, which no operand aliases, with the cubic
// products on dev (the CPU where nil). It writes nothing but dst and its
// own temporaries.
func gradCompute[T gradReal](kind gradKind, n int, mats [][]T, cols []int, vals []gorgonia.Value, dst []T, dev deviceProducts) error {
	if err := gradCheckColumns(kind, n, cols, vals); err != nil {
		return err
	}
	switch kind {
	case gSymOuter:
		p, q, k := mats[0], mats[1], cols[0]
		if k > symOuterDirect {
			if err := errors.Join(
				pGemm(dev, false, true, n, n, k, -0.5, p, n, q, n, 0, dst, n),
				pGemm(dev, false, true, n, n, k, -0.5, q, n, p, n, 1, dst, n)); err != nil {
				return err
			}
			kernels.Symmetrize(n, dst, n)
			break
		}
		// Few right-hand sides: one pass over dst. Each entry sums the same
		// products as its mirror image, so the result is exactly symmetric.
		for j := range n {
			col := dst[j*n : j*n+n]
			for l := range k {
				pj, qj := -p[j+l*n]/2, -q[j+l*n]/2
				pl, ql := p[l*n:l*n+n], q[l*n:l*n+n]
				if l == 0 {
					for i := range col {
						col[i] = T(pl[i]*qj) + T(ql[i]*pj) // conversions: no FMA
					}
					continue
				}
				for i := range col {
					col[i] += T(pl[i]*qj) + T(ql[i]*pj)
				}
			}
		}

	case gCholSolveL:
		// (B̄Xᵀ + XB̄ᵀ)·L = B̄·(LᵀX)ᵀ + X·(LᵀB̄)ᵀ: O(N²K), no N×N×N product.
		bbar, x, k := mats[0], mats[1], cols[0]
		// L: only its lower triangle is read, by the triangular products.
		l := mats[2]
		u, releaseU := lend[T](n * k) // LᵀX
		defer releaseU()
		w, releaseW := lend[T](n * k) // LᵀB̄
		defer releaseW()
		copy(u, x[:n*k])
		copy(w, bbar[:n*k])
		if err := errors.Join(
			pTrmmLowerLeft(dev, true, n, k, l, n, u, n),
			pTrmmLowerLeft(dev, true, n, k, l, n, w, n),
			pGemm(dev, false, true, n, n, k, -1, bbar, n, u, n, 0, dst, n),
			pGemm(dev, false, true, n, n, k, -1, x, n, w, n, 1, dst, n)); err != nil {
			return err
		}
		gZeroStrictUpper(n, dst)

	case gSandwich:
		// sym(C̄) first (in dst, which the last product overwrites): the
		// antisymmetric part of C̄ has no share in the gradient, and taken
		// through the products its rounding would be.
		c, cbar := mats[0], mats[1]
		copy(dst, cbar)
		kernels.Symmetrize(n, dst, n)
		t, releaseT := lend[T](n * n) // written by the gemm
		defer releaseT()
		if err := pGemm(dev, false, false, n, n, n, 1, c, n, dst, n, 0, t, n); err != nil {
			return err
		}
		// C·sym(C̄)·C is symmetric, and C, Potri's result, exactly so.
		if err := gSymmetricProduct(dev, false, n, -1, t, c, dst); err != nil {
			return err
		}

	case gScale:
		g, err := gScalarOf(vals[1])
		if err != nil {
			return err
		}
		c := mats[0]
		a := T(g)
		for i, v := range c {
			dst[i] = a * v
		}

	case gLogDensity:
		g, err := gScalarOf(vals[2])
		if err != nil {
			return err
		}
		c, x, k := mats[0], mats[1], cols[1]
		if err := gLogDensityGrad(dev, n, k, T(-g*float64(k)/2), T(g/2), c, x, dst); err != nil {
			return err
		}

	case gCholesky:
		l := mats[0] // only its lower triangle is read, by the triangular products
		// P = Φ(Lᵀ·L̄), the lower triangle with the diagonal halved. Only
		// L̄'s lower triangle enters it (L is lower triangular), so it is
		// the triangular product in place on a copy of that triangle; and
		// only P's lower triangle is kept, so by column blocks J, from J's
		// first row down: P[j0:, J] = L[j0:, j0:]ᵀ·L̄[j0:, J], a third of
		// the whole product's flops.
		p, releaseP := gLowerCopy(n, mats[1])
		defer releaseP()
		block := gLowerBlock
		if dev != nil {
			block = gpuLowerBlock
		}
		for j0 := 0; j0 < n; j0 += block {
			if err := pTrmmLowerLeft(dev, true, n-j0, min(block, n-j0), l[j0+j0*n:], n, p[j0+j0*n:], n); err != nil {
				return err
			}
		}
		gZeroStrictUpper(n, p)
		for j := range n {
			p[j+j*n] /= 2
		}
		// S = L⁻ᵀ·P·L⁻¹: Y = L⁻ᵀP, then Sᵀ = L⁻ᵀYᵀ; Ā = sym(S) = sym(Sᵀ).
		// (L has a positive diagonal: it comes from a successful Potrf.)
		if err := pTrsmLowerLeft(dev, true, n, n, l, n, p, n); err != nil {
			return err
		}
		kernels.Transpose(n, n, p, n, dst, n)
		if err := pTrsmLowerLeft(dev, true, n, n, l, n, dst, n); err != nil {
			return err
		}
		kernels.Symmetrize(n, dst, n)

	case gEigValues:
		v := mats[0]
		wbar, err := gVectorOf[T](vals[1], n)
		if err != nil {
			return fmt.Errorf("eigenvalue gradient: %w", err)
		}
		t, releaseT := lend[T](n * n) // written by the loop
		defer releaseT()
		for j := range n {
			for i, x := range v[j*n : j*n+n] {
				t[i+j*n] = x * wbar[j]
			}
		}
		if err := gSymmetricProduct(dev, true, n, 1, t, v, dst); err != nil { // V·diag(w̄)·Vᵀ is symmetric
			return err
		}

	case gEigVectors:
		e := vals[0].(*eigenValue) // gradCheckColumns checked it
		v, vbar := mats[0], mats[1]
		m, releaseM := lend[T](n * n) // written by the gemm
		defer releaseM()
		if err := pGemm(dev, true, false, n, n, n, 1, v, n, vbar, n, 0, m, n); err != nil {
			return err
		}
		if err := gEigenvectorWeights(n, m, e); err != nil {
			return err
		}
		t, releaseT := lend[T](n * n) // written by the gemm
		defer releaseT()
		if err := errors.Join(
			pGemm(dev, false, false, n, n, n, 1, v, n, m, n, 0, t, n),
			gSymmetricProduct(dev, true, n, 1, t, v, dst)); err != nil {
			return err
		}

	default:
		return fmt.Errorf("unknown backward computation %d", kind)
	}
	// As the forward results: a gradient beyond the dtype's range (or from a
	// NaN or Inf upstream gradient) is ErrNonFinite, not a silent Inf or NaN.
	if err := kernels.CheckFinite(n, n, dst, n, false); err != nil {
		return fmt.Errorf("%s: %w", errGradRange, err)
	}
	return nil
}

// gLogDensityGrad writes a·C + b·X·Xᵀ into dst (n×n, column-major), for
// the exactly symmetric n×n C and the n×k X, exactly symmetric: with few
// columns each entry sums b·(X_il·X_jl) over l in the same order as its
// mirror image (the conversions keep Go from fusing a multiply-add, which
// would round the two differently); with more, a gemm and a symmetrisation.
func gLogDensityGrad[T gradReal](dev deviceProducts, n, k int, a, b T, c, x, dst []T) error {
	if k > symOuterDirect {
		for i, v := range c {
			dst[i] = a * v
		}
		if err := pGemm(dev, false, true, n, n, k, b, x, n, x, n, 1, dst, n); err != nil {
			return err
		}
		kernels.Symmetrize(n, dst, n)
		return nil
	}
	for j := range n {
		col, cj := dst[j*n:j*n+n], c[j*n:j*n+n]
		for i := range col {
			col[i] = T(a * cj[i])
		}
		for l := range k {
			xl := x[l*n : l*n+n]
			xj := xl[j]
			for i := range col {
				col[i] += T(b * T(xl[i]*xj))
			}
		}
	}
	return nil
}

// gEigenvectorWeights replaces the n×n column-major M = Vᵀ·V̄ by sym(F∘M)
// (kernels.SymmetricEigenvectorTerms): at eigenvalues equal to rounding 0
// where the cost does not use their eigenvectors, else
// ErrRepeatedEigenvalues. The eigenvalues' own precision sets the gap, also
// when a float32 gradient is computed again in float64 (gradInRange).
func gEigenvectorWeights[T gradReal](n int, m []T, e *eigenValue) error {
	if i, j, ok := kernels.SymmetricEigenvectorTerms(n, m, n, e.w, eigenGap(e)); !ok {
		return repeatedEigenvalues(e, i, j)
	}
	return nil
}

// eigenGap is the gap below which two of e's eigenvalues count as equal.
func eigenGap(e *eigenValue) float64 {
	return kernels.EigenGapTolerance(e.w, e.Dtype() == tensor.Float32)
}

// repeatedEigenvalues is the error of the undefined pair (i, j).
func repeatedEigenvalues(e *eigenValue, i, j int) error {
	return fmt.Errorf("%w: eigenvalues %d and %d are %v and %v", kernels.ErrRepeatedEigenvalues, i, j, e.w[i], e.w[j])
}

// gMatrixOf returns the global column-major data of a sharded or host value
// with the given number of rows (a vector is one column), and its columns.
// The result may alias the value (read only); release gives back a buffer
// the scratch pool lent for it (for the other results it does nothing).
func gMatrixOf[T gradReal](v gorgonia.Value, rows int) (g []T, cols int, release func(), err error) {
	switch x := unwrapEigen(v).(type) {
	case *sharding.Tensor:
		if x.Rows() != rows {
			return nil, 0, nil, fmt.Errorf("%v has %d rows, want %d", x, x.Rows(), rows)
		}
		g, _, release, err := colMajor[T](x)
		return g, x.Cols(), release, err
	case tensor.Tensor:
		d, err := toHost(x)
		if err != nil {
			return nil, 0, nil, err
		}
		s := d.Shape()
		data, ok := d.Data().([]T)
		if !ok {
			return nil, 0, nil, fmt.Errorf("host value holds %T", d.Data())
		}
		switch {
		case len(s) == 1 && s[0] == rows:
			return data, 1, keep, nil
		case len(s) == 2 && s[0] == rows:
			c := s[1]
			if c == 1 {
				return data, 1, keep, nil
			}
			g, release := lend[T](rows * c) // every element written below
			for i := range rows {
				for j, y := range data[i*c : i*c+c] {
					g[i+j*rows] = y
				}
			}
			return g, c, release, nil
		}
		return nil, 0, nil, fmt.Errorf("host value of shape %v, want %d rows", s, rows)
	}
	return nil, 0, nil, fmt.Errorf("unsupported value %T", v)
}

// gVectorOf returns a length-n host or sharded vector as a slice of T.
func gVectorOf[T gradReal](v gorgonia.Value, n int) ([]T, error) {
	if t, ok := v.(tensor.Tensor); ok {
		d, err := toHost(t)
		if err != nil {
			return nil, err
		}
		switch x := d.Data().(type) {
		case []float64:
			return gConvertSlice[T](x, n)
		case []float32:
			return gConvertSlice[T](x, n)
		}
		return nil, fmt.Errorf("host vector holds %T", d.Data())
	}
	if s, ok := unwrapEigen(v).(*sharding.Tensor); ok && s.Dtype() == tensor.Float32 {
		if _, wide := any(T(0)).(float64); wide { // gradInRange's float64 pass
			g, err := gVectorOf[float32](v, n)
			if err != nil {
				return nil, err
			}
			return gConvertSlice[T](g, n)
		}
	}
	g, c, _, err := gMatrixOf[T](v, n) // not given back: a vector, and the pool takes only what is released
	if err != nil {
		return nil, err
	}
	if c != 1 {
		return nil, fmt.Errorf("want a vector, got %d columns", c)
	}
	return g, nil
}

func gConvertSlice[T, S gradReal](s []S, n int) ([]T, error) {
	if len(s) != n {
		return nil, fmt.Errorf("vector of length %d, want %d", len(s), n)
	}
	out := make([]T, n)
	for i, x := range s {
		out[i] = T(x)
	}
	return out, nil
}

// gScalarOf reads a real host scalar (*F64, *F32 or a one-element tensor).
func gScalarOf(v gorgonia.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case []float64:
		if len(x) == 1 {
			return x[0], nil
		}
	case []float32:
		if len(x) == 1 {
			return float64(x[0]), nil
		}
	}
	return 0, fmt.Errorf("want a real scalar, got %T of shape %v", v, v.Shape())
}

// gLowerCopy is a copy of the lower triangle (diagonal included) of the n×n
// column-major a, with a zero strict upper triangle, in a buffer lent by the
// scratch pool that release gives back.
func gLowerCopy[T gradReal](n int, a []T) (out []T, release func()) {
	out, release = lend[T](n * n)
	for j := range n {
		clear(out[j*n : j*n+j])
		copy(out[j*n+j:j*n+n], a[j*n+j:j*n+n])
	}
	return out, release
}

// gLowerBlock is the width of the column blocks in which the backward
// products form only a lower triangle (gCholesky's Φ(Lᵀ·L̄),
// gSymmetricProduct); gpuLowerBlock is gCholesky's with the products on
// GPUs (gradgpu_cuda.go, deviceProducts): wide enough that each product
// fills them.
const (
	gLowerBlock   = 256
	gpuLowerBlock = 1024
)

// gSymmetricProduct writes alpha·A·op(B) into dst (n×n, column-major; op(B)
// is Bᵀ when transB is set) for a product known to be symmetric: its lower
// triangle by column blocks J, from J's first row down (about half the
// flops), then mirrored into the upper one, so dst is exactly symmetric.
// Without transB, B must be exactly symmetric (dev forms A·Bᵀ).
func gSymmetricProduct[T gradReal](dev deviceProducts, transB bool, n int, alpha T, a, b, dst []T) error {
	if onDevices(dev, n) {
		if err := devErr(dev.Syrkx(n, n, float64(alpha), a, n, b, n, 0, dst, n)); err != nil {
			return err
		}
		kernels.MirrorLower(n, dst, n)
		return nil
	}
	for j0 := 0; j0 < n; j0 += gLowerBlock {
		bj := b[j0*n:] // op(B)'s columns J: B's columns J, or its rows J
		if transB {
			bj = b[j0:]
		}
		kernels.Gemm(false, transB, n-j0, min(gLowerBlock, n-j0), n, alpha, a[j0:], n, bj, n, 0, dst[j0+j0*n:], n)
	}
	kernels.MirrorLower(n, dst, n)
	return nil
}

func gZeroStrictUpper[T gradReal](n int, a []T) {
	for j := 1; j < n; j++ {
		clear(a[j*n : j*n+j])
	}
}
