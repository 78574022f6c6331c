//go:build !mpi

package distops

import (
	"fmt"
	"unsafe"

	"github.com/chewxy/hm"
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
//
// In a build without the mpi tag no grid, hence no Value, can be made: the
// type exists so that code naming it compiles in both builds, and its
// methods that return an error return one wrapping collective.ErrUnavailable.
type Value struct{}

var _ G.Value = (*Value)(nil)

// GridResident reports that a Value lives on a grid: the root builders
// (mgla.Potrs and the others) refuse one without mgla.WithGrid.
func (*Value) GridResident() bool { return true }

// Input makes an input node of g holding the grid value v: a matrix put on
// the grid once feeds the ops of this package without returning to the
// host. Rebind it with gorgonia.Let to a value of the same shape, grid and
// block size. Gradients with respect to it (gorgonia.Grad) are grid values.
//
// In a build without the mpi tag no grid value exists: Input adds nothing
// to g and returns nil (the ops of On fail with collective.ErrUnavailable).
func Input(g *G.ExprGraph, v *Value, name string) *G.Node { return nil }

// Shape, Size, Dtype and Data make *Value a gorgonia.Value: the global
// shape, size and dtype, and this process's local array.
func (v *Value) Shape() tensor.Shape { return nil }
func (v *Value) Size() int           { return 0 }
func (v *Value) Dtype() tensor.Dtype { return tensor.Dtype{} }
func (v *Value) Data() interface{}   { return nil }

// Uintptr, MemSize and Pointer identify the value (they do not point at
// element memory, which is spread over processes); MemSize is the size of
// the local array.
func (v *Value) Uintptr() uintptr        { return uintptr(unsafe.Pointer(v)) }
func (v *Value) MemSize() uintptr        { return 0 }
func (v *Value) Pointer() unsafe.Pointer { return unsafe.Pointer(v) }

// Type is a Gorgonia tensor type, so that nodes holding grid values
// type-check like host matrices.
func (v *Value) Type() hm.Type { return G.TensorType{} }

// Clone is a copy on the same grid (each process copies its blocks).
func (v *Value) Clone() (interface{}, error) { return nil, unavailable() }

// CopyTo copies v into dest, a *Value of the same shape, dtype, grid and
// block size (each process its blocks), so that gorgonia.Read can read a
// grid value again on the next run (gorgonia.CopierTo).
func (v *Value) CopyTo(dest interface{}) error { return unavailable() }

// Zero sets every element to zero (each process its blocks).
func (v *Value) Zero() {}

// ZeroValue zeroes v and returns it (gorgonia.ZeroValuer).
func (v *Value) ZeroValue() G.Value { return v }

func (v *Value) String() string {
	return "grid-resident value (none in a build without -tags mpi)"
}

// Format prints the description (the elements are spread over processes;
// gather them with Ops.Gather to see them).
func (v *Value) Format(s fmt.State, c rune) { fmt.Fprint(s, v.String()) }
