//go:build mpi

package dist

import (
	"fmt"
	"slices"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
)

// RowBlock is the inverse of FromRowBlocks: this rank's band of rows of m,
// rows of them, the bands in rank order (rank 0 the first rows; a rank may
// hold none) and adding up to m's rows; column-major with leading
// dimension rows. Collective.
//
// It moves data as FromRowBlocks does: when useGemr2d says so, through
// p?gemr2d into the block split of the rows over the size×1 grid (every
// element sent once, to its band's owner), followed, for bands that are
// not the block split, by reband into them; otherwise the whole matrix
// comes to every rank (Gather(-1)), which keeps its band.
func (m *Matrix[T]) RowBlock(rows int) ([]T, error) {
	defer exclusive()()
	g := m.Grid
	cols := m.Layout.Cols
	f := failure{}
	if rows < 0 {
		f.code = badInputCode
	}
	counts, total, first, err := g.bands("RowBlock", f, rows, matrixNums(m.Layout.Rows, cols, m.Layout.MB, dtypeCode[T]())...)
	if err != nil {
		return nil, err
	}
	if total != m.Layout.Rows {
		return nil, fmt.Errorf("%w: dist: RowBlock: the bands hold %d rows, the matrix %d", ErrBadInput, total, m.Layout.Rows)
	}
	if useGemr2d(g, fromRowBlocksMove, wholeBytes[T](total, cols)) {
		split := counts[0]
		even := isBlockSplit(counts, split)
		to := counts
		if !even {
			to = blockSplit(total, len(counts))
			split = to[0]
		}
		mine := to[g.comm.Rank()]
		band := make([]T, mine*cols)
		gemr2d(g, total, cols, m.Local, m.desc, band, blockDesc(g.columnContext(), total, cols, split, cols, mine))
		if even {
			return band, nil
		}
		return reband(g, "RowBlock", to, counts, cols, band, colMajor)
	}
	full, err := m.gather("Gather", -1, colMajor)
	if err != nil {
		return nil, err
	}
	band := make([]T, rows*cols)
	for j := range cols {
		copy(band[j*rows:(j+1)*rows], full[first+j*total:])
	}
	return band, nil
}

// rebandTag is the tag of reband's messages.
const rebandTag = 1

// reband moves the rows of a matrix of cols columns from bands of from[r]
// rows on rank r (rank order; this rank's is band, stored in order o) into
// bands of to[r] rows, and returns this rank's new band, column-major (as
// p?gemr2d reads it). Collective: every rank walks the moves of
// cyclic.BandMoves in the same order (so no two ranks wait on each other),
// copying the runs of rows it keeps and sending or receiving the others,
// one message per run, in order o (a row-major run, or a whole
// column-major band, is one piece of its band and goes as it is; other
// column-major runs are packed first). Each rank holds its old band, its
// new one (the old one itself if it is column-major and does not change)
// and at most one run besides. The ranks agree on the outcome before any
// returns, so none goes on alone.
func reband[T Scalar](g *Grid, op string, from, to []int, cols int, band []T, o order) ([]T, error) {
	me := g.comm.Rank()
	moves, err := cyclic.BandMoves(from, to, cols)
	if err != nil { // the counts are agreed: a bug
		return nil, fmt.Errorf("%w: dist: %s: %v", ErrBadInput, op, err)
	}
	// A rank whose column-major band stays as it is (the first ranks of a
	// data loader's split, say) returns it, copying nothing.
	keep := o == colMajor && slices.ContainsFunc(moves, func(mv cyclic.Move) bool {
		return mv.SrcDev == me && mv.DstDev == me && mv.Rows == from[me] && mv.Rows == to[me]
	})
	out := band
	if !keep {
		out = make([]T, to[me]*cols)
	}
	for _, mv := range moves {
		switch {
		case mv.SrcDev == me && mv.DstDev == me:
			if !keep {
				copyRows(out, to[me], mv.DstRow, band, from[me], mv.SrcRow, mv.Rows, cols, o)
			}
		case mv.SrcDev == me:
			run := band[mv.SrcRow*cols : (mv.SrcRow+mv.Rows)*cols]
			if o == colMajor && mv.Rows < from[me] {
				run = make([]T, mv.Rows*cols)
				copyRows(run, mv.Rows, 0, band, from[me], mv.SrcRow, mv.Rows, cols, o)
			}
			err = collect(g, collective.Send, mv.DstDev, run, nil)
		case mv.DstDev == me:
			if o == colMajor && mv.Rows == to[me] {
				err = collect(g, collective.Recv, mv.SrcDev, nil, out)
				break
			}
			run := make([]T, mv.Rows*cols)
			if err = collect(g, collective.Recv, mv.SrcDev, nil, run); err == nil {
				copyRows(out, to[me], mv.DstRow, run, mv.Rows, 0, mv.Rows, cols, o)
			}
		}
		if err != nil {
			break
		}
	}
	f := failure{}
	if err != nil {
		f.code = engineCode
	}
	agreed := g.agree(op, f)
	if err != nil {
		return nil, fmt.Errorf("dist: %s: moving rows between ranks: %w", op, err)
	}
	if agreed != nil {
		return nil, agreed
	}
	return out, nil
}

// copyRows copies rows [rs, rs+k) of the band src (ns rows, cols columns,
// stored in order o) into rows [rd, rd+k) of the column-major band dst (nd
// rows).
func copyRows[T Scalar](dst []T, nd, rd int, src []T, ns, rs, k, cols int, o order) {
	if o == rowMajor {
		copyTransposed(dst[rd:], nd, src[rs*cols:], cols, k, cols)
		return
	}
	cyclic.CopyRect(dst[rd:], nd, src[rs:], ns, k, cols)
}

// bands agrees on every rank's band of rows (rows here; f is this rank's
// verdict and nums the numbers the ranks must agree on, as for agree) in
// one AllReduce: the counts in rank order, their total and the first row
// of this rank's band.
func (g *Grid) bands(op string, f failure, rows int, nums ...num) (counts []int, total, first int, err error) {
	agreed := make([]float64, g.comm.Size())
	agreed[g.comm.Rank()] = float64(max(rows, 0))
	if err := g.agreeMax(op, f, agreed, nums...); err != nil {
		return nil, 0, 0, err
	}
	counts = make([]int, len(agreed))
	for r, c := range agreed {
		if r == g.comm.Rank() {
			first = total
		}
		counts[r] = int(c)
		total += counts[r]
	}
	return counts, total, first, nil
}

// FirstBadDiagonal is the 1-based index of the first diagonal element of m
// that is zero, NaN or Inf (0 if none), the same on every rank: what a
// solve with m as a triangular factor must refuse (p?potrs does not check).
// Collective: one sum over the grid of a vector of min(rows, cols)
// elements.
func (m *Matrix[T]) FirstBadDiagonal() (int, error) {
	defer exclusive()()
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
