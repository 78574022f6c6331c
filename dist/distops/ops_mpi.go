//go:build mpi

package distops

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/internal/failedruns"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

type kind int

const (
	kCholesky       kind = iota // (A, F) → L, F = Factor(A)
	kCholSolve                  // (L, B) → (L·Lᴴ)⁻¹B
	kPotrs                      // (A, F, B) → A⁻¹B
	kPotri                      // A → A⁻¹
	kLogDet                     // (A, F) → log det A
	kEigen                      // A → eigenvectors, carrying the eigenvalues
	kEigValues                  // (A, E) → eigenvalues; (A) values only
	kEigVectors                 // (A, E) → eigenvectors
	kCholeskyGrad               // (L, L̄) → Ā
	kCholSolveGrad              // (L, X, X̄) → L̄
	kPotrsGrad                  // (F, X, X̄) → Ā
	kPotriGrad                  // (C, C̄) → Ā
	kLogDetGrad                 // (A, ḡ) → Ā
	kEigValuesGrad              // (E, w̄) → Ā
	kEigVectorsGrad             // (E, V̄) → Ā
	kFactor                     // A → F, the Cholesky factor kept on the grid
	kFromRowBlocks              // band → the grid value of the rows of every rank's band
	kRowBlock                   // grid value → this rank's band (FromRowBlocks' gradient)
	kDistribute                 // host matrix (every rank's, or root's) → grid value
	kGather                     // grid value → host matrix (on every rank, or root)
	kGridInput                  // grid input node → the same value (one consumer)
	kToken                      // grid gradient → scalar zero standing for it (see resolve)
	kGridSum                    // grid values → their sum
	kKernel                     // (x, ℓ, σ², [σₙ²]) → the kernel matrix K on the grid
	kKernelGrad                 // (x, ℓ, σ², [σₙ²], K̄) → every input's gradient in one host vector
	kKernelPick                 // the gradient vector → one input's gradient
)

var names = [...]string{"DistCholesky", "DistCholSolve", "DistPotrs", "DistPotri", "DistLogDet",
	"DistEigen", "DistEigenValues", "DistEigenVectors", "DistCholeskyGrad", "DistCholSolveGrad",
	"DistPotrsGrad", "DistPotriGrad", "DistLogDetGrad", "DistEigenValuesGrad", "DistEigenVectorsGrad", "DistFactor",
	"DistFromRowBlocks", "DistRowBlock", "DistDistribute", "DistGather", "DistGridInput", "DistGradToken", "DistGridSum",
	"DistKernelMatrix", "DistKernelMatrixGrad", "DistKernelMatrixGradPick"}

// op is one of the graph ops on grid g in blocks of nb, for dtype dt.
// With onGrid its matrix inputs and outputs are grid values (*Value), else
// host values every rank holds.
type op struct {
	kind   kind
	dt     tensor.Dtype
	arity  int
	g      *dist.Grid
	nb     int
	onGrid bool
	n      int         // kFromRowBlocks: the global rows
	rows   int         // kRowBlock: this rank's band rows
	root   int         // kGather, kDistribute: the rank holding the host matrix, −1 every rank
	id     int         // kToken: a number of its own, so that Gorgonia never merges two tokens
	kern   *kernelSpec // kKernel, kKernelGrad, kKernelPick
	// The shapes of the (first 4) input nodes, in which host values are
	// read (sharding.InNodeShape: Gorgonia's Let takes a value of shape (c)
	// for a (1, c) node and (1, n) for an (n) node, which read alone would
	// have their rows and columns swapped).
	in [4]tensor.Shape

	// differentiated: Grad built this node's gradient (SymDiff), which the
	// ranks agree on before the op runs (agreeOnRun).
	differentiated bool

	// Reused from one run to the next: the host output of RowBlock (dense).
	out *tensor.Dense

	// graph is the node's graph; ranAt its count of failed runs (package
	// failedruns) when this op's forward last succeeded: its LispMachine
	// backward step (DoDiff) runs only when no op of the graph failed
	// since, so that the backward pass that Gorgonia goes on with after a
	// failed run stops at its first op here, before any grid call (which
	// paired with the next graph's on the other ranks: ErrMismatch on
	// some, a timeout on others, the communicator broken).
	graph *G.ExprGraph
	ranAt uint64

	// node is the op's node in graph (applyOp), whose readers a run with a
	// grid output checks (ops.CheckReaders); nil for an op run without
	// one (the LispMachine's backward steps).
	node *G.Node
}

// applyOp is gorgonia.ApplyOp that tells the op its node (the node's own
// op: Gorgonia hands back an existing node for an op of the same hash).
func applyOp(p *op, in ...*G.Node) (*G.Node, error) {
	n, err := G.ApplyOp(p, in...)
	if err == nil {
		if q, ok := n.Op().(*op); ok {
			q.node = n
		}
	}
	return n, err
}

// fromFactor is the node of kind k reading A and A's factor node (which
// Gorgonia merges for every op on the same A and blocks).
func (o *Ops) fromFactor(k kind, block int, a *G.Node) (*G.Node, error) {
	ins, nb, onGrid, err := o.prepare(k, block, a)
	if err != nil {
		return nil, err
	}
	f, err := o.applyOn(kFactor, nb, onGrid, ins[0])
	if err != nil {
		return nil, err
	}
	return o.applyOn(k, nb, onGrid, ins[0], f)
}

