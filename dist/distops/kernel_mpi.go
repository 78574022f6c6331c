//go:build mpi

package distops

import (
	"fmt"
	"math"

	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KernelMatrix is the grid value of the n×n stationary kernel matrix of
// family f (sharding.KernelFamily: the squared exponential or a Matérn
// kernel) of the points x,
//
//	K_ij = σ²·v(‖xᵢ − xⱼ‖²/ℓ²) + σₙ²·[i = j],
//
// in block×block blocks (0: dist.DefaultBlock), each rank computing its
// own blocks from x and the parameters (dist.KernelMatrix): no rank holds
// K, and its elements are those of the kernel matrix package ops makes on
// a CPU mesh, bit for bit. The operands are package ops' (ops.KernelOperands):
// host nodes of float32 or float64, the points n×d (or a length-n vector),
// the length scale ℓ a scalar or a length-d vector (ARD), the variances σ²
// and σₙ² (nil for none) scalars. They are replicated: every rank passes
// the same values (the op compares the family and a hash of every point
// and parameter across the ranks, where the other ops hash a sample of
// their inputs: ErrMismatch).
//
// K feeds this package's ops (Potrs, LogDet, …) as any grid value, and
// its gradient, a grid value, comes back to the points and the
// parameters: each rank sums over its own blocks and one AllReduce adds
// up the ranks' shares (dist.KernelMatrixGrad), so x̄, ℓ̄, σ̄² and σ̄ₙ² are
// host values, the same on every rank, and no rank holds an N×N gradient.
// Bad parameters or points are run-time ErrBadInput or ErrNonFinite on
// every rank.
func (o *Ops) KernelMatrix(f sharding.KernelFamily, x, lengthScale, signalVar, noiseVar *G.Node, block int) (*G.Node, error) {
	ins := []*G.Node{x, lengthScale, signalVar}
	if noiseVar != nil {
		ins = append(ins, noiseVar)
	}
	if err := o.checkNodes(kKernel, block, ins...); err != nil { // a constant x joins the parameters' graph
		return nil, err
	}
	switch f {
	case sharding.SquaredExp, sharding.Matern32, sharding.Matern52:
	default:
		return nil, fmt.Errorf("%w: distops: %s: unknown family %v", dist.ErrBadInput, names[kKernel], f)
	}
	ks, ins, err := ops.KernelOperands(names[kKernel], x, lengthScale, signalVar, noiseVar)
	if err != nil {
		return nil, fmt.Errorf("%w: distops: %w", dist.ErrBadInput, err)
	}
	if block == 0 {
		block = dist.DefaultBlock
	}
	k := &op{kind: kKernel, dt: ks.Dtype, arity: len(ins), g: o.grid, nb: block, onGrid: true, root: -1,
		in: nodeShapes(ins...), graph: ins[0].Graph(), kern: &kernelSpec{family: f, shape: ks}}
	return applyOp(k, ins...)
}

// KernelMatrixOf makes the op a KernelSource of package ops (its inputs
// are x, ℓ, σ² and σₙ²), so that ops.CrossKernel (mgla.CrossKernel) takes a
// kernel matrix on the grid for a Gaussian process's predictions.
func (o *op) KernelMatrixOf() (sharding.KernelFamily, ops.KernelShape, bool) {
	if o.kind != kKernel {
		return 0, ops.KernelShape{}, false
	}
	return o.kern.family, o.kern.shape, true
}

// kernelSpec is what a kernel op knows beyond op's fields: the family and
// the operands' shape (KernelMatrix and its gradient), or the piece of the
// gradient vector a pick takes.
type kernelSpec struct {
	family sharding.KernelFamily
	shape  ops.KernelShape
	from   int          // a pick's first element in the gradient vector
	pick   tensor.Shape // a pick's shape (nil: a scalar)
}

func (s *kernelSpec) String() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%v|%v|%v|%d|%v", s.family, s.shape.XShape, s.shape.EllShape, s.from, s.pick)
}

// gradPieces are the first and shape of each input's gradient in the
// gradient vector of a kernel matrix with arity inputs: x̄ (row-major),
// ℓ̄, σ̄² and, with a noise input, σ̄ₙ².
func (s *kernelSpec) gradPieces(arity int) []kernelSpec {
	nd, nell := s.shape.N*s.shape.D, max(1, s.shape.EllShape.TotalSize())
	pieces := []kernelSpec{{from: 0, pick: s.shape.XShape}, {from: nd, pick: s.shape.EllShape}, {from: nd + nell}}
	if arity == 4 {
		pieces = append(pieces, kernelSpec{from: nd + nell + 1})
	}
	return pieces
}

// gradLen is the length of the gradient vector of a kernel matrix with
// arity inputs.
func (s *kernelSpec) gradLen(arity int) int {
	p := s.gradPieces(arity)
	return p[len(p)-1].from + 1
}

