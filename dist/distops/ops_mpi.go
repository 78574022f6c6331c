//go:build mpi

package distops

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/dist"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

type kind int

const (
	kPotrs      kind = iota // (A, B) → A⁻¹B
	kLogDet                 // A → log det A
	kPotrsGrad              // (A, X, X̄) → Ā
	kLogDetGrad             // (A, ḡ) → Ā
	kPotri                  // A → A⁻¹
	kPotriGrad              // (C, C̄) → Ā
	kCholesky               // A → L (forward only)
)

var names = [...]string{"DistPotrs", "DistLogDet", "DistPotrsGrad", "DistLogDetGrad", "DistPotri", "DistPotriGrad", "DistCholesky"}
var arity = [...]int{2, 1, 3, 2, 1, 2, 1}

// op is one of the graph ops on grid g in blocks of nb.
type op struct {
	kind kind
	g    *dist.Grid
	nb   int
}

// Potrs is the node A⁻¹·B for the symmetric positive definite A (n×n) and
// B (n×k), float64 host nodes holding the same values on every rank,
// solved on grid g in nb×nb blocks (0: dist.DefaultBlock).
func Potrs(a, b *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	return G.ApplyOp(&op{kind: kPotrs, g: g, nb: nb}, a, b)
}

// Potri is the node A⁻¹ (both triangles), on grid g.
func Potri(a *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	return G.ApplyOp(&op{kind: kPotri, g: g, nb: nb}, a)
}

// Cholesky is the node L, the lower Cholesky factor of A, on grid g. It
// has no gradient (dist has none for it): differentiating through it is an
// error.
func Cholesky(a *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	return G.ApplyOp(&op{kind: kCholesky, g: g, nb: nb}, a)
}

// LogDet is the scalar node log det A, on grid g.
func LogDet(a *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	return G.ApplyOp(&op{kind: kLogDet, g: g, nb: nb}, a)
}

func (o *op) Arity() int { return arity[o.kind] }

func (o *op) Type() hm.Type {
	m := G.TensorType{Dims: 2, Of: tensor.Float64}
	switch o.kind {
	case kPotrs:
		return hm.NewFnType(m, m, m)
	case kLogDet:
		return hm.NewFnType(m, tensor.Float64)
	case kPotrsGrad:
		return hm.NewFnType(m, m, m, m)
	case kPotri, kCholesky:
		return hm.NewFnType(m, m)
	case kPotriGrad:
		return hm.NewFnType(m, m, m)
	}
	return hm.NewFnType(m, tensor.Float64, m)
}

func (o *op) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	switch o.kind {
	case kLogDet:
		return tensor.ScalarShape(), nil
	case kPotrs:
		return in[1].(tensor.Shape).Clone(), nil
	}
	return in[0].(tensor.Shape).Clone(), nil
}

func (o *op) ReturnsPtr() bool     { return false }
func (o *op) CallsExtern() bool    { return true }
func (o *op) OverwritesInput() int { return -1 }
func (o *op) String() string       { return names[o.kind] }
func (o *op) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s %p %d", names[o.kind], o.g, o.nb)
}
func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// matrix reads a float64 matrix value as rows, cols and column-major data.
func matrix(v G.Value) (int, int, []float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok || d.Dtype() != tensor.Float64 || d.Dims() != 2 {
		return 0, 0, nil, fmt.Errorf("%w: distops: want a float64 matrix, got %v", dist.ErrBadInput, v)
	}
	r, c := d.Shape()[0], d.Shape()[1]
	rm := d.Data().([]float64)
	cm := make([]float64, r*c)
	for i := range r {
		for j := range c {
			cm[i+j*r] = rm[i*c+j]
		}
	}
	return r, c, cm, nil
}

// value is the column-major r×c data as a row-major dense value.
func value(r, c int, cm []float64) *tensor.Dense {
	rm := make([]float64, r*c)
	for i := range r {
		for j := range c {
			rm[i*c+j] = cm[i+j*r]
		}
	}
	return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(rm))
}

