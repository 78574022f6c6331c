package sharding

import (
	"fmt"
	"math"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
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
// sharded matrix to zero (one block operation per piece of the layout).
func (t *Tensor) ZeroStrictUpper() error {
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return fmt.Errorf("sharding: ZeroStrictUpper of non-square %v", t.shape)
	}
	for _, p := range cyclic.Pieces(t.layout, t.Rows(), t.Cols(), t.mesh.Size()) {
		if p.Row >= p.Col+p.Cols-1 {
			continue // no element of the piece lies above the diagonal
		}
		ld, _ := t.LocalShape(p.Dev)
		off := p.LocalRow + p.LocalCol*ld
		if err := t.mesh.mem.zeroUpper(t.shards[p.Dev], off, ld, p.Rows, p.Cols, p.Row-p.Col); err != nil {
			return err
		}
	}
	return nil
}

func (hostBackend) zeroUpper(b Buffer, off, ld, rows, cols, shift int) error {
	switch s := b.(*HostBuffer).data.(type) {
	case []float32:
		zeroUpperHost(s[off:], ld, rows, cols, shift)
	case []float64:
		zeroUpperHost(s[off:], ld, rows, cols, shift)
	case []complex64:
		zeroUpperHost(s[off:], ld, rows, cols, shift)
	case []complex128:
		zeroUpperHost(s[off:], ld, rows, cols, shift)
	}
	return nil
}

func zeroUpperHost[T any](a []T, ld, rows, cols, shift int) {
	for j := range cols {
		clear(a[j*ld : j*ld+min(rows, max(0, j-shift))])
	}
}

// MirrorLower makes a square sharded matrix Hermitian from its lower
// triangle: A(i, j) = conj(A(j, i)) above the diagonal, and a real diagonal.
func (t *Tensor) MirrorLower() error {
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return fmt.Errorf("sharding: MirrorLower of non-square %v", t.shape)
	}
	return t.mesh.mem.mirrorLower(t)
}

func (hostBackend) mirrorLower(t *Tensor) error { return mirrorLowerHost(t) }

// mirrorLowerHost mirrors through a host copy of the whole matrix.
func mirrorLowerHost(t *Tensor) error {
	d, err := t.Gather()
	if err != nil {
		return err
	}
	switch s := d.Data().(type) {
	case []float32:
		mirrorRowMajor(s, t.Rows(), func(v float32) float32 { return v }, func(v float32) float32 { return v })
	case []float64:
		mirrorRowMajor(s, t.Rows(), func(v float64) float64 { return v }, func(v float64) float64 { return v })
	case []complex64:
		mirrorRowMajor(s, t.Rows(), func(v complex64) complex64 { return complex(real(v), -imag(v)) },
			func(v complex64) complex64 { return complex(real(v), 0) })
	case []complex128:
		mirrorRowMajor(s, t.Rows(), func(v complex128) complex128 { return complex(real(v), -imag(v)) },
			func(v complex128) complex128 { return complex(real(v), 0) })
	}
	return t.Load(d)
}

// mirrorRowMajor: row-major a[i*n+j]; the lower triangle has i > j.
func mirrorRowMajor[T any](a []T, n int, conj, re func(T) T) {
	for i := range n {
		for j := i + 1; j < n; j++ {
			a[i*n+j] = conj(a[j*n+i])
		}
		a[i*n+i] = re(a[i*n+i])
	}
}

// ErrNonFinite reports NaN or ±Inf in a sharded matrix; it is the error of
// package kernels, so errors.Is works across the library.
var ErrNonFinite = kernels.ErrNonFinite

// CheckFinite reports NaN or ±Inf in the matrix (in its lower triangle
// only, when lower), on the devices that hold it.
func (t *Tensor) CheckFinite(lower bool) error {
	for _, p := range cyclic.Pieces(t.layout, t.Rows(), t.Cols(), t.mesh.Size()) {
		if t.layout.Kind == cyclic.Replicated && p.Dev != 0 {
			continue
		}
		if lower && p.Row+p.Rows-1 < p.Col {
			continue // wholly above the diagonal
		}
		bad, err := t.mesh.mem.nonFinite(t, p, lower)
		if err != nil {
			return err
		}
		if bad {
			return fmt.Errorf("%w (in rows %d–%d, columns %d–%d)", ErrNonFinite, p.Row, p.Row+p.Rows-1, p.Col, p.Col+p.Cols-1)
		}
	}
	return nil
}

func (hostBackend) nonFinite(t *Tensor, p cyclic.Piece, lower bool) (bool, error) {
	ld, _ := t.LocalShape(p.Dev)
	off := p.LocalRow + p.LocalCol*ld
	switch s := t.shards[p.Dev].(*HostBuffer).data.(type) {
	case []float32:
		return anyNonFinite(s[off:], ld, p, lower, func(v float32) (float64, float64) { return float64(v), 0 }), nil
	case []float64:
		return anyNonFinite(s[off:], ld, p, lower, func(v float64) (float64, float64) { return v, 0 }), nil
	case []complex64:
		return anyNonFinite(s[off:], ld, p, lower, func(v complex64) (float64, float64) { return float64(real(v)), float64(imag(v)) }), nil
	case []complex128:
		return anyNonFinite(s[off:], ld, p, lower, func(v complex128) (float64, float64) { return real(v), imag(v) }), nil
	}
	return false, CheckDtype(t.dtype)
}

// anyNonFinite scans a piece's block (leading dimension ld) for NaN or Inf,
// in its part on or below the global diagonal when lower.
func anyNonFinite[T any](a []T, ld int, p cyclic.Piece, lower bool, parts func(T) (float64, float64)) bool {
	for j := range p.Cols {
		i0 := 0
		if lower {
			i0 = max(0, p.Col+j-p.Row)
		}
		for i := i0; i < p.Rows; i++ {
			re, im := parts(a[i+j*ld])
			if math.IsNaN(re) || math.IsInf(re, 0) || math.IsNaN(im) || math.IsInf(im, 0) {
				return true
			}
		}
	}
	return false
}
