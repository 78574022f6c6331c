//go:build mpi

package dist

import (
	"errors"
	"fmt"
	"math"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/sharding"
)

// Real is an element type of a kernel matrix.
type Real interface{ float32 | float64 }

// KernelMatrix is the n×n kernel matrix (sharding.KernelParams) of the n
// points x (row-major n×d, the same on every rank) on g in nb×nb blocks
// (nb = 0: DefaultBlock): each rank computes its own blocks from x and the
// parameters (sharding.KernelBlock), in float64 rounded to T, so no rank
// holds more than its blocks and no element moves. Its elements are those
// of the kernel matrix that package ops makes on a CPU mesh, bit for bit
// (a GPU mesh's differ from those by an exponential's rounding).
// Bad parameters or points (ErrBadInput, ErrNonFinite: each rank checks
// all of x), a diagonal σ² + σₙ² beyond T (ErrNonFinite) and ranks that
// disagree on n, d, nb or T (ErrMismatch) are errors on every rank.
// Collective.
func KernelMatrix[T Real](g *Grid, x []float64, n, d, nb int, p sharding.KernelParams) (*Matrix[T], error) {
	defer exclusive()()
	const op = "KernelMatrix"
	if g == nil {
		return nil, fmt.Errorf("%w: dist: %s: nil grid", ErrBadInput, op)
	}
	if nb == 0 {
		nb = DefaultBlock
	}
	var local error
	var m *Matrix[T]
	switch {
	case n < 1 || d < 1 || nb < 1 || beyondCInt(n, nb):
		local = fmt.Errorf("%w: dist: %s: %d points of dimension %d in blocks of %d", ErrBadInput, op, n, d, nb)
	case p.SignalVar+p.NoiseVar > largest[T]():
		local = fmt.Errorf("%w: dist: %s: the %v kernel's diagonal, %v, is beyond %v", ErrNonFinite, op, p.Family, p.SignalVar+p.NoiseVar, dtypeOf[T]())
	default:
		m = &Matrix[T]{Grid: g, Layout: cyclic.BlockCyclic2D{Rows: n, Cols: n, MB: nb, NB: nb, P: g.p, Q: g.q}}
		rows, cols := m.globalIndices()
		var blk []float64
		if blk, local = sharding.KernelBlock(x, n, d, rows, cols, p); local == nil {
			m.Local = make([]T, m.LLD()*len(cols))
			for j := range cols {
				for i := range rows {
					m.Local[i+j*m.LLD()] = T(blk[i+j*len(rows)])
				}
			}
		}
	}
	if err := agreeLocal(g, op, local, nil, append(matrixNums(n, n, nb, dtypeCode[T]()), num{"dimension", d})...); err != nil {
		return nil, err
	}
	if err := descInit(&m.desc, n, n, nb, nb, g.ctxt, m.LLD()); err != nil {
		return nil, err
	}
	return m, nil
}

