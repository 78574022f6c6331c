package mgla_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Documented promises that the other tests leave open: the ops leave
// sharded inputs as they were, read only the lower triangle of A (and of L)
// whatever the other one holds, never return a silent Inf, and give the
// exact gradient at close but distinct eigenvalues.

// prBuilder is one root builder and the outputs a test reads from it. m is
// its matrix operand: A, or the factor L for CholSolve.
type prBuilder struct {
	name   string
	factor bool // m is a lower triangular factor L (CholSolve), not an HPD A
	withB  bool // the builder takes a right-hand side b
	build  func(m, b *G.Node, opts ...mgla.Option) ([]*G.Node, error)
}

func prBuilders() []prBuilder {
	one := func(n *G.Node, err error) ([]*G.Node, error) { return []*G.Node{n}, err }
	return []prBuilder{
		{"Potrs", false, true, func(a, b *G.Node, o ...mgla.Option) ([]*G.Node, error) { return one(mgla.Potrs(a, b, o...)) }},
		{"CholSolve", true, true, func(l, b *G.Node, o ...mgla.Option) ([]*G.Node, error) { return one(mgla.CholSolve(l, b, o...)) }},
		{"Potri", false, false, func(a, _ *G.Node, o ...mgla.Option) ([]*G.Node, error) { return one(mgla.Potri(a, o...)) }},
		{"Cholesky", false, false, func(a, _ *G.Node, o ...mgla.Option) ([]*G.Node, error) { return one(mgla.Cholesky(a, o...)) }},
		{"LogDet", false, false, func(a, _ *G.Node, o ...mgla.Option) ([]*G.Node, error) { return one(mgla.LogDet(a, o...)) }},
		{"Syevd", false, false, func(a, _ *G.Node, o ...mgla.Option) ([]*G.Node, error) {
			w, v, err := mgla.Syevd(a, o...)
			return []*G.Node{w, v}, err
		}},
		{"Syevd values only", false, false, func(a, _ *G.Node, o ...mgla.Option) ([]*G.Node, error) {
			w, _, err := mgla.Syevd(a, append(o, mgla.EigenvaluesOnly())...)
			return []*G.Node{w}, err
		}},
	}
}

// prMatrix is a builder's matrix operand, row-major (real when cplx is
// false), with a zero strict upper triangle: a random HPD A, or for a factor
// a well conditioned lower triangular L with a positive real diagonal.
func prMatrix(rng *rand.Rand, n int, cplx, factor bool) []complex128 {
	var m []complex128
	if factor {
		m = randomMatrix(rng, n, n, cplx)
		for i := range n {
			m[i*n+i] = complex(2+math.Abs(real(m[i*n+i])), 0)
			for j := range i {
				m[i*n+j] *= 0.3
			}
		}
	} else {
		m, _ = hpd(rng, n, cplx)
	}
	return prUpper(m, n, func(int) complex128 { return 0 })
}

// prUpper is a copy of the n×n row-major m with f(k) in its strict upper
// triangle, k counting those entries row by row.
func prUpper(m []complex128, n int, f func(k int) complex128) []complex128 {
	out := append([]complex128(nil), m...)
	k := 0
	for i := range n {
		for j := i + 1; j < n; j++ {
			out[i*n+j] = f(k)
			k++
		}
	}
	return out
}

// prMode is how a graph runs: forward only on the TapeMachine, or forward
// and backward through gorgonia.Grad + TapeMachine or a LispMachine.
type prMode struct {
	name       string
	grad, lisp bool
}

var prModes = []prMode{{"tape", false, false}, {"tape+grad", true, false}, {"lisp+grad", true, true}}

// prModesFor are the modes a dtype runs in: complex graphs run forward only
// (their gradients are ErrComplexGradient, and the LispMachine cannot bind
// complex values: lispComplexReason).
func prModesFor(dt tensor.Dtype) []prMode {
	if isComplex(dt) {
		return prModes[:1]
	}
	return prModes
}

