//go:build mpi

package dist

import (
	"fmt"
	"math"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
)

// The operations. Each checks its inputs on every rank, agrees the verdict
// (so every rank returns the same error and none enters ScaLAPACK alone),
// and leaves its inputs untouched (but CholeskyInPlace, which says so):
// the routines work on copies, made in the same pass as the check for NaN
// and Inf, in the grid's scratch array where the copy is thrown away
// (Potrs, LogDet, Potri, Syevd). One
// AllReduce agrees all the checks before ScaLAPACK is called, and one each
// outcome of a routine (which ScaLAPACK reports on some ranks only).

// squareFailure is the local verdict on an input that must be square;
// finite says whether its local elements are.
func squareFailure[T Scalar](a *Matrix[T], finite bool) failure {
	switch {
	case a.Layout.Rows != a.Layout.Cols:
		return failure{code: badInputCode}
	case !finite:
		return failure{code: nonFiniteCode}
	}
	return failure{}
}

// squareNums are the numbers every rank must agree on for a square input.
func squareNums[T Scalar](a *Matrix[T]) []num {
	return matrixNums(a.Layout.Rows, a.Layout.Cols, a.Layout.MB, dtypeCode[T]())
}

// workArray is where a factorization works on its input's elements.
type workArray int

const (
	scratchArray workArray = iota // a copy in the grid's scratch array: the factor is thrown away
	newArray                      // a copy in a new array: the factor is kept
	inputArray                    // the input's own array: nothing reads the input again
)

// copySquare is the checked work matrix of a for a factorization: a copy
// in the grid's scratch array or a new one, or a itself (inputArray), nil
// if a is not square; and the local verdict on it.
func copySquare[T Scalar](a *Matrix[T], where workArray) (*Matrix[T], failure) {
	if a.Layout.Rows != a.Layout.Cols {
		return nil, failure{code: badInputCode}
	}
	var c *Matrix[T]
	ok := false
	switch where {
	case scratchArray:
		c, ok = workCopy(a)
	case newArray:
		c = &Matrix[T]{Grid: a.Grid, Layout: a.Layout, Local: make([]T, len(a.Local)), desc: a.desc}
		ok = copyFinite(c.Local, a.Local)
	default:
		c, ok = a, finite(a.Local)
	}
	if !ok && c.lowerFinite() {
		// NaN or Inf only above the diagonal, which is not read: zeroed
		// in a copy, so that no ScaLAPACK routine meets it.
		ok = true
		if where != inputArray {
			zeroStrictUpper(c)
		}
	}
	return c, squareFailure(a, ok)
}

// errNil is the error for a nil matrix, which has no grid to agree on: the
// other ranks' calls fail when the communicator's timeout passes.
func errNil(op string) error {
	return fmt.Errorf("%w: dist: %s: nil matrix", ErrBadInput, op)
}

// outcome is the local verdict on INFO of a factorization.
func outcome(info int) failure {
	switch {
	case info > 0:
		return failure{code: notSPDCode, minor: info}
	case info < 0:
		return failure{code: engineCode}
	}
	return failure{}
}

// factor is the Cholesky factor of a (lower triangle; the strict upper one
// keeps a's), in the array where says, after the checks.
func factor[T Scalar](op string, a *Matrix[T], where workArray) (*Matrix[T], error) {
	if a == nil {
		return nil, errNil(op)
	}
	l, f := copySquare(a, where)
	if err := a.Grid.agree(op, f, squareNums(a)...); err != nil {
		return nil, err
	}
	if err := a.Grid.agree(op, outcome(potrf(l))); err != nil {
		return nil, err
	}
	return l, nil
}

// forEachLocal calls fn with the global and local position of every local
// element of m.
func forEachLocal[T Scalar](m *Matrix[T], fn func(r, c, i int)) {
	lr, lc := m.LocalShape()
	g, lld := m.Grid, m.LLD()
	for j := range lc {
		c := cyclic.IndexGlobal(j, m.Layout.NB, g.pcol, g.q)
		for i := range lr {
			fn(cyclic.IndexGlobal(i, m.Layout.MB, g.prow, g.p), c, i+j*lld)
		}
	}
}

