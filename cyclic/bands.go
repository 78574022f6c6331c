package cyclic

import "fmt"

// BandMoves is the plan that turns one split of the rows of a matrix of
// cols columns into contiguous bands, device d holding from[d] rows (in
// device order: device 0 the first rows; a device may hold none), into
// another, device d holding to[d] rows. Each move is the run of rows that
// one source band and one destination band share, between band shards
// stored column-major with leading dimension their row count, whole width
// (SrcCol = DstCol = 0, Cols = cols); moves of a device to itself are
// listed too. The moves come in increasing global row, so at most one per
// pair of devices, and the sources, like the destinations, in
// nondecreasing order: a list every device can walk in the same order,
// taking part in the moves it is an end of, without waiting in a cycle.
//
// from and to must have the same length and add up to the same total.
func BandMoves(from, to []int, cols int) ([]Move, error) {
	if len(from) != len(to) || len(from) == 0 {
		return nil, fmt.Errorf("cyclic: bands over %d and %d devices", len(from), len(to))
	}
	if cols < 1 {
		return nil, fmt.Errorf("cyclic: bands of %d columns", cols)
	}
	sum := func(counts []int) (int, error) {
		total := 0
		for d, c := range counts {
			if c < 0 {
				return 0, fmt.Errorf("cyclic: device %d holds %d rows", d, c)
			}
			total += c
		}
		return total, nil
	}
	nf, err := sum(from)
	if err != nil {
		return nil, err
	}
	nt, err := sum(to)
	if err != nil {
		return nil, err
	}
	if nf != nt {
		return nil, fmt.Errorf("cyclic: the source bands hold %d rows, the destination bands %d", nf, nt)
	}
	var moves []Move
	src, dst := 0, 0           // the devices whose bands hold row r
	srcStart, dstStart := 0, 0 // the first rows of their bands
	for r := 0; r < nf; {
		for srcStart+from[src] == r { // empty, or used up
			srcStart += from[src]
			src++
		}
		for dstStart+to[dst] == r {
			dstStart += to[dst]
			dst++
		}
		end := min(srcStart+from[src], dstStart+to[dst])
		moves = append(moves, Move{
			SrcDev: src, SrcRow: r - srcStart,
			DstDev: dst, DstRow: r - dstStart,
			Rows: end - r, Cols: cols,
		})
		r = end
	}
	return moves, nil
}

// CopyRect copies the rows×cols matrix src (column-major, leading
// dimension lds) into dst (leading dimension ldd): one copy when both are
// contiguous, one per column otherwise.
func CopyRect[T any](dst []T, ldd int, src []T, lds int, rows, cols int) {
	if rows == lds && rows == ldd {
		copy(dst[:rows*cols], src[:rows*cols])
		return
	}
	for j := range cols {
		copy(dst[j*ldd:j*ldd+rows], src[j*lds:j*lds+rows])
	}
}