// prCost reduces outs to a scalar, Σ_k Σ W_k∘out_k, with fixed weights
// that are not symmetric (a scalar output enters as it is).
func prCost(outs []*G.Node) (*G.Node, error) {
	var cost *G.Node
	for i, o := range outs {
		term := o
		if o.Dims() > 0 {
			size := o.Shape().TotalSize()
			w := make([]complex128, size)
			for k := range w {
				w[k] = complex(0.5+float64((7*k+3*i)%11)/10, 0)
			}
			wn := G.NewTensor(o.Graph(), o.Dtype(), o.Dims(), G.WithShape(o.Shape()...), G.WithName(fmt.Sprintf("W%d", i)),
				G.WithValue(toDense(o.Dtype(), w, o.Shape()...)))
			prod, err := G.HadamardProd(o, wn)
			if err != nil {
				return nil, err
			}
			if term, err = G.Sum(prod); err != nil {
				return nil, err
			}
		}
		if cost == nil {
			cost = term
			continue
		}
		var err error
		if cost, err = G.Add(cost, term); err != nil {
			return nil, err
		}
	}
	return cost, nil
}

// prRun runs g in mode and returns copies of the values of outs and the
// gradients of wrt (with gradients). The TapeMachine runs the graph runs
// times (Reset in between: the ops reuse their output buffers from one run
// to the next); a LispMachine runs once, a fresh one for each call (it keeps
// the input values of its first run).
func prRun(t *testing.T, g *G.ExprGraph, outs, wrt []*G.Node, mode prMode, runs int) (vals, grads []G.Value, err error) {
	t.Helper()
	vals = make([]G.Value, len(outs))
	if mode.grad {
		cost, err := prCost(outs)
		require.NoError(t, err)
		if !mode.lisp {
			_, err := G.Grad(cost, wrt...)
			require.NoError(t, err)
		}
	}
	if mode.lisp {
		m := G.NewLispMachine(g)
		defer m.Close()
		if err := m.RunAll(); err != nil {
			return nil, nil, err
		}
		for i, o := range outs {
			vals[i] = o.Value()
		}
	} else {
		// Read copies each output as it is computed: the backward pass may
		// reuse its memory.
		for i, o := range outs {
			G.Read(o, &vals[i])
		}
		m := G.NewTapeMachine(g)
		defer m.Close()
		for r := range runs {
			if r > 0 {
				m.Reset()
			}
			if err := m.RunAll(); err != nil {
				return nil, nil, err
			}
		}
	}
	if mode.grad {
		for _, w := range wrt {
			gv, err := w.Grad()
			require.NoError(t, err, "gradient of %v", w.Name())
			require.NotNil(t, gv, "gradient of %v", w.Name())
			grads = append(grads, gv)
		}
	}
	return vals, grads, nil
}

// prHostValue is a sharded or host value as a host tensor, for elementBits.
func prHostValue(t *testing.T, v G.Value) G.Value {
	t.Helper()
	if s, ok := v.(*sharding.Tensor); ok {
		d, err := s.Gather()
		require.NoError(t, err)
		return d
	}
	return v
}

