package sparse

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Solve is x = A⁻¹b by the solver's method (PCG+AMG by default), A being the
// solver's pattern with the values of the node values (a float64 vector of
// length NNZ) and b a float64 vector of this process's rows. The gradient
// flows to b and to the values (see the package doc, "Gradients").
func (s *Solver) Solve(values, b *gorgonia.Node) (*gorgonia.Node, error) {
	return s.apply(runSolve, values, b)
}

// CG is x = A⁻¹b by the package's Go conjugate gradients, preconditioned as
// WithPrecond says (one BoomerAMG V-cycle by default in the mpi build).
func (s *Solver) CG(values, b *gorgonia.Node) (*gorgonia.Node, error) {
	return s.apply(runCG, values, b)
}

// BiCGStab is x = A⁻¹b by the package's Go BiCGStab (non-symmetric A),
// preconditioned as WithPrecond says.
func (s *Solver) BiCGStab(values, b *gorgonia.Node) (*gorgonia.Node, error) {
	return s.apply(runBiCGStab, values, b)
}

// Preconditioner is z = M⁻¹r, one cycle of the BoomerAMG hierarchy of A
// (cached like Solve's): an approximate inverse for a Krylov loop of one's
// own. The gradient flows to r only (M is treated as a constant operator)
// and needs a symmetric A and a symmetric V-cycle: r̄ = M⁻¹z̄. The default
// smoother and the other symmetric ones (SymGaussSeidel, JacobiSmoother,
// L1Jacobi, Chebyshev) give one; a one-directional smoother (GaussSeidel,
// L1GaussSeidelForward) does not, and the gradient is then ErrBadInput (the
// run measures the V-cycle's symmetry once per hierarchy: two extra cycles).
func (s *Solver) Preconditioner(values, r *gorgonia.Node) (*gorgonia.Node, error) {
	return s.apply(runPrecond, values, r)
}

func (s *Solver) apply(kind runKind, values, b *gorgonia.Node) (*gorgonia.Node, error) {
	name := runNames[kind]
	if values == nil || b == nil {
		return nil, fmt.Errorf("%w: %s: nil node", ErrBadInput, name)
	}
	g, err := sharding.GraphOf(values, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, name, err)
	}
	if err := checkVector(name, "values", values, s.pat.NNZ()); err != nil {
		return nil, err
	}
	if err := checkVector(name, "right-hand side", b, s.pat.Rows()); err != nil {
		return nil, err
	}
	// Every check passed: a constant operand joins the other's graph.
	return gorgonia.ApplyOp(&solveOp{s: s, kind: kind, graph: g}, sharding.InGraph(g, values), sharding.InGraph(g, b))
}

func checkVector(op, what string, n *gorgonia.Node, length int) error {
	if n.Dtype() != tensor.Float64 {
		return fmt.Errorf("%w: %s: %s %v is %v, want float64", ErrBadInput, op, what, n.Name(), n.Dtype())
	}
	if s := n.Shape(); len(s) != 1 || s[0] != length {
		return fmt.Errorf("%w: %s: %s %v has shape %v, want (%d)", ErrBadInput, op, what, n.Name(), s, length)
	}
	return nil
}

var vecType = gorgonia.TensorType{Dims: 1, Of: tensor.Float64}

// solveOp is (values, b) → A⁻¹b (adjoint: A⁻ᵀb) by one of the solver's runs.
type solveOp struct {
	s       *Solver
	kind    runKind
	adjoint bool
	// differentiated: Grad built this node's gradient (SymDiff), which
	// the ranks agree on before the run (Solver.agreeOnRun).
	differentiated bool
	// graph is the node's graph; ranAt its count of failed runs (package
	// failedruns) when this op's forward last succeeded: DoDiff runs only
	// when no op of the graph failed since (the LispMachine goes on with a
	// failed run's backward pass after RunAll returned its error, whose
	// solves would pair with the next graph's on the other ranks).
	graph *gorgonia.ExprGraph
	ranAt uint64
}

func (o *solveOp) Arity() int           { return 2 }
func (o *solveOp) Type() hm.Type        { return hm.NewFnType(vecType, vecType, vecType) }
func (o *solveOp) ReturnsPtr() bool     { return false }
func (o *solveOp) CallsExtern() bool    { return false }
func (o *solveOp) OverwritesInput() int { return -1 }
func (o *solveOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{o.s.pat.Rows()}, nil
}

func (o *solveOp) String() string {
	if o.adjoint {
		return "sparse." + runNames[o.kind] + "ᵀ"
	}
	return "sparse." + runNames[o.kind]
}

func (o *solveOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|%p|%v", runNames[o.kind], o.s, o.adjoint)
}

func (o *solveOp) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

func (o *solveOp) Do(vals ...gorgonia.Value) (v gorgonia.Value, err error) {
	defer func() { failedruns.Record(o.graph, err, &o.ranAt) }()
	if len(vals) != 2 {
		return nil, fmt.Errorf("%w: %v: %d inputs", ErrBadInput, o, len(vals))
	}
	a, err := floats(o.String(), vals[0])
	if err != nil {
		return nil, err
	}
	b, err := floats(o.String(), vals[1])
	if err != nil {
		return nil, err
	}
	x, err := o.s.run(o.kind, o.adjoint, o.differentiated, a, b)
	if err != nil {
		return nil, err
	}
	return tensor.New(tensor.WithShape(len(x)), tensor.WithBacking(x)), nil
}

