package sharding

import (
	"fmt"

	"github.com/mgla/mgla/cyclic"
)

// Diagonal returns the main diagonal of a square sharded matrix as a host
// slice of the tensor's element type ([]float64 for float64, and so on).
func (t *Tensor) Diagonal() (any, error) {
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return nil, fmt.Errorf("sharding: Diagonal of non-square %v", t.shape)
	}
	return t.mesh.mem.diagonal(t)
}

// diagonalPositions lists, for each i, the device and local offset of (i, i).
func diagonalPositions(t *Tensor) (dev, off []int) {
	n := t.Rows()
	dev, off = make([]int, n), make([]int, n)
	for _, p := range cyclic.Pieces(t.layout, n, n, t.mesh.Size()) {
		if t.layout.Kind == cyclic.Replicated && p.Dev != 0 {
			continue
		}
		ld, _ := t.LocalShape(p.Dev)
		for i := max(p.Row, p.Col); i < min(p.Row+p.Rows, p.Col+p.Cols); i++ {
			dev[i] = p.Dev
			off[i] = p.LocalRow + i - p.Row + (p.LocalCol+i-p.Col)*ld
		}
	}
	return dev, off
}

func diagonalHost[T any](t *Tensor) ([]T, error) {
	sh, err := HostShards[T](t)
	if err != nil {
		return nil, err
	}
	dev, off := diagonalPositions(t)
	out := make([]T, len(dev))
	for i := range out {
		out[i] = sh[dev[i]][off[i]]
	}
	return out, nil
}

func (hostBackend) diagonal(t *Tensor) (any, error) {
	switch t.shards[0].(*HostBuffer).data.(type) {
	case []float32:
		return diagonalHost[float32](t)
	case []float64:
		return diagonalHost[float64](t)
	case []complex64:
		return diagonalHost[complex64](t)
	case []complex128:
		return diagonalHost[complex128](t)
	}
	return nil, fmt.Errorf("sharding: Diagonal: unsupported dtype %v", t.dtype)
}

// ZeroStrictUpper sets the elements above the main diagonal of a square
// sharded matrix to zero.
func (t *Tensor) ZeroStrictUpper() error {
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return fmt.Errorf("sharding: ZeroStrictUpper of non-square %v", t.shape)
	}
	for _, p := range cyclic.Pieces(t.layout, t.Rows(), t.Cols(), t.mesh.Size()) {
		// Columns j of the piece: rows [Row, min(j, Row+Rows)) are above the diagonal.
		for j := p.Col; j < p.Col+p.Cols; j++ {
			r1 := min(j, p.Row+p.Rows)
			if r1 <= p.Row {
				continue
			}
			ld, _ := t.LocalShape(p.Dev)
			off := p.LocalRow + (p.LocalCol+j-p.Col)*ld
			if err := t.mesh.mem.zeroRange(t.shards[p.Dev], off, r1-p.Row); err != nil {
				return err
			}
		}
	}
	return nil
}

func (hostBackend) zeroRange(b Buffer, off, n int) error {
	switch s := b.(*HostBuffer).data.(type) {
	case []float32:
		clear(s[off : off+n])
	case []float64:
		clear(s[off : off+n])
	case []complex64:
		clear(s[off : off+n])
	case []complex128:
		clear(s[off : off+n])
	}
	return nil
}