// TestShardedInputsUnchanged pins "Ops never overwrite their inputs"
// (ops/doc.go:9) for sharded inputs: every builder fed ops.Input nodes of
// sharding.Put tensors, A (or L) with large finite junk in its strict upper
// triangle, in the op's own layout (used as they are) and in row blocks
// (relaid out), on meshes of 1 and 3 CPU devices, forward, with
// gorgonia.Grad gradients on the TapeMachine (two runs each) and with a
// LispMachine, in float64 and float32 (complex128 forward only): the
// tensors on the mesh hold bitwise what they held before.
func TestShardedInputsUnchanged(t *testing.T) {
	const n, k, tile = 7, 2, 3
	rng := newRNG(t, 61)
	layouts := []struct {
		name string
		m, b sharding.Layout
	}{
		{"op layout", sharding.Cyclic(tile), sharding.Cyclic(tile)},
		{"row blocks", sharding.RowBlocks(), sharding.RowBlocks()},
	}
	for _, bc := range prBuilders() {
		for _, ndev := range []int{1, 3} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Complex128} {
				for _, lay := range layouts {
					for _, mode := range prModesFor(dt) {
						t.Run(fmt.Sprintf("%s/dev%d/%v/%s/%s", bc.name, ndev, dt, lay.name, mode.name), func(t *testing.T) {
							mesh, err := testMesh(t, ndev)
							require.NoError(t, err)
							large := 1e300
							if dt == tensor.Float32 {
								large = 1e37
							}
							junk := func(int) complex128 {
								if isComplex(dt) {
									return complex(large*rng.NormFloat64(), -large*rng.NormFloat64())
								}
								return complex(large*rng.NormFloat64(), 0)
							}
							mHost := toDense(dt, prUpper(prMatrix(rng, n, isComplex(dt), bc.factor), n, junk), n, n)
							mBefore := mHost.Clone().(*tensor.Dense)
							mT, err := sharding.Put(mHost, mesh, lay.m)
							require.NoError(t, err)
							defer mT.Free()
							g := G.NewGraph()
							mNode := ops.Input(g, mT, "M")
							wrt := []*G.Node{mNode}
							var bNode *G.Node
							var bT *sharding.Tensor
							var bBefore *tensor.Dense
							if bc.withB {
								bHost := toDense(dt, randomMatrix(rng, n, k, isComplex(dt)), n, k)
								bBefore = bHost.Clone().(*tensor.Dense)
								bT, err = sharding.Put(bHost, mesh, lay.b)
								require.NoError(t, err)
								defer bT.Free()
								bNode = ops.Input(g, bT, "B")
								wrt = append(wrt, bNode)
							}
							outs, err := bc.build(mNode, bNode, onMesh(mesh), mgla.WithTile(tile))
							require.NoError(t, err)
							vals, _, err := prRun(t, g, outs, wrt, mode, 2)
							require.NoError(t, mgla.Cause(err), "seed %d", testSeed)
							for i, v := range vals {
								require.NotNil(t, v, "output %d", i)
							}

							gathered, err := mT.Gather()
							require.NoError(t, err)
							requireUnchanged(t, "the sharded matrix", mBefore, gathered)
							if bc.withB {
								gathered, err := bT.Gather()
								require.NoError(t, err)
								requireUnchanged(t, "the sharded right-hand side", bBefore, gathered)
							}
						})
					}
				}
			}
		}
	}
}

// TestUpperTriangleNeverRead pins "Every op reads only the lower triangle
// of A" (README.md:180), "L's upper triangle is not read" (README.md:184)
// and "the strict upper triangle is never read and may hold anything, NaN
// included" (kernels/doc.go:10): NaN or ±Inf in the whole strict upper
// triangle of A (of L for CholSolve), for every builder, all four dtypes
// (complex junk in either part or both), meshes of 1 and 3 devices, is no
// error, and every output is bitwise what the same graph gives with zeros
// there; for real dtypes so are the gradients of A (L) and b, through
// gorgonia.Grad + TapeMachine and through a LispMachine.
func TestUpperTriangleNeverRead(t *testing.T) {
	const n, k, tile = 7, 2, 3
	nan, inf := math.NaN(), math.Inf(1)
	junks := []struct {
		name string
		f    func(k int) complex128
	}{
		{"NaN", func(k int) complex128 {
			return []complex128{complex(nan, 0), complex(0, nan), complex(nan, nan)}[k%3]
		}},
		{"Inf", func(k int) complex128 {
			return []complex128{complex(inf, 0), complex(-inf, 0), complex(0, -inf), complex(-inf, inf)}[k%4]
		}},
	}
	rng := newRNG(t, 62)
	for _, bc := range prBuilders() {
		for _, ndev := range []int{1, 3} {
			for _, dt := range sharding.Dtypes {
				for _, junk := range junks {
					for _, mode := range prModesFor(dt) {
						t.Run(fmt.Sprintf("%s/dev%d/%v/%s/%s", bc.name, ndev, dt, junk.name, mode.name), func(t *testing.T) {
							mesh, err := testMesh(t, ndev)
							require.NoError(t, err)
							clean := prMatrix(rng, n, isComplex(dt), bc.factor)
							bv := randomMatrix(rng, n, k, isComplex(dt))
							// run builds and runs the graph with the matrix m and returns
							// its outputs followed by the gradients.
							run := func(m []complex128) []G.Value {
								g := G.NewGraph()
								mNode := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("M"), G.WithValue(toDense(dt, m, n, n)))
								wrt := []*G.Node{mNode}
								var bNode *G.Node
								if bc.withB {
									bNode = G.NewMatrix(g, dt, G.WithShape(n, k), G.WithName("B"), G.WithValue(toDense(dt, bv, n, k)))
									wrt = append(wrt, bNode)
								}
								outs, err := bc.build(mNode, bNode, onMesh(mesh), mgla.WithTile(tile))
								require.NoError(t, err)
								vals, grads, err := prRun(t, g, outs, wrt, mode, 1)
								require.NoError(t, mgla.Cause(err), "%s in the upper triangle, seed %d", junk.name, testSeed)
								return append(vals, grads...)
							}
							want := run(clean)
							got := run(prUpper(clean, n, junk.f))
							require.Len(t, got, len(want))
							for i := range want {
								w, g := elementBits(t, prHostValue(t, want[i])), elementBits(t, prHostValue(t, got[i]))
								require.Equal(t, w, g, "value %d (outputs, then gradients) differs with %s in the upper triangle (seed %d)", i, junk.name, testSeed)
							}
						})
					}
				}
			}
		}
	}
}