func scalar(v G.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return x, nil
	case []float64:
		if len(x) == 1 {
			return x[0], nil
		}
	}
	return 0, fmt.Errorf("%w: distops: want a float64 scalar, got %v", dist.ErrBadInput, v)
}

// distribute puts the matrix value v on the grid.
func (o *op) distribute(v G.Value) (*dist.Matrix[float64], error) {
	r, c, cm, err := matrix(v)
	if err != nil {
		return nil, err
	}
	return dist.FromReplicated(o.g, r, c, o.nb, cm)
}

func (o *op) out(m *dist.Matrix[float64]) (G.Value, error) {
	full, err := m.Gather(-1)
	if err != nil {
		return nil, err
	}
	return value(m.Layout.Rows, m.Layout.Cols, full), nil
}

func (o *op) Do(vals ...G.Value) (G.Value, error) {
	a, err := o.distribute(vals[0])
	if err != nil {
		return nil, err
	}
	switch o.kind {
	case kPotrs:
		b, err := o.distribute(vals[1])
		if err != nil {
			return nil, err
		}
		x, err := dist.Potrs(a, b)
		if err != nil {
			return nil, err
		}
		return o.out(x)
	case kLogDet:
		ld, err := dist.LogDet(a)
		if err != nil {
			return nil, err
		}
		return G.NewF64(ld), nil
	case kPotrsGrad:
		x, err := o.distribute(vals[1])
		if err != nil {
			return nil, err
		}
		xbar, err := o.distribute(vals[2])
		if err != nil {
			return nil, err
		}
		l, err := dist.Cholesky(a)
		if err != nil {
			return nil, err
		}
		abar, _, err := dist.PotrsGrad(l, x, xbar)
		if err != nil {
			return nil, err
		}
		return o.out(abar)
	case kPotri:
		inv, err := dist.Potri(a)
		if err != nil {
			return nil, err
		}
		return o.out(inv)
	case kCholesky:
		l, err := dist.Cholesky(a)
		if err != nil {
			return nil, err
		}
		return o.out(l)
	case kPotriGrad:
		cbar, err := o.distribute(vals[1])
		if err != nil {
			return nil, err
		}
		abar, err := dist.PotriGrad(a, cbar)
		if err != nil {
			return nil, err
		}
		return o.out(abar)
	}
	gbar, err := scalar(vals[1])
	if err != nil {
		return nil, err
	}
	abar, err := dist.LogDetGrad(a, gbar)
	if err != nil {
		return nil, err
	}
	return o.out(abar)
}

// DiffWRT: Potrs differentiates A and B, LogDet A; the gradient ops are
// not differentiated again.
func (o *op) DiffWRT(n int) []bool {
	d := make([]bool, n)
	if o.kind == kPotrs || o.kind == kLogDet || o.kind == kPotri || o.kind == kCholesky {
		for i := range d {
			d[i] = true
		}
	}
	return d
}

// SymDiff: Potrs: B̄ = Potrs(A, X̄), Ā = PotrsGrad(A, X, X̄); LogDet:
// Ā = LogDetGrad(A, ḡ); Potri: Ā = PotriGrad(C, C̄). All on the same grid.
// Cholesky has none.
func (o *op) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	switch o.kind {
	case kPotrs:
		abar, err := G.ApplyOp(&op{kind: kPotrsGrad, g: o.g, nb: o.nb}, inputs[0], output, grad)
		if err != nil {
			return nil, err
		}
		bbar, err := Potrs(inputs[0], grad, o.g, o.nb)
		if err != nil {
			return nil, err
		}
		return G.Nodes{abar, bbar}, nil
	case kLogDet:
		abar, err := G.ApplyOp(&op{kind: kLogDetGrad, g: o.g, nb: o.nb}, inputs[0], grad)
		if err != nil {
			return nil, err
		}
		return G.Nodes{abar}, nil
	case kPotri:
		abar, err := G.ApplyOp(&op{kind: kPotriGrad, g: o.g, nb: o.nb}, output, grad)
		if err != nil {
			return nil, err
		}
		return G.Nodes{abar}, nil
	}
	return nil, fmt.Errorf("%w: distops: %s has no gradient", dist.ErrBadInput, o)
}
