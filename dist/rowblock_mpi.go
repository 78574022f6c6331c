//go:build mpi

package dist

import (
	"fmt"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/kernels"
)

// RowBlock is the inverse of FromRowBlocks: this rank's band of rows of m,
// rows of them, the bands in rank order (rank 0 the first rows; a rank may
// hold none) and adding up to m's rows; column-major with leading
// dimension rows. Collective.
//
// It moves data as FromRowBlocks does: when the bands are the block split
// of the rows and useGemr2d says so, through p?gemr2d into the size×1 grid
// (every element sent once, to its band's owner); otherwise the whole
// matrix comes to every rank (Gather(-1)), which keeps its band.
func (m *Matrix[T]) RowBlock(rows int) ([]T, error) {
	g := m.Grid
	cols := m.Layout.Cols
	f := failure{}
	if rows < 0 {
		f.code = badInputCode
	}
	counts, total, first, err := g.bands("RowBlock", f, rows, m.Layout.Rows, cols, m.Layout.MB, dtypeCode[T]())
	if err != nil {
		return nil, err
	}
	if total != m.Layout.Rows {
		return nil, fmt.Errorf("%w: dist: RowBlock: the bands hold %d rows, the matrix %d", ErrBadInput, total, m.Layout.Rows)
	}
	band := make([]T, rows*cols)
	if split := int(counts[0]); isBlockSplit(counts, split) && useGemr2d(g, fromRowBlocksMove, wholeBytes[T](total, cols)) {
		gemr2d(g, total, cols, m.Local, m.desc, band, blockDesc(g.columnContext(), total, cols, split, cols, rows))
		return band, nil
	}
	full, err := m.Gather(-1)
	if err != nil {
		return nil, err
	}
	for j := range cols {
		copy(band[j*rows:(j+1)*rows], full[first+j*total:])
	}
	return band, nil
}

// bands agrees on every rank's band of rows (rows here; f is this rank's
// verdict and nums the numbers the ranks must agree on, as for agree) in
// one AllReduce: the counts in rank order, their total and the first row
// of this rank's band.
func (g *Grid) bands(op string, f failure, rows int, nums ...int) (counts []float64, total, first int, err error) {
	counts = make([]float64, g.comm.Size())
	counts[g.comm.Rank()] = float64(max(rows, 0))
	if err := g.agreeMax(op, f, counts, nums...); err != nil {
		return nil, 0, 0, err
	}
	for r, c := range counts {
		if r == g.comm.Rank() {
			first = total
		}
		total += int(c)
	}
	return counts, total, first, nil
}

// FirstBadDiagonal is the 1-based index of the first diagonal element of m
// that is zero, NaN or Inf (0 if none), the same on every rank: what a
// solve with m as a triangular factor must refuse (p?potrs does not check).
// Collective: one sum over the grid of a vector of min(rows, cols)
// elements.
func (m *Matrix[T]) FirstBadDiagonal() (int, error) {
	n := min(m.Layout.Rows, m.Layout.Cols)
	bad := make([]float64, n)
	forEachDiagonal(m, func(d, i int) {
		if m.Local[i] == 0 || kernels.CheckFinite(1, 1, m.Local[i:i+1], 1, false) != nil {
			bad[d] = 1
		}
	})
	got, err := allReduce(m.Grid.comm, collective.Sum, bad)
	if err != nil {
		return 0, err
	}
	for i, b := range got {
		if b != 0 {
			return i + 1, nil
		}
	}
	return 0, nil
}