// Cholesky is the node L, the lower Cholesky factor of the Hermitian
// positive definite A (lower triangle read), zero above the diagonal:
// brought back from the grid to every rank for a host A, a grid value for
// a grid-resident A.
func (o *Ops) Cholesky(a *G.Node, block int) (*G.Node, error) {
	return o.fromFactor(kCholesky, block, a)
}

// CholSolve is the node (L·Lᴴ)⁻¹B for a lower triangular L (only its
// lower triangle is read) and B n×k or a length-n vector.
func (o *Ops) CholSolve(l, b *G.Node, block int) (*G.Node, error) {
	return o.apply(kCholSolve, block, l, b)
}

// Potrs is the node A⁻¹B for the Hermitian positive definite A and B n×k
// or a length-n vector, from A's factor on the grid (a node shared with
// LogDet and Cholesky of the same A: one factorisation, and the factor
// stays on the grid).
func (o *Ops) Potrs(a, b *G.Node, block int) (*G.Node, error) {
	ins, nb, onGrid, err := o.prepare(kPotrs, block, a, b)
	if err != nil {
		return nil, err
	}
	f, err := o.applyOn(kFactor, nb, onGrid, ins[0])
	if err != nil {
		return nil, err
	}
	return o.applyOn(kPotrs, nb, onGrid, ins[0], f, ins[1])
}

// Potri is the node A⁻¹, both triangles, from A's factor on the grid
// (shared with Potrs and LogDet).
func (o *Ops) Potri(a *G.Node, block int) (*G.Node, error) {
	return o.fromFactor(kPotri, block, a)
}

// LogDet is the scalar node log det A (of the real dtype, on every rank),
// from A's factor on the grid (shared with Potrs).
func (o *Ops) LogDet(a *G.Node, block int) (*G.Node, error) {
	return o.fromFactor(kLogDet, block, a)
}

// Syevd is the eigenvalues w (ascending, a vector of the real dtype, on
// every rank) and, with vectors, the eigenvectors v (in the columns; a grid
// value for a grid-resident A) of the Hermitian A; without, v is nil.
func (o *Ops) Syevd(a *G.Node, block int, vectors bool) (w, v *G.Node, err error) {
	if !vectors {
		w, err = o.apply(kEigValues, block, a)
		return w, nil, err
	}
	ins, nb, onGrid, err := o.prepare(kEigen, block, a)
	if err != nil {
		return nil, nil, err
	}
	e, err := o.applyOn(kEigen, nb, onGrid, ins[0])
	if err != nil {
		return nil, nil, err
	}
	if w, err = o.applyOn(kEigValues, nb, onGrid, ins[0], e); err != nil {
		return nil, nil, err
	}
	v, err = o.applyOn(kEigVectors, nb, onGrid, ins[0], e)
	return w, v, err
}

// apply checks the inputs and applies the op.
func (o *Ops) apply(k kind, block int, ins ...*G.Node) (*G.Node, error) {
	ins, nb, onGrid, err := o.prepare(k, block, ins...)
	if err != nil {
		return nil, err
	}
	return o.applyOn(k, nb, onGrid, ins...)
}

// applyOn applies op k to prepared inputs.
func (o *Ops) applyOn(k kind, nb int, onGrid bool, ins ...*G.Node) (*G.Node, error) {
	return applyOp(&op{kind: k, dt: ins[0].Dtype(), arity: len(ins), g: o.grid, nb: nb, onGrid: onGrid, root: -1, in: nodeShapes(ins...), graph: ins[0].Graph()}, ins...)
}

// nodeShapes is the shapes of the (first 4) nodes.
func nodeShapes(ns ...*G.Node) (shapes [4]tensor.Shape) {
	for i, n := range ns[:min(len(ns), len(shapes))] {
		shapes[i] = n.Shape().Clone()
	}
	return shapes
}

// hostMatrix is input j's host value v as its rows, columns and row-major
// data (rowMajor), read in its node's shape (inNodeShape).
func hostMatrix[T dist.Scalar](o *op, j int, v G.Value) (r, c int, rm []T, err error) {
	if v, err = o.inNodeShape(j, v); err != nil {
		return 0, 0, nil, err
	}
	return rowMajor[T](v)
}

// inNodeShape is input j's host value v in its node's shape
// (sharding.InNodeShape): a (c) value of a (1, c) node as one row, a
// (1, n) value of an (n) node as a vector.
func (o *op) inNodeShape(j int, v G.Value) (G.Value, error) {
	d, ok := v.(*tensor.Dense)
	if !ok || j >= len(o.in) {
		return v, nil
	}
	d, err := sharding.InNodeShape(d, o.in[j])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", dist.ErrBadInput, err)
	}
	return d, nil
}

