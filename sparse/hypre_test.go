//go:build mpi

package sparse

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
)

const hypreBuilt = true

// TestCachedSetup: the hierarchy is built once while the values stay, again
// when they change (or kept, WithKeepHierarchy), again after Free; every
// answer matches the dense reference.
func TestCachedSetup(t *testing.T) {
	for _, keep := range []bool{false, true} {
		for _, m := range []Method{PCG, AMG, BiCGStab, GMRES} {
			if keep && m == AMG {
				continue // AMG alone on a kept hierarchy may diverge (see WithKeepHierarchy)
			}
			t.Run(map[bool]string{false: "rebuild/", true: "keep/"}[keep]+m.String(), func(t *testing.T) {
				rng := testRNG(t, uint64(300+int(m)+10*btoi(keep)))
				tr := laplace2D(rng, 9+rng.IntN(7), 8+rng.IntN(7), 0)
				a := tr.whole(t)
				opts := []Option{WithMethod(m), WithTolerance(1e-11), WithMaxIterations(1000)}
				if keep {
					opts = append(opts, WithKeepHierarchy())
				}
				s, err := NewSolver(a.Pattern, opts...)
				require.NoError(t, err)
				defer s.Close()
				g := G.NewGraph()
				vn := a.ValuesNode(g, "values")
				b := randVec(rng, tr.n)
				bn := vecNode(g, "b", b)
				x, err := s.Solve(vn, bn)
				require.NoError(t, err)
				var xv G.Value
				G.Read(x, &xv)
				vm := G.NewTapeMachine(g)
				defer vm.Close()
				run := func(wantSetups int, vals []float64) {
					t.Helper()
					require.NoError(t, vm.RunAll())
					vm.Reset()
					d := tr.dense()
					if vals != nil {
						td := tr
						td.vals = vals
						d = td.dense()
					}
					want := denseSolve(tr.n, d, b, false)
					e := relErr(nodeFloats(t, xv), want)
					t.Logf("%v; setups %d; error %.1e", s.Info(), s.Stats().Setups, e)
					require.Less(t, e, 1e-8)
					require.Equal(t, wantSetups, s.Stats().Setups)
				}
				run(1, nil)
				run(1, nil)
				require.False(t, s.Info().Setup)
				// New values on the same pattern (A's entries in triplet order).
				scaled := slices.Clone(tr.vals)
				for k := range scaled {
					if tr.rows[k] == tr.cols[k] {
						scaled[k] *= 1 + rng.Float64()
					}
				}
				tr2 := tr
				tr2.vals = scaled
				a2 := tr2.whole(t)
				require.NoError(t, G.Let(vn, a2.ValuesNode(G.NewGraph(), "v").Value()))
				if keep {
					run(1, scaled)
				} else {
					run(2, scaled)
					require.True(t, s.Info().Setup)
				}
				s.Free()
				run(2+btoi(!keep), scaled)
			})
		}
	}
}

// TestPreconditionerOp: z = M⁻¹r is linear in r, symmetric for SPD A, and
// reduces the error of A·x = r; its gradient matches finite differences.
func TestPreconditionerOp(t *testing.T) {
	rng := testRNG(t, 5)
	tr := laplace2D(rng, 11+rng.IntN(5), 10+rng.IntN(5), 0)
	a := tr.whole(t)
	s, err := NewSolver(a.Pattern)
	require.NoError(t, err)
	defer s.Close()
	r1, r2 := randVec(rng, tr.n), randVec(rng, tr.n)
	z1, err := s.run(runPrecond, false, false, a.Values, r1)
	require.NoError(t, err)
	z2, err := s.run(runPrecond, false, false, a.Values, r2)
	require.NoError(t, err)
	// Symmetry: r2ᵀM⁻¹r1 = r1ᵀM⁻¹r2.
	require.InDelta(t, dotF(r2, z1), dotF(r1, z2), 1e-10*math.Abs(dotF(r2, z1)))
	// An approximate inverse: ‖r − A·M⁻¹r‖ well below ‖r‖.
	az, err := a.MulVec(z1)
	require.NoError(t, err)
	e := relErr(az, r1)
	t.Logf("one V-cycle: ‖r − A·M⁻¹r‖/‖r‖ = %.2g", e)
	require.Less(t, e, 0.5)
	require.Equal(t, 1, s.Stats().Setups)
	c := solverCase{name: "Preconditioner", kind: runPrecond}
	w := randVec(rng, tr.n)
	for _, lisp := range []bool{false, true} {
		_, _, gb := gradsOfB(t, s, c, a.Values, r1, w, lisp)
		// The cost is linear in r: its gradient is M⁻ᵀw = M⁻¹w.
		mw, err := s.run(runPrecond, false, false, a.Values, w)
		require.NoError(t, err)
		require.Less(t, relErr(gb, mw), 1e-12)
	}
	require.Equal(t, 1, s.Stats().Setups)
}