// DiffWRT: a solve differentiates both inputs; Preconditioner only r.
func (o *solveOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = o.kind != runPrecond || i == 1
	}
	return d
}

// SymDiff: b̄ = A⁻ᵀx̄ by the same run on the adjoint (with the cached
// hierarchy), Ā = −b̄xᵀ on A's pattern (for the adjoint op, y = A⁻ᵀc:
// c̄ = A⁻¹ȳ and Ā = −y·c̄ᵀ).
func (o *solveOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%w: %v: %d inputs", ErrBadInput, o, len(in))
	}
	bbar, err := gorgonia.ApplyOp(&solveOp{s: o.s, kind: o.kind, adjoint: !o.adjoint, graph: o.graph}, in[0], grad)
	if err != nil {
		return nil, err
	}
	o.differentiated = true
	if o.kind == runPrecond {
		return gorgonia.Nodes{nil, bbar}, nil
	}
	u, v := bbar, out
	if o.adjoint {
		u, v = out, bbar
	}
	vbar, err := gorgonia.ApplyOp(&outerOp{s: o.s}, u, v)
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{vbar, bbar}, nil
}

// DoDiff is the LispMachine's backward pass, the same computation as
// SymDiff, added into the inputs' gradient accumulators.
func (o *solveOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	if err := failedruns.Check(o.graph, o.ranAt, o); err != nil {
		return fmt.Errorf("sparse: %w", err)
	}
	og, err := out.Grad()
	if err != nil {
		return fmt.Errorf("sparse: %v: no output gradient: %w", o, err)
	}
	xbar, err := floats(o.String(), og)
	if err != nil {
		return err
	}
	a, err := floats(o.String(), in[0].Value())
	if err != nil {
		return err
	}
	bbar, err := o.s.run(o.kind, !o.adjoint, false, a, xbar)
	if err != nil {
		return err
	}
	if err := addInto(in[1], bbar); err != nil {
		return err
	}
	if o.kind == runPrecond {
		return nil
	}
	x, err := floats(o.String(), out.Value())
	if err != nil {
		return err
	}
	u, v := bbar, x
	if o.adjoint {
		u, v = x, bbar
	}
	vbar, err := o.s.outer(u, v)
	if err != nil {
		return err
	}
	return addInto(in[0], vbar)
}

// outerOp is (u, v) → −u·vᵀ on the pattern: the values' gradient. It is not
// differentiated itself (no second derivatives).
type outerOp struct{ s *Solver }

func (o *outerOp) Arity() int           { return 2 }
func (o *outerOp) Type() hm.Type        { return hm.NewFnType(vecType, vecType, vecType) }
func (o *outerOp) ReturnsPtr() bool     { return false }
func (o *outerOp) CallsExtern() bool    { return false }
func (o *outerOp) OverwritesInput() int { return -1 }
func (o *outerOp) String() string       { return "sparse.OuterOnPattern" }
func (o *outerOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{o.s.pat.NNZ()}, nil
}
func (o *outerOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "outer|%p", o.s) }
func (o *outerOp) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

func (o *outerOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	u, err := floats(o.String(), vals[0])
	if err != nil {
		return nil, err
	}
	v, err := floats(o.String(), vals[1])
	if err != nil {
		return nil, err
	}
	g, err := o.s.outer(u, v)
	if err != nil {
		return nil, err
	}
	return tensor.New(tensor.WithShape(len(g)), tensor.WithBacking(g)), nil
}

// floats reads a float64 vector value, without copying it when it is
// contiguous (else in its logical order: a view, or a strided tensor such as
// a Clone of one).
func floats(op string, v gorgonia.Value) ([]float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok || d.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("%w: %s: got %T, want a float64 vector", ErrBadInput, op, v)
	}
	if d.Size() == 0 {
		// A rank's block of no rows (BlockRows gives one when N < ranks);
		// tensor.Dense's Data panics on an empty tensor.
		return []float64{}, nil
	}
	d, err := sharding.RowMajorDense(d)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, op, err)
	}
	f, ok := d.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("%w: %s: cannot read %T", ErrBadInput, op, v)
	}
	return f, nil
}

// addInto adds g to n's gradient accumulator (LispMachine), which may be
// strided (Gorgonia clones a view input's value for it).
func addInto(n *gorgonia.Node, g []float64) error {
	acc, err := n.Grad()
	if err != nil {
		return fmt.Errorf("sparse: no gradient accumulator for %v: %w", n, err)
	}
	d, ok := acc.(*tensor.Dense)
	if !ok || d.Dtype() != tensor.Float64 || d.Size() != len(g) {
		return fmt.Errorf("%w: gradient of %v: accumulator %v, want %d float64s", ErrBadInput, n, acc, len(g))
	}
	if len(g) == 0 {
		return nil
	}
	gt := tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(g))
	_, err = tensor.Add(d, gt, tensor.UseUnsafe())
	return err
}
