package sharding

import (
	"fmt"
	"math"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"gorgonia.org/tensor"
)

// Diagonal returns the main diagonal of a square sharded matrix as a host
// slice of the tensor's element type ([]float64 for float64, and so on).
func (t *Tensor) Diagonal() (any, error) {
	if err := t.checkArith("Diagonal"); err != nil {
		return nil, err
	}
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return nil, fmt.Errorf("sharding: Diagonal of non-square %v", t.shape)
	}
	return t.mesh.mem.diagonal(t)
}

// checkArith rejects a freed (or nil or zero) tensor (usable) and the
// dtypes that sharded tensors only store (IntDtypes) in the routines that
// compute with elements.
func (t *Tensor) checkArith(what string) error {
	if err := t.usable(); err != nil {
		return err
	}
	if err := CheckDtype(t.dtype); err != nil {
		return fmt.Errorf("sharding: %s: %w", what, err)
	}
	return nil
}

// diagonalRun is a stretch of a (shifted) diagonal inside one piece:
// elements (first+shift+k, first+k) for k < count, on device dev, the first
// at local element offset off, the next ones ld+1 elements further each.
type diagonalRun struct {
	dev, first, count, off, ld int
}

// diagonalRuns cuts the main diagonal of a square tensor into the runs of
// its layout's pieces, in order (device 0's copy for replicated tensors).
func diagonalRuns(t *Tensor) []diagonalRun { return shiftedDiagonalRuns(t, 0) }

// shiftedDiagonalRuns does the same for the elements (j+shift, j).
func shiftedDiagonalRuns(t *Tensor, shift int) []diagonalRun {
	var runs []diagonalRun
	for _, p := range cyclic.Pieces(t.layout, t.Rows(), t.Cols(), t.mesh.Size()) {
		if t.layout.Kind == cyclic.Replicated && p.Dev != 0 {
			continue
		}
		j0, j1 := max(p.Col, p.Row-shift), min(p.Col+p.Cols, p.Row+p.Rows-shift)
		if j0 >= j1 {
			continue
		}
		ld, _ := t.LocalShape(p.Dev)
		runs = append(runs, diagonalRun{dev: p.Dev, first: j0, count: j1 - j0, ld: ld,
			off: p.LocalRow + j0 + shift - p.Row + (p.LocalCol+j0-p.Col)*ld})
	}
	return runs
}

