//go:build mpi

package dist

import (
	"fmt"
	"math"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels"
)

// Gradients of the distributed ops, with the formulas of the single-process
// ops (ops/linalg_grad.go): every gradient Ā is symmetric, correct along
// symmetric perturbations of A; sym(M) = ½(M + Mᵀ). The products run on
// the grid (PBLAS p?gemm, p?tran), the solves through p?potrs. Real dtypes
// only, as on one process.

// gradOperands are the operands of a gradient: mats (those from optional
// on may be nil, as a gradient input that is zero), the rule their shapes
// must follow (called when every operand given is on one grid with one row
// count and block size), numbers every rank must agree on besides the
// shapes (such as the lengths of eigenvalue vectors), and which operands
// are read by their lower triangle only (A, a factor L and its L̄: NaN or
// Inf above the diagonal is not an error there, as in the forward ops).
type gradOperands[T Scalar] struct {
	mats     []*Matrix[T]
	optional int
	shapes   func() bool
	nums     []int
	lower    []bool
}

// checkGrad is the agreed verdict on the operands of a gradient: present,
// a real dtype, one grid and block size, one row count, and their own shape
// rule. A bad operand on one rank is the same error on every rank; with
// no operand at all there is no grid to agree on (errNil).
func checkGrad[T Scalar](op string, o gradOperands[T]) error {
	var ref *Matrix[T]
	for _, m := range o.mats {
		if m != nil {
			ref = m
			break
		}
	}
	if ref == nil {
		return errNil(op)
	}
	g := ref.Grid
	f := failure{}
	if dtypeCode[T]() > 2 {
		f.code = badInputCode
	}
	nums := []num{{"element type", dtypeCode[T]()}}
	for i, v := range o.nums {
		nums = append(nums, num{fmt.Sprintf("length of vector operand %d", i+1), v})
	}
	consistent := true
	for i, m := range o.mats {
		rows, cols := num{fmt.Sprintf("rows of operand %d", i+1), 0}, num{fmt.Sprintf("columns of operand %d", i+1), 0}
		switch {
		case m == nil && i >= o.optional:
			rows.v, cols.v = -2, -2 // absent
		case m == nil || m.Grid != g || m.Layout.MB != ref.Layout.MB || m.Layout.Rows != ref.Layout.Rows:
			f.code, consistent = badInputCode, false
			rows.v, cols.v = -1, -1
		default:
			if !finite(m.Local) && !(i < len(o.lower) && o.lower[i] && m.lowerFinite()) {
				f.code = max(f.code, nonFiniteCode)
			}
			rows.v, cols.v = m.Layout.Rows, m.Layout.Cols
		}
		nums = append(nums, rows, cols)
	}
	if consistent && o.shapes != nil && !o.shapes() {
		f.code = badInputCode
	}
	if err := g.agree(op, f, nums...); err != nil {
		if dtypeCode[T]() > 2 {
			return fmt.Errorf("%w (dist: %s of a complex matrix: %v)", ErrComplexGradient, op, err)
		}
		return err
	}
	return nil
}

// square reports whether m is square.
func square[T Scalar](m *Matrix[T]) bool { return m.Layout.Rows == m.Layout.Cols }

// solveGradOperands are those of PotrsGrad and CholSolveGrad: a square
// factor, and the forward result and its gradient of one shape.
func solveGradOperands[T Scalar](l, x, xbar *Matrix[T]) gradOperands[T] {
	return gradOperands[T]{mats: []*Matrix[T]{l, x, xbar}, optional: 3, lower: []bool{true},
		shapes: func() bool { return square(l) && x.Layout.Cols == xbar.Layout.Cols }}
}

// sameSquareOperands are a square forward result and its gradient.
func sameSquareOperands[T Scalar](m, mbar *Matrix[T]) gradOperands[T] {
	return gradOperands[T]{mats: []*Matrix[T]{m, mbar}, optional: 2,
		shapes: func() bool { return square(m) && square(mbar) }}
}

