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
// the matrix in square tiles, so that the strided side stays in the cache,
// and within a tile eight source rows at a time, so that each destination
// column gets eight contiguous elements per step (one cache line at
// float64) rather than one: about twice as fast as a row at a time.
func copyTransposed[T Scalar](dst []T, ldd int, src []T, lds, r, c int) bool {
	var s0, s1, s2, s3 T
	for j0 := 0; j0 < c; j0 += transposeTile {
		j1 := min(j0+transposeTile, c)
		for i0 := 0; i0 < r; i0 += transposeTile {
			i1 := min(i0+transposeTile, r)
			i := i0
			for ; i+8 <= i1; i += 8 {
				r0 := src[i*lds+j0 : i*lds+j1]
				n := len(r0)
				r1, r2, r3 := src[(i+1)*lds+j0:][:n], src[(i+2)*lds+j0:][:n], src[(i+3)*lds+j0:][:n]
				r4, r5, r6, r7 := src[(i+4)*lds+j0:][:n], src[(i+5)*lds+j0:][:n], src[(i+6)*lds+j0:][:n], src[(i+7)*lds+j0:][:n]
				for k := range r0 {
					d := dst[i+(j0+k)*ldd:][:8]
					w, x, y, z := r0[k], r1[k], r2[k], r3[k]
					d[0], d[1], d[2], d[3] = w, x, y, z
					s0 += (w - w) + (x - x)
					s1 += (y - y) + (z - z)
					w, x, y, z = r4[k], r5[k], r6[k], r7[k]
					d[4], d[5], d[6], d[7] = w, x, y, z
					s2 += (w - w) + (x - x)
					s3 += (y - y) + (z - z)
				}
			}
			for ; i < i1; i++ {
				for k, x := range src[i*lds+j0 : i*lds+j1] {
					dst[i+(j0+k)*ldd] = x
					s0 += x - x
				}
			}
		}
	}
	return s0+s1+s2+s3 == 0
}