// TestSolutionsAndEigenvectorsBeyondRange pins "ErrNonFinite covers … a
// result beyond the dtype's range (… a solution or an eigenvalue past the
// largest float) … none returns a silent Inf or NaN" (README.md:205-208)
// for the cases TestResultsBeyondRange leaves out: CholSolve whose solution
// overflows (a right-hand side near the largest float, a tiny pivot, an
// overflow through an off-diagonal entry of L; in single precision the
// solution fits float64 and overflows only when rounded), and Syevd with
// eigenvectors on a matrix whose eigenvalues overflow; all four dtypes,
// meshes of 1 and 2 devices, the TapeMachine and (real dtypes) the
// LispMachine: ErrNonFinite through mgla.Cause.
func TestSolutionsAndEigenvectorsBeyondRange(t *testing.T) {
	const n = 3
	for _, ndev := range []int{1, 2} {
		for _, dt := range sharding.Dtypes {
			single := dt == tensor.Float32 || dt == tensor.Complex64
			huge, tiny, couple := 1.7e308, 1e-160, 1e160 // 4·huge, 1/tiny², couple² beyond float64
			if single {
				huge, tiny, couple = 3e38, 1e-20, 1e20 // beyond float32, within float64
			}
			diag := func(d ...float64) []complex128 {
				a := make([]complex128, n*n)
				for i, v := range d {
					a[i*n+i] = complex(v, 0)
				}
				return a
			}
			coupled := diag(1, 1, 1) // L = [1 0 0; c 1 0; 0 0 1], b = e₀: x₀ = 1 + c²
			coupled[1*n+0] = complex(couple, 0)
			full := make([]complex128, n*n) // every entry huge: the eigenvalue 3·huge
			for i := range full {
				full[i] = complex(huge, 0)
			}
			cases := []struct {
				name string
				m, b []complex128
				syev bool
			}{
				{"CholSolve, b near the largest float", diag(0.5, 1, 1), []complex128{complex(huge, 0), 1, 1}, false},
				{"CholSolve, tiny pivot", diag(tiny, 1, 1), []complex128{1, 1, 1}, false},
				{"CholSolve, large off-diagonal", coupled, []complex128{1, 0, 0}, false},
				{"Syevd with vectors", full, nil, true},
			}
			for _, c := range cases {
				for _, lisp := range []bool{false, true} {
					if lisp && isComplex(dt) {
						continue // lispComplexReason
					}
					machine := map[bool]string{false: "tape", true: "lisp"}[lisp]
					t.Run(fmt.Sprintf("dev%d/%v/%s/%s", ndev, dt, c.name, machine), func(t *testing.T) {
						mesh, err := testMesh(t, ndev)
						require.NoError(t, err)
						g := G.NewGraph()
						m := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("M"), G.WithValue(toDense(dt, c.m, n, n)))
						if c.syev {
							_, _, err = mgla.Syevd(m, onMesh(mesh), mgla.WithTile(2))
						} else {
							b := G.NewMatrix(g, dt, G.WithShape(n, 1), G.WithName("b"), G.WithValue(toDense(dt, c.b, n, 1)))
							_, err = mgla.CholSolve(m, b, onMesh(mesh), mgla.WithTile(2))
						}
						require.NoError(t, err)
						err = run(t, g, lisp)
						require.Error(t, err, "a result beyond the range came back without an error")
						require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNonFinite), "want ErrNonFinite, got %v", err)
					})
				}
			}
		}
	}
}

