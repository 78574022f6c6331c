//go:build mpi

package distops

import (
	"fmt"

	"github.com/mgla/mgla/dist"
	G "gorgonia.org/gorgonia"
)

// FromRowBlocks is the grid value (n×cols, or a length-n vector) of the
// rows that the ranks hold in bands, in rank order: band is this rank's
// rows×cols host node (or length-rows vector), the bands adding up to n
// rows (checked at run time, the same error on every rank). This is the
// natural output of data loading: no rank needs the whole matrix. block is
// the block size of the 2-D block-cyclic distribution (0:
// dist.DefaultBlock). A rank may hold no rows (a 0×cols band) as long as
// some rank holds one; with more ranks than rows, Distribute is simpler.
// The data moves by dist.FromRowBlocks, so by its rule: below 4 processes, for a
// matrix up to 512 MiB, through a sum of the whole matrix on every rank;
// otherwise through p?gemr2d, bands that are not the block split of
// ⌈n/size⌉ rows a rank first moved into it, so that no rank holds more
// than its band and its blocks. The gradient is each rank's band of the
// grid gradient (dist.Matrix.RowBlock, the same rule).
func (o *Ops) FromRowBlocks(band *G.Node, n, block int) (*G.Node, error) {
	if err := o.checkNodes(kFromRowBlocks, block, band); err != nil {
		return nil, err
	}
	if _, _, grid := gridOf(band); grid || band.Dims() < 1 || band.Dims() > 2 || n < 1 || band.Shape()[0] > n {
		return nil, fmt.Errorf("%w: distops: FromRowBlocks: want a host band of at most %d rows, %v is %v", dist.ErrBadInput, n, band.Name(), band.Shape())
	}
	if block == 0 {
		block = dist.DefaultBlock
	}
	return applyOp(&op{kind: kFromRowBlocks, dt: band.Dtype(), arity: 1, g: o.grid, nb: block, onGrid: true, n: n, root: -1, in: nodeShapes(band), graph: band.Graph()}, band)
}

// Distribute is the grid value of the host matrix (or vector) full that
// every rank holds (each rank keeps its own blocks: no data moves), in
// block×block blocks (0: dist.DefaultBlock). Every rank holds the same
// value, so the gradient each rank gets is the whole gradient: the grid
// gradient gathered to every rank.
func (o *Ops) Distribute(full *G.Node, block int) (*G.Node, error) {
	if err := o.checkNodes(kDistribute, block, full); err != nil {
		return nil, err
	}
	if _, _, grid := gridOf(full); grid || full.Dims() < 1 || full.Dims() > 2 {
		return nil, fmt.Errorf("%w: distops: Distribute: want a host matrix or vector, %v is %v", dist.ErrBadInput, full.Name(), full.Shape())
	}
	if block == 0 {
		block = dist.DefaultBlock
	}
	return o.distribute(full, block, -1)
}

// distribute is the Distribute node of the host node full: every rank's
// copy (root < 0) or root's.
func (o *Ops) distribute(full *G.Node, block, root int) (*G.Node, error) {
	return applyOp(&op{kind: kDistribute, dt: full.Dtype(), arity: 1, g: o.grid, nb: block, onGrid: true, root: root, in: nodeShapes(full), graph: full.Graph()}, full)
}

// Gather is the host value of the grid value x: on every rank for root <
// 0, else on rank root (the other ranks get zeros of the shape). The
// gradient is distributed again: from every rank's copy (which the
// data-parallel model makes the same), or from root's.
func (o *Ops) Gather(x *G.Node, root int) (*G.Node, error) {
	if err := o.checkNodes(kGather, 0, x); err != nil {
		return nil, err
	}
	g, nb, grid := gridOf(x)
	switch {
	case !grid:
		return nil, fmt.Errorf("%w: distops: Gather: %v is no grid value", dist.ErrBadInput, x.Name())
	case g != o.grid:
		return nil, fmt.Errorf("%w: distops: Gather: %v is on another grid", dist.ErrBadInput, x.Name())
	case root >= o.grid.Comm().Size():
		return nil, fmt.Errorf("%w: distops: Gather: root %d of %d ranks", dist.ErrBadInput, root, o.grid.Comm().Size())
	}
	if x.Op() == nil {
		var err error
		// The GridInput node prepare makes (the same op, so one node):
		// a grid input read by Gather and by another op has one consumer,
		// whose gradient is the sum of theirs.
		if x, err = o.applyOn(kGridInput, nb, true, x); err != nil {
			return nil, err
		}
	}
	return applyOp(&op{kind: kGather, dt: x.Dtype(), arity: 1, g: o.grid, nb: nb, onGrid: true, root: max(root, -1), graph: x.Graph()}, x)
}
