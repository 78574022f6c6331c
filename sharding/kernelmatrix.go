package sharding

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/mgla/mgla/cyclic"
	"gorgonia.org/tensor"
)

// KernelFamily is the radial profile v of a stationary kernel matrix
// (KernelParams), a function of s = ‖xᵢ − xⱼ‖²/ℓ².
type KernelFamily int

const (
	// SquaredExp is the squared-exponential (RBF, Gaussian) kernel:
	// v(s) = exp(−s/2).
	SquaredExp KernelFamily = iota
	// Matern32 is the Matérn kernel of smoothness 3/2: v = (1 + a)·exp(−a),
	// a = √(3s).
	Matern32
	// Matern52 is the Matérn kernel of smoothness 5/2: v = (1 + a +
	// a²/3)·exp(−a), a = √(5s).
	Matern52
)

func (f KernelFamily) String() string {
	switch f {
	case SquaredExp:
		return "squared-exponential"
	case Matern32:
		return "Matérn 3/2"
	case Matern52:
		return "Matérn 5/2"
	}
	return fmt.Sprintf("KernelFamily(%d)", int(f))
}

// KernelParams are the family and parameters of the stationary kernel
// matrix of n points x₁ … xₙ of dimension d:
//
//	K_ij = SignalVar·v(‖xᵢ − xⱼ‖²/LengthScale²) + NoiseVar·[i = j],
//
// v the family's profile (KernelFamily). LengthScales, when set, holds a
// length scale per dimension in place of LengthScale (automatic relevance
// determination, ARD): ‖xᵢ − xⱼ‖²/ℓ² becomes Σₖ ((xᵢₖ − xⱼₖ)/ℓₖ)².
type KernelParams struct {
	Family                           KernelFamily
	LengthScale, SignalVar, NoiseVar float64
	LengthScales                     []float64
}

// scales is the length scale of each of d dimensions.
func (p KernelParams) scales(d int) []float64 {
	if p.LengthScales != nil {
		return p.LengthScales
	}
	ells := make([]float64, d)
	for k := range ells {
		ells[k] = p.LengthScale
	}
	return ells
}

// profile returns, for s = ‖xᵢ − xⱼ‖²/ℓ² ≥ 0, the family's v(s) and g(s) =
// −2·dv/ds, the factor of the gradients (∂K_ij/∂xᵢ = −σ²·g·(xᵢ − xⱼ)/ℓ²,
// ∂K_ij/∂ℓ = σ²·g·s/ℓ): for the squared exponential both are exp(−s/2).
// Both are 0 once the exponential is (s = Inf included, which would make a
// NaN of (1 + a)·0).
func (f KernelFamily) profile(s float64) (v, g float64) {
	switch f {
	case Matern32:
		a := math.Sqrt(3 * s)
		e := math.Exp(-a)
		if e == 0 {
			return 0, 0
		}
		return (1 + a) * e, 3 * e
	case Matern52:
		a := math.Sqrt(5 * s)
		e := math.Exp(-a)
		if e == 0 {
			return 0, 0
		}
		return (1 + a + a*a/3) * e, 5.0 / 3 * (1 + a) * e
	}
	e := math.Exp(s * -0.5)
	return e, e
}

