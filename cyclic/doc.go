// Package cyclic is the layout plan of mgla: pure functions, no I/O, that say
// where every column tile of a distributed matrix lives and which rectangles
// must move to change one distribution into another.
//
// A matrix of R rows and C columns is spread over the ndev devices of a mesh in
// one of four layouts (see Layout):
//
//   - Replicated: every device holds the whole matrix.
//   - RowBlocks: device d holds a contiguous band of rows.
//   - ColBlocks: device d holds a contiguous band of columns.
//   - ColCyclic(T): the 1-D column block-cyclic layout of cuSolverMg. Column
//     tile g (columns g·T … g·T+T-1, the last one possibly narrower) lives on
//     device g mod ndev, and each device stores its tiles one after the other,
//     in increasing g.
//
// Every device stores its shard column-major with the leading dimension equal
// to its local row count, so one column of a shard is contiguous; in the
// column layouts a tile (or a run of adjacent tiles) is one contiguous block.
//
// The plan works for any R, C ≥ 1, T ≥ 1 and ndev ≥ 1: a device may own zero
// tiles, the last tile may be partial, and nothing is ever padded. A Plan is a
// list of Moves (rectangles copied from one device's shard to another's);
// ExecuteHost runs it on host memory, one copy per contiguous piece, and the
// GPU backend runs the same Moves as peer copies.
//
// For ScaLAPACK it also owns the 2-D block-cyclic distribution over a P×Q
// process grid (BlockCyclic2D, NumLocal, IndexOwner, IndexLocal, IndexGlobal,
// NearSquareGrid): owner and local position of every element and block, for
// any shape, block size and grid, including processes that own nothing.
//
// The package owns the layouts (Layout and its kinds) and the plans between
// them (Plan, Move, Piece). It imports only the standard library; every
// other package of mgla that moves matrices builds on it.
package cyclic