// PotrsGrad is the gradient of X = A⁻¹B: B̄ = CholSolve(L, X̄) and
// Ā = −½(B̄Xᵀ + XB̄ᵀ), with L = Cholesky(A) and X the forward result.
func PotrsGrad[T Scalar](l, x, xbar *Matrix[T]) (abar, bbar *Matrix[T], err error) {
	defer exclusive()()
	if err := checkGrad("PotrsGrad", solveGradOperands(l, x, xbar)); err != nil {
		return nil, nil, err
	}
	if bbar, err = cholSolve("CholSolve", l, xbar, true); err != nil {
		return nil, nil, err
	}
	n := l.Layout.Rows
	if abar, err = newMatrix[T](l.Grid, n, n, l.Layout.MB); err != nil {
		return nil, nil, err
	}
	gemm('N', 'T', T(-0.5), bbar, x, 0, abar)
	gemm('N', 'T', T(-0.5), x, bbar, 1, abar)
	if err := finiteGradient("PotrsGrad", abar); err != nil {
		return nil, nil, err
	}
	return abar, bbar, nil
}

// CholSolveGrad is the gradient of X = (L·Lᵀ)⁻¹B: B̄ = CholSolve(L, X̄)
// and L̄ = −tril((B̄Xᵀ + XB̄ᵀ)·tril(L)) (L's strict upper triangle is not
// read, so its gradient is zero), with X the forward result.
func CholSolveGrad[T Scalar](l, x, xbar *Matrix[T]) (lbar, bbar *Matrix[T], err error) {
	defer exclusive()()
	if err := checkGrad("CholSolveGrad", solveGradOperands(l, x, xbar)); err != nil {
		return nil, nil, err
	}
	if bbar, err = cholSolve("CholSolve", l, xbar, true); err != nil {
		return nil, nil, err
	}
	// (B̄Xᵀ + XB̄ᵀ)·L = B̄·(LᵀX)ᵀ + X·(LᵀB̄)ᵀ: no N×N×N product.
	lo := lowerCopy(l)
	n, k := l.Layout.Rows, x.Layout.Cols
	u, err := newMatrix[T](l.Grid, n, k, l.Layout.MB)
	if err != nil {
		return nil, nil, err
	}
	w := u.Clone()
	gemm('T', 'N', 1, lo, x, 0, u)
	gemm('T', 'N', 1, lo, bbar, 0, w)
	if lbar, err = newMatrix[T](l.Grid, n, n, l.Layout.MB); err != nil {
		return nil, nil, err
	}
	gemm('N', 'T', -1, bbar, u, 0, lbar)
	gemm('N', 'T', -1, x, w, 1, lbar)
	zeroStrictUpper(lbar)
	if err := finiteGradient("CholSolveGrad", lbar); err != nil {
		return nil, nil, err
	}
	return lbar, bbar, nil
}

// CholeskyGrad is the gradient of A = L·Lᵀ:
// Ā = sym(L⁻ᵀ·Φ(Lᵀ·tril(L̄))·L⁻¹), Φ taking the lower triangle and halving
// the diagonal (Murray 2016, "Differentiation of the Cholesky
// decomposition"); l is the forward result and lbar its gradient (its
// strict upper triangle is ignored).
func CholeskyGrad[T Scalar](l, lbar *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	operands := sameSquareOperands(l, lbar)
	operands.lower = []bool{true, true} // tril(L), tril(L̄)
	if err := checkGrad("CholeskyGrad", operands); err != nil {
		return nil, err
	}
	lo := lowerCopy(l)
	p := lo.Clone()
	gemm('T', 'N', 1, lo, lowerCopy(lbar), 0, p)
	zeroStrictUpper(p)
	halveDiagonal(p)
	trsm('L', 'T', lo, p) // L⁻ᵀ·P
	trsm('R', 'N', lo, p) // ·L⁻¹
	abar := p.Clone()
	tran(0.5, p, 0.5, abar)
	if err := finiteGradient("CholeskyGrad", abar); err != nil {
		return nil, err
	}
	return abar, nil
}

