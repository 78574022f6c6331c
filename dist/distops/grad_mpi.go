//go:build mpi

package distops

import (
	"fmt"
	"sync/atomic"

	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/internal/failedruns"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DiffWRT: the factor L of Potrs and LogDet and the Eigen node of
// EigenValues and EigenVectors are not differentiated (the gradient goes
// to A directly), nor are the gradient ops.
func (o *op) DiffWRT(n int) []bool {
	d := make([]bool, n)
	switch o.kind {
	case kCholesky, kPotri, kLogDet, kEigen, kEigValues, kEigVectors, kFactor,
		kFromRowBlocks, kDistribute, kGather, kGridInput:
		d[0] = true
	case kCholSolve:
		d[0], d[1] = true, true
	case kKernel:
		for i := range d {
			d[i] = true
		}
	case kPotrs:
		d[0], d[2] = true, true
	}
	return d
}

// backward is the gradient formula of op o, written once for SymDiff
// (X = *G.Node, apply builds nodes) and DoDiff (X = G.Value, apply
// computes values): the gradients of the inputs in (the zero X for inputs
// not differentiated) from the output and its gradient. The formulas are
// package ops' (ops/linalg_grad.go):
//
//	Cholesky       Ā = CholeskyGrad(L, L̄)
//	CholSolve      B̄ = CholSolve(L, X̄), L̄ = CholSolveGrad(L, X, X̄)
//	Potrs          B̄ = CholSolve(L, X̄), Ā = PotrsGrad(L, X, X̄)
//	Potri          Ā = PotriGrad(C, C̄) (C from the factor F)
//	LogDet         Ā = LogDetGrad(A, F, ḡ) = ḡ·A⁻¹ from the factor
//	Syevd          Ā = EigenValuesGrad(E, w̄) + EigenVectorsGrad(E, V̄)
//	FromRowBlocks  each rank's band of Ā (RowBlock)
//	Distribute     Ā back to every rank (Gather), or to the root it came from
//	Gather         Ḡ distributed again (from every rank's copy, or the root's)
//	GridInput      Ā itself
func backward[X interface {
	comparable
	Shape() tensor.Shape
}](o *op, in []X, output, grad X, apply func(p *op, args ...X) (X, error)) ([]X, error) {
	if o.dt == tensor.Complex64 || o.dt == tensor.Complex128 {
		return nil, fmt.Errorf("distops: %s (%v): %w", o, o.dt, dist.ErrComplexGradient)
	}
	res := make([]X, len(in))
	var err error
	switch o.kind {
	case kCholesky:
		res[0], err = apply(o.derived(kCholeskyGrad), output, grad)
	case kCholSolve:
		if res[1], err = apply(o.derived(kCholSolve), in[0], grad); err != nil {
			break
		}
		res[0], err = apply(o.derived(kCholSolveGrad), in[0], output, grad)
	case kPotrs:
		if res[2], err = apply(o.derived(kPotrs), in[0], in[1], grad); err != nil { // B̄ = A⁻¹X̄ from the factor
			break
		}
		res[0], err = apply(o.derived(kPotrsGrad), in[1], output, grad)
	case kPotri:
		res[0], err = apply(o.derived(kPotriGrad), output, grad)
	case kLogDet:
		res[0], err = apply(o.derived(kLogDetGrad), in[0], in[1], grad) // A (its shape), F, ḡ
	case kEigen:
		res[0], err = apply(o.derived(kEigVectorsGrad), output, grad)
	case kEigValues:
		e := in[len(in)-1]
		if o.arity == 1 {
			if e, err = apply(o.derived(kEigen), in[0]); err != nil {
				break
			}
		}
		res[0], err = apply(o.derived(kEigValuesGrad), e, grad)
	case kEigVectors:
		res[0], err = apply(o.derived(kEigVectorsGrad), in[1], grad)
	case kFromRowBlocks:
		p := o.derived(kRowBlock)
		p.rows = in[0].Shape()[0]
		res[0], err = apply(p, grad)
	case kDistribute:
		p := o.derived(kGather)
		p.root = o.root
		res[0], err = apply(p, grad)
	case kGather:
		p := o.derived(kDistribute)
		p.root, p.onGrid = o.root, true
		res[0], err = apply(p, grad)
	case kGridInput:
		res[0] = grad
	case kKernel:
		return kernelBackward(o, in, grad, apply)
	default:
		err = fmt.Errorf("%w: distops: %s has no gradient", dist.ErrBadInput, o)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// derived is an op of kind k on o's grid, blocks and values (its arity
// set when applied).
func (o *op) derived(k kind) *op {
	return &op{kind: k, dt: o.dt, g: o.g, nb: o.nb, onGrid: o.onGrid, root: -1, graph: o.graph}
}

// The gradients of grid values in a TapeMachine graph. Gorgonia sums the
// gradients of a node with several consumers with its own Add, which takes
// host tensors only; a grid value cannot be one (see package ops: a
// tensor.Tensor is one host slab to Gorgonia). So the gradient an op sends
// to a grid input produced by another op is a token: a scalar zero node
// whose one input is the grid gradient. Gorgonia adds the tokens of the
// node's consumers (scalars: nothing to speak of), and the op that produced
// the node, differentiated next, finds the grid gradients behind the tokens
// of its output's gradient (resolve) and sums them on the grid (GridSum, a
// local addition: the same layout on every rank). A grid input node goes
// through one GridInput node (see prepare), whose gradient is the grid
// value itself, so gorgonia.Grad with respect to it returns the grid
// gradient. The LispMachine accumulates dual values in place (DoDiff) and
// needs none of this.

// tokens numbers the tokens (see op.id).
var tokens atomic.Int64

// token is the token node standing for the grid gradient node g.
func (o *op) token(g *G.Node) (*G.Node, error) {
	p := o.derived(kToken)
	p.arity, p.id = 1, int(tokens.Add(1))
	return applyOp(p, g)
}

// resolve is the grid gradient that grad stands for: grad is a token, or
// Gorgonia's sum of tokens; the grid gradients behind them are summed on
// the grid.
func (o *op) resolve(grad *G.Node) (*G.Node, error) {
	var parts G.Nodes
	var walk func(n *G.Node) error
	walk = func(n *G.Node) error {
		if t, ok := n.Op().(*op); ok {
			if t.kind != kToken {
				return fmt.Errorf("%w: distops: %s: the gradient %v of a grid value is no token", dist.ErrBadInput, o, n)
			}
			parts = append(parts, children(n)...)
			return nil
		}
		if n.Op() == nil {
			return fmt.Errorf("%w: distops: %s: the gradient %v of a grid value is an input", dist.ErrBadInput, o, n)
		}
		for _, c := range children(n) { // Gorgonia's Add of tokens
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(grad); err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	p := o.derived(kGridSum)
	p.arity, p.onGrid = len(parts), true
	return applyOp(p, parts...)
}

// children are the inputs of n, in order.
func children(n *G.Node) G.Nodes {
	var out G.Nodes
	for it := n.Graph().From(n.ID()); it.Next(); {
		out = append(out, it.Node().(*G.Node))
	}
	return out
}

// gridOf is the grid and block size of a node holding a grid value: an
// input node with a *Value, or an op of this package with a grid output.
func gridOf(n *G.Node) (*dist.Grid, int, bool) {
	if n.Op() == nil {
		if v, ok := n.Value().(*Value); ok {
			g, nb := v.layout()
			return g, nb, true
		}
		return nil, 0, false
	}
	if o, ok := n.Op().(*op); ok && o.gridOut() {
		return o.g, o.nb, true
	}
	return nil, 0, false
}

// SymDiff builds the backward pass on the same grid (see backward); for
// an op on grid values, the gradient of its grid output arrives as tokens
// (resolve), and it sends tokens to its grid inputs made by other ops.
func (o *op) SymDiff(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	o.differentiated = true
	if o.gridOut() {
		var err error
		if grad, err = o.resolve(grad); err != nil {
			return nil, err
		}
	}
	res, err := backward(o, in, output, grad, func(p *op, args ...*G.Node) (*G.Node, error) {
		p.arity = len(args)
		p.in = nodeShapes(args...)
		return applyOp(p, args...)
	})
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		if _, _, grid := gridOf(in[i]); r != nil && grid && in[i].Op() != nil {
			if res[i], err = o.token(r); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// DoDiff is the LispMachine's backward step: backward on the values,
// added into the inputs' gradients.
func (o *op) DoDiff(ctx G.ExecutionContext, inputs G.Nodes, output *G.Node) error {
	switch o.kind {
	case kFactor, kToken, kGridSum, kRowBlock, kKernelGrad, kKernelPick:
		return nil // not differentiated (see DiffWRT)
	}
	if err := failedruns.Check(o.graph, o.ranAt, o); err != nil {
		return fmt.Errorf("distops: %w", err)
	}
	grad, err := output.Grad()
	if err != nil {
		return fmt.Errorf("distops: %s: %w", o, err)
	}
	vals := make([]G.Value, len(inputs))
	for i, n := range inputs {
		vals[i] = n.Value()
	}
	res, err := backward(o, vals, output.Value(), grad, func(p *op, args ...G.Value) (G.Value, error) {
		p.arity = len(args)
		return p.Do(args...)
	})
	if err != nil {
		return err
	}
	for i, r := range res {
		if r == nil {
			continue
		}
		dst, err := inputs[i].Grad()
		if err != nil {
			return fmt.Errorf("distops: %s: %w", o, err)
		}
		if err := accumulate(dst, r); err != nil {
			return fmt.Errorf("distops: %s: %w", o, err)
		}
	}
	return nil
}

// accumulate adds src into the gradient accumulator dst in place: both
// grid values, or both host tensors.
func accumulate(dst, src G.Value) error {
	switch d := dst.(type) {
	case *Value:
		s, ok := src.(*Value)
		if !ok {
			return fmt.Errorf("%w: a host gradient %T for a grid value", dist.ErrBadInput, src)
		}
		return addInto(d, s)
	case tensor.Tensor:
		s, ok := src.(tensor.Tensor)
		if !ok {
			return fmt.Errorf("%w: a %T gradient for a host value", dist.ErrBadInput, src)
		}
		_, err := tensor.Add(d, s, tensor.UseUnsafe())
		return err
	case *G.F64:
		if x, ok := src.Data().(float64); ok {
			*d += G.F64(x)
			return nil
		}
	case *G.F32:
		if x, ok := src.Data().(float32); ok {
			*d += G.F32(x)
			return nil
		}
	}
	return fmt.Errorf("%w: cannot accumulate a gradient into %T", dist.ErrBadInput, dst)
}