// Check reports parameters that give no kernel matrix (ErrBadInput): an
// unknown family, a length scale that is not positive, a negative
// variance, NaN or Inf (which match ErrNonFinite too: a training step that
// diverged, exp of a log-parameter overflowing, is both).
func (p KernelParams) Check() error {
	// bad is the error of a parameter v that must be positive (or ≥ 0).
	bad := func(v float64, what, want string) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %w: the %v kernel's %s must be %s and finite, got %v", ErrBadInput, ErrNonFinite, p.Family, what, want, v)
		}
		return fmt.Errorf("%w: the %v kernel's %s must be %s and finite, got %v", ErrBadInput, p.Family, what, want, v)
	}
	ok := func(v float64, positive bool) bool {
		return !math.IsNaN(v) && !math.IsInf(v, 0) && (v > 0 || !positive && v == 0)
	}
	switch {
	case p.Family < SquaredExp || p.Family > Matern52:
		return fmt.Errorf("%w: unknown kernel family %v", ErrBadInput, p.Family)
	case p.LengthScales == nil && !ok(p.LengthScale, true):
		return bad(p.LengthScale, "length scale", "positive")
	case !ok(p.SignalVar, false):
		return bad(p.SignalVar, "signal variance", "≥ 0")
	case !ok(p.NoiseVar, false):
		return bad(p.NoiseVar, "noise variance", "≥ 0")
	}
	if p.LengthScales != nil && len(p.LengthScales) == 0 {
		return fmt.Errorf("%w: the %v kernel has an empty list of length scales", ErrBadInput, p.Family)
	}
	for k, l := range p.LengthScales {
		if !ok(l, true) {
			return bad(l, fmt.Sprintf("length scale of dimension %d", k), "positive")
		}
	}
	return nil
}

// checkFor is Check for points of dimension d: length scales of another
// number are ErrBadInput too.
func (p KernelParams) checkFor(d int) error {
	if err := p.Check(); err != nil {
		return err
	}
	if p.LengthScales != nil && len(p.LengthScales) != d {
		return fmt.Errorf("%w: the %v kernel has %d length scales for points of dimension %d", ErrBadInput, p.Family, len(p.LengthScales), d)
	}
	return nil
}

// checkKernelPoints checks the n×d row-major points of a kernel matrix (what:
// "the kernel matrix's", or CrossKernel's "the new"): their length, and NaN
// or Inf (ErrNonFinite: they would make NaNs of whole rows of K).
func checkKernelPoints(x []float64, n, d int, what string) error {
	if n < 1 || d < 1 || len(x) != n*d {
		return fmt.Errorf("%w: %s %d points of dimension %d from %d values", ErrBadInput, what, n, d, len(x))
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s point %d holds %v", ErrNonFinite, what, i/d, v)
		}
	}
	return nil
}

// checkKernelTensor checks a square real tensor in a layout of whole columns,
// the kernel matrix or its gradient.
func (t *Tensor) checkKernelTensor(what string, n int) error {
	if err := t.usable(); err != nil {
		return err
	}
	switch {
	case t.dtype != tensor.Float32 && t.dtype != tensor.Float64:
		return fmt.Errorf("%w: %s: want float32 or float64, got %v", ErrBadInput, what, t.dtype)
	case t.Rows() != n || t.Cols() != n:
		return fmt.Errorf("%w: %s: want %d×%d, got %v", ErrBadInput, what, n, n, t.shape)
	case t.layout.Kind != cyclic.ColCyclic && t.layout.Kind != cyclic.ColBlocks:
		return fmt.Errorf("%w: %s: want a layout of whole columns (column blocks or block-cyclic), got %v", ErrBadInput, what, t.layout)
	}
	return nil
}

// SetKernelMatrix overwrites the n×n tensor t (float32 or float64, in
// a layout of whole columns) with the kernel matrix (KernelParams) of
// the n rows of x (row-major n×d), computed in float64 and rounded to t's
// dtype. Both triangles are written, and K is exactly symmetric. Bad
// parameters or points change nothing; so does a matrix whose largest entry,
// SignalVar + NoiseVar, is beyond t's dtype (ErrNonFinite).
func (t *Tensor) SetKernelMatrix(x []float64, d int, p KernelParams) error {
	n := t.Rows()
	if err := t.checkKernelTensor("SetKernelMatrix", n); err != nil {
		return err
	}
	if err := p.checkFor(d); err != nil {
		return err
	}
	if err := checkKernelPoints(x, n, d, "the kernel matrix's"); err != nil {
		return err
	}
	top, limit := p.SignalVar+p.NoiseVar, math.MaxFloat64
	if t.dtype == tensor.Float32 {
		limit = math.MaxFloat32
	}
	if top > limit {
		return fmt.Errorf("%w: the %v kernel's diagonal, %v, is beyond %v", ErrNonFinite, p.Family, top, t.dtype)
	}
	cols := localColumns(t)
	return perDevice(t.mesh.Size(), func(dev int) error {
		if len(cols[dev]) == 0 {
			return nil
		}
		return t.mesh.mem.kernelMatrix(t.shards[dev], t.Rows(), cols[dev], x, d, p)
	})
}