// lowerCopy is tril(m).
func lowerCopy[T Scalar](m *Matrix[T]) *Matrix[T] {
	c := m.Clone()
	zeroStrictUpper(c)
	return c
}

// zeroStrictUpper clears the strict upper triangle of m: in each local
// column (global column c) the local rows whose global rows are above c,
// which are the first NumLocal(c) of them.
func zeroStrictUpper[T Scalar](m *Matrix[T]) {
	lr, lc := m.LocalShape()
	g, lld := m.Grid, m.LLD()
	for j := range lc {
		c := cyclic.IndexGlobal(j, m.Layout.NB, g.pcol, g.q)
		above := min(cyclic.NumLocal(c, m.Layout.MB, g.prow, g.p), lr)
		clear(m.Local[j*lld : j*lld+above])
	}
}

// lowerFinite reports whether the elements on and below the diagonal of m
// that this process holds are all finite: the part of a Hermitian or
// lower triangular input that is read.
func (m *Matrix[T]) lowerFinite() bool {
	lr, lc := m.LocalShape()
	g, lld := m.Grid, m.LLD()
	for j := range lc {
		c := cyclic.IndexGlobal(j, m.Layout.NB, g.pcol, g.q)
		above := min(cyclic.NumLocal(c, m.Layout.MB, g.prow, g.p), lr)
		if !finite(m.Local[j*lld+above : j*lld+lr]) {
			return false
		}
	}
	return true
}

// halveDiagonal divides the diagonal entries of m that this process holds
// by two.
func halveDiagonal[T Scalar](m *Matrix[T]) {
	forEachDiagonal(m, func(_, i int) { m.Local[i] /= 2 })
}

// PotriGrad is the gradient of C = A⁻¹: Ā = −C·sym(C̄)·C.
func PotriGrad[T Scalar](c, cbar *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	if err := checkGrad("PotriGrad", sameSquareOperands(c, cbar)); err != nil {
		return nil, err
	}
	s := cbar.Clone()
	tran(0.5, cbar, 0.5, s)
	t := s.Clone()
	gemm('N', 'N', 1, c, s, 0, t)
	abar := s
	gemm('N', 'N', -1, t, c, 0, abar)
	if err := finiteGradient("PotriGrad", abar); err != nil {
		return nil, err
	}
	return abar, nil
}

// LogDetGrad is the gradient of log det A: Ā = ḡ·A⁻¹.
func LogDetGrad[T Scalar](a *Matrix[T], gbar float64) (*Matrix[T], error) {
	defer exclusive()()
	return logDetGrad("LogDetGrad", a, gbar, potriOf[T])
}

// LogDetGradFromFactor is LogDetGrad from the lower Cholesky factor l of A
// (from Cholesky, as Potrs and LogDet use it): Ā = ḡ·(L·Lᵀ)⁻¹ through
// InverseFromFactor, the same matrix as LogDetGrad(A, ḡ) without factoring
// A again.
func LogDetGradFromFactor[T Scalar](l *Matrix[T], gbar float64) (*Matrix[T], error) {
	defer exclusive()()
	return logDetGrad("LogDetGradFromFactor", l, gbar, inverseFromFactor[T])
}

// logDetGrad is ḡ·inv(m) after the checks of a gradient.
func logDetGrad[T Scalar](op string, m *Matrix[T], gbar float64, inv func(*Matrix[T]) (*Matrix[T], error)) (*Matrix[T], error) {
	if err := checkGrad(op, gradOperands[T]{mats: []*Matrix[T]{m}, optional: 1, lower: []bool{true}, shapes: func() bool { return square(m) }}); err != nil {
		return nil, err
	}
	abar, err := inv(m)
	if err != nil {
		return nil, err
	}
	f := fromFloat[T](gbar)
	for i := range abar.Local {
		abar.Local[i] *= f
	}
	if err := finiteGradient(op, abar); err != nil {
		return nil, err
	}
	return abar, nil
}