// kernelBackward is a kernel matrix's backward formula (see backward): one
// gradient op computes the vector of every input's gradient on every rank,
// and a pick per input takes its piece.
func kernelBackward[X comparable](o *op, in []X, grad X, apply func(p *op, args ...X) (X, error)) ([]X, error) {
	g := o.derived(kKernelGrad)
	g.kern = o.kern
	all, err := apply(g, append(append([]X{}, in...), grad)...)
	if err != nil {
		return nil, err
	}
	res := make([]X, len(in))
	for i, pc := range o.kern.gradPieces(o.arity) {
		p := o.derived(kKernelPick)
		p.kern = &kernelSpec{family: o.kern.family, shape: o.kern.shape, from: pc.from, pick: pc.pick}
		if res[i], err = apply(p, all); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// kernelDo runs KernelMatrix (the grid value of K) or its gradient op (the
// host vector of every input's gradient).
func kernelDo[T dist.Real](o *op, vals []G.Value) (G.Value, error) {
	params := len(vals) - 1 // ℓ, σ² and σₙ² follow x; the gradient op's K̄ them
	if o.kind == kKernelGrad {
		params--
	}
	x, p, err := kernelInputs[T](o, vals[:1+params])
	if err != nil {
		return nil, err
	}
	ks := o.kern.shape
	if o.kind == kKernel {
		m, err := dist.KernelMatrix[T](o.g, x, ks.N, ks.D, o.nb, p)
		if err != nil {
			return nil, err
		}
		return NewValue(m)
	}
	kbar, err := onGrid[T](o, len(vals)-1, vals[len(vals)-1])
	if err != nil {
		return nil, err
	}
	xbar, pbar, err := dist.KernelMatrixGrad(kbar, x, ks.D, p)
	if err != nil {
		return nil, err
	}
	all := sharding.KernelGradVector(xbar, pbar)[:o.kern.gradLen(1+params)]
	if realOf(o.dt) == tensor.Float32 {
		for _, v := range all { // the same sums on every rank: the same verdict
			if math.Abs(v) > math.MaxFloat32 {
				return nil, fmt.Errorf("%w: the gradient's %v is beyond float32", dist.ErrNonFinite, v)
			}
		}
	}
	return realVector(all, o.dt), nil
}

// kernelInputs reads the points (row-major, float64) and the parameters
// of a kernel matrix's inputs vals: x, ℓ, σ² and, when there, σₙ².
func kernelInputs[T dist.Real](o *op, vals []G.Value) (x []float64, p sharding.KernelParams, err error) {
	ks := o.kern.shape
	r, c, rm, err := hostMatrix[T](o, 0, vals[0])
	if err != nil {
		return nil, p, fmt.Errorf("the points: %w", err)
	}
	if r*c != ks.N*ks.D {
		return nil, p, fmt.Errorf("%w: the points are %d×%d, the node %v", dist.ErrBadInput, r, c, ks.XShape)
	}
	x = make([]float64, len(rm))
	for i, v := range rm {
		x[i] = float64(v)
	}
	p.Family = o.kern.family
	for i, v := range vals[1:] {
		got, err := reals(v)
		if err != nil {
			return nil, p, fmt.Errorf("%s: %w", kernelParamNames[i], err)
		}
		want := 1
		if i == 0 && ks.EllShape != nil {
			want = ks.D
		}
		if len(got) != want {
			return nil, p, fmt.Errorf("%w: %s of %d values, want %d", dist.ErrBadInput, kernelParamNames[i], len(got), want)
		}
		switch {
		case i == 0 && ks.EllShape != nil:
			p.LengthScales = got
		case i == 0:
			p.LengthScale = got[0]
		case i == 1:
			p.SignalVar = got[0]
		default:
			p.NoiseVar = got[0]
		}
	}
	return x, p, nil
}

// kernelParamNames name the parameters in errors.
var kernelParamNames = [...]string{"the length scale", "the signal variance", "the noise variance"}

// pickValue is a pick's piece of the gradient vector v: a scalar, or a
// host tensor of the pick's shape.
func pickValue(o *op, v G.Value) (G.Value, error) {
	all, err := reals(v)
	if err != nil {
		return nil, err
	}
	s := o.kern
	size := max(1, s.pick.TotalSize())
	if s.from+size > len(all) {
		return nil, fmt.Errorf("%w: a gradient vector of %d values for a piece at %d of %d", dist.ErrBadInput, len(all), s.from, size)
	}
	piece := all[s.from : s.from+size]
	if s.pick == nil {
		return realValue(piece[0], o.dt), nil
	}
	out := realVector(piece, o.dt)
	if err := out.Reshape(s.pick...); err != nil {
		return nil, err
	}
	return out, nil
}