// TestSyevdCloseEigenvaluesGradient pins "Close but distinct eigenvalues
// give the exact, large, gradient" (README.md:222). A = Q·diag(λ)·Qᵀ with
// λ = (1, 2, 3, 3+gap, 5, 6, 7, 8), gap = 2⁻¹⁰ … 2⁻³⁰ (1e-3 … 1e-9) in
// float64 and 2⁻⁷ … 2⁻¹³ in float32 (above the repeated-eigenvalue
// threshold max(n, 64)·ε·max|w|), Q orthogonal with entries that are
// multiples of 1/64, so that A and its eigen-decomposition are exact in
// float64. The gradient of cost = Σ u∘w + Σ W∘V∘V (Q and the random weights
// drawn until the close pair's term makes it of order 1/gap) through
// gorgonia.Grad + TapeMachine and the LispMachine, on meshes of 1 and 3
// devices, must match the analytic Ā = Q·(diag(u) + sym(F∘QᵀV̄))·Qᵀ,
// F_ij = 1/(λ_j − λ_i), V̄ = 2W∘Q, to within what the conditioning allows: a
// backward stable eigensolver turns the pair's vectors by up to about
// n·ε·‖A‖/gap, so the relative error may grow like n·ε·‖A‖/gap and no
// faster (measured: at most 0.12 of the tolerance over 200 seeds, float64).
// Where they are accurate (float64, gap ≥ 2⁻¹³) fourth-order central finite
// differences of mgla's forward pass check the analytic formula.
func TestSyevdCloseEigenvaluesGradient(t *testing.T) {
	const n, tile = 8, 3
	rng := newRNG(t, 64)
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		eps := 0x1p-53
		exps := []int{10, 13, 17, 20, 23, 27, 30}
		if dt == tensor.Float32 {
			eps = 0x1p-24
			exps = []int{7, 10, 13}
		}
		for _, e := range exps {
			gap := math.Ldexp(1, -e)
			t.Run(fmt.Sprintf("%v/gap=2^-%d", dt, e), func(t *testing.T) {
				lam := []float64{1, 2, 3, 3 + gap, 5, 6, 7, 8}
				// Draw Q and the weights until the close pair's term makes the
				// gradient large (of order 1/gap; some draws nearly cancel it).
				var in, w, u, want []float64
				var wantNorm float64
				for range 100 {
					q := prExactOrthogonal(rng, n)
					in = prRound(dt, prExactProduct(t, q, lam, n))
					// The reference decomposition: exact in float64; for
					// float32 input, gonum's in float64 of the rounded matrix
					// (its errors, of order 1e-16/gap, are far below float32's).
					refW, refV := lam, q
					if dt == tensor.Float32 {
						refW, refV = prEigen(t, in, n)
					}
					w = prRound(dt, grRandom(rng, n, n).data)
					u = prRound(dt, grRandom(rng, n, 0).data)
					want = prEigenGradient(refW, refV, w, u, n)
					if wantNorm = grNorm(want); wantNorm > 0.05/gap {
						break
					}
				}
				require.Greater(t, wantNorm, 0.05/gap, "no draw gave a gradient of order 1/gap")
				tol := 8*float64(n)*eps*lam[n-1]/gap + 64*float64(n)*eps
				for _, ndev := range []int{1, 3} {
					for _, lisp := range []bool{false, true} {
						mesh, err := testMesh(t, ndev)
						require.NoError(t, err)
						opts := []mgla.Option{onMesh(mesh), mgla.WithTile(tile)}
						g, an, cost := prEigenCostGraph(t, dt, in, w, u, n, opts)
						require.NoError(t, grRunBackward(t, g, cost, lisp, an), "seed %d", testSeed)
						gv, err := an.Grad()
						require.NoError(t, err)
						got := grValue(t, gv)
						diff := make([]float64, len(got))
						for i := range got {
							diff[i] = got[i] - want[i]
						}
						// Relative to the gradient, or to 1/gap where a draw made
						// it smaller: the error is of order ε·‖A‖/gap², not
						// proportional to the gradient.
						rel := grNorm(diff) / max(wantNorm, 1/gap)
						t.Logf("dev%d lisp=%v: ‖Ā‖ = %.3g, relative error %.2e (tolerance %.2e, %.2f of it)", ndev, lisp, wantNorm, rel, tol, rel/tol)
						require.Less(t, rel, tol, "dev%d lisp=%v: gradient off by %.3g relative (seed %d)", ndev, lisp, rel, testSeed)
					}
				}
				if dt != tensor.Float64 || e > 13 {
					return
				}
				// Finite differences along a random symmetric direction, in
				// steps h = gap/64: the truncation error is of order (h/gap)⁴
				// relative, and the forward pass's rounding, which turns the
				// close pair's vectors by about ε·‖A‖/gap, adds about
				// ε·‖A‖/(gap·h) absolute, below 1e-7 of the derivative's scale
				// 1/gap for gap ≥ 2⁻¹³ (at 2⁻¹⁷ already about 1e-6).
				mesh, err := testMesh(t, 1)
				require.NoError(t, err)
				g, an, cost := prEigenCostGraph(t, dt, in, w, u, n, []mgla.Option{onMesh(mesh)})
				m := G.NewTapeMachine(g)
				defer m.Close()
				at := grMat{n, n, in}
				d := grSymDirection(rng, n)
				h := gap / 64
				eval := func(s float64) float64 {
					require.NoError(t, G.Let(an, at.plus(s*h, d).dense(tensor.Float64)))
					m.Reset()
					require.NoError(t, m.RunAll(), "seed %d", testSeed)
					return grValue(t, cost.Value())[0]
				}
				fd := (8*(eval(1)-eval(-1)) - (eval(2) - eval(-2))) / (12 * h)
				analytic := grDot(want, d.data)
				rel := math.Abs(fd-analytic) / math.Max(math.Abs(fd), 0.1*wantNorm/float64(n))
				t.Logf("finite differences %.10g, analytic %.10g: relative difference %.2e", fd, analytic, rel)
				require.Less(t, rel, 1e-5, "the analytic gradient disagrees with finite differences (seed %d)", testSeed)
			})
		}
	}
}