// forEachDiagonal calls fn with the global index d and the local position i
// of every diagonal entry of m that this process holds (a pass over the
// local columns, not the local elements).
func forEachDiagonal[T Scalar](m *Matrix[T], fn func(d, i int)) {
	lr, lc := m.LocalShape()
	g, lld := m.Grid, m.LLD()
	for j := range lc {
		c := cyclic.IndexGlobal(j, m.Layout.NB, g.pcol, g.q)
		if c < m.Layout.Rows && cyclic.IndexOwner(c, m.Layout.MB, g.p) == g.prow {
			if i := cyclic.IndexLocal(c, m.Layout.MB, g.p); i < lr {
				fn(c, i+j*lld)
			}
		}
	}
}

// Cholesky is the lower Cholesky factor L of the Hermitian positive
// definite a (A = L·Lᴴ; only a's lower triangle is read), with zeros above
// the diagonal.
func Cholesky[T Scalar](a *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	return cholesky(a, newArray)
}

// CholeskyInPlace is Cholesky in a's own local array, for a matrix that
// nothing reads afterwards (one distributed for this call): it saves
// Cholesky's copy, a new array of a's local size. It returns a, holding L
// with zeros above the diagonal. After ErrBadInput or ErrNonFinite a is
// unchanged; after ErrNotPositiveDefinite or an engine error its elements
// are unspecified (p?potrf stopped part-way). The errors are Cholesky's,
// on every rank.
func CholeskyInPlace[T Scalar](a *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	return cholesky(a, inputArray)
}

func cholesky[T Scalar](a *Matrix[T], where workArray) (*Matrix[T], error) {
	l, err := factor("Cholesky", a, where)
	if err != nil {
		return nil, err
	}
	zeroStrictUpper(l)
	return l, nil
}

// copyRHS is the checked copy of the right-hand side b for the n×n l on
// l's grid (nil if b does not fit), and the local verdict on it.
func copyRHS[T Scalar](l, b *Matrix[T]) (*Matrix[T], failure) {
	if b == nil || b.Grid != l.Grid || b.Layout.Rows != l.Layout.Rows || b.Layout.MB != l.Layout.MB {
		return nil, failure{code: badInputCode}
	}
	x := &Matrix[T]{Grid: b.Grid, Layout: b.Layout, Local: make([]T, len(b.Local)), desc: b.desc}
	if !copyFinite(x.Local, b.Local) {
		return x, failure{code: nonFiniteCode}
	}
	return x, failure{}
}

// rhsCols is the number of columns of b to agree on (-1 for none).
func rhsCols[T Scalar](b *Matrix[T]) num {
	if b == nil {
		return num{"right-hand side's columns", -1}
	}
	return num{"right-hand side's columns", b.Layout.Cols}
}

// Potrs solves A·X = B for the Hermitian positive definite a (lower
// triangle read); b has a's rows and block size.
func Potrs[T Scalar](a, b *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	l, x, err := potrsCopies(a, b)
	if err != nil {
		return nil, err
	}
	if err := a.Grid.agree("Potrs", outcome(potrf(l))); err != nil {
		return nil, err
	}
	return x, solve("Potrs", l, x)
}

// potrsCopies is what Potrs does before ScaLAPACK: the checked copies of
// a (in the grid's scratch array) and b, and the agreement on both.
func potrsCopies[T Scalar](a, b *Matrix[T]) (l, x *Matrix[T], err error) {
	if a == nil {
		return nil, nil, errNil("Potrs")
	}
	l, fa := copySquare(a, scratchArray)
	x, fb := copyRHS(a, b)
	f := failure{code: max(fa.code, fb.code)}
	if err := a.Grid.agree("Potrs", f, append(squareNums(a), rhsCols(b))...); err != nil {
		return nil, nil, err
	}
	return l, x, nil
}

// CholSolve solves L·Lᴴ·X = B for the lower Cholesky factor l (from
// Cholesky). A zero on l's diagonal is an error wrapping
// ErrNotPositiveDefinite with the order of the first one.
func CholSolve[T Scalar](l, b *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	return cholSolve("CholSolve", l, b, true)
}