// KernelMatrix returns a new n×n tensor of dtype dt on mesh in layout
// (whole columns) holding the kernel matrix of the n
// rows of x (row-major n×d), as SetKernelMatrix.
func KernelMatrix(x []float64, n, d int, p KernelParams, mesh *Mesh, layout Layout, dt tensor.Dtype) (*Tensor, error) {
	if err := checkKernelPoints(x, n, d, "the kernel matrix's"); err != nil {
		return nil, err
	}
	if err := p.checkFor(d); err != nil {
		return nil, err
	}
	if k := layout.Kind; k != cyclic.ColCyclic && k != cyclic.ColBlocks {
		return nil, fmt.Errorf("%w: KernelMatrix: want a layout of whole columns (column blocks or block-cyclic), got %v", ErrBadInput, layout)
	}
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("%w: KernelMatrix: want float32 or float64, got %v", ErrBadInput, dt)
	}
	t, err := newTensor(mesh, tensor.Shape{n, n}, dt, layout, false)
	if err != nil {
		return nil, err
	}
	if err := t.SetKernelMatrix(x, d, p); err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

// KernelMatrixGrad is the gradient of a cost through the kernel matrix K
// of the n rows of x (row-major n×d) given kbar, the cost's gradient with
// respect to K (n×n, float32 or float64, whole columns; read in full, both
// triangles): xbar, row-major n×d, and the parameters' gradients in pbar
// (whose Family is p's), all in float64:
//
//	x̄ᵢ = Σⱼ (K̄ᵢⱼ + K̄ⱼᵢ)·σ²·gᵢⱼ·(xⱼ − xᵢ)/ℓ²,   σ̄² = Σᵢⱼ K̄ᵢⱼ·vᵢⱼ,
//	ℓ̄  = Σᵢⱼ K̄ᵢⱼ·σ²·gᵢⱼ·sᵢⱼ/ℓ,                σ̄ₙ² = Σᵢ K̄ᵢᵢ,
//
// with sᵢⱼ = ‖xᵢ − xⱼ‖²/ℓ², vᵢⱼ = v(sᵢⱼ) and gᵢⱼ = −2·v′(sᵢⱼ) (the family's
// profile; for the squared exponential both are exp(−sᵢⱼ/2)). With
// per-dimension length scales (p.LengthScales), sᵢⱼ = Σₖ ((xᵢₖ − xⱼₖ)/ℓₖ)²,
// x̄'s terms divide by ℓₖ² and pbar.LengthScales holds ℓ̄ₖ = Σᵢⱼ
// K̄ᵢⱼ·σ²·gᵢⱼ·((xᵢₖ − xⱼₖ)/ℓₖ)²/ℓₖ (pbar.LengthScale is 0).
// Each device sums over its own columns; the devices' shares are added on
// the host. NaN or Inf in kbar, and a result beyond float64 (a tiny ℓ
// with points near enough for their terms to count), are ErrNonFinite;
// points too far apart for their length scale add exactly 0.
func KernelMatrixGrad(kbar *Tensor, x []float64, d int, p KernelParams) (xbar []float64, pbar KernelParams, err error) {
	n := kbar.Rows()
	if err := kbar.checkKernelTensor("KernelMatrixGrad", n); err != nil {
		return nil, KernelParams{}, err
	}
	if err := p.checkFor(d); err != nil {
		return nil, KernelParams{}, err
	}
	if err := checkKernelPoints(x, n, d, "the kernel matrix's"); err != nil {
		return nil, KernelParams{}, err
	}
	// The kernels skip the terms of zero weight (eᵢⱼ = 0), which would
	// hide a NaN or Inf of K̄ there.
	if err := kbar.CheckFinite(false); err != nil {
		return nil, KernelParams{}, fmt.Errorf("KernelMatrixGrad: the kernel matrix's gradient: %w", err)
	}
	cols := localColumns(kbar)
	ndev := kbar.mesh.Size()
	shares := make([]kernelGradShare, ndev)
	err = perDevice(ndev, func(dev int) error {
		if len(cols[dev]) == 0 {
			return nil
		}
		var err error
		shares[dev], err = kbar.mesh.mem.kernelMatrixGrad(kbar.shards[dev], n, cols[dev], x, d, p)
		return err
	})
	if err != nil {
		return nil, KernelParams{}, err
	}
	total := addShares(shares, n, d, p)
	pbar = paramsGrad(p, total)
	if err := checkGradFinite("KernelMatrixGrad", pbar, total.xbar); err != nil {
		return nil, KernelParams{}, err
	}
	return total.xbar, pbar, nil
}

