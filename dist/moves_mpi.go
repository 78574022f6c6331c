//go:build mpi

package dist

/*
#include "scalapack.h"
*/
import "C"

import "unsafe"

// The two ways data gets in and out of the 2-D block-cyclic distribution
// (FromRoot, FromRowBlocks, RowBlock, Gather): ScaLAPACK's p?gemr2d, which
// sends every element once from its owner to its new owner, or a
// collective of the whole matrix (a broadcast, or a sum of matrices that
// are zero outside each rank's blocks) followed by local copies
// (Matrix.extract, Matrix.insert), which moves the whole matrix through
// every rank but in one large MPI call. Row bands that are not the block
// split p?gemr2d reads and writes go through it too, moved into (or out
// of) the block split first by reband, point to point.

// moves names a way of moving data in and out; see useGemr2d.
type moves int

const (
	autoMoves   moves = iota // the rule of useGemr2d
	sumMoves                 // a broadcast or a sum over MPI
	gemr2dMoves              // p?gemr2d
)

// forceMoves overrides the rule (tests and benchmarks set it, the same on
// every rank).
var forceMoves = autoMoves

// move names a data move, for the rule.
type move int

const (
	fromRootMove      move = iota // FromRoot
	fromRowBlocksMove             // FromRowBlocks and RowBlock
	gatherOneMove                 // Gather to one rank
	gatherAllMove                 // Gather to every rank
)

// gemr2dMinRanks is, for each move, the smallest number of processes from
// which it goes through p?gemr2d: the first process count at which
// p?gemr2d measured faster on a quiet machine with a core per rank.
//
// Evidence: BenchmarkGather and BenchmarkScatter, N = 4000 float64 in
// 64×64 blocks, near-square grids, 3 iterations of each path in turns,
// medians. Time of the sum or broadcast over that of p?gemr2d (above 1:
// p?gemr2d faster), wall clock.
//
// Quiet: a 16-core Intel Xeon (the lent GPU host's CPUs, Ubuntu's Open MPI
// 4.1.6 and OpenBLAS 0.3.26, Debian's ScaLAPACK 2.2.1 carried by make
// cpu-bundle), one rank per core, load average 2–4, 2026-11-25:
//
//	processes        1      2      4      8
//	Gather(0)        0.35   0.39   0.88   2.34
//	Gather(all)      0.36   0.30   0.68   1.08
//	FromRoot         0.41   0.95   2.51   1.77
//	FromRowBlocks    0.73   0.70   3.42
//
// The build VM (2 vCPUs shared with other sessions, load average 14–26, so
// 3 and 4 processes oversubscribe it; wall clock, CPU time of rank 0 in
// brackets) put the crossovers lower for the gathers:
//
//	processes        1             2             3             4
//	Gather(0)        0.14 (0.08)   0.18 (0.37)   1.51 (1.20)   3.16 (1.92)
//	Gather(all)      0.31 (0.33)   0.04 (0.09)   0.90 (1.74)   1.64 (1.12)
//	FromRoot         0.10 (0.09)   0.45 (0.60)   0.89 (0.50)   0.73 (1.06)
//	FromRowBlocks                  0.17 (0.38)   1.29 (6.15)   0.96 (6.03)
//
// p?gemr2d is slow on one or two processes (it packs and unpacks every
// block through BLACS messages even then), while the collectives of the
// whole matrix grow with the process count. The rule follows the quiet
// machine; between 4 and 8 processes the gathers were not measured, so
// they switch at 8. At N = 2000 on one process the order was the same
// (Gather(0): 0.07 on the VM), so the size enters the rule only through
// memory (sumMoveMaxBytes). Bands that are not the block split follow the
// same rule (fromRowBlocksMove): reband moves only the rows that change
// rank, a few of them for a data loader's split (BenchmarkRowBands).
var gemr2dMinRanks = [...]int{
	fromRootMove:      4,
	fromRowBlocksMove: 4,
	gatherOneMove:     8,
	gatherAllMove:     8,
}

// sumMoveMaxBytes is the largest matrix the sum moves take: they hold the
// whole matrix on every rank for a moment, so a larger one goes through
// p?gemr2d whatever the process count, and a matrix that needs the grid's
// memory is never whole on every rank (512 MiB: float64 N = 8192).
var sumMoveMaxBytes = 512 << 20

// useGemr2d says whether mv of a matrix of wholeBytes on g goes through
// p?gemr2d (forceMoves, else gemr2dRule).
func useGemr2d(g *Grid, mv move, wholeBytes int) bool {
	switch forceMoves {
	case sumMoves:
		return false
	case gemr2dMoves:
		return true
	}
	return gemr2dRule(mv, g.comm.Size(), wholeBytes)
}

// gemr2dRule: p?gemr2d from gemr2dMinRanks processes on, or for a matrix
// larger than sumMoveMaxBytes. Every rank decides alike (the shape is
// agreed).
func gemr2dRule(mv move, ranks, wholeBytes int) bool {
	return ranks >= gemr2dMinRanks[mv] || wholeBytes > sumMoveMaxBytes
}

// wholeBytes is the size of a rows×cols matrix of T.
func wholeBytes[T Scalar](rows, cols int) int {
	var x T
	return rows * cols * int(unsafe.Sizeof(x))
}

// wholeDesc is the descriptor of a rows×cols matrix held whole by rank
// root, in one block on the 1×1 grid there (collective: the grid is made
// on first use); on the other ranks one outside any grid (context −1).
func wholeDesc(g *Grid, root, rows, cols int) [9]C.int {
	return blockDesc(g.singleContext(root), rows, cols, rows, cols, rows)
}

// blockDesc is the descriptor of a rows×cols matrix in mb×nb blocks on the
// grid of context ctxt (−1: this process is not in it), the first block on
// process (0, 0), local leading dimension lld: what descinit makes, without
// its checks of the arguments, which its callers meet by construction
// (the check would be an error on one rank only).
func blockDesc(ctxt C.int, rows, cols, mb, nb, lld int) [9]C.int {
	return [9]C.int{1, ctxt, C.int(rows), C.int(cols), C.int(mb), C.int(nb), 0, 0, C.int(max(1, lld))}
}