func diagonalHost[T any](t *Tensor) ([]T, error) {
	sh, err := HostShards[T](t)
	if err != nil {
		return nil, err
	}
	out := make([]T, t.Rows())
	for _, r := range diagonalRuns(t) {
		for k := range r.count {
			out[r.first+k] = sh[r.dev][r.off+k*(r.ld+1)]
		}
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

// SetIdentity overwrites a square sharded matrix with the identity.
func (t *Tensor) SetIdentity() error {
	if err := t.usable(); err != nil {
		return err
	}
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return fmt.Errorf("sharding: SetIdentity of non-square %v", t.shape)
	}
	return t.SetIdentityColumns(0)
}

// SetIdentityColumns overwrites an n×k sharded matrix with columns first …
// first+k−1 of the n×n identity: ones at (first+j, j), zeros elsewhere.
func (t *Tensor) SetIdentityColumns(first int) error {
	if err := t.checkArith("SetIdentityColumns"); err != nil {
		return err
	}
	if first < 0 || first > t.Rows() {
		return fmt.Errorf("sharding: identity columns from %d of a %v matrix", first, t.shape)
	}
	for _, b := range t.shards {
		t.mesh.mem.zero(b)
	}
	runs := shiftedDiagonalRuns(t, first)
	if t.layout.Kind == cyclic.Replicated { // every replica holds the same runs
		base := runs
		for d := 1; d < t.mesh.Size(); d++ {
			for _, r := range base {
				r.dev = d
				runs = append(runs, r)
			}
		}
	}
	for _, r := range runs {
		if err := t.mesh.mem.setDiagonalOnes(t, r); err != nil {
			return err
		}
	}
	return nil
}

func (hostBackend) setDiagonalOnes(t *Tensor, r diagonalRun) error {
	switch s := t.shards[r.dev].(*HostBuffer).data.(type) {
	case []float32:
		setRun(s, r, 1)
	case []float64:
		setRun(s, r, 1)
	case []complex64:
		setRun(s, r, 1)
	case []complex128:
		setRun(s, r, 1)
	}
	return nil
}

func setRun[T any](s []T, r diagonalRun, v T) {
	for k := range r.count {
		s[r.off+k*(r.ld+1)] = v
	}
}

// onesOf is a host slice of n ones of element type dt.
func onesOf(dt tensor.Dtype, n int) (any, error) {
	b, err := hostBackend{}.alloc(Device{}, dt, n, true)
	if err != nil {
		return nil, err
	}
	t := &Tensor{shards: []Buffer{b}}
	return b.(*HostBuffer).data, hostBackend{}.setDiagonalOnes(t, diagonalRun{count: n})
}

// ZeroStrictUpper sets the elements above the main diagonal of a square
// sharded matrix to zero (one block operation per piece of the layout).
func (t *Tensor) ZeroStrictUpper() error {
	if err := t.checkArith("ZeroStrictUpper"); err != nil {
		return err
	}
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
	if err := t.checkArith("MirrorLower"); err != nil {
		return err
	}
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
// only, when lower), on the devices that hold it: GPUs check every piece
// with kernels and read back one flag per piece.
func (t *Tensor) CheckFinite(lower bool) error {
	if err := t.checkArith("CheckFinite"); err != nil {
		return err
	}
	var pieces []cyclic.Piece
	for _, p := range cyclic.Pieces(t.layout, t.Rows(), t.Cols(), t.mesh.Size()) {
		if t.layout.Kind == cyclic.Replicated && p.Dev != 0 {
			continue
		}
		if p.Rows == 0 || p.Cols == 0 || lower && p.Row+p.Rows-1 < p.Col {
			continue // empty, or wholly above the diagonal
		}
		pieces = append(pieces, p)
	}
	bad, err := t.mesh.mem.nonFinite(t, pieces, lower)
	if err != nil || bad < 0 {
		return err
	}
	p := pieces[bad]
	return fmt.Errorf("%w: NaN or Inf in rows %d–%d, columns %d–%d", ErrNonFinite, p.Row, p.Row+p.Rows-1, p.Col, p.Col+p.Cols-1)
}

// CheckDiagonal reports the first NaN or ±Inf (ErrNonFinite) or exact zero
// (a *kernels.NotPositiveDefiniteError with its order) on the main diagonal
// of a square matrix: the pivots of a Cholesky factor, which triangular
// solves divide by without checking. GPUs check with a kernel and read the
// diagonal back only when it flags something.
func (t *Tensor) CheckDiagonal() error {
	if err := t.checkArith("CheckDiagonal"); err != nil {
		return err
	}
	if len(t.shape) != 2 || t.Rows() != t.Cols() {
		return fmt.Errorf("sharding: CheckDiagonal of non-square %v", t.shape)
	}
	suspect, err := t.mesh.mem.diagonalSuspect(t)
	if err != nil || !suspect {
		return err
	}
	d, err := t.Diagonal()
	if err != nil {
		return err
	}
	switch v := d.(type) {
	case []float32:
		return firstBadPivot(v, parts32)
	case []float64:
		return firstBadPivot(v, parts64)
	case []complex64:
		return firstBadPivot(v, parts64c)
	case []complex128:
		return firstBadPivot(v, parts128c)
	}
	return CheckDtype(t.dtype)
}

func firstBadPivot[T any](d []T, parts func(T) (float64, float64)) error {
	for i, x := range d {
		re, im := parts(x)
		switch {
		case !finite(re, im):
			return fmt.Errorf("%w at (%d, %d)", ErrNonFinite, i, i)
		case re == 0 && im == 0:
			return &kernels.NotPositiveDefiniteError{Order: i + 1}
		}
	}
	return nil
}

// The real and imaginary parts of each element type, as float64.
func parts32(v float32) (float64, float64)      { return float64(v), 0 }
func parts64(v float64) (float64, float64)      { return v, 0 }
func parts64c(v complex64) (float64, float64)   { return float64(real(v)), float64(imag(v)) }
func parts128c(v complex128) (float64, float64) { return real(v), imag(v) }

func finite(re, im float64) bool {
	return !math.IsNaN(re) && !math.IsInf(re, 0) && !math.IsNaN(im) && !math.IsInf(im, 0)
}

// diagonalSuspect: the host reads the diagonal directly, which is as cheap
// as any check of it.
func (hostBackend) diagonalSuspect(*Tensor) (bool, error) { return true, nil }

func (hostBackend) nonFinite(t *Tensor, pieces []cyclic.Piece, lower bool) (int, error) {
	for i, p := range pieces {
		ld, _ := t.LocalShape(p.Dev)
		off := p.LocalRow + p.LocalCol*ld
		var bad bool
		switch s := t.shards[p.Dev].(*HostBuffer).data.(type) {
		case []float32:
			bad = anyNonFinite(s[off:], ld, p, lower, parts32)
		case []float64:
			bad = anyNonFinite(s[off:], ld, p, lower, parts64)
		case []complex64:
			bad = anyNonFinite(s[off:], ld, p, lower, parts64c)
		case []complex128:
			bad = anyNonFinite(s[off:], ld, p, lower, parts128c)
		default:
			return -1, CheckDtype(t.dtype)
		}
		if bad {
			return i, nil
		}
	}
	return -1, nil
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
			if !finite(parts(a[i+j*ld])) {
				return true
			}
		}
	}
	return false
}
