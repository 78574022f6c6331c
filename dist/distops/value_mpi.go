//go:build mpi

package distops

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/dist"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Value is a grid-resident graph value: a matrix (or a vector, held as an
// n×1 matrix) in the 2-D block-cyclic distribution of a dist.Grid, each
// process holding only its own blocks (a *dist.Matrix of the value's
// dtype). It is a gorgonia.Value of the global shape whose Data is this
// process's local array (column-major, leading dimension dist's LLD); it
// is not a tensor.Tensor, so only the ops of this package read it (see the
// package doc for the gradients).
type Value struct {
	m     any // *dist.Matrix[T], T the Go type of dt
	shape tensor.Shape
	dt    tensor.Dtype
}

var _ G.Value = (*Value)(nil)

// GridResident reports that a Value lives on a grid: the root builders
// (mgla.Potrs and the others) refuse one without mgla.WithGrid.
func (*Value) GridResident() bool { return true }

// NewValue is m as a graph value of the given shape: m's rows×cols, or
// rows for a vector (m must have one column); no shape: rows×cols.
func NewValue[T dist.Scalar](m *dist.Matrix[T], shape ...int) (*Value, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: distops: NewValue of a nil matrix", dist.ErrBadInput)
	}
	r, c := m.Layout.Rows, m.Layout.Cols
	s := tensor.Shape{r, c}
	if len(shape) > 0 {
		s = tensor.Shape(shape).Clone()
	}
	if !(len(s) == 2 && s[0] == r && s[1] == c) && !(len(s) == 1 && s[0] == r && c == 1) {
		return nil, fmt.Errorf("%w: distops: NewValue: shape %v for a %d×%d matrix", dist.ErrBadInput, s, r, c)
	}
	return &Value{m: m, shape: s, dt: dtypeOf[T]()}, nil
}

// MatrixOf is the distributed matrix behind v, if v holds one of element
// type T.
func MatrixOf[T dist.Scalar](v G.Value) (*dist.Matrix[T], bool) {
	if e, ok := v.(*eigenGrid); ok {
		v = e.Value
	}
	g, ok := v.(*Value)
	if !ok {
		return nil, false
	}
	m, ok := g.m.(*dist.Matrix[T])
	return m, ok
}

// Input makes an input node of g holding the grid value v: a matrix put on
// the grid once feeds the ops of this package without returning to the
// host. Rebind it with gorgonia.Let to a value of the same shape, grid and
// block size. Gradients with respect to it (gorgonia.Grad) are grid values.
func Input(g *G.ExprGraph, v *Value, name string) *G.Node {
	return G.NewTensor(g, v.dt, len(v.shape), G.WithShape(v.shape...), G.WithName(name), G.WithValue(v))
}

// dtypeOf is the dtype of T (tensor.Float64 for float64, …).
func dtypeOf[T dist.Scalar]() tensor.Dtype { return tensor.Dtype{Type: reflect.TypeOf(*new(T))} }

// layout is the grid and block size of v.
func (v *Value) layout() (g *dist.Grid, nb int) {
	switch m := v.m.(type) {
	case *dist.Matrix[float32]:
		return m.Grid, m.Layout.MB
	case *dist.Matrix[float64]:
		return m.Grid, m.Layout.MB
	case *dist.Matrix[complex64]:
		return m.Grid, m.Layout.MB
	case *dist.Matrix[complex128]:
		return m.Grid, m.Layout.MB
	}
	return nil, 0
}

// local is this process's local array, as a []T.
func (v *Value) local() any {
	switch m := v.m.(type) {
	case *dist.Matrix[float32]:
		return m.Local
	case *dist.Matrix[float64]:
		return m.Local
	case *dist.Matrix[complex64]:
		return m.Local
	case *dist.Matrix[complex128]:
		return m.Local
	}
	return nil
}

// Shape, Size, Dtype and Data make *Value a gorgonia.Value: the global
// shape, size and dtype, and this process's local array.
func (v *Value) Shape() tensor.Shape { return v.shape.Clone() }
func (v *Value) Size() int           { return v.shape.TotalSize() }
func (v *Value) Dtype() tensor.Dtype { return v.dt }
func (v *Value) Data() interface{}   { return v.local() }

