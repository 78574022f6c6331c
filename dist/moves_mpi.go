//go:build mpi

package dist

/*
#include "scalapack.h"
*/
import "C"

// The two ways data gets in and out of the 2-D block-cyclic distribution
// (FromRoot, FromRowBlocks, Gather): ScaLAPACK's p?gemr2d, which sends
// every element once from its owner to its new owner, or a collective of
// the whole matrix (a broadcast, or a sum of matrices that are zero
// outside each rank's blocks) followed by local copies (cyclic.Extract,
// cyclic.Insert), which moves the whole matrix through every rank but in
// one large MPI call.

// Moves names a way of moving data in and out; see useGemr2d.
type moves int

const (
	autoMoves   moves = iota // the rule of useGemr2d
	sumMoves                 // a broadcast or a sum over MPI
	gemr2dMoves              // p?gemr2d
)

// forceMoves overrides the rule (tests and benchmarks set it, the same on
// every rank).
var forceMoves = autoMoves

// gemr2dMinRanks is the smallest number of processes from which the data
// moves go through p?gemr2d.
//
// Evidence (BenchmarkMoves, float64, 64×64 blocks, the build VM's 2
// shared cores, medians): see BENCHMARKS.md "Distributed dense".
const gemr2dMinRanks = 3

// useGemr2d says whether a data move of elems elements on g goes through
// p?gemr2d: from gemr2dMinRanks processes on. The number of elements does
// not enter the rule (yet): see gemr2dMinRanks.
func useGemr2d(g *Grid, elems int) bool {
	switch forceMoves {
	case sumMoves:
		return false
	case gemr2dMoves:
		return true
	}
	return g.comm.Size() >= gemr2dMinRanks
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