// prExactOrthogonal is a random n×n orthogonal matrix (n = 8), row-major,
// whose entries are nonzero multiples of 1/64: H(u₁)·H(u₂)·H(u₃)·P with
// Householder reflections H(u) = I − (2/n)·u·uᵀ of random ±1 vectors and a
// random signed permutation P, drawn again while an entry is zero (products
// of fewer reflections often have eigenvector pairs of disjoint support,
// which a cost of V∘V cannot couple). Every product here is exact in
// float64.
func prExactOrthogonal(rng *rand.Rand, n int) []float64 {
	sign := func() []float64 {
		u := make([]float64, n)
		for i := range u {
			u[i] = float64(2*rng.IntN(2) - 1)
		}
		return u
	}
	house := func(u []float64) []float64 {
		h := make([]float64, n*n)
		for i := range n {
			for j := range n {
				h[i*n+j] = -2 / float64(n) * u[i] * u[j]
			}
			h[i*n+i]++
		}
		return h
	}
	mul := func(a, b []float64) []float64 {
		c := make([]float64, n*n)
		for i := range n {
			for k := range n {
				for j := range n {
					c[i*n+j] += a[i*n+k] * b[k*n+j]
				}
			}
		}
		return c
	}
	for {
		q := mul(mul(house(sign()), house(sign())), house(sign()))
		if slices.Contains(q, 0) {
			continue
		}
		p := make([]float64, n*n)
		for i, j := range rng.Perm(n) {
			p[i*n+j] = float64(2*rng.IntN(2) - 1)
		}
		return mul(q, p)
	}
}