// Uintptr, MemSize and Pointer identify the value (they do not point at
// element memory, which is spread over processes); MemSize is the size of
// the local array.
func (v *Value) Uintptr() uintptr        { return uintptr(unsafe.Pointer(v)) }
func (v *Value) MemSize() uintptr        { return uintptr(localLen(v)) * uintptr(v.dt.Size()) }
func (v *Value) Pointer() unsafe.Pointer { return unsafe.Pointer(v) }

func localLen(v *Value) int {
	switch l := v.local().(type) {
	case []float32:
		return len(l)
	case []float64:
		return len(l)
	case []complex64:
		return len(l)
	case []complex128:
		return len(l)
	}
	return 0
}

// Type is a Gorgonia tensor type, so that nodes holding grid values
// type-check like host matrices.
func (v *Value) Type() hm.Type { return G.TensorType{Dims: len(v.shape), Of: v.dt} }

// Clone is a copy on the same grid (each process copies its blocks).
func (v *Value) Clone() (interface{}, error) {
	c := *v
	switch m := v.m.(type) {
	case *dist.Matrix[float32]:
		c.m = m.Clone()
	case *dist.Matrix[float64]:
		c.m = m.Clone()
	case *dist.Matrix[complex64]:
		c.m = m.Clone()
	case *dist.Matrix[complex128]:
		c.m = m.Clone()
	}
	return &c, nil
}

// CopyTo copies v into dest, a *Value of the same shape, dtype, grid and
// block size (each process its blocks), so that gorgonia.Read can read a
// grid value again on the next run (gorgonia.CopierTo).
func (v *Value) CopyTo(dest interface{}) error {
	d, ok := dest.(*Value)
	if !ok {
		return fmt.Errorf("%w: distops: cannot copy a grid value into %T", dist.ErrBadInput, dest)
	}
	d.Zero()
	return addInto(d, v)
}

// Zero sets every element to zero (each process its blocks).
func (v *Value) Zero() {
	switch l := v.local().(type) {
	case []float32:
		clear(l)
	case []float64:
		clear(l)
	case []complex64:
		clear(l)
	case []complex128:
		clear(l)
	}
}

// ZeroValue zeroes v and returns it (gorgonia.ZeroValuer).
func (v *Value) ZeroValue() G.Value { v.Zero(); return v }

func (v *Value) String() string {
	g, nb := v.layout()
	p, q := 0, 0
	if g != nil {
		p, q = g.Shape()
	}
	return fmt.Sprintf("grid-resident %v %v on a %d×%d process grid in %d×%d blocks", v.shape, v.dt, p, q, nb, nb)
}

// Format prints the description (the elements are spread over processes;
// gather them with Ops.Gather to see them).
func (v *Value) Format(s fmt.State, c rune) { fmt.Fprint(s, v.String()) }

// addInto adds src into dst elementwise, both grid values of the same
// shape, dtype, grid and block size: local, no communication.
func addInto(dst, src *Value) error {
	dg, dnb := dst.layout()
	sg, snb := src.layout()
	if !dst.shape.Eq(src.shape) || dst.dt != src.dt || dg != sg || dnb != snb {
		return fmt.Errorf("%w: distops: cannot add %v into %v", dist.ErrBadInput, src, dst)
	}
	switch d := dst.local().(type) {
	case []float32:
		addSlices(d, src.local().([]float32))
	case []float64:
		addSlices(d, src.local().([]float64))
	case []complex64:
		addSlices(d, src.local().([]complex64))
	case []complex128:
		addSlices(d, src.local().([]complex128))
	}
	return nil
}

func addSlices[T dist.Scalar](dst, src []T) {
	for i, x := range src {
		dst[i] += x
	}
}

// eigenGrid is the value of an Eigen node on the grid: the eigenvectors,
// carrying the eigenvalues.
type eigenGrid struct {
	*Value
	w []float64
}
