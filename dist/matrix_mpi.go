//go:build mpi

package dist

/*
#include "scalapack.h"
*/
import "C"

import (
	"fmt"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// Matrix is a Rows×Cols matrix in the 2-D block-cyclic distribution of its
// grid, in square blocks of Block: Local is this process's part,
// column-major with leading dimension LLD = max(1, local rows).
type Matrix[T Scalar] struct {
	Grid   *Grid
	Layout cyclic.BlockCyclic2D
	Local  []T
	desc   [9]C.int
}

// LLD is the leading dimension of Local.
func (m *Matrix[T]) LLD() int { return m.Layout.LeadingDim(m.Grid.prow) }

// LocalShape is the shape of this process's part.
func (m *Matrix[T]) LocalShape() (rows, cols int) {
	return m.Layout.LocalShape(m.Grid.prow, m.Grid.pcol)
}

// dtypeCode numbers the element types so ranks can compare them.
func dtypeCode[T Scalar]() int {
	switch any(*new(T)).(type) {
	case float32:
		return 1
	case float64:
		return 2
	case complex64:
		return 3
	}
	return 4
}

func dtypeOf[T Scalar]() tensor.Dtype {
	switch any(*new(T)).(type) {
	case float32:
		return tensor.Float32
	case float64:
		return tensor.Float64
	case complex64:
		return tensor.Complex64
	}
	return tensor.Complex128
}

// newMatrix makes the zero rows×cols matrix on g in blocks of nb (the
// caller has agreed the arguments across ranks).
func newMatrix[T Scalar](g *Grid, rows, cols, nb int) (*Matrix[T], error) {
	l := cyclic.BlockCyclic2D{Rows: rows, Cols: cols, MB: nb, NB: nb, P: g.p, Q: g.q}
	m := &Matrix[T]{Grid: g, Layout: l}
	_, lc := m.LocalShape()
	m.Local = make([]T, m.LLD()*lc)
	var info C.int
	cm, cn, cb, zero, ctxt, lld := C.int(rows), C.int(cols), C.int(nb), C.int(0), g.ctxt, C.int(m.LLD())
	C.descinit_(&m.desc[0], &cm, &cn, &cb, &cb, &zero, &zero, &ctxt, &lld, &info)
	if info != 0 {
		return nil, fmt.Errorf("%w: dist: descinit: argument %d is illegal", ErrEngine, -int(info))
	}
	return m, nil
}

// NewMatrix makes a zero rows×cols matrix on g in nb×nb blocks (nb = 0:
// DefaultBlock). Collective.
func NewMatrix[T Scalar](g *Grid, rows, cols, nb int) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	f := failure{}
	if rows < 1 || cols < 1 || nb < 1 {
		f.code = badInputCode
	}
	if err := g.agreeShape("NewMatrix", f, rows, cols, nb, dtypeCode[T]()); err != nil {
		return nil, err
	}
	return newMatrix[T](g, rows, cols, nb)
}

// FromReplicated distributes a rows×cols column-major matrix (leading
// dimension rows) that every rank holds: each rank copies its own blocks,
// no data moves between processes. Collective.
func FromReplicated[T Scalar](g *Grid, rows, cols, nb int, full []T) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	f := failure{}
	if rows < 1 || cols < 1 || nb < 1 || len(full) != rows*cols {
		f.code = badInputCode
	}
	if err := g.agreeShape("FromReplicated", f, rows, cols, nb, dtypeCode[T]()); err != nil {
		return nil, err
	}
	m, err := newMatrix[T](g, rows, cols, nb)
	if err != nil {
		return nil, err
	}
	cyclic.Extract(m.Layout, g.prow, g.pcol, full, rows, m.Local)
	return m, nil
}

// FromRoot distributes the rows×cols column-major matrix full that rank
// root holds (the other ranks pass nil): the root broadcasts it and every
// rank keeps its blocks. Collective.
func FromRoot[T Scalar](g *Grid, root, rows, cols, nb int, full []T) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	f := failure{}
	if rows < 1 || cols < 1 || nb < 1 || root < 0 || root >= g.comm.Size() ||
		(g.comm.Rank() == root && len(full) != rows*cols) {
		f.code = badInputCode
	}
	if err := g.agreeShape("FromRoot", f, root, rows, cols, nb, dtypeCode[T]()); err != nil {
		return nil, err
	}
	send := full
	if g.comm.Rank() != root {
		send = make([]T, rows*cols)
	}
	buf := make([]T, rows*cols)
	if err := collect(g, collective.Bcast, root, send, buf); err != nil {
		return nil, err
	}
	m, err := newMatrix[T](g, rows, cols, nb)
	if err != nil {
		return nil, err
	}
	cyclic.Extract(m.Layout, g.prow, g.pcol, buf, rows, m.Local)
	return m, nil
}