// PotrsFromFactor is CholSolve for a factor l that this package made
// (Cholesky's, or the factor a graph shares between Potrs, Potri and
// LogDet): it skips CholSolve's NaN/Inf scan of l, which such a factor
// passes by construction (p?potrf stops at a non-positive or NaN pivot).
func PotrsFromFactor[T Scalar](l, b *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	return cholSolve("PotrsFromFactor", l, b, false)
}

// cholSolve solves with the factor l, checking l for NaN/Inf with scan.
func cholSolve[T Scalar](op string, l, b *Matrix[T], scan bool) (*Matrix[T], error) {
	if l == nil {
		return nil, errNil(op)
	}
	fl := squareFailure(l, !scan || finite(l.Local) || l.lowerFinite())
	if fl.code == okCode {
		// A zero pivot: L·Lᴴ is singular, not positive definite (as for
		// InverseFromFactor and on one process), which the solve itself
		// would only show as Inf.
		if k := firstZeroDiagonal(l); k > 0 {
			fl = failure{code: notSPDCode, minor: k}
		}
	}
	x, fb := copyRHS(l, b)
	f := fl
	if fb.code > f.code {
		f = fb
	}
	if err := l.Grid.agree(op, f, append(squareNums(l), rhsCols(b))...); err != nil {
		return nil, err
	}
	return x, solve(op, l, x)
}

// solve overwrites x with the solution of L·Lᴴ·X = X, l from potrf, after
// the checks.
func solve[T Scalar](op string, l, x *Matrix[T]) error {
	f := failure{}
	if info := potrs(l, x); info != 0 {
		f.code = engineCode
	} else if !finite(x.Local) { // the inputs were finite: beyond the range
		f.code = resultNonFiniteCode
	}
	return l.Grid.agree(op, f)
}

// LogDet is log det A of the Hermitian positive definite a: 2·Σ log Lᵢᵢ
// over the Cholesky factor's diagonal, summed over the grid; the same on
// every rank.
func LogDet[T Scalar](a *Matrix[T]) (float64, error) {
	defer exclusive()()
	l, err := factor("LogDet", a, scratchArray)
	if err != nil {
		return 0, err
	}
	return logDetFromFactor(l)
}

// LogDetFromFactor is log det A = 2·Σ log Re(L_ii) for the Cholesky factor
// l of A (Cholesky's, or any lower factor with a positive diagonal), the
// same on every rank. Collective: one sum over the grid.
func LogDetFromFactor[T Scalar](l *Matrix[T]) (float64, error) {
	defer exclusive()()
	return logDetFromFactor(l)
}

// logDetFromFactor is LogDetFromFactor inside a call that holds engineMu.
func logDetFromFactor[T Scalar](l *Matrix[T]) (float64, error) {
	if l == nil {
		return 0, errNil("LogDetFromFactor")
	}
	sum := 0.0
	forEachDiagonal(l, func(_, i int) { sum += 2 * math.Log(realPart(l.Local[i])) })
	got, err := allReduce(l.Grid.comm, collective.Sum, []float64{sum})
	if err != nil {
		return 0, err
	}
	return got[0], nil
}

// Potri is A⁻¹ of the Hermitian positive definite a, both triangles.
func Potri[T Scalar](a *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	return potriOf(a)
}

// potriOf is Potri inside a call that holds engineMu.
func potriOf[T Scalar](a *Matrix[T]) (*Matrix[T], error) {
	x, err := factor("Potri", a, scratchArray)
	if err != nil {
		return nil, err
	}
	return inverse("Potri", x)
}

// InverseFromFactor is (L·Lᴴ)⁻¹ for the lower Cholesky factor l (from
// Cholesky; its strict upper triangle is not read), both triangles: what
// Potri returns for A = L·Lᴴ, without factoring A again. l is left as it
// was. NaN or Inf in l's lower triangle is an error wrapping
// ErrNonFinite, as for CholSolve; a zero on its diagonal
// (a singular factor: L·Lᴴ is not positive definite) is an error wrapping
// ErrNotPositiveDefinite with the order of the first one.
func InverseFromFactor[T Scalar](l *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	return inverseFromFactor(l)
}

