//go:build mpi

package dist

import (
	"math"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
)

// The operations. Each checks its inputs on every rank, agrees the verdict
// (so every rank returns the same error and none enters ScaLAPACK alone),
// and leaves its inputs untouched.

// checkSquare is the local verdict on a square, finite input.
func checkSquare[T Scalar](a *Matrix[T]) failure {
	switch {
	case a == nil || a.Layout.Rows != a.Layout.Cols:
		return failure{code: badInputCode}
	case !finite(a.Local):
		return failure{code: nonFiniteCode}
	}
	return failure{}
}

// factor is the Cholesky factor of a (lower triangle; the strict upper one
// keeps a's), after the checks.
func factor[T Scalar](op string, a *Matrix[T]) (*Matrix[T], error) {
	f := checkSquare(a)
	if err := a.Grid.agreeShape(op, f, a.Layout.Rows, a.Layout.Cols, a.Layout.MB, dtypeCode[T]()); err != nil {
		return nil, err
	}
	l := a.Clone()
	if info := potrf(l); info != 0 {
		f = failure{code: notSPDCode, minor: info}
		if info < 0 {
			f = failure{code: engineCode}
		}
	}
	if err := a.Grid.agree(op, f); err != nil {
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

// Cholesky is the lower Cholesky factor L of the Hermitian positive
// definite a (A = L·Lᴴ; only a's lower triangle is read), with zeros above
// the diagonal.
func Cholesky[T Scalar](a *Matrix[T]) (*Matrix[T], error) {
	l, err := factor("Cholesky", a)
	if err != nil {
		return nil, err
	}
	forEachLocal(l, func(r, c, i int) {
		if r < c {
			l.Local[i] = 0
		}
	})
	return l, nil
}

// checkSolve is the agreed verdict on a right-hand side b for the n×n a.
func checkSolve[T Scalar](op string, a, b *Matrix[T]) error {
	f := failure{}
	switch {
	case b == nil || b.Grid != a.Grid || b.Layout.Rows != a.Layout.Rows || b.Layout.MB != a.Layout.MB:
		f.code = badInputCode
	case !finite(b.Local):
		f.code = nonFiniteCode
	}
	cols := 0
	if b != nil {
		cols = b.Layout.Cols
	}
	return a.Grid.agreeShape(op, f, cols)
}

// Potrs solves A·X = B for the Hermitian positive definite a (lower
// triangle read); b has a's rows and block size.
func Potrs[T Scalar](a, b *Matrix[T]) (*Matrix[T], error) {
	if err := checkSolve("Potrs", a, b); err != nil {
		return nil, err
	}
	l, err := factor("Potrs", a)
	if err != nil {
		return nil, err
	}
	return cholSolve("Potrs", l, b)
}

// CholSolve solves L·Lᴴ·X = B for the lower Cholesky factor l (from
// Cholesky).
func CholSolve[T Scalar](l, b *Matrix[T]) (*Matrix[T], error) {
	f := checkSquare(l)
	if err := l.Grid.agreeShape("CholSolve", f, l.Layout.Rows, l.Layout.MB, dtypeCode[T]()); err != nil {
		return nil, err
	}
	if err := checkSolve("CholSolve", l, b); err != nil {
		return nil, err
	}
	return cholSolve("CholSolve", l, b)
}

// cholSolve is CholSolve after the checks.
func cholSolve[T Scalar](op string, l, b *Matrix[T]) (*Matrix[T], error) {
	x := b.Clone()
	f := failure{}
	if info := potrs(l, x); info != 0 {
		f.code = engineCode
	}
	if err := l.Grid.agree(op, f); err != nil {
		return nil, err
	}
	return x, nil
}

// LogDet is log det A of the Hermitian positive definite a: 2·Σ log Lᵢᵢ
// over the Cholesky factor's diagonal, summed over the grid; the same on
// every rank.
func LogDet[T Scalar](a *Matrix[T]) (float64, error) {
	l, err := factor("LogDet", a)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	forEachLocal(l, func(r, c, i int) {
		if r == c {
			sum += 2 * math.Log(realPart(l.Local[i]))
		}
	})
	got, err := allReduce(a.Grid.comm, collective.Sum, []float64{sum})
	if err != nil {
		return 0, err
	}
	return got[0], nil
}

// Potri is A⁻¹ of the Hermitian positive definite a, both triangles.
func Potri[T Scalar](a *Matrix[T]) (*Matrix[T], error) {
	x, err := factor("Potri", a)
	if err != nil {
		return nil, err
	}
	f := failure{}
	if info := potri(x); info != 0 {
		f = failure{code: notSPDCode, minor: info}
		if info < 0 {
			f = failure{code: engineCode}
		}
	}
	if err := a.Grid.agree("Potri", f); err != nil {
		return nil, err
	}
	// Keep the lower triangle with half the diagonal, then add its adjoint.
	forEachLocal(x, func(r, c, i int) {
		switch {
		case r < c:
			x.Local[i] = 0
		case r == c:
			x.Local[i] /= 2
		}
	})
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
	f := checkSquare(a)
	if err := a.Grid.agreeShape("Syevd", f, a.Layout.Rows, a.Layout.Cols, a.Layout.MB, dtypeCode[T]()); err != nil {
		return nil, nil, err
	}
	work := a.Clone()
	z, err := newMatrix[T](a.Grid, a.Layout.Rows, a.Layout.Cols, a.Layout.MB)
	if err != nil {
		return nil, nil, err
	}
	w, info := syevd(work, z)
	f = failure{}
	if info != 0 {
		f.code = engineCode
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