// kernelGradShare is one device's (or worker's) share of a kernel gradient:
// the points' gradient from its columns (row-major n×d), its sums Σ K̄ᵢⱼ·vᵢⱼ,
// Σ K̄ᵢⱼ·gᵢⱼ·sᵢⱼ and Σ K̄ᵢᵢ over them and, with per-dimension length scales,
// ellSums[k] = Σ K̄ᵢⱼ·σ²·gᵢⱼ·((xᵢₖ − xⱼₖ)/ℓₖ)².
type kernelGradShare struct {
	xbar    []float64
	sums    [3]float64
	ellSums []float64
}

// newGradShare is an empty share for n points of dimension d under p.
func newGradShare(n, d int, p KernelParams) kernelGradShare {
	s := kernelGradShare{xbar: make([]float64, n*d)}
	if p.LengthScales != nil {
		s.ellSums = make([]float64, d)
	}
	return s
}

// addShares adds the shares in order.
func addShares(shares []kernelGradShare, n, d int, p KernelParams) kernelGradShare {
	total := newGradShare(n, d, p)
	for _, s := range shares {
		for i, v := range s.xbar {
			total.xbar[i] += v
		}
		for k := range total.sums {
			total.sums[k] += s.sums[k]
		}
		for k, v := range s.ellSums {
			total.ellSums[k] += v
		}
	}
	return total
}

// paramsGrad is the parameters' gradient from a kernel gradient's sums:
// ℓ̄ = σ²·Σ K̄·g·s/ℓ, or ℓ̄ₖ = ellSums[k]/ℓₖ per dimension; σ̄² and σ̄ₙ².
func paramsGrad(p KernelParams, s kernelGradShare) KernelParams {
	pbar := KernelParams{Family: p.Family, SignalVar: s.sums[0], NoiseVar: s.sums[2]}
	if p.LengthScales == nil {
		pbar.LengthScale = s.sums[1] * p.SignalVar / p.LengthScale
		return pbar
	}
	pbar.LengthScales = make([]float64, len(s.ellSums))
	for k, v := range s.ellSums {
		pbar.LengthScales[k] = v / p.LengthScales[k]
	}
	return pbar
}

// checkGradFinite reports a NaN or Inf in a kernel gradient (ErrNonFinite).
func checkGradFinite(what string, pbar KernelParams, xbars ...[]float64) error {
	for _, v := range append([]float64{pbar.LengthScale, pbar.SignalVar, pbar.NoiseVar}, pbar.LengthScales...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s: the parameters' gradient holds %v", ErrNonFinite, what, v)
		}
	}
	for _, xbar := range xbars {
		for _, v := range xbar {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: %s: the points' gradient holds %v", ErrNonFinite, what, v)
			}
		}
	}
	return nil
}