// prExactProduct is Q·diag(λ)·Qᵀ, row-major, and fails unless every entry
// is exact in float64 (computed in 256-bit arithmetic) and QᵀQ = I exactly.
func prExactProduct(t *testing.T, q, lam []float64, n int) []float64 {
	t.Helper()
	for i := range n {
		for j := range n {
			var s float64
			for k := range n {
				s += q[k*n+i] * q[k*n+j]
			}
			require.Equal(t, map[bool]float64{true: 1, false: 0}[i == j], s, "QᵀQ ≠ I at (%d,%d)", i, j)
		}
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			s := new(big.Float).SetPrec(256)
			for k := range n {
				p := new(big.Float).SetPrec(256).SetFloat64(q[i*n+k])
				p.Mul(p, new(big.Float).SetPrec(256).SetFloat64(lam[k]))
				p.Mul(p, new(big.Float).SetPrec(256).SetFloat64(q[j*n+k]))
				s.Add(s, p)
			}
			f, acc := s.Float64()
			require.Equal(t, big.Exact, acc, "A(%d,%d) is not exact in float64", i, j)
			a[i*n+j] = f
		}
	}
	return a
}

// prRound rounds x to the precision of dt.
func prRound(dt tensor.Dtype, x []float64) []float64 {
	out := append([]float64(nil), x...)
	if dt == tensor.Float32 {
		for i, v := range out {
			out[i] = float64(float32(v))
		}
	}
	return out
}

// prEigen is gonum's eigen-decomposition of the symmetric row-major a:
// ascending eigenvalues and the eigenvectors in the columns of a row-major
// matrix.
func prEigen(t *testing.T, a []float64, n int) (w, v []float64) {
	t.Helper()
	var es mat.EigenSym
	require.True(t, es.Factorize(mat.NewSymDense(n, append([]float64(nil), a...)), true))
	var vd mat.Dense
	es.VectorsTo(&vd)
	return es.Values(nil), append([]float64(nil), vd.RawMatrix().Data...)
}

// prEigenGradient is the gradient of Σ u∘w + Σ W∘V∘V for A = V·diag(λ)·Vᵀ
// (row-major V, ascending λ): V·(diag(u) + sym(F∘M))·Vᵀ with M = Vᵀ·V̄,
// V̄ = 2·W∘V, F_ij = 1/(λ_j − λ_i) off the diagonal.
func prEigenGradient(lam, v, w, u []float64, n int) []float64 {
	vbar := make([]float64, n*n)
	for i := range vbar {
		vbar[i] = 2 * w[i] * v[i]
	}
	m := make([]float64, n*n) // Vᵀ·V̄
	for i := range n {
		for j := range n {
			for k := range n {
				m[i*n+j] += v[k*n+i] * vbar[k*n+j]
			}
		}
	}
	inner := make([]float64, n*n)
	for i := range n {
		inner[i*n+i] = u[i]
		for j := range n {
			if i != j {
				inner[i*n+j] = (m[i*n+j]/(lam[j]-lam[i]) + m[j*n+i]/(lam[i]-lam[j])) / 2
			}
		}
	}
	out := make([]float64, n*n)
	for i := range n {
		for j := range n {
			var s float64
			for p := range n {
				for r := range n {
					s += v[i*n+p] * inner[p*n+r] * v[j*n+r]
				}
			}
			out[i*n+j] = s
		}
	}
	return out
}

// prEigenCostGraph builds cost = Σ u∘w + Σ W∘V∘V of (w, V) = Syevd(A) for
// the row-major a in dtype dt, and returns the graph, A's node and the cost.
func prEigenCostGraph(t *testing.T, dt tensor.Dtype, a, w, u []float64, n int, opts []mgla.Option) (*G.ExprGraph, *G.Node, *G.Node) {
	t.Helper()
	g := G.NewGraph()
	an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(grTensor(dt, []int{n, n}, a)))
	wn := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("W"), G.WithValue(grTensor(dt, []int{n, n}, w)))
	un := G.NewVector(g, dt, G.WithShape(n), G.WithName("u"), G.WithValue(grTensor(dt, []int{n}, u)))
	ev, v, err := mgla.Syevd(an, opts...)
	require.NoError(t, err)
	vv := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.HadamardProd(v, v)), wn))))
	cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(ev, un)))), vv))
	return g, an, cost
}
