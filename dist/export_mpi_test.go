//go:build mpi

package dist

// ScaLAPACKIndex exposes scalapackIndex to the tests.
var ScaLAPACKIndex = scalapackIndex

// DirectPotrs is the baseline of BenchmarkPotrs: p?potrf then p?potrs
// called straight on preallocated copies l and x of a and b, no checks.
func DirectPotrs[T Scalar](a, b, l, x *Matrix[T]) int {
	DirectCopies(a, b, l, x)
	if info := potrf(l); info != 0 {
		return info
	}
	return potrs(l, x)
}

// Moves is a way of moving data in and out, for SetMoves.
type Moves = moves

// PotrsExtras is what Potrs does besides p?potrf and p?potrs: the checked
// copies, the agreement before and the two after (on success).
func PotrsExtras[T Scalar](a, b *Matrix[T]) error {
	if _, _, err := potrsCopies(a, b); err != nil {
		return err
	}
	if err := a.Grid.agree("Potrs", failure{}); err != nil {
		return err
	}
	return a.Grid.agree("Potrs", failure{})
}

// DirectCopies is what DirectPotrs does besides p?potrf and p?potrs.
func DirectCopies[T Scalar](a, b, l, x *Matrix[T]) {
	copy(l.Local, a.Local)
	copy(x.Local, b.Local)
}

// The ways of moving data in and out.
const (
	AutoMoves   = autoMoves
	SumMoves    = sumMoves
	Gemr2dMoves = gemr2dMoves
)

// SetMoves makes FromRoot, FromRowBlocks and Gather move data the way m
// says (call it with the same m on every rank), until restore is called.
func SetMoves(m moves) (restore func()) {
	old := forceMoves
	forceMoves = m
	return func() { forceMoves = old }
}

// ScratchLen is the length of g's scratch array as a []T (-1 if it holds
// none of T).
func ScratchLen[T Scalar](g *Grid) int {
	s, ok := g.scratch.([]T)
	if !ok {
		return -1
	}
	return cap(s)
}

// SetAssembleChunk sets the pieces of the sum moves to bytes until restore
// is called.
func SetAssembleChunk(bytes int) (restore func()) {
	old := assembleChunkBytes
	assembleChunkBytes = bytes
	return func() { assembleChunkBytes = old }
}