// localColumns lists, for each device of a layout of whole columns, the
// global index of each of its local columns in order.
func localColumns(t *Tensor) [][]int {
	cols := make([][]int, t.mesh.Size())
	for _, p := range cyclic.Pieces(t.layout, t.Rows(), t.Cols(), t.mesh.Size()) {
		for k := range p.Cols {
			for len(cols[p.Dev]) <= p.LocalCol+k {
				cols[p.Dev] = append(cols[p.Dev], 0)
			}
			cols[p.Dev][p.LocalCol+k] = p.Col + k
		}
	}
	return cols
}

// kernelWorkers is how many goroutines a CPU device's kernel columns are shared
// among: one per core (the mesh's devices run at once, and Go shares the
// cores among all their goroutines).
func kernelWorkers(cols int) int { return max(1, min(cols, runtime.GOMAXPROCS(0))) }

// scaledDistance2 is ‖xᵢ − xⱼ‖²/ℓ², summed over the dimensions in order as ((xᵢ[k] −
// xⱼ[k])/ℓₖ)² (ells, one length scale per dimension): the same for (i, j)
// and (j, i) bit for bit, exact to rounding however far the points are from
// the origin or from each other, and right where ‖xᵢ − xⱼ‖² or ℓ² alone
// would overflow or underflow.
func scaledDistance2(xi, xj, ells []float64) float64 {
	r2 := 0.0
	for k, v := range xi {
		diff := (v - xj[k]) / ells[k]
		r2 += diff * diff
	}
	return r2
}

// kernelColumn is column j of the kernel matrix at the given rows (nil:
// all of them, col's length) into col, in float64: σ²·v(‖xᵢ − xⱼ‖²/ℓ²), plus
// the noise σₙ² where row i is j.
func kernelColumn(col []float64, x []float64, d int, rows []int, j int, p KernelParams, ells []float64) {
	xj := x[j*d : (j+1)*d]
	for i := range col {
		r := rowAt(rows, i)
		v, _ := p.Family.profile(scaledDistance2(x[r*d:(r+1)*d], xj, ells))
		col[i] = p.SignalVar * v
		if r == j {
			col[i] += p.NoiseVar
		}
	}
}

// rowAt is the global index of a block's row i: rows[i], or i itself for
// a block of every row (nil rows).
func rowAt(rows []int, i int) int {
	if rows == nil {
		return i
	}
	return rows[i]
}

func (hostBackend) kernelMatrix(b Buffer, n int, cols []int, x []float64, d int, p KernelParams) error {
	data := b.(*HostBuffer).data
	workers := kernelWorkers(len(cols))
	ells := p.scales(d)
	parallelChunks(len(cols), workers, func(_, c0, c1 int) {
		col := make([]float64, n)
		for c := c0; c < c1; c++ {
			kernelColumn(col, x, d, nil, cols[c], p, ells)
			switch s := data.(type) {
			case []float64:
				copy(s[c*n:(c+1)*n], col)
			case []float32:
				for i, v := range col {
					s[c*n+i] = float32(v)
				}
			}
		}
	})
	return nil
}

func (hostBackend) kernelMatrixGrad(b Buffer, n int, cols []int, x []float64, d int, p KernelParams) (kernelGradShare, error) {
	data := b.(*HostBuffer).data
	column := func(c int, kb []float64) {
		switch v := data.(type) {
		case []float64:
			copy(kb, v[c*n:(c+1)*n])
		case []float32:
			for i, f := range v[c*n : (c+1)*n] {
				kb[i] = float64(f)
			}
		}
	}
	return blockGrad(column, n, nil, cols, x, d, p), nil
}