// inverseFromFactor is InverseFromFactor inside a call that holds engineMu.
func inverseFromFactor[T Scalar](l *Matrix[T]) (*Matrix[T], error) {
	const op = "InverseFromFactor"
	if l == nil {
		return nil, errNil(op)
	}
	x, f := copySquare(l, scratchArray)
	if f.code == okCode {
		// p?potri (p?trtri) reports some zero of the diagonal, the largest
		// order of those that the processes find first: name the first.
		if k := firstZeroDiagonal(l); k > 0 {
			f = failure{code: notSPDCode, minor: k}
		}
	}
	if err := l.Grid.agree(op, f, squareNums(l)...); err != nil {
		return nil, err
	}
	return inverse(op, x)
}

// firstZeroDiagonal is the order (one-based global index) of the first zero
// on the diagonal of the square m among this process's elements, 0 if
// there is none.
func firstZeroDiagonal[T Scalar](m *Matrix[T]) int {
	g, lay, lld := m.Grid, m.Layout, m.LLD()
	for d := range lay.Rows {
		if cyclic.IndexOwner(d, lay.MB, g.p) != g.prow || cyclic.IndexOwner(d, lay.NB, g.q) != g.pcol {
			continue
		}
		if m.Local[cyclic.IndexLocal(d, lay.MB, g.p)+cyclic.IndexLocal(d, lay.NB, g.q)*lld] == 0 {
			return d + 1
		}
	}
	return 0
}

// inverse is (L·Lᴴ)⁻¹, both triangles, for the lower Cholesky factor x in
// the grid's scratch array (after the checks; x is overwritten).
func inverse[T Scalar](op string, x *Matrix[T]) (*Matrix[T], error) {
	f := outcome(potri(x))
	// Keep the lower triangle with half the diagonal, then add its adjoint.
	zeroStrictUpper(x)
	if f.code == okCode && !finite(x.Local) { // finite inputs: beyond the range
		f.code = resultNonFiniteCode
	}
	if err := x.Grid.agree(op, f); err != nil {
		return nil, err
	}
	halveDiagonal(x)
	inv := x.Clone()
	addAdjoint(x, inv)
	return inv, nil
}

// Syevd is the eigendecomposition A = Z·diag(w)·Zᴴ of the Hermitian a
// (lower triangle read): w ascending, the same on every rank, and with
// vectors the distributed Z (nil otherwise: ScaLAPACK's p?syevd always
// computes them, so values alone cost the same). a's block size must be at
// least 1; ScaLAPACK needs square blocks, which Matrix always has.
func Syevd[T Scalar](a *Matrix[T], vectors bool) ([]float64, *Matrix[T], error) {
	defer exclusive()()
	if a == nil {
		return nil, nil, errNil("Syevd")
	}
	work, f := copySquare(a, scratchArray)
	if err := a.Grid.agree("Syevd", f, squareNums(a)...); err != nil {
		return nil, nil, err
	}
	z, err := newMatrix[T](a.Grid, a.Layout.Rows, a.Layout.Cols, a.Layout.MB)
	if err != nil {
		return nil, nil, err
	}
	w, info := syevd(work, z)
	f = failure{}
	if info != 0 {
		f.code = engineCode
	} else if !finite(w) { // finite input: an eigenvalue beyond the range
		f.code = resultNonFiniteCode
	}
	if err := a.Grid.agree("Syevd", f); err != nil {
		return nil, nil, err
	}
	// Rank 0's values, so that every rank holds the same bits.
	agreed := make([]float64, len(w))
	if err := collect(a.Grid, collective.Bcast, 0, w, agreed); err != nil {
		return nil, nil, err
	}
	if !vectors {
		z = nil
	}
	return agreed, z, nil
}

func realPart[T Scalar](x T) float64 {
	switch v := any(x).(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	case complex64:
		return float64(real(v))
	case complex128:
		return real(v)
	}
	return math.NaN()
}
