package ops

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gradients of the dense kernels.
//
// Convention. The kernels read the lower triangle of A only, but every
// gradient Ā returned here is a symmetric matrix, correct along symmetric
// perturbations: for a symmetric E, d f(A + εE)/dε = Σ_ij Ā_ij E_ij. This is
// what a chain through a symmetric A(θ) needs (dA/dθ is symmetric), and it is
// the gradient a caller gets for the full matrix A when A is symmetric.
//
// Formulas (X̄, C̄, L̄, w̄, V̄ are the gradients of the outputs, ḡ of LogDet;
// sym(M) = ½(M + Mᵀ)):
//
//	Potrs      X = A⁻¹B:     B̄ = CholSolve(L, X̄) on the existing factor L,
//	                         Ā = −½(B̄Xᵀ + XB̄ᵀ); no refactorisation.
//	CholSolve  X = (LLᵀ)⁻¹B: B̄ = CholSolve(L, X̄), L̄ = −tril((B̄Xᵀ + XB̄ᵀ)·L)
//	                         (L's strict upper triangle is not read, so its
//	                         gradient is zero).
//	Potri      C = A⁻¹:      Ā = −C·sym(C̄)·C.
//	LogDet     log det A:    Ā = ḡ·A⁻¹, A⁻¹ from Potri on the existing factor.
//	GaussianLogDensity −½·tr(BᵀA⁻¹B) − (k/2)·log det A − const, X = A⁻¹B (k columns):
//	           Ā = ḡ·(½·X·Xᵀ − (k/2)·A⁻¹) in one computation, B̄ = −ḡ·X.
//	Cholesky   A = LLᵀ:      Ā = sym(L⁻ᵀ·Φ(Lᵀ·tril(L̄))·L⁻¹), Φ taking the lower
//	                         triangle and halving the diagonal (Murray 2016,
//	                         "Differentiation of the Cholesky decomposition").
//	Syevd      A = V·diag(w)·Vᵀ:
//	           Ā = V·(diag(w̄) + F∘(VᵀV̄))·Vᵀ, symmetrised, F_ij = 1/(w_j − w_i)
//	           for i ≠ j and 0 on the diagonal. EigenValues contributes
//	           V·diag(w̄)·Vᵀ (values only: the backward graph gets its own
//	           Eigen(A) node for V), EigenVectors (and an Eigen node used as a
//	           matrix) contributes sym(V·(F∘(VᵀV̄))·Vᵀ).
//
// Repeated eigenvalues: F is unbounded as two eigenvalues approach each other
// and infinite when they are equal (to rounding: kernels.EigenGapTolerance).
// There a pair whose entries of VᵀV̄ are both zero (the cost leaves those
// eigenvectors unused, or uses only their span) contributes 0, and any other
// pair is ErrRepeatedEigenvalues instead of Inf or NaN: its limit depends on
// how VᵀV̄ varies with w, which the backward pass does not see
// (kernels.EigenvectorTerm). Entries zero at that V alone (a diagonal A and
// a cost Σ W∘V∘V, not differentiable there) pass the same test: w̄ and V̄
// cannot tell them apart (README). The eigenvalue gradient has no such
// problem.
//
// Inputs that are not differentiated: the factor L of Potrs, Potri, LogDet
// and GaussianLogDensity and GaussianLogDensity's solution X (the gradient goes to A and B
// directly) and the Eigen node E of EigenValues and EigenVectors (each
// contributes its share to A directly).
//
// Complex dtypes are forward only: SymDiff and DoDiff return an error
// wrapping ErrComplexGradient.

// ErrComplexGradient is returned when a gradient of a complex-valued kernel is
// requested (kernels.ErrComplexGradient, which package dist returns too).
var ErrComplexGradient = kernels.ErrComplexGradient

// ErrRepeatedEigenvalues is returned by the eigenvector gradient at repeated
// eigenvalues whose eigenvectors the cost uses (kernels.ErrRepeatedEigenvalues,
// which package dist returns too).
var ErrRepeatedEigenvalues = kernels.ErrRepeatedEigenvalues

func (o *kernelOp) checkGrad() error {
	if isComplex(o.dt) {
		return fmt.Errorf("%v (%v): %w", o, o.dt, ErrComplexGradient)
	}
	return nil
}