// blockGrad is the share of a kernel gradient of the block of K̄ at rows
// (nil: all n) and cols, whose column c column(c, kb) reads into kb, in
// float64: the columns shared among the cores, each worker summing into an
// n×d gradient of its own (at most 1 GiB of them).
func blockGrad(column func(c int, kb []float64), n int, rows, cols []int, x []float64, d int, p KernelParams) kernelGradShare {
	m := n
	if rows != nil {
		m = len(rows)
	}
	workers := max(1, min(kernelWorkers(len(cols)), (1<<27)/(n*d)))
	parts := make([]kernelGradShare, workers)
	ells := p.scales(d)
	parallelChunks(len(cols), workers, func(w, c0, c1 int) {
		s := &parts[w]
		*s = newGradShare(n, d, p)
		kb := make([]float64, m)
		for c := c0; c < c1; c++ {
			column(c, kb)
			j := cols[c]
			xj := x[j*d : (j+1)*d]
			gj := s.xbar[j*d : (j+1)*d]
			for i, k := range kb {
				r := rowAt(rows, i)
				if r == j {
					s.sums[2] += k
				}
				if k != 0 {
					s.addPair(k, x[r*d:(r+1)*d], xj, s.xbar[r*d:(r+1)*d], gj, p, ells)
				}
			}
		}
	})
	return addShares(parts, n, d, p)
}

// addPair adds the share of one element of a kernel matrix's gradient,
// k = K̄ᵢⱼ ≠ 0 for the points xi and xj (length scales ells), to the sums
// (Σ K̄ᵢⱼ·vᵢⱼ, Σ K̄ᵢⱼ·gᵢⱼ·sᵢⱼ and, with per-dimension length scales, the
// ellSums) and to the points' gradients gi and gj:
// ∂K_ij/∂xᵢₖ = −σ²·gᵢⱼ·(xᵢₖ − xⱼₖ)/ℓₖ² = −∂K_ij/∂xⱼₖ.
func (s *kernelGradShare) addPair(k float64, xi, xj, gi, gj []float64, p KernelParams, ells []float64) {
	r2 := scaledDistance2(xi, xj, ells)
	v, g := p.Family.profile(r2)
	s.sums[0] += k * v
	if kg := k * g; kg != 0 { // 0 where g is, even at r² = Inf
		s.sums[1] += kg * r2
	}
	// A zero slope adds nothing, even where k·σ² is beyond float64; nor
	// does a zero weight, even where the slope is Inf.
	if g == 0 {
		return
	}
	w := k * p.SignalVar * g
	if w == 0 {
		return
	}
	for m, v := range xi {
		q := (v - xj[m]) / ells[m]
		diff := w * (q / ells[m])
		gi[m] -= diff
		gj[m] += diff
		if s.ellSums != nil {
			s.ellSums[m] += w * (q * q)
		}
	}
}

// parallelChunks runs fn(w, c0, c1) for the workers chunks [c0, c1) of
// ⌈n/workers⌉ (the last ones shorter or empty) that cover [0, n), worker w
// on chunk w, at once.
func parallelChunks(n, workers int, fn func(w, c0, c1 int)) {
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		if c0, c1 := w*chunk, min(n, (w+1)*chunk); c0 < c1 {
			wg.Go(func() { fn(w, c0, c1) })
		}
	}
	wg.Wait()
}

// CrossKernel returns the m×n matrix (row-major, float64) of the kernel of
// p's family and parameters between the m rows of xs (a Gaussian process's
// new points) and the n rows of x (its kernel matrix's points), row-major
// of dimension d, without the noise, which belongs to the diagonal of one
// set of points with itself:
//
//	C_ij = SignalVar·v(‖xsᵢ − xⱼ‖²/LengthScale²).
//
// It is computed on the host, the rows shared among the cores. C of x with
// itself plus NoiseVar·I is its kernel matrix, bit for bit. Bad parameters
// (p.Check) or points are errors.
func CrossKernel(xs []float64, m int, x []float64, n, d int, p KernelParams) ([]float64, error) {
	if err := checkCrossKernel(xs, m, x, n, d, p); err != nil {
		return nil, err
	}
	c := make([]float64, m*n)
	ells := p.scales(d)
	parallelChunks(m, kernelWorkers(m), func(_, r0, r1 int) {
		for i := r0; i < r1; i++ {
			xi := xs[i*d : (i+1)*d]
			row := c[i*n : (i+1)*n]
			for j := range row {
				v, _ := p.Family.profile(scaledDistance2(xi, x[j*d:(j+1)*d], ells))
				row[j] = p.SignalVar * v
			}
		}
	})
	return c, nil
}