// prepare checks the inputs of op k and decides where it runs. With no
// grid-resident input it runs on host values (every rank's copy
// distributed locally, the result brought back to every rank) in blocks of
// block (0: dist.DefaultBlock). With one, it runs on grid values: the grid
// inputs must be on o's grid in blocks of block (0: theirs), host inputs
// are distributed first (Distribute) and grid input nodes go through one
// GridInput node each (so that their gradient arrives as one grid value).
// Nothing joins the graph when the inputs are bad.
func (o *Ops) prepare(k kind, block int, ins ...*G.Node) (_ []*G.Node, nb int, onGrid bool, err error) {
	if err := o.check(k, block, ins...); err != nil {
		return nil, 0, false, err
	}
	for _, n := range ins {
		g, gnb, ok := gridOf(n)
		if !ok {
			continue
		}
		switch {
		case g != o.grid:
			return nil, 0, false, fmt.Errorf("%w: distops: %s: %v is on another grid", dist.ErrBadInput, names[k], n.Name())
		case nb == 0 && block == 0:
			nb = gnb
		case gnb != max(nb, block):
			return nil, 0, false, fmt.Errorf("%w: distops: %s: %v is in %d×%d blocks, want %d", dist.ErrBadInput, names[k], n.Name(), gnb, gnb, max(nb, block))
		}
		onGrid = true
	}
	// Every check passed: a constant operand joins the others' graph.
	g, _ := sharding.GraphOf(ins...)
	ins = slices.Clone(ins)
	for i, n := range ins {
		ins[i] = sharding.InGraph(g, n)
	}
	if !onGrid {
		if block == 0 {
			block = dist.DefaultBlock
		}
		return ins, block, false, nil
	}
	nb = max(nb, block)
	out := make([]*G.Node, len(ins))
	for i, n := range ins {
		_, _, grid := gridOf(n)
		switch {
		case isFactor(n):
			out[i] = n
		case grid && n.Op() == nil:
			out[i], err = o.applyOn(kGridInput, nb, true, n)
		case grid:
			out[i] = n
		default:
			out[i], err = o.distribute(n, nb, -1)
		}
		if err != nil {
			return nil, 0, false, err
		}
	}
	return out, nb, true, nil
}

// isFactor reports whether n is a Factor node.
func isFactor(n *G.Node) bool {
	f, ok := n.Op().(*op)
	return ok && f.kind == kFactor
}

// check checks the inputs of op k: the first is the n×n matrix; the others
// have n rows and its dtype, or are its Factor node.
func (o *Ops) check(k kind, block int, ins ...*G.Node) error {
	if err := o.checkNodes(k, block, ins...); err != nil {
		return err
	}
	a := ins[0]
	s := a.Shape()
	if len(s) != 2 || s[0] != s[1] {
		return fmt.Errorf("%w: distops: %s needs a square matrix, %v has shape %v", dist.ErrBadInput, names[k], a.Name(), s)
	}
	for _, n := range ins[1:] {
		if isFactor(n) {
			continue
		}
		if n.Dims() < 1 || n.Dims() > 2 || n.Shape()[0] != s[0] || n.Dtype() != a.Dtype() {
			return fmt.Errorf("%w: distops: %s: %v (%v, %v) does not fit the %d×%d %v matrix",
				dist.ErrBadInput, names[k], n.Name(), n.Shape(), n.Dtype(), s[0], s[0], a.Dtype())
		}
	}
	return nil
}

// checkNodes checks what every builder needs: a grid, a block size ≥ 0,
// inputs that exist, in one graph, of a dtype ScaLAPACK computes with.
func (o *Ops) checkNodes(k kind, block int, ins ...*G.Node) error {
	if o == nil || o.grid == nil {
		return fmt.Errorf("%w: distops: %s: no grid", dist.ErrBadInput, names[k])
	}
	if block < 0 {
		return fmt.Errorf("%w: distops: %s: block size %d", dist.ErrBadInput, names[k], block)
	}
	for i, n := range ins {
		if n == nil {
			return fmt.Errorf("%w: distops: %s: input %d is nil", dist.ErrBadInput, names[k], i)
		}
	}
	if _, err := sharding.GraphOf(ins...); err != nil {
		return fmt.Errorf("%w: distops: %s: %v", dist.ErrBadInput, names[k], err)
	}
	switch ins[0].Dtype() {
	case tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128:
	default:
		return fmt.Errorf("%w: distops: %s: dtype %v", dist.ErrBadInput, names[k], ins[0].Dtype())
	}
	return nil
}

// gridOut reports whether the op's output is a grid value.
func (o *op) gridOut() bool {
	switch o.kind {
	case kLogDet, kEigValues, kFactor, kGather, kRowBlock, kToken, kKernelGrad, kKernelPick:
		return false
	}
	return o.onGrid
}

// GridResident reports whether the op's output is a grid value, for the
// root builders, which refuse one without WithGrid.
func (o *op) GridResident() bool { return o.gridOut() }

func (o *op) Arity() int { return o.arity }

// realOf is the real dtype of dt.
func realOf(dt tensor.Dtype) tensor.Dtype {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		return tensor.Float32
	}
	return tensor.Float64
}

