//go:build mpi

package dist

/*
#include "scalapack.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// Matrix is a Rows×Cols matrix in the 2-D block-cyclic distribution of its
// grid, in square blocks of Block: Local is this process's part,
// column-major with leading dimension LLD = max(1, local rows).
type Matrix[T Scalar] struct {
	Grid   *Grid
	Layout cyclic.BlockCyclic2D
	Local  []T
	desc   [9]C.int
}

// LLD is the leading dimension of Local.
func (m *Matrix[T]) LLD() int { return m.Layout.LeadingDim(m.Grid.prow) }

// LocalShape is the shape of this process's part.
func (m *Matrix[T]) LocalShape() (rows, cols int) {
	return m.Layout.LocalShape(m.Grid.prow, m.Grid.pcol)
}

// dtypeCode numbers the element types so ranks can compare them.
func dtypeCode[T Scalar]() int {
	switch any(*new(T)).(type) {
	case float32:
		return 1
	case float64:
		return 2
	case complex64:
		return 3
	}
	return 4
}

func dtypeOf[T Scalar]() tensor.Dtype {
	switch any(*new(T)).(type) {
	case float32:
		return tensor.Float32
	case float64:
		return tensor.Float64
	case complex64:
		return tensor.Complex64
	}
	return tensor.Complex128
}

// newMatrix makes the zero rows×cols matrix on g in blocks of nb (the
// caller has agreed the arguments across ranks).
func newMatrix[T Scalar](g *Grid, rows, cols, nb int) (*Matrix[T], error) {
	l := cyclic.BlockCyclic2D{Rows: rows, Cols: cols, MB: nb, NB: nb, P: g.p, Q: g.q}
	m := &Matrix[T]{Grid: g, Layout: l}
	_, lc := m.LocalShape()
	m.Local = make([]T, m.LLD()*lc)
	if err := descInit(&m.desc, rows, cols, nb, nb, g.ctxt, m.LLD()); err != nil {
		return nil, err
	}
	return m, nil
}

// descInit fills desc, the descriptor of a rows×cols matrix in mb×nb
// blocks on the grid of context ctxt, the first block on process (0, 0),
// local arrays with leading dimension lld.
func descInit(desc *[9]C.int, rows, cols, mb, nb int, ctxt C.int, lld int) error {
	var info C.int
	cm, cn, cmb, cnb, zero, clld := C.int(rows), C.int(cols), C.int(mb), C.int(nb), C.int(0), C.int(lld)
	C.descinit_(&desc[0], &cm, &cn, &cmb, &cnb, &zero, &zero, &ctxt, &clld, &info)
	if info != 0 {
		return fmt.Errorf("%w: dist: descinit: argument %d is illegal", ErrEngine, -int(info))
	}
	return nil
}

// beyondCInt reports whether a dimension or block size is beyond the C int
// of ScaLAPACK's descriptors (cut to one, a block of 2³²+3 became 3 there
// while the Go layout kept every column on one process column).
func beyondCInt(dims ...int) bool {
	for _, d := range dims {
		if d > math.MaxInt32 {
			return true
		}
	}
	return false
}

// NewMatrix makes a zero rows×cols matrix on g in nb×nb blocks (nb = 0:
// DefaultBlock). Collective.
func NewMatrix[T Scalar](g *Grid, rows, cols, nb int) (*Matrix[T], error) {
	defer exclusive()()
	if nb == 0 {
		nb = DefaultBlock
	}
	f := failure{}
	if rows < 1 || cols < 1 || nb < 1 || beyondCInt(rows, cols, nb) {
		f.code = badInputCode
	}
	if err := g.agree("NewMatrix", f, matrixNums(rows, cols, nb, dtypeCode[T]())...); err != nil {
		return nil, err
	}
	return newMatrix[T](g, rows, cols, nb)
}

// FromReplicated distributes a rows×cols column-major matrix (leading
// dimension rows) that every rank holds: each rank copies its own blocks,
// no data moves between processes. NaN or Inf in it is an error wrapping
// ErrNonFinite on every rank, found in the same pass. The copies must be
// the same on every rank: each rank reads only the blocks it owns, so a
// difference (a NaN in one rank's copy only, say) outside them goes
// unnoticed. Collective.
func FromReplicated[T Scalar](g *Grid, rows, cols, nb int, full []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromReplicated("FromReplicated", g, rows, cols, nb, full, colMajor, false)
}

// FromReplicatedRowMajor is FromReplicated of a row-major matrix (leading
// dimension cols, as a Gorgonia tensor holds it): each rank copies its own
// blocks straight out of it, transposing tile by tile.
func FromReplicatedRowMajor[T Scalar](g *Grid, rows, cols, nb int, full []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromReplicated("FromReplicatedRowMajor", g, rows, cols, nb, full, rowMajor, false)
}

// FromReplicatedLower is FromReplicated of a square matrix of which only
// the lower triangle is read (the Hermitian A of Cholesky, Potrs, LogDet,
// Potri and Syevd, the factor L of CholSolve and InverseFromFactor): NaN
// or Inf strictly above the diagonal is not an error: the distributed
// matrix holds zeros there. Collective.
func FromReplicatedLower[T Scalar](g *Grid, n, nb int, full []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromReplicated("FromReplicatedLower", g, n, n, nb, full, colMajor, true)
}

// FromReplicatedLowerRowMajor is FromReplicatedLower of a row-major
// matrix.
func FromReplicatedLowerRowMajor[T Scalar](g *Grid, n, nb int, full []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromReplicated("FromReplicatedLowerRowMajor", g, n, n, nb, full, rowMajor, true)
}

// fromReplicated is FromReplicated of full stored in order o; with
// lowerOnly (a square matrix) NaN or Inf strictly above the diagonal is not
// an error, and the strict upper triangle is zeroed.
func fromReplicated[T Scalar](op string, g *Grid, rows, cols, nb int, full []T, o order, lowerOnly bool) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	// Copy before agreeing, so that one AllReduce agrees on the shapes and
	// the elements' finiteness both.
	f := failure{}
	var m *Matrix[T]
	switch {
	case rows < 1 || cols < 1 || nb < 1 || beyondCInt(rows, cols, nb) || len(full) != rows*cols:
		f.code = badInputCode
	case g.closed: // agree says so
	default:
		var err error
		if m, err = newMatrix[T](g, rows, cols, nb); err != nil {
			f.code = engineCode
		} else if ok := m.extract(full, o); lowerOnly {
			if !ok && !m.lowerFinite() {
				f.code = nonFiniteCode
			}
			zeroStrictUpper(m)
		} else if !ok {
			f.code = nonFiniteCode
		}
	}
	if err := g.agree(op, f, matrixNums(rows, cols, nb, dtypeCode[T]())...); err != nil {
		return nil, err
	}
	return m, nil
}

// FromRoot distributes the rows×cols column-major matrix full that rank
// root holds (the other ranks pass nil). NaN or Inf in it is an error
// wrapping ErrNonFinite, found by the root before any data moves.
// Collective.
//
// The data moves by the rule of useGemr2d: through ScaLAPACK's p?gemr2d
// from a 1×1 grid on the root (every element sent once, to its owner), or
// by a broadcast of the whole matrix after which every rank keeps its
// blocks.
func FromRoot[T Scalar](g *Grid, root, rows, cols, nb int, full []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromRoot("FromRoot", g, root, rows, cols, nb, full, colMajor)
}

// FromRootRowMajor is FromRoot of a row-major matrix (leading dimension
// cols). After a broadcast every rank copies its blocks straight out of
// it; through p?gemr2d, which reads column-major arrays only, the root
// makes a column-major copy first (in the pass that checks it).
func FromRootRowMajor[T Scalar](g *Grid, root, rows, cols, nb int, full []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromRoot("FromRootRowMajor", g, root, rows, cols, nb, full, rowMajor)
}

func fromRoot[T Scalar](op string, g *Grid, root, rows, cols, nb int, full []T, o order) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	me := g.comm.Rank()
	viaGemr2d := useGemr2d(g, fromRootMove, wholeBytes[T](rows, cols))
	f := failure{}
	send := full // what the root sends: column-major through p?gemr2d
	if rows < 1 || cols < 1 || nb < 1 || beyondCInt(rows, cols, nb) || root < 0 || root >= g.comm.Size() ||
		(me == root && len(full) != rows*cols) {
		f.code = badInputCode
	} else if me == root {
		ok := false
		if viaGemr2d {
			send, ok = toColMajor(full, rows, cols, o)
		} else {
			ok = finite(full)
		}
		if !ok {
			f.code = nonFiniteCode
		}
	}
	if err := g.agree(op, f, append(matrixNums(rows, cols, nb, dtypeCode[T]()), num{"root", root})...); err != nil {
		return nil, err
	}
	m, err := newMatrix[T](g, rows, cols, nb)
	if err != nil {
		return nil, err
	}
	if viaGemr2d {
		gemr2d(g, rows, cols, send, wholeDesc(g, root, rows, cols), m.Local, m.desc)
		return m, nil
	}
	if me != root {
		send = make([]T, rows*cols)
	}
	buf := make([]T, rows*cols)
	if err := collect(g, collective.Bcast, root, send, buf); err != nil {
		return nil, err
	}
	m.extract(buf, o)
	return m, nil
}

// FromRowBlocks distributes a matrix of cols columns whose rows each rank
// holds a contiguous band of, in rank order (rank 0 the first rows; a rank
// may hold none): band is that rank's rows×cols part, column-major with
// leading dimension rows. NaN or Inf in a band is an error wrapping
// ErrNonFinite, found by its holder before any data moves. Collective.
//
// The data moves by the rule of useGemr2d. Either through p?gemr2d from
// bands that are a block split of the rows (every rank up to the last
// nonempty one holds the same count, that one at most as many, the rest
// none: a block distribution over a size×1 grid), every element sent once
// to its owner; other bands first become the split of ⌈rows/size⌉ rows a
// rank (reband: each run of rows sent once, to the one or few ranks whose
// band of the split holds it, and made column-major on arrival), so no
// rank ever holds more than its band, its new band and its blocks. Or by a
// sum over MPI of the whole matrix (each rank's band placed in zeros),
// after which every rank keeps its blocks.
func FromRowBlocks[T Scalar](g *Grid, cols, nb int, rows int, band []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromRowBlocks("FromRowBlocks", g, cols, nb, rows, band, colMajor)
}

// FromRowBlocksRowMajor is FromRowBlocks of row-major bands (leading
// dimension cols), as a data loader's batches of rows come. Through the
// sum each band is one contiguous piece of the row-major whole, from which
// every rank copies its blocks; through p?gemr2d each rank makes a
// column-major copy of its own band first (for bands that are not the
// block split, the new band, made column-major as its rows arrive).
func FromRowBlocksRowMajor[T Scalar](g *Grid, cols, nb int, rows int, band []T) (*Matrix[T], error) {
	defer exclusive()()
	return fromRowBlocks("FromRowBlocksRowMajor", g, cols, nb, rows, band, rowMajor)
}

func fromRowBlocks[T Scalar](op string, g *Grid, cols, nb int, rows int, band []T, o order) (*Matrix[T], error) {
	if nb == 0 {
		nb = DefaultBlock
	}
	f := failure{}
	switch {
	case rows < 0 || cols < 1 || nb < 1 || beyondCInt(rows, cols, nb) || len(band) != rows*cols:
		f.code = badInputCode
	case !finite(band):
		f.code = nonFiniteCode
	}
	counts, total, first, err := g.bands(op, f, rows, num{"columns", cols}, num{"block size", nb}, num{"element type", dtypeCode[T]()})
	if err != nil {
		return nil, err
	}
	if total < 1 {
		return nil, fmt.Errorf("%w: dist: %s: no rank holds a row", ErrBadInput, op)
	}
	m, err := newMatrix[T](g, total, cols, nb)
	if err != nil {
		return nil, err
	}
	if useGemr2d(g, fromRowBlocksMove, wholeBytes[T](total, cols)) {
		split, cm := counts[0], band
		if isBlockSplit(counts, split) {
			if o == rowMajor {
				cm, _ = toColMajor(band, rows, cols, o) // checked above
			}
		} else {
			to := blockSplit(total, len(counts))
			if cm, err = reband(g, op, counts, to, cols, band, o); err != nil {
				return nil, err
			}
			split, rows = to[0], to[g.comm.Rank()]
		}
		desc := blockDesc(g.columnContext(), total, cols, split, cols, rows)
		gemr2d(g, total, cols, cm, desc, m.Local, m.desc)
		return m, nil
	}
	full := make([]T, total*cols)
	if o == rowMajor {
		copy(full[first*cols:], band)
	} else {
		for j := range cols {
			copy(full[first+j*total:], band[j*rows:(j+1)*rows])
		}
	}
	if err := assembleInPlace(g, collective.AllReduce, 0, full); err != nil {
		return nil, err
	}
	m.extract(full, o)
	return m, nil
}

// blockSplit is the block split of total rows over size ranks: ⌈total/size⌉
// rows a rank, the last nonempty one the rest, the ranks after it none.
func blockSplit(total, size int) []int {
	per := (total + size - 1) / size
	counts := make([]int, size)
	for r := range counts {
		counts[r] = max(0, min(per, total-r*per))
	}
	return counts
}

// isBlockSplit reports whether counts (rows per rank, in rank order) are
// the split of their sum into blocks of split rows, one per rank, the last
// nonempty one possibly shorter.
func isBlockSplit(counts []int, split int) bool {
	left := 0
	for _, c := range counts {
		left += c
	}
	for _, c := range counts {
		if c != min(split, left) {
			return false
		}
		left -= c
	}
	return split > 0
}

// Gather returns the whole matrix (column-major, leading dimension Rows)
// on rank root and nil on the others; root < 0 returns it on every rank.
// Collective.
//
// The data moves by the rule of useGemr2d: through p?gemr2d into a 1×1
// grid on the root (rank 0 for root < 0, which then broadcasts it), or by
// a sum over MPI (Reduce, or AllReduce for root < 0) of each rank's blocks
// placed in a zero matrix.
func (m *Matrix[T]) Gather(root int) ([]T, error) {
	defer exclusive()()
	return m.gather("Gather", root, colMajor)
}

// GatherRowMajor is Gather into a row-major matrix (leading dimension
// Cols), as a Gorgonia tensor holds it. Through the sum every rank places
// its blocks straight into the row-major whole; through p?gemr2d, which
// writes column-major arrays only, the root (rank 0 for root < 0, before
// its broadcast) transposes what it receives.
func (m *Matrix[T]) GatherRowMajor(root int) ([]T, error) {
	defer exclusive()()
	return m.gather("GatherRowMajor", root, rowMajor)
}

func (m *Matrix[T]) gather(op string, root int, o order) ([]T, error) {
	g := m.Grid
	f := failure{}
	if root >= g.comm.Size() {
		f.code = badInputCode
	}
	if err := g.agree(op, f, append(matrixNums(m.Layout.Rows, m.Layout.Cols, m.Layout.MB, dtypeCode[T]()), num{"root", max(root, -1)})...); err != nil {
		return nil, err
	}
	rows, cols := m.Layout.Rows, m.Layout.Cols
	me := g.comm.Rank()
	mv := gatherOneMove
	if root < 0 {
		mv = gatherAllMove
	}
	if useGemr2d(g, mv, wholeBytes[T](rows, cols)) {
		to := max(root, 0)
		var full []T
		if me == to || root < 0 {
			full = make([]T, rows*cols)
		}
		gemr2d(g, rows, cols, m.Local, m.desc, full, wholeDesc(g, to, rows, cols))
		if o == rowMajor && me == to {
			rm := make([]T, rows*cols)
			copyTransposed(rm, cols, full, rows, cols, rows)
			full = rm
		}
		if root >= 0 {
			return full, nil
		}
		all := make([]T, rows*cols)
		if err := collect(g, collective.Bcast, 0, full, all); err != nil {
			return nil, err
		}
		return all, nil
	}
	full := make([]T, rows*cols)
	m.insert(full, o)
	kind := collective.AllReduce
	if root >= 0 {
		kind = collective.Reduce
	}
	if err := assembleInPlace(g, kind, root, full); err != nil {
		return nil, err
	}
	if root >= 0 && me != root {
		return nil, nil
	}
	return full, nil
}

// collect runs a Bcast, or one of reband's messages (a Send of send to
// rank root, a Recv into recv from it), over the grid's ranks. (The sums
// of the moves are assembleInPlace's.)
func collect[T Scalar](g *Grid, kind collective.Kind, root int, send, recv []T) error {
	call, err := hostCall(kind, root, dtypeOf[T](), send, recv)
	if err != nil {
		return err
	}
	switch kind {
	case collective.Send:
		call.Dest, call.Tag, call.Recv = []int{root}, rebandTag, nil
	case collective.Recv:
		call.Src, call.Tag, call.Send = []int{root}, rebandTag, nil
	}
	return g.comm.Do(call)
}

// assemble is the sum of matrices put together from disjoint parts
// (every element is one rank's, the others send zeros): it adds the bit
// patterns as integers, so that every value arrives as its owner sent it.
// A float sum gives the same numbers but for −0, which (−0) + (+0) turns
// into +0.
func assemble[T Scalar](g *Grid, kind collective.Kind, root int, send, recv []T) error {
	var zero T
	switch any(zero).(type) {
	case float32, complex64:
		return collectBits(g, kind, root, bitsOf[int32](send), bitsOf[int32](recv))
	}
	return collectBits(g, kind, root, bitsOf[int64](send), bitsOf[int64](recv))
}

// assembleChunkBytes bounds the pieces of assembleInPlace's sum (a
// variable for the tests).
var assembleChunkBytes = 16 << 20

// assembleInPlace is assemble into whole itself (on every rank for
// AllReduce, on root for Reduce), a piece of at most assembleChunkBytes at
// a time through one buffer of that size, so that a rank holds the whole
// matrix once and not twice (the parts it sends and their sum). Every rank
// walks the same pieces: whole has the same length everywhere.
func assembleInPlace[T Scalar](g *Grid, kind collective.Kind, root int, whole []T) error {
	var x T
	chunk := max(assembleChunkBytes/int(unsafe.Sizeof(x)), 1)
	buf := make([]T, min(chunk, len(whole)))
	keep := kind == collective.AllReduce || g.comm.Rank() == root
	for lo := 0; lo < len(whole); lo += chunk {
		hi := min(lo+chunk, len(whole))
		if err := assemble(g, kind, root, whole[lo:hi], buf[:hi-lo]); err != nil {
			return err
		}
		if keep {
			copy(whole[lo:hi], buf[:hi-lo])
		}
	}
	return nil
}

// bitsOf is xs as the integers of its element size (two per complex value).
func bitsOf[I int32 | int64, T Scalar](xs []T) []I {
	if len(xs) == 0 {
		return nil
	}
	var x T
	var i I
	return unsafe.Slice((*I)(unsafe.Pointer(unsafe.SliceData(xs))), len(xs)*int(unsafe.Sizeof(x)/unsafe.Sizeof(i)))
}

// collectBits is the integer sum of assemble.
func collectBits[I int32 | int64](g *Grid, kind collective.Kind, root int, send, recv []I) error {
	var i I
	dt := tensor.Int64
	if unsafe.Sizeof(i) == 4 {
		dt = tensor.Int32
	}
	call, err := hostCall(kind, root, dt, send, recv)
	if err != nil {
		return err
	}
	return g.comm.Do(call)
}

// hostCall is the call of kind (a sum where it reduces) on the host slices
// send and recv of dtype dt.
func hostCall[E any](kind collective.Kind, root int, dt tensor.Dtype, send, recv []E) (*collective.Call, error) {
	sb, err := sharding.NewHostBuffer(send)
	if err != nil {
		return nil, err
	}
	rb, err := sharding.NewHostBuffer(recv)
	if err != nil {
		return nil, err
	}
	return &collective.Call{Kind: kind, Op: collective.Sum, Root: root, Dtype: dt, Count: max(len(send), len(recv)),
		Send: []sharding.Buffer{sb}, Recv: []sharding.Buffer{rb}, Name: "dist." + kind.String()}, nil
}

// Clone is a copy of m on the same grid (local, no communication).
func (m *Matrix[T]) Clone() *Matrix[T] {
	c := *m
	c.Local = append([]T(nil), m.Local...)
	return &c
}

// finite reports whether every local element is finite.
func finite[T Scalar](xs []T) bool {
	return kernels.CheckFinite(len(xs), 1, xs, max(1, len(xs)), false) == nil
}

// copyFinite copies src into dst (as long) and reports whether every
// element is finite, in one pass over the memory (a copy and then a scan
// read src twice: 1.9× the time of the copy alone at 16 M float64 on the
// build VM, against 1.0–1.1× for this loop).
func copyFinite[T Scalar](dst, src []T) bool {
	switch s := any(src).(type) {
	case []float32:
		return copyFiniteReals(any(dst).([]float32), s)
	case []float64:
		return copyFiniteReals(any(dst).([]float64), s)
	case []complex64:
		return copyFiniteReals(reals[float32](dst), reals[float32](src))
	}
	return copyFiniteReals(reals[float64](dst), reals[float64](src))
}

// reals is the complex slice xs as the slice of its interleaved real and
// imaginary parts.
func reals[F float32 | float64, T Scalar](xs []T) []F {
	return unsafe.Slice((*F)(unsafe.Pointer(unsafe.SliceData(xs))), 2*len(xs))
}

// copyFiniteReals is copyFinite of reals: x−x is 0 for a finite x and NaN
// for NaN and ±Inf, so the sum of all of them is 0 exactly when all are
// finite; four partial sums keep four additions in flight.
func copyFiniteReals[F float32 | float64](dst, src []F) bool {
	dst = dst[:len(src)]
	var s0, s1, s2, s3 F
	i := 0
	for ; i+4 <= len(src); i += 4 {
		x, y := src[i:i+4:i+4], dst[i:i+4:i+4]
		y[0], y[1], y[2], y[3] = x[0], x[1], x[2], x[3]
		s0 += x[0] - x[0]
		s1 += x[1] - x[1]
		s2 += x[2] - x[2]
		s3 += x[3] - x[3]
	}
	for ; i < len(src); i++ {
		dst[i] = src[i]
		s0 += src[i] - src[i]
	}
	return s0+s1+s2+s3 == 0
}

// Fill sets every element of m to f(row, col) (global indices), each
// process its own: no communication.
func (m *Matrix[T]) Fill(f func(r, c int) T) {
	forEachLocal(m, func(r, c, i int) { m.Local[i] = f(r, c) })
}

// Sum is Σ f(row, col, value) over every element of m, summed over the
// grid: the same on every rank. Collective.
func (m *Matrix[T]) Sum(f func(r, c int, v T) float64) (float64, error) {
	defer exclusive()()
	s := 0.0
	forEachLocal(m, func(r, c, i int) { s += f(r, c, m.Local[i]) })
	got, err := allReduce(m.Grid.comm, collective.Sum, []float64{s})
	if err != nil {
		return 0, err
	}
	return got[0], nil
}

// Dot is Σ Re(a∘b̄) over the whole matrices, on every rank; a and b must
// have the same shape and layout on the same grid. Collective.
func Dot[T Scalar](a, b *Matrix[T]) (float64, error) {
	defer exclusive()()
	f := failure{}
	if b == nil || a.Grid != b.Grid || a.Layout != b.Layout {
		f.code = badInputCode
	}
	if err := a.Grid.agree("Dot", f, num{"rows", a.Layout.Rows}, num{"columns", a.Layout.Cols}, num{"block size", a.Layout.MB}); err != nil {
		return 0, err
	}
	s := 0.0
	forEachLocal(a, func(_, _, i int) { s += realDot(a.Local[i], b.Local[i]) })
	got, err := allReduce(a.Grid.comm, collective.Sum, []float64{s})
	if err != nil {
		return 0, err
	}
	return got[0], nil
}

// realDot is Re(x·ȳ).
func realDot[T Scalar](x, y T) float64 {
	switch v := any(x).(type) {
	case float32:
		return float64(v) * float64(any(y).(float32))
	case float64:
		return v * any(y).(float64)
	case complex64:
		w := any(y).(complex64)
		return float64(real(v))*float64(real(w)) + float64(imag(v))*float64(imag(w))
	}
	v, w := any(x).(complex128), any(y).(complex128)
	return real(v)*real(w) + imag(v)*imag(w)
}