// TestAdjointReusesHierarchy: for symmetric A the gradient's solve reuses
// the forward hierarchy; for non-symmetric A one hierarchy of Aᵀ is built.
func TestAdjointReusesHierarchy(t *testing.T) {
	for _, nonSym := range []bool{false, true} {
		rng := testRNG(t, uint64(400+btoi(nonSym)))
		tr := laplace2D(rng, 8, 9, float64(btoi(nonSym)))
		a := tr.whole(t)
		s, err := NewSolver(a.Pattern, WithMethod(GMRES), WithTolerance(1e-12))
		require.NoError(t, err)
		c := solverCase{kind: runSolve}
		g, vn, bn, _, cost := solveGraph(t, s, c, a.Values, randVec(rng, tr.n), randVec(rng, tr.n))
		_, err = G.Grad(cost, vn, bn)
		require.NoError(t, err)
		m := G.NewTapeMachine(g)
		for range 3 {
			require.NoError(t, m.RunAll())
			m.Reset()
		}
		t.Logf("non-symmetric %v: %d setups", nonSym, s.Stats().Setups)
		require.Equal(t, 1+btoi(nonSym), s.Stats().Setups)
		m.Close()
		s.Close()
	}
}

// TestSymmetryOption: WithSymmetry(NonSymmetric) builds the hierarchy of Aᵀ
// even for a symmetric A (same gradient), Symmetric never does.
func TestSymmetryOption(t *testing.T) {
	for _, sym := range []Symmetry{Symmetric, NonSymmetric} {
		rng := testRNG(t, uint64(800+int(sym)))
		tr := laplace2D(rng, 7, 8, 0)
		a := tr.whole(t)
		s, err := NewSolver(a.Pattern, WithSymmetry(sym), WithTolerance(1e-12))
		require.NoError(t, err)
		c := solverCase{name: "Solve", kind: runSolve}
		b, w := randVec(rng, tr.n), randVec(rng, tr.n)
		checkGradients(t, rng, s, c, a.Values, b, w)
		// One gradient run from scratch: the hierarchies it builds.
		s.Free()
		before := s.Stats().Setups
		g, vn, bn, _, cost := solveGraph(t, s, c, a.Values, b, w)
		_, err = G.Grad(cost, vn, bn)
		require.NoError(t, err)
		m := G.NewTapeMachine(g)
		require.NoError(t, m.RunAll())
		m.Close()
		want := map[Symmetry]int{Symmetric: 1, NonSymmetric: 2}[sym]
		require.Equal(t, want, s.Stats().Setups-before)
		s.Close()
	}
}