func (o *op) Type() hm.Type {
	m := G.TensorType{Dims: 2, Of: o.dt}
	b := hm.TypeVariable('k') // right-hand sides ('b' is Gorgonia's own, for the result)
	r := realOf(o.dt)
	w := G.TensorType{Dims: 1, Of: r}
	a := hm.TypeVariable('a')
	switch o.kind {
	case kFromRowBlocks, kRowBlock, kDistribute, kGather, kGridInput:
		return hm.NewFnType(a, a)
	case kToken:
		return hm.NewFnType(a, o.dt)
	case kKernel, kKernelGrad:
		ts := make([]hm.Type, o.arity, o.arity+1)
		for i := range ts {
			ts[i] = hm.TypeVariable(rune('p' + i))
		}
		if o.kind == kKernel {
			return hm.NewFnType(append(ts, m)...)
		}
		return hm.NewFnType(append(ts, G.TensorType{Dims: 1, Of: o.dt})...)
	case kKernelPick:
		if o.kern.pick == nil {
			return hm.NewFnType(a, o.dt)
		}
		return hm.NewFnType(a, G.TensorType{Dims: len(o.kern.pick), Of: o.dt})
	case kGridSum:
		ts := make([]hm.Type, o.arity+1)
		for i := range ts {
			ts[i] = a
		}
		return hm.NewFnType(ts...)
	case kFactor:
		return hm.NewFnType(m, o.dt)
	case kCholesky:
		return hm.NewFnType(m, o.dt, m)
	case kCholSolve:
		return hm.NewFnType(m, b, b)
	case kPotrs:
		return hm.NewFnType(m, o.dt, b, b)
	case kLogDet:
		return hm.NewFnType(m, o.dt, r)
	case kEigValues:
		if o.arity == 1 {
			return hm.NewFnType(m, w)
		}
		return hm.NewFnType(m, m, w)
	case kCholSolveGrad:
		return hm.NewFnType(m, b, b, m)
	case kPotrsGrad:
		return hm.NewFnType(o.dt, b, b, m)
	case kLogDetGrad:
		return hm.NewFnType(m, o.dt, r, m)
	case kPotri:
		return hm.NewFnType(m, o.dt, m)
	case kEigValuesGrad:
		return hm.NewFnType(m, w, m)
	}
	ts := make([]hm.Type, o.arity+1)
	for i := range ts {
		ts[i] = m
	}
	return hm.NewFnType(ts...)
}

func (o *op) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("distops: %s: want a shape, got %v", o, in[0])
	}
	switch o.kind {
	case kLogDet, kFactor, kToken:
		return tensor.ScalarShape(), nil
	case kKernel:
		return tensor.Shape{o.kern.shape.N, o.kern.shape.N}, nil
	case kKernelGrad:
		return tensor.Shape{o.kern.gradLen(o.arity - 1)}, nil
	case kKernelPick:
		if o.kern.pick == nil {
			return tensor.ScalarShape(), nil
		}
		return o.kern.pick.Clone(), nil
	case kFromRowBlocks, kRowBlock:
		out := s.Clone()
		out[0] = o.n
		if o.kind == kRowBlock {
			out[0] = o.rows
		}
		return out, nil
	case kPotrsGrad: // (F, X, X̄): the order from X
		x, ok := in[1].(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("distops: %s: want a shape, got %v", o, in[1])
		}
		return tensor.Shape{x[0], x[0]}, nil
	case kEigValues:
		return tensor.Shape{s[0]}, nil
	case kCholSolve, kPotrs:
		b, ok := in[len(in)-1].(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("distops: %s: want a shape, got %v", o, in[len(in)-1])
		}
		return b.Clone(), nil
	}
	return s.Clone(), nil
}

func (o *op) ReturnsPtr() bool     { return false }
func (o *op) CallsExtern() bool    { return true }
func (o *op) OverwritesInput() int { return -1 }
func (o *op) String() string       { return names[o.kind] }
func (o *op) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s|%v|%d|%p|%d|%t|%d|%d|%d|%d|%v|%v", names[o.kind], o.dt, o.arity, o.g, o.nb, o.onGrid, o.n, o.rows, o.root, o.id, o.in, o.kern)
}
func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// Do runs the op on the grid; every rank returns the same value or error.
func (o *op) Do(vals ...G.Value) (v G.Value, err error) {
	defer func() { failedruns.Record(o.graph, err, &o.ranAt) }()
	// A grid value given to one of Gorgonia's ops panics there: refused
	// before any grid call, on every rank alike where every rank built the
	// same graph, and where the ranks' verdicts differ (a reader added on
	// some ranks only) ErrMismatch of the ranks' barrier on every rank.
	readers := ops.CheckReaders(o.node)
	if err := o.agreeOnRun(vals, readers != nil); err != nil {
		return nil, fmt.Errorf("distops: %s: %w", o, err)
	}
	if readers != nil {
		return nil, fmt.Errorf("%w: distops: %w", dist.ErrBadInput, readers)
	}
	switch o.dt {
	case tensor.Float32:
		v, err = do[float32](o, vals)
	case tensor.Float64:
		v, err = do[float64](o, vals)
	case tensor.Complex64:
		v, err = do[complex64](o, vals)
	default:
		v, err = do[complex128](o, vals)
	}
	if err != nil {
		return nil, fmt.Errorf("distops: %s: %w", o, err)
	}
	return v, nil
}