// SyevdGrad is the gradient of A = V·diag(w)·Vᵀ:
// Ā = sym(V·(diag(w̄) + F∘(VᵀV̄))·Vᵀ), F_ij = 1/(w_j − w_i) off the diagonal
// and 0 on it. wbar (nil: zero) is the eigenvalues' gradient, vbar (nil:
// zero) the eigenvectors'; w and v come from Syevd.
func SyevdGrad[T Scalar](w []float64, v *Matrix[T], wbar []float64, vbar *Matrix[T]) (*Matrix[T], error) {
	defer exclusive()()
	// The lengths of w and wbar (−1: nil) are agreed with the shapes: a
	// rank that alone got them wrong used to return while the others
	// entered PBLAS and waited for it.
	wbarLen := -1
	if wbar != nil {
		wbarLen = len(wbar)
	}
	o := gradOperands[T]{mats: []*Matrix[T]{v, vbar}, optional: 1, nums: []int{len(w), wbarLen},
		shapes: func() bool {
			n := v.Layout.Rows
			return square(v) && (vbar == nil || square(vbar)) && len(w) == n && (wbar == nil || len(wbar) == n)
		}}
	if err := checkGrad("SyevdGrad", o); err != nil {
		return nil, err
	}
	n := v.Layout.Rows
	m, err := newMatrix[T](v.Grid, n, n, v.Layout.MB)
	if err != nil {
		return nil, err
	}
	var mt *Matrix[T] // Mᵀ: each entry's mirror, for eigenvalues equal to rounding
	if vbar != nil {
		gemm('T', 'N', 1, v, vbar, 0, m)
		mt = m.Clone()
		tran(1, m, 0, mt)
	}
	_, single := any(*new(T)).(float32)
	gap := kernels.EigenGapTolerance(w, single)
	firstBad := math.Inf(1) // the first pair (column-major index) whose term is undefined
	forEachLocal(m, func(r, c, i int) {
		switch {
		case r != c && mt != nil:
			t, ok := kernels.EigenvectorTerm(realPart(m.Local[i]), realPart(mt.Local[i]), w[r], w[c], gap)
			if !ok {
				firstBad = min(firstBad, float64(min(r, c)+max(r, c)*n))
			}
			m.Local[i] = fromFloat[T](t)
		case wbar != nil && r == c:
			m.Local[i] = fromFloat[T](wbar[r])
		default:
			m.Local[i] = 0
		}
	})
	if mt != nil {
		got, err := allReduce(v.Grid.comm, collective.Min, []float64{firstBad})
		if err != nil {
			return nil, err
		}
		if k := got[0]; !math.IsInf(k, 1) {
			i, j := int(k)%n, int(k)/n
			return nil, fmt.Errorf("%w: dist: SyevdGrad: eigenvalues %d and %d are %v and %v", ErrRepeatedEigenvalues, i, j, w[i], w[j])
		}
	}
	t := m.Clone()
	gemm('N', 'N', 1, v, m, 0, t)
	gemm('N', 'T', 1, t, v, 0, m)
	abar := m.Clone()
	tran(0.5, m, 0.5, abar)
	if err := finiteGradient("SyevdGrad", abar); err != nil {
		return nil, err
	}
	return abar, nil
}

// finiteGradient checks a gradient's result as the forward results are
// checked: finite operands whose gradient leaves the dtype's range (or a
// NaN or Inf ḡ of LogDet) are ErrNonFinite on every rank, not a silent Inf
// or NaN. One AllReduce of the verdict.
func finiteGradient[T Scalar](op string, abar *Matrix[T]) error {
	f := failure{}
	if !finite(abar.Local) {
		f.code = resultNonFiniteCode
	}
	return abar.Grid.agree(op, f)
}

// fromFloat is x as a T.
func fromFloat[T Scalar](x float64) T {
	var out T
	switch p := any(&out).(type) {
	case *float32:
		*p = float32(x)
	case *float64:
		*p = x
	case *complex64:
		*p = complex(float32(x), 0)
	case *complex128:
		*p = complex(x, 0)
	}
	return out
}