// CrossKernelGrad is the gradient of a cost through CrossKernel's C given
// cbar, the cost's gradient with respect to C (row-major m×n): xsbar (m×d),
// xbar (n×d) and the gradients of the length scale (or scales) and the
// signal variance in pbar (whose Family is p's and NoiseVar 0), all in float64:
//
//	x̄sᵢ = Σⱼ C̄ᵢⱼ·σ²·gᵢⱼ·(xⱼ − xsᵢ)/ℓ²,   x̄ⱼ = −Σᵢ C̄ᵢⱼ·σ²·gᵢⱼ·(xⱼ − xsᵢ)/ℓ²,
//	ℓ̄  = Σᵢⱼ C̄ᵢⱼ·σ²·gᵢⱼ·sᵢⱼ/ℓ,           σ̄² = Σᵢⱼ C̄ᵢⱼ·vᵢⱼ,
//
// with KernelMatrixGrad's sᵢⱼ, vᵢⱼ and gᵢⱼ (and its per-dimension forms). NaN
// or Inf in cbar, and a result beyond float64, are ErrNonFinite.
func CrossKernelGrad(cbar, xs []float64, m int, x []float64, n, d int, p KernelParams) (xsbar, xbar []float64, pbar KernelParams, err error) {
	if err := checkCrossKernel(xs, m, x, n, d, p); err != nil {
		return nil, nil, KernelParams{}, err
	}
	if len(cbar) != m*n {
		return nil, nil, KernelParams{}, fmt.Errorf("%w: CrossKernelGrad: a gradient of %d values for a %d×%d matrix", ErrBadInput, len(cbar), m, n)
	}
	for k, v := range cbar {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, KernelParams{}, fmt.Errorf("%w: CrossKernelGrad: the gradient's element (%d, %d) is %v", ErrNonFinite, k/n, k%n, v)
		}
	}
	// Each worker owns its rows of x̄s and sums into its own n×d x̄: at
	// most 1 GiB of them.
	workers := max(1, min(kernelWorkers(m), (1<<27)/(n*d)))
	parts := make([]kernelGradShare, workers)
	xsbar = make([]float64, m*d)
	ells := p.scales(d)
	parallelChunks(m, workers, func(w, r0, r1 int) {
		s := &parts[w]
		*s = newGradShare(n, d, p)
		for i := r0; i < r1; i++ {
			xi := xs[i*d : (i+1)*d]
			gi := xsbar[i*d : (i+1)*d]
			for j, k := range cbar[i*n : (i+1)*n] {
				if k != 0 {
					s.addPair(k, xi, x[j*d:(j+1)*d], gi, s.xbar[j*d:(j+1)*d], p, ells)
				}
			}
		}
	})
	total := addShares(parts, n, d, p)
	pbar = paramsGrad(p, total)
	if err := checkGradFinite("CrossKernelGrad", pbar, xsbar, total.xbar); err != nil {
		return nil, nil, KernelParams{}, err
	}
	return xsbar, total.xbar, pbar, nil
}

// checkCrossKernel checks CrossKernel's operands.
func checkCrossKernel(xs []float64, m int, x []float64, n, d int, p KernelParams) error {
	if err := p.checkFor(d); err != nil {
		return err
	}
	if err := checkKernelPoints(xs, m, d, "the new"); err != nil {
		return fmt.Errorf("CrossKernel: %w", err)
	}
	if err := checkKernelPoints(x, n, d, "the kernel matrix's"); err != nil {
		return fmt.Errorf("CrossKernel: %w", err)
	}
	return nil
}