// agreeOnRun fails on every rank, with an error wrapping
// collective.ErrMismatch, when the ranks run other ops here, or this op
// with its gradient built (Grad) on some ranks and not on others: a
// barrier (dist.Grid.Meet, on the grid's own communicator) whose checks
// compare the op's name and Call.Differentiated. The
// gradient's grid calls, made on some ranks only, used to pair with the
// others' next op (an error on some ranks, none on the rest, and the next
// graph failing). Only ops that have a gradient check; on a communicator
// made WithoutChecks the barrier compares nothing. (The LispMachine, which
// differentiates at run time, is not told apart.) The name carries a hash
// of a sample of the op's replicated host inputs (every rank passes the
// whole matrix), so that ranks holding different matrices get ErrMismatch
// too: a rank that skipped a run of the graph (its next run paired with
// the others' run before, on other values, silently), or that built its
// copy differently (another seed, say). refused (the op's node feeds one
// of Gorgonia's ops: ops.CheckReaders) joins the name, so that ranks that
// built that reader and ranks that did not disagree here.
func (o *op) agreeOnRun(vals []G.Value, refused bool) error {
	if !slices.Contains(o.DiffWRT(o.arity), true) {
		return nil
	}
	// The dtype and, where every rank passes the same matrices, the input
	// nodes' shapes lead the name, so that ranks that built them
	// differently read so: a Record shows a name's first RecordNameBytes
	// (48) bytes, which the op's name and the values' hash follow (a band's
	// rows differ by rank).
	name := o.dt.String()
	replicated := false
	h := fnv.New64a()
	if o.replicatedInputs() {
		var shapes []string
		for _, sh := range o.in[:min(o.arity, len(o.in))] {
			if len(sh) > 0 { // not a scalar (a token)
				shapes = append(shapes, strings.Trim(strings.ReplaceAll(fmt.Sprint(sh), ", ", "x"), "()"))
			}
		}
		name += " " + strings.Join(shapes, ",")
		for j, v := range vals {
			switch x := v.(type) {
			case *G.F64: // a kernel matrix's parameters
				sampleHash(h, tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{float64(*x)})), false)
				replicated = true
			case *G.F32:
				sampleHash(h, tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{float64(*x)})), false)
				replicated = true
			}
			d, ok := v.(*tensor.Dense)
			if !ok {
				continue
			}
			// In its node's shape, as the op reads it (a (c) value of a
			// (1, c) node, say); an error is the op's to report.
			if w, err := o.inNodeShape(j, d); err == nil {
				// A kernel matrix's points are all hashed: O(n·d) numbers
				// that make O(n²) elements, where one point that differs
				// changes a row and a column of K.
				sampleHash(h, w.(*tensor.Dense), o.kind == kKernel)
				replicated = true
			}
		}
	}
	name += "; " + names[o.kind]
	if o.kind == kKernel {
		name += "(" + o.kern.family.String() + ")"
	}
	if replicated {
		sum := h.Sum64()
		name += fmt.Sprintf(", values %08x", uint32(sum^sum>>32))
	}
	if refused {
		name += ", read by a Gorgonia op"
	}
	err := o.g.Meet(name, o.differentiated)
	if replicated && errors.Is(err, dist.ErrMismatch) {
		err = fmt.Errorf("%w (a name is the dtype, the inputs' shapes, the op and a hash of a sample of its values, of which a message shows the first 48 bytes: where the names differ in the values alone, or past what is shown, the ranks passed different matrices: every rank must pass the same host matrix; a rank that skipped a run of the graph passes the next run's)", err)
	}
	return err
}

// replicatedInputs reports whether the op's host inputs are the same
// matrix on every rank: all but a band (FromRowBlocks), a root's matrix
// (Distribute from one rank) and the host side of moves off the grid.
func (o *op) replicatedInputs() bool {
	switch o.kind {
	case kFromRowBlocks, kRowBlock, kGather, kGridInput:
		return false
	case kDistribute:
		return o.root < 0
	}
	return true
}

// sampleHashElems is how many elements of a replicated input sampleHash
// reads (evenly spaced in row-major order; all of a smaller one): enough to
// tell apart two matrices that differ throughout, for some microseconds.
const sampleHashElems = 4096

// sampleHash writes d's shape and a sample of its values (all of them
// with every) by their logical index to h (a view, a transposed or
// column-major tensor hashes as its values do), -0 as +0 and every NaN
// alike, so that equal matrices hash alike whatever their memory.
func sampleHash(h hash.Hash64, d *tensor.Dense, every bool) {
	var word [8]byte
	mix := func(w uint64) {
		binary.LittleEndian.PutUint64(word[:], w)
		h.Write(word[:])
	}
	bits := func(x float64) uint64 {
		switch {
		case x == 0:
			return 0
		case x != x:
			return 0x7ff8000000000001
		}
		return math.Float64bits(x)
	}
	shape := d.Shape()
	for _, n := range shape {
		mix(uint64(n))
	}
	cols, n := 1, shape.TotalSize()
	if len(shape) == 2 {
		cols = shape[1]
	}
	at := func(k int) {
		var v any
		var err error
		if len(shape) == 2 {
			v, err = d.At(k/cols, k%cols)
		} else {
			v, err = d.At(k)
		}
		if err != nil {
			return
		}
		switch x := v.(type) {
		case float64:
			mix(bits(x))
		case float32:
			mix(bits(float64(x)))
		case complex128:
			mix(bits(real(x)))
			mix(bits(imag(x)))
		case complex64:
			mix(bits(float64(real(x))))
			mix(bits(float64(imag(x))))
		}
	}
	step := max(1, n/sampleHashElems)
	if every {
		step = 1
	}
	for k := 0; k < n; k += step {
		at(k)
	}
	if n > 0 {
		at(n - 1)
	}
}