// DiffWRT: the factor L of Potrs, Potri and LogDet and the Eigen node of
// EigenValues and EigenVectors are not differentiated.
func (o *kernelOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	if n > 0 {
		d[0] = true
	}
	switch o.kind {
	case kCholSolve:
		if n == 2 {
			d[1] = true
		}
	case kPotrs:
		if n == 3 {
			d[2] = true
		}
	case kLogDensity:
		if n == 4 {
			d[3] = true
		}
	}
	return d
}

// SymDiff builds the backward pass as sharded ops on the op's mesh.
func (o *kernelOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if err := o.checkGrad(); err != nil {
		return nil, err
	}
	if len(in) != o.arity {
		return nil, fmt.Errorf("ops: %v: %d inputs, want %d", o, len(in), o.arity)
	}
	res := make(gorgonia.Nodes, len(in))
	var err error
	switch o.kind {
	case kCholesky:
		res[0], err = gradNode(gCholesky, in[0], o.dt, out, grad)
	case kCholSolve:
		var xbar, bbar *gorgonia.Node
		if xbar, err = Shard(grad, o.pl.Mesh, o.pl.Layout); err != nil {
			break
		}
		if bbar, err = CholSolve(in[0], xbar, forBackward()); err != nil {
			break
		}
		res[1] = bbar
		res[0], err = gradNode(gCholSolveL, in[0], o.dt, bbar, out, in[0])
	case kPotrs:
		var xbar, bbar *gorgonia.Node
		if xbar, err = Shard(grad, o.pl.Mesh, o.pl.Layout); err != nil {
			break
		}
		if bbar, err = CholSolve(in[1], xbar, forBackward()); err != nil { // the existing factor
			break
		}
		res[2] = bbar
		res[0], err = gradNode(gSymOuter, in[0], o.dt, bbar, out)
	case kPotri:
		res[0], err = gradNode(gSandwich, in[0], o.dt, out, grad)
	case kLogDet:
		var inv *gorgonia.Node
		if inv, err = Potri(in[0], in[1], forBackward()); err != nil {
			break
		}
		res[0], err = gradNode(gScale, in[0], o.dt, inv, grad)
	case kLogDensity:
		var inv *gorgonia.Node
		if inv, err = Potri(in[0], in[1], forBackward()); err != nil {
			break
		}
		if res[0], err = gradNode(gLogDensity, in[0], o.dt, inv, in[2], grad); err != nil {
			break
		}
		// Where A's gradient lives is decided before B̄'s nodes read the
		// solution X: they would count as a path from A (through Potrs) to
		// an output (consumers).
		if res[0], err = gradFor(in[0], res[0]); err != nil {
			break
		}
		res[3], err = logDensityRHSGrad(in[2], grad)
	case kEigen:
		res[0], err = gradNode(gEigVectors, in[0], o.dt, out, grad)
	case kEigValues:
		e := in[len(in)-1]
		if o.arity == 1 {
			if e, err = Eigen(in[0], forBackward()); err != nil {
				break
			}
		}
		res[0], err = gradNode(gEigValues, in[0], o.dt, e, grad)
	case kEigVectors:
		res[0], err = gradNode(gEigVectors, in[0], o.dt, in[1], grad)
	default:
		err = fmt.Errorf("ops: unknown kernel %d", o.kind)
	}
	if err != nil {
		return nil, fmt.Errorf("ops: gradient of %v: %w", o, err)
	}
	for i := range res {
		if o.kind == kLogDensity && i == 0 {
			continue // placed above
		}
		if res[i], err = gradFor(in[i], res[i]); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// logDensityRHSGrad is GaussianLogDensity's B̄ = −ḡ·X on the host, from
// the solution x: N×K values, checked as a result of mgla's.
func logDensityRHSGrad(x, grad *gorgonia.Node) (*gorgonia.Node, error) {
	xh, err := Gather(x)
	if err != nil {
		return nil, err
	}
	neg, err := gorgonia.Neg(grad)
	if err != nil {
		return nil, err
	}
	bbar, err := gorgonia.Mul(xh, neg)
	if err != nil {
		return nil, err
	}
	return CheckFinite(bbar, "the gradient of GaussianLogDensity's right-hand side: "+errGradRange)
}

// DoDiff is the LispMachine's backward pass: it reads the output's gradient
// and adds the inputs' gradients into their accumulators. Temporaries are
// allocated per call (the LispMachine re-derives everything on every run).
func (o *kernelOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	if err := o.checkGrad(); err != nil {
		return err
	}
	og, err := gradOf(out)
	if err != nil {
		return err
	}
	if isZeroGrad(og) {
		// Nothing flows back: a factor only used through Potrs, an Eigen node
		// only read by EigenValues/EigenVectors, or an unused output.
		return nil
	}
	if err := o.doDiff(in, out, og); err != nil {
		return fmt.Errorf("ops: gradient of %v: %w", o, err)
	}
	return nil
}

func (o *kernelOp) doDiff(in gorgonia.Nodes, out *gorgonia.Node, og gorgonia.Value) error {
	pa, ok := PlacementOf(in[0])
	if !ok {
		return fmt.Errorf("%w: %v", ErrNotCyclic, in[0])
	}
	n := in[0].Shape()[0]
	val := func(i int) gorgonia.Value { return in[i].Value() }
	// addGrad computes the backward computation kind into a temporary placed
	// like A and adds it to A's accumulator.
	addGrad := func(kind gradKind, vals ...gorgonia.Value) error {
		tmp, err := sharding.New(pa.Mesh, tensor.Shape{n, n}, o.dt, pa.Layout)
		if err != nil {
			return err
		}
		defer tmp.Free()
		if err := runGrad(kind, tmp, vals...); err != nil {
			return err
		}
		return accumulateInto(in[0], tmp)
	}
	// cholSolve is B̄ = (LLᵀ)⁻¹X̄ placed like the output.
	cholSolve := func(l gorgonia.Value) (*sharding.Tensor, error) {
		ls, err := asSharded(l, Placement{o.pl.Mesh, inputLayout(l, o.pl)})
		if err != nil {
			return nil, err
		}
		xbar, err := asSharded(og, Placement{o.pl.Mesh, inputLayout(og, o.pl)})
		if err != nil {
			return nil, err
		}
		bbar, err := sharding.New(o.pl.Mesh, out.Shape(), o.dt, o.pl.Layout)
		if err != nil {
			return nil, err
		}
		if err := solverFor(o.pl.Mesh, o.dispatch).potrs(ls, xbar, bbar); err != nil {
			return nil, err
		}
		return bbar, nil
	}

	// inverse is A⁻¹ from the factor L (input 1), placed like A.
	inverse := func() (*sharding.Tensor, error) {
		ls, err := asSharded(val(1), Placement{pa.Mesh, inputLayout(val(1), pa)})
		if err != nil {
			return nil, err
		}
		inv, err := sharding.New(pa.Mesh, tensor.Shape{n, n}, o.dt, pa.Layout)
		if err != nil {
			return nil, err
		}
		if err := solverFor(pa.Mesh, o.dispatch).potri(ls, inv); err != nil {
			inv.Free()
			return nil, err
		}
		return inv, nil
	}

	switch o.kind {
	case kCholesky:
		return addGrad(gCholesky, out.Value(), og)
	case kCholSolve:
		bbar, err := cholSolve(val(0))
		if err != nil {
			return err
		}
		defer bbar.Free()
		if err := accumulateInto(in[1], bbar); err != nil {
			return err
		}
		tmp, err := sharding.New(pa.Mesh, tensor.Shape{n, n}, o.dt, pa.Layout)
		if err != nil {
			return err
		}
		defer tmp.Free()
		if err := runGrad(gCholSolveL, tmp, bbar, out.Value(), val(0)); err != nil {
			return err
		}
		return accumulateInto(in[0], tmp)
	case kPotrs:
		bbar, err := cholSolve(val(1))
		if err != nil {
			return err
		}
		defer bbar.Free()
		if err := accumulateInto(in[2], bbar); err != nil {
			return err
		}
		return addGrad(gSymOuter, bbar, out.Value())
	case kPotri:
		return addGrad(gSandwich, out.Value(), og)
	case kLogDet:
		if _, err := gScalarOf(og); err != nil { // before the inverse: a malformed ḡ fails early
			return err
		}
		inv, err := inverse()
		if err != nil {
			return err
		}
		defer inv.Free()
		// Through a temporary, whose check turns a ḡ·A⁻¹ beyond the dtype's
		// range into ErrNonFinite (added straight into A's accumulator it
		// was a silent Inf).
		return addGrad(gScale, inv, og)
	case kLogDensity:
		g, err := gScalarOf(og)
		if err != nil {
			return err
		}
		xs, err := asSharded(val(2), Placement{pa.Mesh, inputLayout(val(2), pa)})
		if err != nil {
			return err
		}
		inv, err := inverse()
		if err != nil {
			return err
		}
		defer inv.Free()
		if err := addGrad(gLogDensity, inv, xs, og); err != nil {
			return err
		}
		bbar, err := sharding.New(xs.Mesh(), xs.Shape(), o.dt, xs.Layout())
		if err != nil {
			return err
		}
		defer bbar.Free()
		if err := bbar.AddScaled(-g, xs); err != nil {
			return err
		}
		if err := bbar.CheckFinite(false); err != nil {
			return fmt.Errorf("the gradient of GaussianLogDensity's right-hand side: %s: %w", errGradRange, err)
		}
		return accumulateInto(in[3], bbar)
	case kEigen:
		return addGrad(gEigVectors, out.Value(), og)
	case kEigValues:
		e, ok := val(len(in) - 1).(*eigenValue)
		if o.arity == 1 || !ok {
			// Values only: the vectors are needed now.
			as, err := asSharded(val(0), Placement{pa.Mesh, inputLayout(val(0), pa)})
			if err != nil {
				return err
			}
			v, err := sharding.New(pa.Mesh, tensor.Shape{n, n}, o.dt, pa.Layout)
			if err != nil {
				return err
			}
			defer v.Free()
			e = &eigenValue{Tensor: v, w: make([]float64, n)}
			if err := solverFor(pa.Mesh, o.dispatch).syevd(as, e.w, v); err != nil {
				return err
			}
		}
		return addGrad(gEigValues, e, og)
	case kEigVectors:
		return addGrad(gEigVectors, val(1), og)
	}
	return fmt.Errorf("ops: unknown kernel %d", o.kind)
}

func accumulateInto(n *gorgonia.Node, src gorgonia.Value) error {
	ig, err := gradOf(n)
	if err != nil {
		return err
	}
	return accumulate(unwrapEigen(ig), src)
}

// isZeroGrad reports whether a gradient value is exactly zero. Sharded values
// on other than CPU meshes are not inspected (reported non-zero).
func isZeroGrad(v gorgonia.Value) bool {
	switch x := unwrapEigen(v).(type) {
	case *sharding.Tensor:
		if x.Mesh().Kind() != sharding.CPU {
			return false
		}
		switch x.Dtype() {
		case tensor.Float64:
			return gAllZeroShards[float64](x)
		case tensor.Float32:
			return gAllZeroShards[float32](x)
		}
		return false
	case nil:
		return true
	}
	switch d := v.Data().(type) {
	case float64:
		return d == 0
	case float32:
		return d == 0
	case []float64:
		return gAllZero(d)
	case []float32:
		return gAllZero(d)
	}
	return false
}

func gAllZeroShards[T gradReal](t *sharding.Tensor) bool {
	sh, err := sharding.HostShards[T](t)
	if err != nil {
		return false
	}
	for _, s := range sh {
		if !gAllZero(s) {
			return false
		}
	}
	return true
}

func gAllZero[T gradReal](s []T) bool {
	for _, x := range s {
		if x != 0 {
			return false
		}
	}
	return true
}

// UnwrapSymDiff returns the error inside a gorgonia.SymDiffError, and nil when
// err holds none. Gorgonia's Grad returns the errors of an op's SymDiff (for
// example ErrComplexGradient) inside a SymDiffError, which has no Unwrap
// method in gorgonia v0.9.18, so errors.Is cannot see them; this reads the
// wrapped error (an unexported field, pinned by the tests).
func UnwrapSymDiff(err error) error {
	var sde gorgonia.SymDiffError
	if !errors.As(err, &sde) {
		return nil
	}
	f := reflect.ValueOf(&sde).Elem().FieldByName("err")
	if !f.IsValid() || f.Type() != reflect.TypeFor[error]() {
		return nil
	}
	return *(*error)(unsafe.Pointer(f.UnsafeAddr()))
}