// TestDiverged: BoomerAMG alone, cycled with the kept hierarchy of A on −A
// with the ℓ1 smoother (which kept A's row norms: error propagation ≈ 2I),
// blows up; the status says Diverged (an error by default, the status alone
// on request).
func TestDiverged(t *testing.T) {
	rng := testRNG(t, 900)
	tr := laplace2D(rng, 12, 11, 0)
	a := tr.whole(t)
	neg := slices.Clone(a.Values)
	for k := range neg {
		neg[k] = -neg[k]
	}
	b := randVec(rng, tr.n)
	for _, statusOnly := range []bool{false, true} {
		opts := []Option{WithMethod(AMG), WithMaxIterations(400), WithKeepHierarchy(), WithSmoother(L1GaussSeidel)}
		if statusOnly {
			opts = append(opts, WithStatusOnly())
		}
		s, err := NewSolver(a.Pattern, opts...)
		require.NoError(t, err)
		_, info, err := s.SolveValues(a.Values, b, false)
		require.NoError(t, err)
		require.Equal(t, Success, info.Status)
		_, info, err = s.SolveValues(neg, b, false)
		t.Logf("status only %v: %v; %v", statusOnly, info, err)
		require.Equal(t, Diverged, info.Status)
		if statusOnly {
			require.NoError(t, err)
		} else {
			var se *StatusError
			require.ErrorAs(t, err, &se)
			require.ErrorIs(t, err, ErrNotConverged)
			require.Equal(t, Diverged, se.Info.Status)
		}
		require.Equal(t, 1, s.Stats().Setups)
		s.Close()
	}
}

// TestSingularSystemIsNotSuccess: the Neumann Laplacian of a path (singular)
// with a right-hand side outside its range has no solution; no method may
// call its last iterate a Success (hypre's GMRES stopped early without its
// convergence flag and was taken at its word, with a relative residual of
// 49). With WithStatusOnly the status says so instead of an error.
func TestSingularSystemIsNotSuccess(t *testing.T) {
	const n = 21
	tr := neumann1D(n, 0)
	a := tr.whole(t)
	b := make([]float64, n)
	b[0] = 1 // Σb ≠ 0: outside the range
	for _, m := range []Method{PCG, AMG, BiCGStab, GMRES} {
		for _, statusOnly := range []bool{false, true} {
			opts := []Option{WithMethod(m)}
			if statusOnly {
				opts = append(opts, WithStatusOnly())
			}
			s, err := NewSolver(a.Pattern, opts...)
			require.NoError(t, err)
			_, info, err := s.SolveValues(a.Values, b, false)
			t.Logf("%v, status only %v: %v; %v", m, statusOnly, info, err)
			require.NotEqual(t, Success, info.Status, "%v", m)
			switch {
			case errors.Is(err, ErrHypre): // hypre's own error (BiCGStab's breakdown)
				require.Equal(t, Failed, info.Status)
			case statusOnly:
				require.NoError(t, err)
			default:
				require.ErrorIs(t, err, ErrNotConverged, "%v", m)
			}
			s.Close()
		}
	}
}