// eigen is the value of an Eigen node: the eigenvectors, carrying the
// eigenvalues.
type eigen struct {
	*tensor.Dense
	w []float64
}

// factor is the value of a Factor node: the Cholesky factor L on the grid
// (a *dist.Matrix of the op's dtype, each rank its blocks) behind a scalar
// placeholder, so that the ops reading it need not bring it back to every
// rank (an N² collective) and distribute it again.
type factor struct {
	*tensor.Dense
	l any
}

// factorOf is the factor on the grid in the value of a Factor node.
func factorOf[T dist.Scalar](v G.Value) (*dist.Matrix[T], error) {
	if f, ok := v.(*factor); ok {
		if l, ok := f.l.(*dist.Matrix[T]); ok {
			return l, nil
		}
	}
	return nil, fmt.Errorf("%w: want the value of a Factor node, got %T", dist.ErrBadInput, v)
}

// rowMajor is a matrix or vector value as its rows, columns (1 for a
// vector) and row-major data (a tensor's own, not a copy: dist's row-major
// moves read it while they build the local blocks). An empty value has no
// data (tensor.Dense's Data panics on one): dist then rejects it with the
// same error on every rank, or counts no rows for this rank's band.
func rowMajor[T dist.Scalar](v G.Value) (r, c int, rm []T, err error) {
	if e, ok := v.(*eigen); ok {
		v = e.Dense
	}
	d, ok := v.(*tensor.Dense)
	if !ok || d.Dims() < 1 || d.Dims() > 2 {
		return 0, 0, nil, fmt.Errorf("%w: want a matrix or vector, got %T %v", dist.ErrBadInput, v, v)
	}
	if d.Dtype() != dtypeOf[T]() {
		return 0, 0, nil, fmt.Errorf("%w: want %T data, got %v", dist.ErrBadInput, *new(T), d.Dtype())
	}
	r, c = d.Shape()[0], 1
	if d.Dims() == 2 {
		c = d.Shape()[1]
	}
	if r*c == 0 {
		return r, c, nil, nil
	}
	if d, err = sharding.RowMajorDense(d); err != nil { // views, column-major tensors
		return 0, 0, nil, fmt.Errorf("%w: %v", dist.ErrBadInput, err)
	}
	return r, c, d.Data().([]T), nil
}

// hostValue is the row-major data rm as a value of the given shape.
func hostValue[T dist.Scalar](shape tensor.Shape, rm []T) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(rm))
}

// dense is the column-major r×c data as a row-major value of the given
// shape (r×c, or r for a vector): written into prev when it has that shape
// and dtype (an op's output of the last run, as package ops' Gather
// reuses its own), else new. An empty prev is returned as it is
// (tensor.Dense's Data panics on one).
func dense[T dist.Scalar](prev *tensor.Dense, shape tensor.Shape, r, c int, cm []T) *tensor.Dense {
	if prev != nil && prev.Shape().Eq(shape) && prev.Dtype() == dtypeOf[T]() && !prev.IsView() {
		if r*c == 0 {
			return prev
		}
		rm := prev.Data().([]T)
		for i := range r {
			for j := range c {
				rm[i*c+j] = cm[i+j*r]
			}
		}
		return prev
	}
	rm := make([]T, r*c)
	for i := range r {
		for j := range c {
			rm[i*c+j] = cm[i+j*r]
		}
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(rm))
}

// reals is a real vector or scalar value as float64s.
func reals(v G.Value) ([]float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return []float64{x}, nil
	case float32:
		return []float64{float64(x)}, nil
	case []float64:
		return append([]float64(nil), x...), nil
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: want a real vector or scalar, got %v", dist.ErrBadInput, v)
}

// realValue is x as a scalar value of the real dtype of dt.
func realValue(x float64, dt tensor.Dtype) G.Value {
	if realOf(dt) == tensor.Float32 {
		return G.NewF32(float32(x))
	}
	return G.NewF64(x)
}

