package mgla

import (
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
)

// SquaredExponential is the N×N squared-exponential (RBF) kernel matrix of
// a Gaussian process or kernel method, made on the mesh where the ops that
// take it run:
//
//	K_ij = σ²·exp(−‖xᵢ − xⱼ‖²/(2ℓ²)) + σₙ²·[i = j]
//
// for the N points x (an N×D matrix of rows, or a length-N vector for D =
// 1) and the scalar nodes lengthScale (ℓ), signalVar (σ²) and noiseVar (σₙ²,
// nil for none), all float32 or float64. A lengthScale that is a length-D
// vector gives each dimension its own (automatic relevance determination,
// ARD): ‖xᵢ − xⱼ‖²/ℓ² becomes Σₖ ((xᵢₖ − xⱼₖ)/ℓₖ)², and its gradient is a
// vector. Each device of the mesh computes
// its own columns from x, their indices and the parameters; on a GPU
// mesh K is never on the host.
//
// K is a sharded node (package ops), unlike the other builders' results:
// pass it to Potrs, LogDet, GaussianLogDensity, Cholesky, Potri or Syevd,
// which keep it where it is, or ops.Gather it to the host for Gorgonia's
// own ops. Gorgonia's ops cannot read a sharded value: a graph where K
// feeds one of them (other than gorgonia.Read) is an ErrBadInput of the
// machine's run that names ops.Gather. Jitter belongs in σₙ², not in K + εI. Gradients flow to x
// and to the parameters, each device reducing its own columns of K's
// gradient. That gradient stays on the mesh when one op differentiates K
// (GaussianLogDensity for a Gaussian process's cost); with several (Potrs
// and LogDet) Gorgonia sums their N×N gradients on the host, and the sum
// goes back to the mesh. Put a positive parameter through gorgonia.Exp of
// its logarithm to train it unconstrained.
//
// Name the parameter nodes (gorgonia.WithName): Gorgonia merges input
// nodes of one type and shape that have no names into one, whatever their
// values, and two parameters that are one node are ErrBadInput here.
//
// Options: WithMesh and WithTile (K's tile; default DefaultTile). A length
// scale that is not positive, a negative variance, NaN or Inf are run-time
// ErrBadInput or ErrNonFinite; float32 computes in float64 and rounds.
//
// With WithGrid, K is made on the distributor's process grid instead
// (distops.Ops.KernelMatrix: a grid value, each process computing its own
// blocks of it from x and the parameters, which every process passes
// alike; WithTile sets the block size) for the grid's ops:
// GaussianLogDensity, Potrs, LogDet, Cholesky, Potri and Syevd with the
// same WithGrid, and CrossKernel. Gradients come back to x and the
// parameters on every process, the processes' shares of them added by one
// AllReduce; no process holds K or its gradient whole. K and the grid ops'
// matrix results (Potrs's K⁻¹y) are grid values, which Gorgonia's own ops
// cannot read (ErrBadInput of the run, naming Gather): bring them back
// with the distributor's Gather (distops.Ops.Gather) first.
func SquaredExponential(x, lengthScale, signalVar, noiseVar *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	return kernelMatrix("SquaredExponential", sharding.SquaredExp, x, lengthScale, signalVar, noiseVar, opts)
}

// Matern32 is SquaredExponential's kernel matrix for the Matérn kernel of
// smoothness 3/2, K_ij = σ²·(1 + √3·r)·exp(−√3·r) + σₙ²·[i = j] with r =
// ‖xᵢ − xⱼ‖/ℓ: rougher functions (once differentiable), with the same
// operands, options, gradients and errors.
func Matern32(x, lengthScale, signalVar, noiseVar *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	return kernelMatrix("Matern32", sharding.Matern32, x, lengthScale, signalVar, noiseVar, opts)
}

// Matern52 is SquaredExponential's kernel matrix for the Matérn kernel of
// smoothness 5/2, K_ij = σ²·(1 + √5·r + 5r²/3)·exp(−√5·r) + σₙ²·[i = j]
// with r = ‖xᵢ − xⱼ‖/ℓ (twice differentiable functions), with the same
// operands, options, gradients and errors.
func Matern52(x, lengthScale, signalVar, noiseVar *gorgonia.Node, opts ...Option) (*gorgonia.Node, error) {
	return kernelMatrix("Matern52", sharding.Matern52, x, lengthScale, signalVar, noiseVar, opts)
}

// kernelMatrix is the builder of the kernel matrices of family f.
func kernelMatrix(name string, f sharding.KernelFamily, x, lengthScale, signalVar, noiseVar *gorgonia.Node, opts []Option) (*gorgonia.Node, error) {
	c := &config{}
	c.apply(opts)
	switch {
	case c.gridSet && c.grid == nil:
		return nil, badInput("%s: WithGrid(nil): no distributor (leave the option out to run on a mesh)", name)
	case c.gridSet:
		if x == nil {
			return nil, badInput("%s: nil points", name)
		}
		if err := c.checkGrid(name, x); err != nil {
			return nil, err
		}
		n, err := c.grid.KernelMatrix(f, x, lengthScale, signalVar, noiseVar, c.block())
		return n, gridErr(name, err)
	case c.tileSet && c.tile < 1:
		return nil, badInput("%s: tile width must be at least 1, got %d", name, c.tile)
	case x == nil:
		return nil, badInput("%s: nil points", name)
	}
	if c.mesh == nil {
		m, err := sharding.DefaultMesh()
		if err != nil {
			return nil, err
		}
		c.mesh = m
	}
	if !c.tileSet && x.Dims() >= 1 {
		c.tile = DefaultTile(c.mesh, x.Shape()[0])
	}
	return ops.KernelMatrix(f, x, lengthScale, signalVar, noiseVar, c.mesh, sharding.Cyclic(max(1, c.tile)))
}

// CrossKernel is the M×N kernel between the M points xStar and the N
// points of the kernel matrix k made by SquaredExponential, Matern32 or
// Matern52, of k's family, length scale ℓ and signal variance σ², without
// k's noise: C_ij = σ²·v(‖x*ᵢ − xⱼ‖²/ℓ²) for the family's profile v of
// s = r² (with k's ARD length scales, Σₖ ((x*ᵢₖ − xⱼₖ)/ℓₖ)²). It is
// what a Gaussian process predicts with: the posterior mean at xStar is
// C·K⁻¹·y (gorgonia.Mul of C and Potrs(k, y); for a k made WithGrid,
// of C and the grid's Gather of Potrs(k, y, WithGrid(...))), the
// posterior variance σ² − diag(C·K⁻¹·Cᵀ) (add σₙ² for a new observation).
//
// xStar is a host node of k's dtype (or a gorgonia.NewConstant, which
// joins k's graph): M×D rows of k's dimension D, or a length-M vector when
// D is 1. C is a host node (an ordinary matrix that Gorgonia's own ops
// read), computed on the host whatever k's mesh from xStar and k's points,
// ℓ and σ²; it does not read k's value. Gradients flow to those four. NaN or Inf points are run-time ErrNonFinite; a node k that
// no kernel builder made, or points of another dimension or dtype,
// ErrBadInput.
func CrossKernel(k, xStar *gorgonia.Node) (*gorgonia.Node, error) {
	return ops.CrossKernel(k, xStar)
}