// TestKeepHierarchyAfterDoubledDiagonal: PCG on a kept hierarchy after the
// diagonal doubles converges to the new matrix's solution (the default
// smoother with WithKeepHierarchy reads the current values; the ℓ1 one kept
// the old row norms and PCG stopped on it after 5 iterations).
func TestKeepHierarchyAfterDoubledDiagonal(t *testing.T) {
	rng := testRNG(t, 950)
	tr := laplace2D(rng, 13, 12, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	s, err := NewSolver(a.Pattern, WithKeepHierarchy(), WithTolerance(1e-10))
	require.NoError(t, err)
	defer s.Close()
	_, _, err = s.SolveValues(a.Values, b, false)
	require.NoError(t, err)
	for k := range tr.vals {
		if tr.rows[k] == tr.cols[k] {
			tr.vals[k] *= 2
		}
	}
	x, info, err := s.SolveValues(tr.whole(t).Values, b, false)
	t.Logf("after the change: %v", info)
	require.NoError(t, err)
	require.Equal(t, 1, s.Stats().Setups)
	require.Less(t, relErr(x, denseSolve(tr.n, tr.dense(), b, false)), 1e-8)
}

// TestInfoAfterBadInput: a run that ends on bad input reports Failed, not
// the Success of the run before it.
func TestInfoAfterBadInput(t *testing.T) {
	rng := testRNG(t, 960)
	tr := laplace2D(rng, 6, 5, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	s, err := NewSolver(a.Pattern)
	require.NoError(t, err)
	defer s.Close()
	_, info, err := s.SolveValues(a.Values, b, false)
	require.NoError(t, err)
	require.Equal(t, Success, info.Status)
	for name, bad := range map[string][]float64{"NaN": append([]float64{math.NaN()}, b[1:]...), "short": b[1:]} {
		_, info, err = s.SolveValues(a.Values, bad, false)
		require.Error(t, err, name)
		require.Equal(t, Failed, info.Status, name)
		require.Equal(t, Failed, s.Info().Status, name)
	}
}

// TestZeroRightHandSideAfterFailure: b = 0 is x = 0 and Success also after
// a solve that did not converge (hypre returns early on b = 0 and kept the
// earlier run's iteration count and residual, which were reported).
func TestZeroRightHandSideAfterFailure(t *testing.T) {
	rng := testRNG(t, 81)
	tr := laplace2D(rng, 9, 8, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	for _, m := range []Method{PCG, AMG, BiCGStab, GMRES} {
		s, err := NewSolver(a.Pattern, WithMethod(m), WithMaxIterations(1), WithTolerance(1e-14), WithStatusOnly())
		require.NoError(t, err)
		_, info, err := s.SolveValues(a.Values, b, false)
		require.NoError(t, err)
		require.NotEqual(t, Success, info.Status, "%v: one iteration to 1e-14", m)
		x, info, err := s.SolveValues(a.Values, make([]float64, tr.n), false)
		require.NoError(t, err, "%v", m)
		require.Equal(t, Success, info.Status, "%v: b = 0", m)
		require.Equal(t, make([]float64, tr.n), x)
		s.Close()
	}
}

// TestTrueResidualDecides: hypre's PCG on a nearly singular system stops on
// its recurrence's residual (3e-9 against 1e-8) while the true one is near
// 1e-4: not a Success.
func TestTrueResidualDecides(t *testing.T) {
	const n = 40
	tr := neumann1D(n, 1e-12)
	a := tr.whole(t)
	b := randVec(testRNG(t, 83), n)
	s, err := NewSolver(a.Pattern, WithMethod(PCG), WithTolerance(1e-8), WithStatusOnly())
	require.NoError(t, err)
	defer s.Close()
	x, info, err := s.SolveValues(a.Values, b, false)
	require.NoError(t, err)
	res := tr.residual(x, b)
	t.Logf("%v; true relative residual %.3g", info, res)
	if info.Status == Success {
		require.LessOrEqual(t, res, 1e-8*(1+1e-6))
	}
}

// TestExtremeRightHandSidesHypre: hypre's methods on right-hand sides near
// 1e200 (hypre's own norms overflowed: "INFs and/or NaNs detected in input")
// and below 1e-300.
func TestExtremeRightHandSidesHypre(t *testing.T) {
	rng := testRNG(t, 85)
	tr := laplace2D(rng, 6, 5, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	for _, f := range []float64{1e200, 1e-305} {
		bf := make([]float64, len(b))
		for i, v := range b {
			bf[i] = v * f
		}
		for _, m := range []Method{PCG, AMG, BiCGStab, GMRES} {
			s, err := NewSolver(a.Pattern, WithMethod(m))
			require.NoError(t, err)
			x, info, err := s.SolveValues(a.Values, bf, false)
			require.NoError(t, err, "%v ×%g", m, f)
			require.Equal(t, Success, info.Status)
			ref, _, err := s.SolveValues(a.Values, b, false)
			require.NoError(t, err)
			for i := range x {
				require.InDelta(t, ref[i], x[i]/f, 1e-6*(1+math.Abs(ref[i])), "%v ×%g: x[%d]", m, f, i)
			}
			s.Close()
		}
	}
}

// TestPreconditionerGradientSmoothers: for every smoother the package takes
// (and RelaxType by WithHypre), a solve and a V-cycle run without crashing
// the process, and Preconditioner's gradient is Mᵀw where the V-cycle M is
// symmetric and ErrBadInput where it is not (a forward Gauss–Seidel
// smoother: the gradient M·w was silently wrong by 9%); M is built column
// by column from the op. The matrices: a Laplacian, the same with penalty
// rows (1e30 added to their diagonal: the first measure of the asymmetry
// called a one-directional smoother's M symmetric there) and S·A·S with S
// spanning 1e±6. A cycle that is not linear (the CG smoother) is refused
// too.
func TestPreconditionerGradientSmoothers(t *testing.T) {
	rng := testRNG(t, 6)
	var opts []Option
	var names []string
	for k := Smoother(-1); k <= 200; k++ {
		if everyLevelSmoother(float64(k)) {
			opts, names = append(opts, WithSmoother(k)), append(names, fmt.Sprintf("smoother %d", k))
		}
	}
	opts, names = append(opts, WithHypre("RelaxType", 3)), append(names, "RelaxType 3")
	const nx = 6
	plain := laplace2D(rng, nx, 5, 0)
	penalty := laplace2D(rng, nx, 5, 0)
	for k, i := range penalty.rows {
		if i == penalty.cols[k] && i%nx == 0 {
			penalty.vals[k] += 1e30
		}
	}
	scaled := laplace2D(rng, nx, 5, 0)
	scale := make([]float64, scaled.n)
	for i := range scale {
		scale[i] = math.Pow(10, 12*rng.Float64()-6)
	}
	for k := range scaled.vals {
		scaled.vals[k] *= scale[scaled.rows[k]] * scale[scaled.cols[k]]
	}
	// A Neumann Laplacian (rows summing to 0) + 1e-8·I: M amplifies the
	// constant mode 1e8 times, which hid a one-directional smoother's
	// asymmetry from the measure.
	nearSingular := laplace2D(rng, nx, 5, 0)
	off := make([]float64, nearSingular.n)
	for k, i := range nearSingular.rows {
		if i != nearSingular.cols[k] {
			off[i] += nearSingular.vals[k]
		}
	}
	for k, i := range nearSingular.rows {
		if i == nearSingular.cols[k] {
			nearSingular.vals[k] = -off[i] + 1e-8
		}
	}
	sawSym, sawAsym := 0, 0
	for _, mat := range []struct {
		name string
		tr   triplets
	}{{"Laplacian", plain}, {"with penalty rows", penalty}, {"S·A·S", scaled}, {"nearly singular", nearSingular}} {
		a := mat.tr.whole(t)
		n := mat.tr.n
		cond := 1.0 // the reference Mᵀw's rounding grows with M's range
		if mat.name == "nearly singular" {
			cond = 1e8
		}
		root := make([]float64, n) // D^½
		for k, i := range mat.tr.rows {
			if i == mat.tr.cols[k] {
				root[i] = math.Sqrt(math.Abs(mat.tr.vals[k]))
			}
		}
		for i, o := range opts {
			name := mat.name + ", " + names[i]
			func() {
				s, err := NewSolver(a.Pattern, o, WithTolerance(1e-10))
				require.NoError(t, err, name)
				defer s.Close()
				b := randVec(rng, n)
				if _, _, err := s.SolveValues(a.Values, b, false); err != nil {
					t.Logf("%s: solve: %v", name, err)
				}
				m := make([]float64, n*n) // column j: M·e_j
				for j := range n {
					e := make([]float64, n)
					e[j] = 1
					z, err := s.run(runPrecond, false, false, a.Values, e)
					if err != nil {
						t.Logf("%s: V-cycle: %v", name, err)
						return
					}
					for r := range n {
						m[r*n+j] = z[r]
					}
				}
				// The asymmetry of D^½·M·D^½, which is as symmetric as M.
				var diff, size float64
				for r := range n {
					for c := range n {
						x, y := m[r*n+c]*root[r]*root[c], m[c*n+r]*root[r]*root[c]
						diff += (x - y) * (x - y)
						size += x * x
					}
				}
				if size == 0 {
					// Kaczmarz's cycle on S·A·S can come out 0: so must its
					// gradient, if any.
					got, err := s.run(runPrecond, true, false, a.Values, randVec(rng, n))
					if err == nil {
						require.Equal(t, make([]float64, n), got, name)
					}
					return
				}
				asym := math.Sqrt(diff / size)
				w := randVec(rng, n)
				// A cycle that is not linear (hypre's CG smoother, 15) is no
				// matrix: M(w) differs from the matrix of its columns.
				mw, err := s.run(runPrecond, false, false, a.Values, w)
				require.NoError(t, err, name)
				cols := make([]float64, n)
				for r := range n {
					for c := range n {
						cols[r] += m[r*n+c] * w[c]
					}
				}
				linear := relErr(mw, cols) < 1e-6 // (rounding under the scalings reaches 1e-8)
				got, err := s.run(runPrecond, true, false, a.Values, w)
				t.Logf("%s: ‖Ŝ − Ŝᵀ‖/‖Ŝ‖ = %.2g, measured %.2g, linear %v, gradient error: %v", name, asym, s.cycleAsym, linear, err)
				fringe := slices.Contains([]int{17, 30, 88, 89}, s.relaxType())
				switch {
				case fringe && mat.name != "Laplacian":
					// FCF-Jacobi, Kaczmarz and the reordered ℓ1 sweeps,
					// which do not even make PCG converge on the Laplacian
					// here: their cycle on the stress matrices is erratic
					// (Kaczmarz's measured 1e-6 to 3% on S·A·S), checked
					// for not crashing only.
				case !linear || oneDirectionalSmoother(s.relaxType()):
					sawAsym++
					require.ErrorIs(t, err, ErrBadInput, name)
				case asym > 1e-6:
					sawAsym++
					require.ErrorIs(t, err, ErrBadInput, name)
					require.Contains(t, err.Error(), "symmetric V-cycle", name)
				default:
					// Symmetric to the reference's rounding (which the
					// scalings and the near-null mode amplify).
					sawSym++
					require.NoError(t, err, name)
					want := make([]float64, n) // Mᵀw
					for r := range n {
						for c := range n {
							want[c] += m[r*n+c] * w[r]
						}
					}
					require.Less(t, relErr(got, want), max(1e-10*cond, 10*asym), name)
				}
			}()
		}
	}
	require.Positive(t, sawSym)
	require.Positive(t, sawAsym)
}

// A hypre solve that does not succeed reports its true relative residual:
// BiCGStab's recurrence said 1.6e-10 where ‖b − A·x‖/‖b‖ was 6e-8.
func TestUnconvergedSolveReportsTrueResidual(t *testing.T) {
	rng := testRNG(t, 913)
	tr := neumann1D(400, 1e-10)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	for _, m := range []Method{BiCGStab, GMRES, PCG} {
		s, err := NewSolver(a.Pattern, WithMethod(m), WithTolerance(1e-14), WithMaxIterations(300), WithStatusOnly())
		require.NoError(t, err)
		x, info, err := s.SolveValues(a.Values, b, false)
		require.NoError(t, err)
		exact := exactRelResidual(tr, x, b)
		t.Logf("%v: %v, true %.3g", m, info, exact)
		if info.Status != Success {
			// Within a factor of 2: float64's ‖b − A·x‖ of this nearly
			// singular system is itself some 30% off (the recurrence's
			// was 1000 times too small).
			require.Greater(t, info.Residual, exact/2, "%v", m)
			require.Less(t, info.Residual, exact*2, "%v", m)
		}
		s.Close()
	}
}

// exactRelResidual is ‖b − A·x‖/‖b‖ with the residual's entries computed
// exactly (big.Float), rounded once: in float64 its rounding is the size of
// the residual of a nearly singular system.
func exactRelResidual(tr triplets, x, b []float64) float64 {
	r := make([]*big.Float, len(b))
	for i, v := range b {
		r[i] = new(big.Float).SetPrec(4096).SetFloat64(v)
	}
	for k, i := range tr.rows {
		p := new(big.Float).SetPrec(4096).SetFloat64(tr.vals[k])
		p.Mul(p, new(big.Float).SetFloat64(x[tr.cols[k]]))
		r[i].Sub(r[i], p)
	}
	var rr, bb float64
	for i := range r {
		v, _ := r[i].Float64()
		rr += v * v
		bb += b[i] * b[i]
	}
	return math.Sqrt(rr / bb)
}