// realVector is w as a vector value of the real dtype of dt.
func realVector(w []float64, dt tensor.Dtype) *tensor.Dense {
	if realOf(dt) == tensor.Float32 {
		f := make([]float32, len(w))
		for i, x := range w {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(append([]float64(nil), w...)))
}

// distributed are the inputs each op puts on the grid.
var distributed = [...][]int{
	kCholesky: {}, kCholSolve: {0, 1}, kPotrs: {2}, kPotri: {}, kEigen: {0}, kEigValues: {0},
	kCholeskyGrad: {0, 1}, kCholSolveGrad: {0, 1, 2}, kPotrsGrad: {1, 2}, kPotriGrad: {0, 1},
	kLogDetGrad: {}, kEigValuesGrad: {0}, kEigVectorsGrad: {0, 1}, kFactor: {0},
	kRowBlock: {0}, kGather: {0},
}

// lowerRead reports whether op k reads only the lower triangle of its
// input j (the Hermitian A, the factor L), as on one process: NaN or Inf
// above the diagonal of such a host input is not an error
// (dist.FromReplicatedLowerRowMajor).
func lowerRead(k kind, j int) bool {
	switch k {
	case kFactor, kCholSolve, kCholSolveGrad, kEigen, kEigValues:
		return j == 0
	}
	return false
}

// onGrid is the value v on the op's grid: a grid value's matrix (which
// must be on the op's grid in its blocks), or a host value every rank
// holds, distributed locally.
func onGrid[T dist.Scalar](o *op, j int, v G.Value) (*dist.Matrix[T], error) {
	if m, ok := MatrixOf[T](v); ok {
		if m.Grid != o.g || m.Layout.MB != o.nb {
			return nil, fmt.Errorf("%w: a grid value on another grid or in other blocks than %d×%d", dist.ErrBadInput, o.nb, o.nb)
		}
		return m, nil
	}
	if _, ok := v.(*Value); ok {
		return nil, fmt.Errorf("%w: want a grid value of %v, got %v", dist.ErrBadInput, o.dt, v)
	}
	r, c, rm, err := hostMatrix[T](o, j, v)
	if err != nil {
		return nil, err
	}
	if lowerRead(o.kind, j) && r == c {
		return dist.FromReplicatedLowerRowMajor(o.g, r, o.nb, rm)
	}
	return dist.FromReplicatedRowMajor(o.g, r, c, o.nb, rm)
}

// eigenValuesOf is the eigenvalues an Eigen node's value carries.
func eigenValuesOf(v G.Value) ([]float64, bool) {
	switch e := v.(type) {
	case *eigen:
		return e.w, true
	case *eigenGrid:
		return e.w, true
	}
	return nil, false
}

func do[T dist.Scalar](o *op, vals []G.Value) (G.Value, error) {
	shape := vals[0].Shape().Clone() // tensor.Dense's Shape is its own, not a copy
	var w []float64
	switch o.kind {
	case kToken:
		return realValue(0, o.dt), nil
	case kGridSum:
		return gridSum(vals)
	case kKernel, kKernelGrad:
		if o.dt == tensor.Float32 {
			return kernelDo[float32](o, vals)
		}
		return kernelDo[float64](o, vals)
	case kKernelPick:
		return pickValue(o, vals[0])
	case kGridInput:
		if _, err := onGrid[T](o, 0, vals[0]); err != nil {
			return nil, err
		}
		return vals[0], nil
	case kFromRowBlocks, kDistribute:
		v, err := o.inNodeShape(0, vals[0])
		if err != nil {
			return nil, err
		}
		shape = v.Shape().Clone()
		r, c, rm, err := rowMajor[T](v)
		if err != nil {
			return nil, err
		}
		var m *dist.Matrix[T]
		switch {
		case o.kind == kFromRowBlocks:
			m, err = dist.FromRowBlocksRowMajor(o.g, c, o.nb, r, rm)
		case o.root < 0:
			m, err = dist.FromReplicatedRowMajor(o.g, r, c, o.nb, rm)
		default:
			m, err = dist.FromRootRowMajor(o.g, o.root, r, c, o.nb, rm)
		}
		if err != nil {
			return nil, err
		}
		if o.kind == kFromRowBlocks {
			if m.Layout.Rows != o.n {
				return nil, fmt.Errorf("%w: the bands hold %d rows, the node %d", dist.ErrBadInput, m.Layout.Rows, o.n)
			}
			shape[0] = o.n
		}
		return NewValue(m, shape...)
	case kLogDet:
		// 2·Σ log Re(L_ii) over the factor's diagonal, summed over the grid.
		l, err := factorOf[T](vals[1])
		if err != nil {
			return nil, err
		}
		sum, err := dist.LogDetFromFactor(l)
		if err != nil {
			return nil, err
		}
		return realValue(sum, o.dt), nil
	case kEigVectors:
		switch e := vals[1].(type) {
		case *eigen:
			return e.Dense.Clone().(*tensor.Dense), nil
		case *eigenGrid:
			c, _ := e.Value.Clone()
			return c.(*Value), nil
		}
		return nil, fmt.Errorf("%w: want the value of an Eigen node, got %T", dist.ErrBadInput, vals[1])
	case kEigValues:
		if ew, ok := eigenValuesOf(vals[len(vals)-1]); ok && o.arity == 2 {
			return realVector(ew, o.dt), nil
		}
	case kEigValuesGrad, kEigVectorsGrad:
		var ok bool
		if w, ok = eigenValuesOf(vals[0]); !ok {
			return nil, fmt.Errorf("%w: want the value of an Eigen node, got %T", dist.ErrBadInput, vals[0])
		}
	case kCholSolve:
		shape = vals[1].Shape()
	case kPotrs:
		shape = vals[2].Shape()
	}

	// Every input on the grid: a grid value as it is, a host value (the
	// same on every rank) by a local copy each.
	ms := make([]*dist.Matrix[T], len(distributed[o.kind]))
	for i, j := range distributed[o.kind] {
		var err error
		if ms[i], err = onGrid[T](o, j, vals[j]); err != nil {
			return nil, err
		}
	}
	var res *dist.Matrix[T]
	var err error
	switch o.kind {
	case kFactor:
		cholesky := dist.Cholesky[T]
		if _, grid := MatrixOf[T](vals[0]); !grid {
			// A host A: ms[0] is this run's own copy, which nothing reads
			// again, so the factor takes its place (no second copy).
			cholesky = dist.CholeskyInPlace[T]
		}
		l, err := cholesky(ms[0])
		if err != nil {
			return nil, err
		}
		return &factor{Dense: tensor.New(tensor.FromScalar(*new(T))), l: l}, nil
	case kRowBlock:
		band, err := ms[0].RowBlock(o.rows)
		if err != nil {
			return nil, err
		}
		shape[0] = o.rows
		o.out = dense(o.out, shape, o.rows, ms[0].Layout.Cols, band)
		return o.out, nil
	case kGather:
		full, err := ms[0].GatherRowMajor(o.root)
		if err != nil {
			return nil, err
		}
		if full == nil { // not the root: zeros of the shape
			full = make([]T, ms[0].Layout.Rows*ms[0].Layout.Cols)
		}
		return hostValue(shape, full), nil
	case kCholesky:
		res, err = factorOf[T](vals[1])
		if err == nil && o.onGrid {
			res = res.Clone() // the factor node keeps its own
		}
	case kCholSolve:
		// As on one process: a zero or non-finite diagonal entry of the
		// factor is an error (ScaLAPACK's p?potrs does not check). The
		// factor on the grid finds it, the same on every rank: a check of
		// each rank's own copy of a host L left the ranks out of step when
		// the copies differed.
		var bad int
		if bad, err = ms[0].FirstBadDiagonal(); err == nil {
			if bad > 0 {
				err = &kernels.NotPositiveDefiniteError{Order: bad}
			} else {
				res, err = dist.CholSolve(ms[0], ms[1])
			}
		}
	case kPotrs:
		var l *dist.Matrix[T]
		if l, err = factorOf[T](vals[1]); err == nil {
			res, err = dist.PotrsFromFactor(l, ms[0])
		}
	case kPotri:
		var l *dist.Matrix[T]
		if l, err = factorOf[T](vals[1]); err == nil {
			res, err = dist.InverseFromFactor(l)
		}
	case kEigen, kEigValues:
		if w, res, err = dist.Syevd(ms[0], o.kind == kEigen); err != nil {
			return nil, err
		}
		if o.kind == kEigValues {
			return realVector(w, o.dt), nil
		}
	case kCholeskyGrad:
		res, err = dist.CholeskyGrad(ms[0], ms[1])
	case kCholSolveGrad:
		res, _, err = dist.CholSolveGrad(ms[0], ms[1], ms[2])
	case kPotrsGrad:
		var l *dist.Matrix[T]
		if l, err = factorOf[T](vals[0]); err == nil {
			res, _, err = dist.PotrsGrad(l, ms[0], ms[1])
		}
	case kPotriGrad:
		res, err = dist.PotriGrad(ms[0], ms[1])
	case kLogDetGrad: // (A, F, ḡ): A for the shape, L from the factor
		g, gerr := reals(vals[2])
		if gerr != nil || len(g) != 1 {
			return nil, fmt.Errorf("%w: want a scalar gradient, got %v", dist.ErrBadInput, vals[2])
		}
		var l *dist.Matrix[T]
		if l, err = factorOf[T](vals[1]); err == nil {
			res, err = dist.LogDetGradFromFactor(l, g[0])
		}
	case kEigValuesGrad:
		wbar, werr := reals(vals[1])
		if werr != nil {
			return nil, werr
		}
		res, err = dist.SyevdGrad(w, ms[0], wbar, nil)
	case kEigVectorsGrad:
		res, err = dist.SyevdGrad(w, ms[0], nil, ms[1])
	default:
		return nil, fmt.Errorf("unknown op %d", o.kind)
	}
	if err != nil {
		return nil, err
	}
	if o.kind == kPotrsGrad {
		shape = tensor.Shape{res.Layout.Rows, res.Layout.Cols}
	}
	if o.gridOut() {
		v, err := NewValue(res, shape...)
		if err != nil || o.kind != kEigen {
			return v, err
		}
		return &eigenGrid{Value: v, w: w}, nil
	}
	// The result back on every rank.
	full, err := res.GatherRowMajor(-1)
	if err != nil {
		return nil, err
	}
	if o.kind == kEigen { // read by the EigenValues and EigenVectors nodes: a value of its own
		return &eigen{Dense: hostValue(shape, full), w: w}, nil
	}
	return hostValue(shape, full), nil
}

// gridSum is the sum of the grid values vals (a new value).
func gridSum(vals []G.Value) (G.Value, error) {
	first, ok := vals[0].(*Value)
	if !ok {
		return nil, fmt.Errorf("%w: want grid values to sum, got %T", dist.ErrBadInput, vals[0])
	}
	c, _ := first.Clone()
	sum := c.(*Value)
	for _, v := range vals[1:] {
		x, ok := v.(*Value)
		if !ok {
			return nil, fmt.Errorf("%w: want grid values to sum, got %T", dist.ErrBadInput, v)
		}
		if err := addInto(sum, x); err != nil {
			return nil, err
		}
	}
	return sum, nil
}