// FromRowBlocks distributes a matrix of cols columns whose rows each rank
// holds a contiguous band of, in rank order (rank 0 the first rows; a rank
// may hold none): band is that rank's rows×cols part, column-major with
// leading dimension rows. Collective.
func FromRowBlocks[T Scalar](g *Grid, cols, nb int, rows int, band []T) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	f := failure{}
	if rows < 0 || cols < 1 || nb < 1 || len(band) != rows*cols {
		f.code = badInputCode
	}
	if err := g.agreeShape("FromRowBlocks", f, cols, nb, dtypeCode[T]()); err != nil {
		return nil, err
	}
	counts := make([]float64, g.comm.Size())
	counts[g.comm.Rank()] = float64(rows)
	counts, err := allReduce(g.comm, collective.Sum, counts)
	if err != nil {
		return nil, err
	}
	total, first := 0, 0
	for r, c := range counts {
		if r == g.comm.Rank() {
			first = total
		}
		total += int(c)
	}
	if total < 1 {
		return nil, fmt.Errorf("%w: dist: FromRowBlocks: no rank holds a row", ErrBadInput)
	}
	full := make([]T, total*cols)
	for j := range cols {
		copy(full[first+j*total:], band[j*rows:(j+1)*rows])
	}
	sum := make([]T, len(full))
	if err := collect(g, collective.AllReduce, 0, full, sum); err != nil {
		return nil, err
	}
	full = sum
	m, err := newMatrix[T](g, total, cols, nb)
	if err != nil {
		return nil, err
	}
	cyclic.Extract(m.Layout, g.prow, g.pcol, full, total, m.Local)
	return m, nil
}

// Gather returns the whole matrix (column-major, leading dimension Rows)
// on rank root and nil on the others; root < 0 returns it on every rank.
// Collective.
func (m *Matrix[T]) Gather(root int) ([]T, error) {
	g := m.Grid
	full := make([]T, m.Layout.Rows*m.Layout.Cols)
	cyclic.Insert(m.Layout, g.prow, g.pcol, m.Local, full, m.Layout.Rows)
	kind := collective.AllReduce
	if root >= 0 {
		kind = collective.Reduce
	}
	sum := make([]T, len(full))
	if err := collect(g, kind, root, full, sum); err != nil {
		return nil, err
	}
	if root >= 0 && g.comm.Rank() != root {
		return nil, nil
	}
	return sum, nil
}

// collect runs a Bcast, or a sum (AllReduce or Reduce) of matrices in which
// every element is nonzero on at most one rank, over the grid's ranks.
func collect[T Scalar](g *Grid, kind collective.Kind, root int, send, recv []T) error {
	sb, err := sharding.NewHostBuffer(send)
	if err != nil {
		return err
	}
	rb, err := sharding.NewHostBuffer(recv)
	if err != nil {
		return err
	}
	call := &collective.Call{Kind: kind, Op: collective.Sum, Root: root, Dtype: dtypeOf[T](), Count: len(send),
		Send: []sharding.Buffer{sb}, Recv: []sharding.Buffer{rb}, Name: "dist." + kind.String()}
	return g.comm.Do(call)
}

// Clone is a copy of m on the same grid (local, no communication).
func (m *Matrix[T]) Clone() *Matrix[T] {
	c := *m
	c.Local = append([]T(nil), m.Local...)
	return &c
}

// finite reports whether every local element is finite.
func finite[T Scalar](xs []T) bool {
	switch v := any(xs).(type) {
	case []float32:
		for _, x := range v {
			if x-x != 0 { // NaN or ±Inf
				return false
			}
		}
	case []float64:
		for _, x := range v {
			if x-x != 0 {
				return false
			}
		}
	case []complex64:
		for _, x := range v {
			if real(x)-real(x) != 0 || imag(x)-imag(x) != 0 {
				return false
			}
		}
	case []complex128:
		for _, x := range v {
			if real(x)-real(x) != 0 || imag(x)-imag(x) != 0 {
				return false
			}
		}
	}
	return true
}

// Fill sets every element of m to f(row, col) (global indices), each
// process its own: no communication.
func (m *Matrix[T]) Fill(f func(r, c int) T) {
	forEachLocal(m, func(r, c, i int) { m.Local[i] = f(r, c) })
}

// Sum is Σ f(row, col, value) over every element of m, summed over the
// grid: the same on every rank. Collective.
func (m *Matrix[T]) Sum(f func(r, c int, v T) float64) (float64, error) {
	s := 0.0
	forEachLocal(m, func(r, c, i int) { s += f(r, c, m.Local[i]) })
	got, err := allReduce(m.Grid.comm, collective.Sum, []float64{s})
	if err != nil {
		return 0, err
	}
	return got[0], nil
}

// Dot is Σ Re(a∘b̄) over the whole matrices, on every rank; a and b must
// have the same shape and layout on the same grid. Collective.
func Dot[T Scalar](a, b *Matrix[T]) (float64, error) {
	f := failure{}
	if b == nil || a.Grid != b.Grid || a.Layout != b.Layout {
		f.code = badInputCode
	}
	if err := a.Grid.agreeShape("Dot", f, a.Layout.Rows, a.Layout.Cols, a.Layout.MB); err != nil {
		return 0, err
	}
	s := 0.0
	forEachLocal(a, func(_, _, i int) { s += realDot(a.Local[i], b.Local[i]) })
	got, err := allReduce(a.Grid.comm, collective.Sum, []float64{s})
	if err != nil {
		return 0, err
	}
	return got[0], nil
}

// realDot is Re(x·ȳ).
func realDot[T Scalar](x, y T) float64 {
	switch v := any(x).(type) {
	case float32:
		return float64(v) * float64(any(y).(float32))
	case float64:
		return v * any(y).(float64)
	case complex64:
		w := any(y).(complex64)
		return float64(real(v))*float64(real(w)) + float64(imag(v))*float64(imag(w))
	}
	v, w := any(x).(complex128), any(y).(complex128)
	return real(v)*real(w) + imag(v)*imag(w)
}
