//go:build mpi

package dist

import "github.com/mgla/mgla/cyclic"

// order is how a whole matrix is stored in one slice: column-major
// (ScaLAPACK's and the Fortran interface's, leading dimension the number
// of rows) or row-major (Gorgonia's tensors', leading dimension the number
// of columns). FromReplicated, FromRoot, FromRowBlocks and Gather take the
// first, their RowMajor variants the second; both read and write the local
// tiles straight from and into the slice, in one pass, with no transposed
// copy of the whole matrix where the data moves as a whole.
type order int

const (
	colMajor order = iota
	rowMajor
)

// index is the position of element (r, c) of a matrix of the given rows
// and columns stored in order o.
func (o order) index(r, c, rows, cols int) int {
	if o == rowMajor {
		return r*cols + c
	}
	return r + c*rows
}

// extract copies this process's blocks of m out of the whole matrix full
// (m's shape, stored in order o) into m.Local, and reports whether they are
// all finite (in the same pass, as copyFinite).
func (m *Matrix[T]) extract(full []T, o order) bool {
	rows, cols, lld := m.Layout.Rows, m.Layout.Cols, m.LLD()
	ok := true
	for _, b := range m.Layout.Blocks(m.Grid.prow, m.Grid.pcol) {
		local := m.Local[b.LocalRow+b.LocalCol*lld:]
		src := full[o.index(b.Row, b.Col, rows, cols):]
		if o == rowMajor {
			ok = copyTransposed(local, lld, src, cols, b.Rows, b.Cols) && ok
			continue
		}
		for j := range b.Cols {
			ok = copyFinite(local[j*lld:j*lld+b.Rows], src[j*rows:j*rows+b.Rows]) && ok
		}
	}
	return ok
}

// insert copies m.Local into its place in the whole matrix full (m's
// shape, stored in order o).
func (m *Matrix[T]) insert(full []T, o order) {
	if o == colMajor {
		cyclic.Insert(m.Layout, m.Grid.prow, m.Grid.pcol, m.Local, full, m.Layout.Rows)
		return
	}
	cols, lld := m.Layout.Cols, m.LLD()
	for _, b := range m.Layout.Blocks(m.Grid.prow, m.Grid.pcol) {
		// The column-major block is its row-major transpose.
		copyTransposed(full[b.Row*cols+b.Col:], cols, m.Local[b.LocalRow+b.LocalCol*lld:], lld, b.Cols, b.Rows)
	}
}

// toColMajor is the rows×cols matrix full, stored in order o, in
// column-major order (full itself if it is), and whether it is all finite
// (in the same pass if it is copied).
func toColMajor[T Scalar](full []T, rows, cols int, o order) ([]T, bool) {
	if o == colMajor {
		return full, finite(full)
	}
	cm := make([]T, rows*cols)
	return cm, copyTransposed(cm, rows, full, cols, rows, cols)
}

// transposeTile is the side of the square tiles copyTransposed works in: a
// tile of the source and one of the destination fit in a 32 KiB L1 cache
// together at complex128.
const transposeTile = 32

// copyTransposed copies the r×c matrix src, stored row-major (element
// (i, j) at src[i·lds+j]), into dst stored column-major (at dst[i+j·ldd]),
// and reports whether every element is finite, in one pass as copyFinite
// does (x−x is 0 for a finite x, NaN for NaN and ±Inf). Read the other way
// it copies a column-major c×r matrix into a row-major one. It goes through
// the matrix in square tiles, so that the strided side stays in the cache.
func copyTransposed[T Scalar](dst []T, ldd int, src []T, lds, r, c int) bool {
	var s0, s1 T
	for j0 := 0; j0 < c; j0 += transposeTile {
		j1 := min(j0+transposeTile, c)
		for i0 := 0; i0 < r; i0 += transposeTile {
			for i := i0; i < min(i0+transposeTile, r); i++ {
				row := src[i*lds+j0 : i*lds+j1]
				d := dst[i+j0*ldd:]
				k := 0
				for ; k+2 <= len(row); k += 2 {
					x, y := row[k], row[k+1]
					d[k*ldd], d[(k+1)*ldd] = x, y
					s0 += x - x
					s1 += y - y
				}
				if k < len(row) {
					x := row[k]
					d[k*ldd] = x
					s0 += x - x
				}
			}
		}
	}
	return s0+s1 == 0
}