// KernelMatrixGrad is the gradient of a cost through KernelMatrix's K of
// the points x (row-major n×d, the same on every rank) given kbar, the
// cost's gradient with respect to K on the grid (every element read):
// xbar (row-major n×d) and the parameters' gradients in pbar, in float64
// and the same on every rank, by sharding.KernelMatrixGrad's formulas.
// Each rank sums over its own blocks (sharding.KernelBlockGrad) and one
// AllReduce adds up the ranks' shares, O(n·d) numbers. NaN or Inf in K̄
// (named by its first global row and column), and a result beyond
// float64 (on any rank's share, or in the sum), are ErrNonFinite with the
// same message on every rank; bad parameters or points as KernelMatrix's.
// Collective.
func KernelMatrixGrad[T Real](kbar *Matrix[T], x []float64, d int, p sharding.KernelParams) (xbar []float64, pbar sharding.KernelParams, err error) {
	defer exclusive()()
	const op = "KernelMatrixGrad"
	if kbar == nil {
		return nil, pbar, errNil(op)
	}
	n, nb := kbar.Layout.Rows, kbar.Layout.MB
	var local error
	var rows, cols []int
	var kb []float64
	// −(the column-major global index of the first NaN or Inf of K̄ here),
	// whose maximum over the ranks names the first one on every rank.
	badAt := math.Inf(-1)
	if !square(kbar) || d < 1 {
		local = fmt.Errorf("%w: dist: %s: a %d×%d gradient for points of dimension %d", ErrBadInput, op, n, kbar.Layout.Cols, d)
	} else if local = sharding.CheckKernelOperands(x, n, d, p); local == nil {
		rows, cols = kbar.globalIndices()
		kb = make([]float64, len(rows)*len(cols))
		for j, c := range cols {
			for i, r := range rows {
				v := float64(kbar.Local[i+j*kbar.LLD()])
				if math.IsNaN(v) || math.IsInf(v, 0) {
					badAt = max(badAt, -float64(c*n+r))
				}
				kb[i+j*len(rows)] = v
			}
		}
		if badAt > math.Inf(-1) {
			local = fmt.Errorf("%w: dist: %s: the gradient K̄ holds NaN or Inf", ErrNonFinite, op)
		}
	}
	at := []float64{badAt}
	if err := agreeLocal(kbar.Grid, op, local, at, append(matrixNums(n, kbar.Layout.Cols, nb, dtypeCode[T]()), num{"dimension", d})...); err != nil {
		if at[0] > math.Inf(-1) && !errors.Is(err, ErrMismatch) {
			i := int(-at[0])
			return nil, sharding.KernelParams{}, fmt.Errorf("%w: dist: %s: the gradient K̄ holds NaN or Inf at (%d, %d)", ErrNonFinite, op, i%n, i/n)
		}
		return nil, sharding.KernelParams{}, err
	}
	// The operands passed on every rank: a share can fail only by going
	// beyond float64 here, which its NaNs carry into every rank's sum.
	nells := 1
	if p.LengthScales != nil {
		nells = d
	}
	share := make([]float64, 0, n*d+nells+2)
	if xbar, pbar, err = sharding.KernelBlockGrad(kb, x, n, d, rows, cols, p); err != nil {
		for range cap(share) {
			share = append(share, math.NaN())
		}
	} else {
		share = sharding.KernelGradVector(xbar, pbar)
	}
	sum, err := allReduceNamed(kbar.Grid.comm, collective.Sum, share, "dist: "+op)
	if err != nil {
		return nil, sharding.KernelParams{}, fmt.Errorf("dist: %s: %w", op, err)
	}
	for _, v := range sum { // the same sums on every rank: the same verdict
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, sharding.KernelParams{}, fmt.Errorf("%w: dist: %s: the gradient is beyond float64", ErrNonFinite, op)
		}
	}
	nd := n * d
	pbar = sharding.KernelParams{Family: p.Family, SignalVar: sum[len(sum)-2], NoiseVar: sum[len(sum)-1]}
	if p.LengthScales != nil {
		pbar.LengthScales = sum[nd : nd+nells]
	} else {
		pbar.LengthScale = sum[nd]
	}
	return sum[:nd:nd], pbar, nil
}

// agreeLocal is Grid.agreeMax on the local verdict err (xs replaced by
// their maxima over the ranks): the agreed error on every rank, with
// err's own message (which names the parameter or point) where the rank
// found one itself. Ranks that hold the same operands find the same; a
// rank whose operands passed, where another's failed, gets the agreed
// message.
func agreeLocal(g *Grid, op string, local error, xs []float64, nums ...num) error {
	f := failure{}
	switch {
	case local == nil:
	case errors.Is(local, ErrNonFinite):
		f.code = nonFiniteCode
	default:
		f.code = badInputCode
	}
	err := g.agreeMax(op, f, xs, nums...)
	switch {
	case err == nil || local == nil || errors.Is(err, ErrMismatch):
		return err
	case errors.Is(local, ErrNonFinite):
		return fmt.Errorf("dist: %s: %w", op, local)
	}
	return fmt.Errorf("%w: dist: %s: %w", ErrBadInput, op, local)
}

// globalIndices are the global rows and columns of m's local array, in
// order.
func (m *Matrix[T]) globalIndices() (rows, cols []int) {
	l := m.Layout
	lr, lc := m.LocalShape()
	rows, cols = make([]int, lr), make([]int, lc)
	for i := range rows {
		rows[i] = cyclic.IndexGlobal(i, l.MB, m.Grid.prow, l.P)
	}
	for j := range cols {
		cols[j] = cyclic.IndexGlobal(j, l.NB, m.Grid.pcol, l.Q)
	}
	return rows, cols
}

// largest is the largest finite T.
func largest[T Real]() float64 {
	if _, ok := any(T(0)).(float32); ok {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}
