package sharding

import (
	"fmt"
	"math"
)

// KernelBlock returns the block of the kernel matrix (KernelParams) of the
// n rows of x (row-major n×d) at the global rows and columns given, in
// float64, column-major: K[rows[i], cols[j]] at i + j·len(rows). Its
// elements are SetKernelMatrix's on a CPU mesh, bit for bit (before a
// float32 tensor's rounding), the noise where a row is the column; a process of a 2-D grid
// computes its own blocks of K with it. Bad parameters, indices or points
// (all n, whichever the block reads) are errors, so that every process
// that holds x gives the same verdict.
func KernelBlock(x []float64, n, d int, rows, cols []int, p KernelParams) ([]float64, error) {
	if err := checkKernelBlock("KernelBlock", x, n, d, rows, cols, p); err != nil {
		return nil, err
	}
	m := len(rows)
	out := make([]float64, m*len(cols))
	ells := p.scales(d)
	parallelChunks(len(cols), kernelWorkers(len(cols)), func(_, c0, c1 int) {
		for c := c0; c < c1; c++ {
			kernelColumn(out[c*m:(c+1)*m], x, d, rows, cols[c], p, ells)
		}
	})
	return out, nil
}

// KernelBlockGrad is KernelMatrixGrad's share of the block of K̄ at the
// global rows and columns given (kbar, column-major len(rows)×len(cols),
// KernelBlock's layout): xbar (row-major n×d, zero but at the block's rows
// and columns) and the parameters' gradients in pbar, σ̄ₙ² the sum of the
// block's diagonal elements. The shares of blocks that cover K̄ once add
// up to KernelMatrixGrad's result. NaN or Inf in kbar (named by its global
// row and column), and a result beyond float64, are ErrNonFinite.
func KernelBlockGrad(kbar, x []float64, n, d int, rows, cols []int, p KernelParams) (xbar []float64, pbar KernelParams, err error) {
	if err := checkKernelBlock("KernelBlockGrad", x, n, d, rows, cols, p); err != nil {
		return nil, KernelParams{}, err
	}
	m := len(rows)
	if len(kbar) != m*len(cols) {
		return nil, KernelParams{}, fmt.Errorf("%w: KernelBlockGrad: a gradient of %d values for a %d×%d block", ErrBadInput, len(kbar), m, len(cols))
	}
	// The pairs of zero weight are skipped, which would hide a NaN or Inf
	// of K̄ there.
	for k, v := range kbar {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, KernelParams{}, fmt.Errorf("%w: KernelBlockGrad: the kernel matrix's gradient holds %v at (%d, %d)", ErrNonFinite, v, rows[k%m], cols[k/m])
		}
	}
	column := func(c int, kb []float64) { copy(kb, kbar[c*m:(c+1)*m]) }
	total := blockGrad(column, n, rows, cols, x, d, p)
	pbar = paramsGrad(p, total)
	if err := checkGradFinite("KernelBlockGrad", pbar, total.xbar); err != nil {
		return nil, KernelParams{}, err
	}
	return total.xbar, pbar, nil
}

// KernelGradVector lays out a kernel gradient as one vector: xbar, then the
// length scale's gradient (ARD's, one per dimension, when
// pbar.LengthScales is set), σ̄² and σ̄ₙ² — the layout the kernel ops'
// backward passes send (package ops, dist, dist/distops). A new slice.
func KernelGradVector(xbar []float64, pbar KernelParams) []float64 {
	ells := pbar.LengthScales
	if ells == nil {
		ells = []float64{pbar.LengthScale}
	}
	out := make([]float64, 0, len(xbar)+len(ells)+2)
	return append(append(append(out, xbar...), ells...), pbar.SignalVar, pbar.NoiseVar)
}

// CheckKernelOperands reports what KernelBlock and KernelBlockGrad would
// refuse in the points x (row-major n×d) and the parameters p, whatever
// the block: bad parameters (ErrBadInput), NaN or Inf points
// (ErrNonFinite). Processes that hold the same operands get the same
// verdict.
func CheckKernelOperands(x []float64, n, d int, p KernelParams) error {
	return checkKernelBlock("CheckKernelOperands", x, n, d, nil, nil, p)
}

// checkKernelBlock checks KernelBlock's and KernelBlockGrad's operands.
func checkKernelBlock(what string, x []float64, n, d int, rows, cols []int, p KernelParams) error {
	if err := p.checkFor(d); err != nil {
		return err
	}
	if err := checkKernelPoints(x, n, d, "the kernel matrix's"); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, idx := range [][]int{rows, cols} {
		for _, i := range idx {
			if i < 0 || i >= n {
				return fmt.Errorf("%w: %s: index %d of a kernel matrix of %d points", ErrBadInput, what, i, n)
			}
		}
	}
	return nil
}
