package cyclic

import (
	"fmt"
	"math"
)

// This file is the 2-D block-cyclic distribution of ScaLAPACK: a P×Q grid of
// processes, row blocks of MB rows dealt round-robin over the P process
// rows and column blocks of NB columns over the Q process columns, the
// first block on process row 0 and column 0 (RSRC = CSRC = 0). Each process
// stores its part column-major with leading dimension max(1, its local row
// count), the way ScaLAPACK's descriptors (LLD) expect it.

// NumLocal is the number of the n global indices that process p of nprocs
// holds when blocks of nb are dealt round-robin starting at process 0: what
// ScaLAPACK's NUMROC(n, nb, p, 0, nprocs) returns. It is zero for a process
// that owns no block.
func NumLocal(n, nb, p, nprocs int) int {
	blocks := n / nb
	count := (blocks / nprocs) * nb
	switch extra := blocks % nprocs; {
	case p < extra:
		count += nb
	case p == extra:
		count += n % nb
	}
	return count
}

// IndexOwner is the process (row or column of the grid) that holds global
// index g: ScaLAPACK's INDXG2P with source process 0.
func IndexOwner(g, nb, nprocs int) int { return (g / nb) % nprocs }

// IndexLocal is the local index of global index g on its owner:
// ScaLAPACK's INDXG2L (zero-based).
func IndexLocal(g, nb, nprocs int) int { return (g/(nb*nprocs))*nb + g%nb }

// IndexGlobal is the global index of local index l on process p:
// ScaLAPACK's INDXL2G (zero-based).
func IndexGlobal(l, nb, p, nprocs int) int { return (l/nb)*nb*nprocs + p*nb + l%nb }

// BlockCyclic2D is the 2-D block-cyclic distribution of a Rows×Cols matrix
// in MB×NB blocks over a P×Q process grid.
type BlockCyclic2D struct {
	Rows, Cols int
	MB, NB     int
	P, Q       int
}

// Validate reports a distribution that cannot exist.
func (d BlockCyclic2D) Validate() error {
	switch {
	case d.Rows < 0 || d.Cols < 0:
		return fmt.Errorf("cyclic: matrix shape %d×%d must not be negative", d.Rows, d.Cols)
	case d.MB < 1 || d.NB < 1:
		return fmt.Errorf("cyclic: block size %d×%d must be at least 1×1", d.MB, d.NB)
	case d.P < 1 || d.Q < 1:
		return fmt.Errorf("cyclic: process grid %d×%d must be at least 1×1", d.P, d.Q)
	case d.MB > math.MaxInt/d.P || d.NB > math.MaxInt/d.Q:
		return fmt.Errorf("cyclic: blocks of %d×%d dealt over a %d×%d grid overflow an int", d.MB, d.NB, d.P, d.Q)
	}
	return nil
}

// LocalShape is the shape of the part process (prow, pcol) holds.
func (d BlockCyclic2D) LocalShape(prow, pcol int) (rows, cols int) {
	return NumLocal(d.Rows, d.MB, prow, d.P), NumLocal(d.Cols, d.NB, pcol, d.Q)
}

// LeadingDim is the leading dimension of process row prow's local arrays:
// max(1, local rows), as ScaLAPACK requires of LLD.
func (d BlockCyclic2D) LeadingDim(prow int) int {
	return max(1, NumLocal(d.Rows, d.MB, prow, d.P))
}

// Owner is the process (row, column) that holds global element (r, c).
func (d BlockCyclic2D) Owner(r, c int) (prow, pcol int) {
	return IndexOwner(r, d.MB, d.P), IndexOwner(c, d.NB, d.Q)
}

// Local is the position of global element (r, c) in its owner's local array.
func (d BlockCyclic2D) Local(r, c int) (lr, lc int) {
	return IndexLocal(r, d.MB, d.P), IndexLocal(c, d.NB, d.Q)
}

// Blocks lists the blocks process (prow, pcol) holds as pieces (Dev is the
// row-major rank prow·Q + pcol, the BLACS default order), in column-major
// order of their local positions. It is empty for a process that owns
// nothing.
func (d BlockCyclic2D) Blocks(prow, pcol int) []Piece {
	var ps []Piece
	for c := pcol * d.NB; c < d.Cols; c += d.NB * d.Q {
		for r := prow * d.MB; r < d.Rows; r += d.MB * d.P {
			lr, lc := d.Local(r, c)
			ps = append(ps, Piece{
				Dev: prow*d.Q + pcol, Row: r, Col: c,
				Rows: min(d.MB, d.Rows-r), Cols: min(d.NB, d.Cols-c),
				LocalRow: lr, LocalCol: lc,
			})
		}
	}
	return ps
}

// Extract copies the part process (prow, pcol) holds out of a full
// column-major matrix global (leading dimension ld) into local, whose
// leading dimension is d.LeadingDim(prow).
func Extract[T any](d BlockCyclic2D, prow, pcol int, global []T, ld int, local []T) {
	lld := d.LeadingDim(prow)
	for _, b := range d.Blocks(prow, pcol) {
		for j := range b.Cols {
			src := global[b.Row+(b.Col+j)*ld:][:b.Rows]
			copy(local[b.LocalRow+(b.LocalCol+j)*lld:], src)
		}
	}
}

// Insert copies the part process (prow, pcol) holds from local (leading
// dimension d.LeadingDim(prow)) into its place in the full column-major
// matrix global (leading dimension ld).
func Insert[T any](d BlockCyclic2D, prow, pcol int, local []T, global []T, ld int) {
	lld := d.LeadingDim(prow)
	for _, b := range d.Blocks(prow, pcol) {
		for j := range b.Cols {
			src := local[b.LocalRow+(b.LocalCol+j)*lld:][:b.Rows]
			copy(global[b.Row+(b.Col+j)*ld:], src)
		}
	}
}

// NearSquareGrid is the P×Q grid for nprocs processes with P ≤ Q and P the
// largest divisor of nprocs not above its square root (1×3 for 3, 2×2 for 4,
// 2×3 for 6).
func NearSquareGrid(nprocs int) (p, q int) {
	p = 1
	for f := 1; f*f <= nprocs; f++ {
		if nprocs%f == 0 {
			p = f
		}
	}
	return p, nprocs / p
}
