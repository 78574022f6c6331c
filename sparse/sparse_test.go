package sparse

import (
	"errors"
	"fmt"
	"github.com/mgla/mgla/sharding"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mgla/mgla/internal/failedruns"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// solverCase is one way of solving: the ops' builder and the solver options.
type solverCase struct {
	name   string
	nonSym bool // the method handles non-symmetric A
	opts   []Option
	kind   runKind
	hypre  bool
}

// op applies the case's op.
func (c solverCase) op(s *Solver, values, b *G.Node) (*G.Node, error) {
	return s.apply(c.kind, values, b)
}

func solverCases() []solverCase {
	all := []solverCase{
		{name: "CG/Jacobi", opts: []Option{WithPrecond(Jacobi)}, kind: runCG},
		{name: "CG/none", opts: []Option{WithPrecond(NoPrecond)}, kind: runCG},
		{name: "BiCGStab/Jacobi", nonSym: true, opts: []Option{WithPrecond(Jacobi)}, kind: runBiCGStab},
		{name: "CG/AMG", opts: []Option{WithPrecond(AMGPrecond)}, kind: runCG, hypre: true},
		{name: "BiCGStab/AMG", nonSym: true, opts: []Option{WithPrecond(AMGPrecond)}, kind: runBiCGStab, hypre: true},
		{name: "Solve/PCG", opts: []Option{WithMethod(PCG)}, kind: runSolve, hypre: true},
		{name: "Solve/AMG", nonSym: true, opts: []Option{WithMethod(AMG)}, kind: runSolve, hypre: true},
		{name: "Solve/BiCGStab", nonSym: true, opts: []Option{WithMethod(BiCGStab)}, kind: runSolve, hypre: true},
		{name: "Solve/GMRES", nonSym: true, opts: []Option{WithMethod(GMRES), WithRestart(17)}, kind: runSolve, hypre: true},
		{name: "Solve/GMRES/PMIS,W,SymGS", nonSym: true, kind: runSolve, hypre: true, opts: []Option{
			WithMethod(GMRES), WithCoarsening(PMIS), WithInterpolation(DirectInterp), WithCycle(WCycle),
			WithSmoother(SymGaussSeidel), WithStrongThreshold(0.5), WithHypre("MaxLevels", 4), WithHypre("TruncFactor", 0.1)}},
	}
	var cs []solverCase
	for _, c := range all {
		if !c.hypre || hypreBuilt {
			cs = append(cs, c)
		}
	}
	return cs
}

// solveGraph is cost = Σ w∘x with x = op(values, b).
// The machine may reuse x's memory once nothing reads it: xv is a copy
// taken when x is computed.
func solveGraph(t testing.TB, s *Solver, c solverCase, vals, b, w []float64) (g *G.ExprGraph, vn, bn *G.Node, xv *G.Value, cost *G.Node) {
	g = G.NewGraph()
	vn = vecNode(g, "values", vals)
	bn = vecNode(g, "b", b)
	wn := vecNode(g, "w", w)
	x, err := c.op(s, vn, bn)
	require.NoError(t, err)
	xv = new(G.Value)
	G.Read(x, xv)
	cost = G.Must(G.Sum(G.Must(G.HadamardProd(x, wn))))
	return
}

func TestSolveMatchesDense(t *testing.T) {
	eachCase(t, func(t *testing.T, i int, c solverCase, nonSym bool) {
		rng := testRNG(t, uint64(10*i+btoi(nonSym)))
		nx, ny := 5+rng.IntN(9), 4+rng.IntN(9)
		tr := laplace2D(rng, nx, ny, float64(btoi(nonSym))*0.8)
		a := tr.whole(t)
		b := randVec(rng, tr.n)
		var progress []Info
		s, err := NewSolver(a.Pattern, append([]Option{WithTolerance(1e-11), WithMaxIterations(1000),
			WithProgress(func(i Info) { progress = append(progress, i) })}, c.opts...)...)
		require.NoError(t, err)
		defer s.Close()
		g, _, _, x, _ := solveGraph(t, s, c, a.Values, b, randVec(rng, tr.n))
		m := G.NewTapeMachine(g)
		defer m.Close()
		require.NoError(t, m.RunAll())
		want := denseSolve(tr.n, tr.dense(), b, false)
		e := relErr(nodeFloats(t, *x), want)
		info := s.Info()
		t.Logf("%d×%d grid, %v, error %.1e", nx, ny, info, e)
		require.Less(t, e, 1e-8)
		require.Equal(t, Success, info.Status)
		require.Greater(t, info.Iterations, 0)
		require.LessOrEqual(t, info.Residual, 1e-11)
		require.Equal(t, []Info{info}, progress)
	})
}

// eachCase runs f for every solver case on an SPD matrix and, for the
// methods that take one, on a non-symmetric matrix.
func eachCase(t *testing.T, f func(t *testing.T, i int, c solverCase, nonSym bool)) {
	for i, c := range solverCases() {
		for _, nonSym := range []bool{false, true} {
			if nonSym && !c.nonSym {
				continue
			}
			name := c.name + map[bool]string{false: "/SPD", true: "/nonsymmetric"}[nonSym]
			t.Run(name, func(t *testing.T) { f(t, i, c, nonSym) })
		}
	}
}

// TestGradients compares the gradients of Σ w∘x with respect to the values
// and b, from the TapeMachine and the LispMachine, with fourth-order central
// differences along random directions.
func TestGradients(t *testing.T) {
	eachCase(t, func(t *testing.T, i int, c solverCase, nonSym bool) {
		rng := testRNG(t, uint64(100+10*i+btoi(nonSym)))
		tr := laplace2D(rng, 4+rng.IntN(6), 3+rng.IntN(6), float64(btoi(nonSym))*0.8)
		a := tr.whole(t)
		b, w := randVec(rng, tr.n), randVec(rng, tr.n)
		s, err := NewSolver(a.Pattern, append([]Option{WithTolerance(1e-12), WithMaxIterations(2000)}, c.opts...)...)
		require.NoError(t, err)
		defer s.Close()
		checkGradients(t, rng, s, c, a.Values, b, w)
	})
}

func checkGradients(t *testing.T, rng *rand.Rand, s *Solver, c solverCase, vals, b, w []float64) {
	t.Helper()
	eval := func(v, b []float64) float64 {
		g, _, _, _, cost := solveGraph(t, s, c, v, b, w)
		m := G.NewTapeMachine(g)
		defer m.Close()
		require.NoError(t, m.RunAll())
		return cost.Value().Data().(float64)
	}
	dv, db := randVec(rng, len(vals)), randVec(rng, len(b))
	const h = 1e-3
	at := func(step float64) float64 {
		v2, b2 := slices.Clone(vals), slices.Clone(b)
		for k := range v2 {
			v2[k] += step * h * dv[k]
		}
		for k := range b2 {
			b2[k] += step * h * db[k]
		}
		return eval(v2, b2)
	}
	fd := (8*(at(1)-at(-1)) - (at(2) - at(-2))) / (12 * h)
	// The difference is good to about 1e-6 relative, and in absolute terms
	// to the cost's own accuracy over h (the solves stop at a relative
	// residual of 1e-12: at 1e-13 the true residual of a converged BiCGStab
	// came out a hair above it, NotConverged, for one seed in some dozens):
	// 1e-8·|cost| is what it can resolve where the directional derivative is
	// far smaller than the cost.
	tol := 1e-6*math.Abs(fd) + 1e-8*max(1, math.Abs(at(0)))
	for _, lisp := range []bool{false, true} {
		_, gv, gb := gradsOf(t, s, c, vals, b, w, lisp)
		an := dotF(gv, dv) + dotF(gb, db)
		t.Logf("lisp=%v: analytic %.12g, finite differences %.12g, rel. err. %.1e (tolerance %.1e); adjoint %v",
			lisp, an, fd, math.Abs(an-fd)/math.Abs(fd), tol/math.Abs(fd), s.AdjointInfo())
		require.LessOrEqual(t, math.Abs(an-fd), tol, "lisp=%v", lisp)
		require.Equal(t, Success, s.AdjointInfo().Status)
	}
}

// gradsOf runs Σ w∘x with x = op(vals, b) and its gradient, by the
// TapeMachine (Grad) or the LispMachine: x and the gradients of the values
// and of b.
func gradsOf(t *testing.T, s *Solver, c solverCase, vals, b, w []float64, lisp bool) (x, gv, gb []float64) {
	t.Helper()
	return grads(t, s, c, vals, b, w, lisp, true)
}

// gradsOfB is gradsOf for ops that differentiate b only (Preconditioner):
// gv is nil.
func gradsOfB(t *testing.T, s *Solver, c solverCase, vals, b, w []float64, lisp bool) (x, gv, gb []float64) {
	t.Helper()
	return grads(t, s, c, vals, b, w, lisp, false)
}

func grads(t *testing.T, s *Solver, c solverCase, vals, b, w []float64, lisp, wrtValues bool) (x, gv, gb []float64) {
	t.Helper()
	g, vn, bn, xv, cost := solveGraph(t, s, c, vals, b, w)
	wrt := G.Nodes{bn}
	if wrtValues {
		wrt = append(wrt, vn)
	}
	m := backwardMachine(t, g, cost, lisp, wrt...)
	defer m.Close()
	require.NoError(t, m.RunAll())
	gbv, err := bn.Grad()
	require.NoError(t, err)
	if wrtValues {
		gvv, err := vn.Grad()
		require.NoError(t, err)
		gv = nodeFloats(t, gvv)
	}
	return nodeFloats(t, *xv), gv, nodeFloats(t, gbv)
}

func dotF(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestCSRConstruction(t *testing.T) {
	rng := testRNG(t, 1)
	tr := laplace2D(rng, 3+rng.IntN(5), 2+rng.IntN(5), 0.5)
	// Shuffled triplets with every entry split in two: summed back.
	perm := rng.Perm(len(tr.rows))
	var r, c []int
	var v []float32
	for _, k := range perm {
		half := float32(tr.vals[k]) / 2
		r, c, v = append(r, tr.rows[k], tr.rows[k]), append(c, tr.cols[k], tr.cols[k]), append(v, half, float32(tr.vals[k])-half)
	}
	r0, c0, v0 := slices.Clone(r), slices.Clone(c), slices.Clone(v)
	a, err := FromTriplets(tr.n, r, c, v)
	require.NoError(t, err)
	require.Equal(t, r0, r)
	require.Equal(t, c0, c)
	require.Equal(t, v0, v)
	require.Equal(t, len(tr.rows), a.Pattern.NNZ())
	// Unsorted CSR arrays: the same matrix.
	rowPtr, colInd := a.Pattern.RowPtr(), a.Pattern.ColInd()
	vals := slices.Clone(a.Values)
	for i := range a.Pattern.Rows() {
		lo, hi := rowPtr[i], rowPtr[i+1]
		p := rng.Perm(hi - lo)
		ci, vi := slices.Clone(colInd[lo:hi]), slices.Clone(vals[lo:hi])
		for j, q := range p {
			colInd[lo+j], vals[lo+j] = ci[q], vi[q]
		}
	}
	b, err := NewCSR(tr.n, rowPtr, colInd, vals)
	require.NoError(t, err)
	require.Equal(t, a.Pattern.ColInd(), b.Pattern.ColInd())
	require.Equal(t, a.Values, b.Values)
	x := randVec(rng, tr.n)
	y, err := a.MulVec(x)
	require.NoError(t, err)
	d := tr.dense()
	for i := range tr.n {
		var s float64
		for j := range tr.n {
			s += d[i*tr.n+j] * x[j]
		}
		require.InDelta(t, s, y[i], 1e-5*(1+math.Abs(s)), "row %d", i) // float32 input
	}
}

func TestCSRBadInput(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name           string
		n              int
		rowPtr, colInd []int
		vals           []float64
		wantNonFinite  bool
	}{
		{"not square", 3, []int{0, 1, 2}, []int{0, 1}, []float64{1, 1}, false},
		{"rowPtr not from 0", 2, []int{1, 2, 3}, []int{0, 1}, []float64{1, 1}, false},
		{"rowPtr decreasing", 2, []int{0, 2, 1}, []int{0, 1}, []float64{1, 1}, false},
		{"values length", 2, []int{0, 1, 2}, []int{0, 1}, []float64{1}, false},
		{"column length", 2, []int{0, 1, 2}, []int{0}, []float64{1, 1}, false},
		{"column out of range", 2, []int{0, 1, 2}, []int{0, 2}, []float64{1, 1}, false},
		{"negative column", 2, []int{0, 1, 2}, []int{0, -1}, []float64{1, 1}, false},
		{"repeated column", 2, []int{0, 2, 3}, []int{1, 1, 1}, []float64{1, 1, 1}, false},
		{"NaN value", 2, []int{0, 1, 2}, []int{0, 1}, []float64{1, nan}, true},
		{"Inf value", 2, []int{0, 1, 2}, []int{0, 1}, []float64{math.Inf(-1), 1}, true},
		{"zero order", 0, []int{0}, nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rp, ci, v := slices.Clone(c.rowPtr), slices.Clone(c.colInd), slices.Clone(c.vals)
			_, err := NewCSR(c.n, c.rowPtr, c.colInd, c.vals)
			t.Log(err)
			require.ErrorIs(t, err, ErrBadMatrix)
			require.Equal(t, c.wantNonFinite, errors.Is(err, ErrNonFinite))
			require.Equal(t, rp, c.rowPtr)
			require.Equal(t, ci, c.colInd)
			require.True(t, slices.EqualFunc(v, c.vals, func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }))
		})
	}
	_, err := FromTriplets(2, []int{0, 2}, []int{0, 1}, []float64{1, 1})
	require.ErrorIs(t, err, ErrBadMatrix)
	_, err = FromTriplets(2, []int{0, 1}, []int{0}, []float64{1, 1})
	require.ErrorIs(t, err, ErrBadMatrix)
}

// TestRunBadInput: NaN in b or the values, a zero diagonal with a method
// that divides by it, wrong shapes: clear errors, inputs untouched.
func TestRunBadInput(t *testing.T) {
	rng := testRNG(t, 2)
	tr := laplace2D(rng, 5, 4, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	zeroDiag := slices.Clone(a.Values)
	zeroDiag[a.Pattern.diag[3]] = 0
	nanVals := slices.Clone(a.Values)
	nanVals[7] = math.NaN()
	nanB := slices.Clone(b)
	nanB[2] = math.Inf(1)
	type runCase struct {
		name string
		c    solverCase
		vals []float64
		b    []float64
		want error
	}
	var cases []runCase
	for _, c := range solverCases() {
		cases = append(cases,
			runCase{c.name + "/NaN in b", c, a.Values, nanB, ErrNonFinite},
			runCase{c.name + "/NaN in values", c, nanVals, b, ErrNonFinite})
		if c.name != "CG/none" {
			cases = append(cases, runCase{c.name + "/zero diagonal", c, zeroDiag, b, ErrZeroDiagonal})
		}
	}
	for _, rc := range cases {
		t.Run(rc.name, func(t *testing.T) {
			s, err := NewSolver(a.Pattern, rc.c.opts...)
			require.NoError(t, err)
			defer s.Close()
			v0, b0 := slices.Clone(rc.vals), slices.Clone(rc.b)
			g, vn, bn, _, _ := solveGraph(t, s, rc.c, rc.vals, rc.b, b)
			m := G.NewTapeMachine(g)
			defer m.Close()
			err = m.RunAll()
			t.Log(err)
			require.ErrorIs(t, cause(err), rc.want)
			// The root package's sentinels match too.
			also := sharding.ErrBadInput
			if rc.want == ErrNonFinite {
				also = sharding.ErrNonFinite
			}
			require.ErrorIs(t, cause(err), also)
			same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
			require.True(t, slices.EqualFunc(v0, nodeFloats(t, vn.Value()), same))
			require.True(t, slices.EqualFunc(b0, nodeFloats(t, bn.Value()), same))
		})
	}
	// Build-time shape and dtype errors.
	s, err := NewSolver(a.Pattern)
	require.NoError(t, err)
	defer s.Close()
	g := G.NewGraph()
	vn := vecNode(g, "values", a.Values)
	short := vecNode(g, "short", b[:tr.n-1])
	_, err = s.CG(vn, short)
	require.ErrorIs(t, err, ErrBadInput)
	require.ErrorIs(t, err, sharding.ErrBadInput)
	_, err = s.Solve(short, vecNode(g, "b", b))
	require.ErrorIs(t, err, ErrBadInput)
	_, err = s.BiCGStab(vn, G.NewVector(g, tensor.Float32, G.WithShape(tr.n), G.WithName("b32")))
	require.Error(t, err)
	_, err = s.Preconditioner(nil, vn)
	require.ErrorIs(t, err, ErrBadInput)
	for i, o := range []Option{WithTolerance(0), WithTolerance(math.NaN()), WithMaxIterations(0), WithMethod(9),
		WithStrongThreshold(1), WithCycle(3), WithHypre("NoSuchSetting", 1), WithHypre("MaxLevels", math.Inf(1)), WithPrecond(7), WithTimeout(0), WithTimeout(-time.Second),
		// Beyond hypre's C int, or its allocations: cut to another number
		// (x = 0 reported as Success), or an aborted job.
		WithMaxIterations(MaxIterationsLimit + 1), WithMaxIterations(math.MaxInt32), WithMaxIterations(math.MaxInt),
		WithRestart(MaxRestartLimit + 1), WithRestart(1 << 32), WithAggressiveLevels(1 << 32),
		WithCoarsening(1 << 32), WithInterpolation(-1 << 40), WithHypre("MaxLevels", 1e300), WithHypre("MaxLevels", math.MaxInt32), WithPrintLevel(4), WithPrintLevel(-1),
		// Coarsest-level solvers as smoothers: hypre failed, then crashed.
		WithSmoother(9), WithSmoother(19), WithSmoother(99), WithSmoother(199), WithSmoother(-1), WithSmoother(31),
		WithHypre("RelaxType", 99), WithHypre("RelaxType", 9)} {
		_, err := NewSolver(a.Pattern, o)
		require.ErrorIs(t, err, ErrBadInput, "option %d", i)
	}
	// The limits themselves are taken.
	for i, o := range []Option{WithMaxIterations(MaxIterationsLimit), WithRestart(MaxRestartLimit), WithSmoother(30),
		WithSmoother(89), WithHypre("RelaxType", 18), WithHypre("MaxLevels", 1<<20), WithPrintLevel(0)} {
		s, err := NewSolver(a.Pattern, o)
		require.NoError(t, err, "option %d", i)
		s.Close()
	}
}

// cause digs the op's error out of a machine's error (as mgla.Cause does;
// mgla imports nothing from here, and this package cannot import mgla).
func cause(err error) error {
	for err != nil {
		e, ok := err.(interface{ Err() error })
		if !ok || e.Err() == nil || e.Err() == err {
			return err
		}
		err = e.Err()
	}
	return err
}

// TestNotConverged: too few iterations is an error wrapping ErrNotConverged
// carrying the Info, or, WithStatusOnly, the status alone.
func TestNotConverged(t *testing.T) {
	for i, c := range solverCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := testRNG(t, uint64(200+i))
			tr := laplace2D(rng, 30, 27, 0)
			a := tr.whole(t)
			b := randVec(rng, tr.n)
			for _, statusOnly := range []bool{false, true} {
				opts := append(slices.Clone(c.opts), WithMaxIterations(2), WithTolerance(1e-14))
				if statusOnly {
					opts = append(opts, WithStatusOnly())
				}
				s, err := NewSolver(a.Pattern, opts...)
				require.NoError(t, err)
				g, _, _, x, _ := solveGraph(t, s, c, a.Values, b, b)
				m := G.NewTapeMachine(g)
				err = m.RunAll()
				info := s.Info()
				t.Logf("status only %v: %v; %v", statusOnly, err, info)
				if statusOnly {
					require.NoError(t, err)
					require.Len(t, nodeFloats(t, *x), tr.n)
				} else {
					require.ErrorIs(t, cause(err), ErrNotConverged)
					var se *StatusError
					require.ErrorAs(t, cause(err), &se)
					require.Equal(t, NotConverged, se.Info.Status)
				}
				require.Equal(t, NotConverged, info.Status)
				require.Equal(t, 2, info.Iterations)
				require.Greater(t, info.Residual, 1e-14)
				m.Close()
				s.Close()
			}
		})
	}
}

// TestIndefiniteCG: CG on an indefinite matrix stops with Failed, not NaN.
func TestIndefiniteCG(t *testing.T) {
	rng := testRNG(t, 3)
	tr := laplace2D(rng, 6, 5, 0)
	for k, i := range tr.rows {
		if i == tr.cols[k] && i%2 == 0 {
			tr.vals[k] = -tr.vals[k]
		}
	}
	a := tr.whole(t)
	s, err := NewSolver(a.Pattern, WithPrecond(NoPrecond))
	require.NoError(t, err)
	_, err = s.run(runCG, false, false, a.Values, randVec(rng, tr.n))
	var se *StatusError
	require.ErrorAs(t, err, &se)
	t.Log(err)
	require.Contains(t, []Status{Failed, Diverged, NotConverged}, se.Info.Status)
}

// TestPoisson3D: the 7-point Laplacian built whole and by blocks of odd
// sizes agrees with a dense stencil.
func TestPoisson3D(t *testing.T) {
	rng := testRNG(t, 6)
	n := 2 + rng.IntN(5)
	order := n * n * n
	whole, err := Poisson3D(n, 0, order)
	require.NoError(t, err)
	x := randVec(rng, order)
	y, err := whole.MulVec(x)
	require.NoError(t, err)
	at := func(i, j, k int) float64 {
		if i < 0 || j < 0 || k < 0 || i >= n || j >= n || k >= n {
			return 0
		}
		return x[i+n*j+n*n*k]
	}
	for k := range n {
		for j := range n {
			for i := range n {
				want := 6*at(i, j, k) - at(i-1, j, k) - at(i+1, j, k) - at(i, j-1, k) - at(i, j+1, k) - at(i, j, k-1) - at(i, j, k+1)
				require.InDelta(t, want, y[i+n*j+n*n*k], 1e-12)
			}
		}
	}
	size := 1 + rng.IntN(5)
	var vals []float64
	next := 0
	for r := range size {
		lo, rows := BlockRows(order, r, size)
		require.Equal(t, next, lo)
		next += rows
		blk, err := Poisson3D(n, lo, rows)
		require.NoError(t, err)
		vals = append(vals, blk.Values...)
	}
	require.Equal(t, order, next)
	require.Equal(t, whole.Values, vals)
	_, err = Poisson3D(0, 0, 0)
	require.ErrorIs(t, err, ErrBadInput)
	_, err = Poisson3D(3, 20, 10)
	require.ErrorIs(t, err, ErrBadInput)
}

// TestReviewedEdges (every build, the Go Krylov runs):
//   - a transpose solve with one huge row detects the asymmetry (the test
//     of A·r against Aᵀ·r used to call the matrix symmetric and solve with A);
//   - a nearly singular system that CG's recurrence calls converged is
//     NotConverged by its true residual;
//   - a pattern without entries is a zero-diagonal error, not a panic.
func TestReviewedEdges(t *testing.T) {
	// [[1e14 0 0] [0 1 1] [0 0 1]]: Aᵀ·x = (0, 1, 1) has x = (0, 1, 0).
	a, err := FromTriplets(3, []int{0, 1, 1, 2}, []int{0, 1, 2, 2}, []float64{1e14, 1, 1, 1})
	require.NoError(t, err)
	for _, kind := range []runKind{runBiCGStab} {
		s, err := NewSolver(a.Pattern, WithPrecond(Jacobi))
		require.NoError(t, err)
		x, err := s.run(kind, true, false, a.Values, []float64{0, 1, 1})
		require.NoError(t, err)
		require.InDeltaSlice(t, []float64{0, 1, 0}, x, 1e-12)
		s.Close()
	}
	// 1-D Neumann Laplacian plus 1e-12·I, n = 40: CG's recurrence reaches
	// 1e-8 while the true residual stays near 1e-4.
	const n = 40
	tr := neumann1D(n, 1e-12)
	lap := tr.whole(t)
	b := randVec(testRNG(t, 71), n)
	for _, p := range []Precond{Jacobi, NoPrecond} {
		s, err := NewSolver(lap.Pattern, WithPrecond(p), WithTolerance(1e-8))
		require.NoError(t, err)
		x, err := s.run(runCG, false, false, lap.Values, b)
		info := s.lastInfo(false)
		if err == nil { // then the true residual met the tolerance
			require.LessOrEqual(t, tr.residual(x, b), 1e-8*(1+1e-6), "%v: Success with the true residual above the tolerance", p)
		} else {
			require.ErrorIs(t, err, ErrNotConverged, "%v", p)
			require.Equal(t, NotConverged, info.Status)
		}
		s.Close()
	}
	// A 2×2 pattern without entries.
	empty, err := NewCSR[float64](2, []int{0, 0, 0}, nil, nil)
	require.NoError(t, err)
	s, err := NewSolver(empty.Pattern, WithPrecond(Jacobi))
	require.NoError(t, err)
	_, err = s.run(runCG, false, false, empty.Values, []float64{1, 1})
	require.ErrorIs(t, err, ErrZeroDiagonal)
	s.Close()
}

// TestExtremeRightHandSides: right-hand sides near 1e200 and below 1e-300
// are solved, not lost to ‖b‖² overflowing or underflowing (Diverged with a
// NaN residual before); the solve runs on b scaled by a power of two.
func TestExtremeRightHandSides(t *testing.T) {
	a, err := FromTriplets(3, []int{0, 1, 2}, []int{0, 1, 2}, []float64{2, 4, 8})
	require.NoError(t, err)
	for _, c := range []struct{ b, want []float64 }{
		{[]float64{1e200, 2e200, 4e200}, []float64{5e199, 5e199, 5e199}},
		{[]float64{-1e300, 4e300, 8e300}, []float64{-5e299, 1e300, 1e300}},
		{[]float64{2e-310, 0, 0}, []float64{1e-310, 0, 0}},
	} {
		for _, kind := range []runKind{runCG, runBiCGStab} {
			for _, p := range []Precond{Jacobi, NoPrecond} {
				s, err := NewSolver(a.Pattern, WithPrecond(p))
				require.NoError(t, err)
				x, err := s.run(kind, false, false, a.Values, c.b)
				require.NoError(t, err, "%v %v b=%v", kind, p, c.b)
				for i := range x {
					require.InDelta(t, c.want[i], x[i], 1e-12*math.Abs(c.want[i]), "%v %v b=%v", kind, p, c.b)
				}
				s.Close()
			}
		}
	}
}

// TestProgressCallsTheSolver: a WithProgress callback may read its solver
// (Stats, Info): it runs outside the solver's lock (it used to deadlock
// RunAll).
func TestProgressCallsTheSolver(t *testing.T) {
	a, err := Poisson3D(3, 0, 27)
	if err != nil {
		t.Fatal(err)
	}
	var s *Solver
	var seen []int
	s, err = NewSolver(a.Pattern, WithProgress(func(info Info) {
		seen = append(seen, s.Stats().Solves)
		_ = s.Info()
	}))
	if err != nil {
		t.Fatal(err)
	}
	g := G.NewGraph()
	v := G.NewVector(g, tensor.Float64, G.WithShape(len(a.Values)), G.WithName("v"), G.WithValue(tensor.New(tensor.WithBacking(a.Values))))
	bv := make([]float64, 27)
	bv[0] = 1
	b := G.NewVector(g, tensor.Float64, G.WithShape(27), G.WithName("b"), G.WithValue(tensor.New(tensor.WithBacking(bv))))
	if _, err := s.CG(v, b); err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	done := make(chan error, 1)
	go func() { done <- m.RunAll() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		// (the machine and the solver are left as they are: closing them
		// would wait for the same lock)
		t.Fatal("RunAll still running after 30 s: the callback waits for the solver's lock")
	}
	m.Close()
	s.Close()
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("the callback saw Solves %v, want [1]", seen)
	}
}

// TestStridedInputs binds the values and b as views (a column of a wider
// matrix) and as Clones of views (strided tensors that are not views, as
// the LispMachine's gradient accumulator of a view input is): x and the
// gradients must be those of contiguous inputs, on both machines, and the
// inputs unchanged. The backing arrays used to be read as contiguous.
func TestStridedInputs(t *testing.T) {
	c, a, b, w, s := smallProblem(t, 77)
	wantX, wantGV, wantGB := gradsOf(t, s, c, a.Values, b, w, false)
	// column 1 of an n×3 matrix holding v, between other numbers.
	column := func(v []float64, clone bool) *tensor.Dense {
		backing := make([]float64, 3*len(v))
		for i, x := range v {
			backing[3*i], backing[3*i+1], backing[3*i+2] = 7, x, -7
		}
		view, err := tensor.New(tensor.WithShape(len(v), 3), tensor.WithBacking(backing)).Slice(nil, tensor.S(1))
		require.NoError(t, err)
		if clone {
			return view.(*tensor.Dense).Clone().(*tensor.Dense)
		}
		return view.(*tensor.Dense)
	}
	for _, clone := range []bool{false, true} {
		for _, lisp := range []bool{false, true} {
			t.Run(fmt.Sprintf("clone=%v/lisp=%v", clone, lisp), func(t *testing.T) {
				g := G.NewGraph()
				vt, bt := column(a.Values, clone), column(b, clone)
				vBefore, bBefore := slices.Clone(vt.Data().([]float64)), slices.Clone(bt.Data().([]float64))
				vn := G.NewVector(g, tensor.Float64, G.WithShape(len(a.Values)), G.WithName("values"), G.WithValue(vt))
				bn := G.NewVector(g, tensor.Float64, G.WithShape(len(b)), G.WithName("b"), G.WithValue(bt))
				x, err := c.op(s, vn, bn)
				require.NoError(t, err)
				var xv G.Value
				G.Read(x, &xv)
				cost := G.Must(G.Sum(G.Must(G.HadamardProd(x, vecNode(g, "w", w)))))
				m := backwardMachine(t, g, cost, lisp, vn, bn)
				defer m.Close()
				require.NoError(t, m.RunAll())
				gv, err := vn.Grad()
				require.NoError(t, err)
				gb, err := bn.Grad()
				require.NoError(t, err)
				require.InDeltaSlice(t, wantX, nodeFloats(t, xv), 1e-12)
				require.InDeltaSlice(t, wantGV, nodeFloats(t, gv), 1e-12)
				require.InDeltaSlice(t, wantGB, nodeFloats(t, gb), 1e-12)
				require.Equal(t, vBefore, vt.Data(), "values changed")
				require.Equal(t, bBefore, bt.Data(), "b changed")
			})
		}
	}
}

// TestConstantRightHandSide: b passed as a gorgonia.NewConstant (fixed data,
// of no graph) joins the values' graph, as in Gorgonia's own ops: x and the
// values' gradient are those of b as a node, on both machines. Constants
// alone have no graph: ErrBadInput, and the graph is unchanged. (A constant
// was refused: "nodes from different graphs".)
func TestConstantRightHandSide(t *testing.T) {
	c, a, b, w, s := smallProblem(t, 91)
	for _, lisp := range []bool{false, true} {
		var got [2][]float64
		for k, constant := range []bool{false, true} {
			g := G.NewGraph()
			vn := vecNode(g, "values", a.Values)
			bn := G.NewConstant(tensor.New(tensor.WithShape(len(b)), tensor.WithBacking(slices.Clone(b))))
			if !constant {
				bn = vecNode(g, "b", b)
			}
			x, err := c.op(s, vn, bn)
			require.NoError(t, err, "constant=%v", constant)
			cost := G.Must(G.Sum(G.Must(G.HadamardProd(x, vecNode(g, "w", w)))))
			m := backwardMachine(t, g, cost, lisp, vn)
			require.NoError(t, m.RunAll(), "constant=%v lisp=%v", constant, lisp)
			gv, err := vn.Grad()
			require.NoError(t, err)
			got[k] = append(nodeFloats(t, x.Value()), nodeFloats(t, gv)...)
			m.Close()
		}
		require.Less(t, relErr(got[1], got[0]), 1e-12, "lisp=%v: x and the values' gradient", lisp)
	}
	g := G.NewGraph()
	before := len(g.AllNodes())
	constVals := G.NewConstant(tensor.New(tensor.WithShape(len(a.Values)), tensor.WithBacking(slices.Clone(a.Values))))
	constB := G.NewConstant(tensor.New(tensor.WithShape(len(b)), tensor.WithBacking(slices.Clone(b))))
	_, err := c.op(s, constVals, constB)
	require.ErrorIs(t, err, ErrBadInput)
	require.ErrorContains(t, err, "no operand of a graph")
	require.Equal(t, before, len(g.AllNodes()))
}

// smallProblem is the 20-unknown SPD system of the tests of one solver
// (TestStridedInputs, TestConstantRightHandSide): the first solver case, A
// (a 5×4 Laplacian), b and the cost's weights w from the stream seed, and a
// solver to 1e-12, closed when the test ends.
func smallProblem(t *testing.T, seed uint64) (solverCase, *CSR, []float64, []float64, *Solver) {
	t.Helper()
	c := solverCases()[0]
	rng := testRNG(t, seed)
	tr := laplace2D(rng, 5, 4, 0)
	a := tr.whole(t)
	b, w := randVec(rng, tr.n), randVec(rng, tr.n)
	s, err := NewSolver(a.Pattern, append([]Option{WithTolerance(1e-12), WithMaxIterations(2000)}, c.opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return c, a, b, w, s
}

// TestConstantsThatPrintAlike: two constant right-hand sides in one graph
// whose printed values agree (Gorgonia elides vectors of more than eight
// elements) are solved each for itself. (The second became the first: a
// wrong x with no error.)
func TestConstantsThatPrintAlike(t *testing.T) {
	c, a, _, _, s := smallProblem(t, 92)
	n := a.Pattern.Rows()
	e := make([]float64, n)
	e[n/2] = 1
	g := G.NewGraph()
	vn := vecNode(g, "values", a.Values)
	c0 := G.NewConstant(tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float64, n))))
	c1 := G.NewConstant(tensor.New(tensor.WithShape(n), tensor.WithBacking(slices.Clone(e))))
	require.Equal(t, c0.Name(), c1.Name(), "the two constants print alike")
	x0, err := c.op(s, vn, c0)
	require.NoError(t, err)
	x1, err := c.op(s, vn, c1)
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	want, err := s.run(c.kind, false, false, a.Values, e)
	require.NoError(t, err)
	require.Equal(t, make([]float64, n), nodeFloats(t, x0.Value()))
	require.Less(t, relErr(nodeFloats(t, x1.Value()), want), 1e-12)
}

// backwardMachine is a machine that runs g forward and backward to the
// gradients of cost: the LispMachine, or Grad with respect to wrt and the
// TapeMachine.
func backwardMachine(t *testing.T, g *G.ExprGraph, cost *G.Node, lisp bool, wrt ...*G.Node) G.VM {
	t.Helper()
	if lisp {
		return G.NewLispMachine(g)
	}
	_, err := G.Grad(cost, wrt...)
	require.NoError(t, err)
	return G.NewTapeMachine(g)
}

// trueRelResidual is ‖b − A·x‖/‖b‖ of the triplets' matrix.
func trueRelResidual(tr triplets, x, b []float64) float64 {
	r := slices.Clone(b)
	for k, i := range tr.rows {
		r[i] -= tr.vals[k] * x[tr.cols[k]]
	}
	var rr, bb float64
	for i := range r {
		rr += r[i] * r[i]
		bb += b[i] * b[i]
	}
	return math.Sqrt(rr / bb)
}

// Go's CG and BiCGStab with Jacobi on a symmetrically scaled SPD matrix
// (D·A·D, D over 1e±6): their residual grows before it falls (CG's first
// was 6e9·‖b‖), which the divergence cut-off called Diverged at the first
// iteration; they converge, to the true residual.
func TestKrylovScaledSystem(t *testing.T) {
	rng := testRNG(t, 910)
	tr := laplace2D(rng, 16, 15, 0)
	d := make([]float64, tr.n)
	for i := range d {
		d[i] = math.Pow(10, 12*rng.Float64()-6)
	}
	for k := range tr.vals {
		tr.vals[k] *= d[tr.rows[k]] * d[tr.cols[k]]
	}
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	for _, kind := range []runKind{runCG, runBiCGStab} {
		s, err := NewSolver(a.Pattern, WithPrecond(Jacobi), WithTolerance(1e-3), WithMaxIterations(20000))
		require.NoError(t, err)
		x, err := s.run(kind, false, false, a.Values, b)
		require.NoError(t, err, "%v: %v", runNames[kind], s.Info())
		require.LessOrEqual(t, trueRelResidual(tr, x, b), 1e-3*(1+1e-6), runNames[kind])
		s.Close()
	}
}

// Go's CG whose recurrence reaches a tight tolerance where the true
// residual does not (a shifted Neumann Laplacian at 2e-14) goes on with
// corrections until the true residual does (refine); it ended NotConverged
// at the recurrence's stop, every time.
func TestKrylovRefinesToTrueResidual(t *testing.T) {
	rng := testRNG(t, 912)
	tr := neumann1D(300, 1e-2)
	a := tr.whole(t)
	for range 20 {
		b := randVec(rng, tr.n)
		// 2e-14: without refine 1 solve in 100 got there; at 1e-14, the
		// rounding floor, 1 in some hundreds still stagnates just above.
		s, err := NewSolver(a.Pattern, WithPrecond(Jacobi), WithTolerance(2e-14), WithMaxIterations(5000))
		require.NoError(t, err)
		x, err := s.run(runCG, false, false, a.Values, b)
		require.NoError(t, err, "%v", s.Info())
		// (The residual's own rounding differs by some percent between
		// this sum and the engine's matvec.)
		res := trueRelResidual(tr, x, b)
		require.LessOrEqual(t, res, 3e-14)
		// The Info's residual is the true one (it was the first solve's
		// recurrence's, 1e-26).
		require.InEpsilon(t, res, s.Info().Residual, 0.5)
		s.Close()
	}
}

// refine takes back a correction that does not lower the true residual: x
// and the residual are the ones before it (the worse x was returned).
func TestRefineTakesBackAWorseCorrection(t *testing.T) {
	rng := testRNG(t, 914)
	tr := neumann1D(50, 1)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	s, err := NewSolver(a.Pattern, WithPrecond(Jacobi), WithTolerance(1e-14), WithMaxIterations(100))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.checkInputs("test", a.Values, b, runCG, nil)) // loads the values
	x := make([]float64, tr.n)
	x[0] = 1 // far from the solution
	before := slices.Clone(x)
	worse := func(_ space, _ bool, _ func(r, z []float64) error, _, dx []float64, _ float64, _ int) (Info, error) {
		for i := range dx {
			dx[i] = 1e6 // a correction that makes x worse
		}
		return Info{Status: Success, Iterations: 1}, nil
	}
	info, err := s.refine(worse, false, nil, b, x, Info{Status: Success, Iterations: 1})
	require.NoError(t, err)
	require.Equal(t, NotConverged, info.Status)
	require.Equal(t, before, x)
	require.InEpsilon(t, trueRelResidual(tr, x, b), info.Residual, 1e-9)
}

// TestBackwardAfterFailedRun: a solve's LispMachine backward step after a
// failed run of its graph (the backward pass Gorgonia goes on with after
// RunAll returned the error, whose solves would pair with the next graph's
// on the other ranks) is refused before it solves; another goroutine's
// graph failing on the same solver is not its business (a solver is safe
// for several goroutines); the next forward clears it.
func TestBackwardAfterFailedRun(t *testing.T) {
	c, a, b, w, s := smallProblem(t, 93)
	g := G.NewGraph()
	vn, bn := vecNode(g, "values", a.Values), vecNode(g, "b", b)
	x, err := c.op(s, vn, bn)
	require.NoError(t, err)
	G.Must(G.Sum(G.Must(G.HadamardProd(x, vecNode(g, "w", w)))))
	run := func() error {
		m := G.NewLispMachine(g)
		defer m.Close()
		return m.RunAll()
	}
	require.NoError(t, run())
	// Another graph on s fails on another goroutine, again and again.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		bad := slices.Clone(b)
		bad[0] = math.NaN()
		for {
			select {
			case <-stop:
				return
			default:
			}
			g2 := G.NewGraph()
			x2, err := c.op(s, vecNode(g2, "values", a.Values), vecNode(g2, "b", bad))
			if err != nil {
				panic(err)
			}
			G.Must(G.Sum(x2))
			m := G.NewTapeMachine(g2)
			_ = m.RunAll()
			m.Close()
		}
	}()
	for i := range 50 {
		require.NoError(t, run(), "run %d beside another graph's failures", i)
	}
	close(stop)
	<-done
	failedruns.Failed(g) // a failure of another op of the graph
	err = x.Op().(*solveOp).DoDiff(G.ExecutionContext{}, G.Nodes{vn, bn}, x)
	require.ErrorIs(t, err, failedruns.ErrFailedRun)
	require.NoError(t, run())
}

// TestInfoOfRunsThatDidNotSolve: a new solver's Info is NotRun, not the
// zero Info's Success; a run that ends with an error before solving (here a
// closed solver's; a peer's timeout alike, mpi_test) leaves Failed, not
// the previous run's Success.
func TestInfoOfRunsThatDidNotSolve(t *testing.T) {
	rng := testRNG(t, 9)
	tr := laplace2D(rng, 4, 3, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	c := solverCases()[1] // CG/none: pure Go
	s, err := NewSolver(a.Pattern, c.opts...)
	require.NoError(t, err)
	require.Equal(t, NotRun, s.Info().Status)
	require.Equal(t, NotRun, s.AdjointInfo().Status)
	require.Equal(t, "NotRun", NotRun.String())
	require.Equal(t, "Success after 3 iterations, relative residual 1e-09, hierarchy built", Info{Success, 3, 1e-9, true}.String())
	require.Equal(t, "Failed after 0 iterations, relative residual 0", Info{Status: Failed}.String())
	g, _, _, _, _ := solveGraph(t, s, c, a.Values, b, b)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	require.Equal(t, Success, s.Info().Status)
	s.Close()
	m.Reset()
	require.ErrorIs(t, cause(m.RunAll()), ErrBadInput)
	require.Equal(t, Failed, s.Info().Status)
}

// TestPatternIndex: Index finds each given triplet's position in the values
// (sorted rows, duplicates summed), in a row block too, and nothing for
// entries not stored or rows of another block.
func TestPatternIndex(t *testing.T) {
	rows := []int{2, 0, 2, 1, 0, 2, 1}
	cols := []int{0, 2, 2, 1, 0, 0, 0}
	vals := []float64{1, 2, 3, 4, 5, 6, 7} // (2, 0) twice: 1 + 6
	a, err := FromTriplets(3, rows, cols, vals)
	require.NoError(t, err)
	want := map[[2]int]float64{{0, 0}: 5, {0, 2}: 2, {1, 0}: 7, {1, 1}: 4, {2, 0}: 7, {2, 2}: 3}
	for rc, v := range want {
		k, ok := a.Pattern.Index(rc[0], rc[1])
		require.True(t, ok, "%v", rc)
		require.Equal(t, v, a.Values[k], "%v", rc)
	}
	for _, rc := range [][2]int{{0, 1}, {1, 2}, {2, 1}, {3, 0}, {-1, 0}} {
		_, ok := a.Pattern.Index(rc[0], rc[1])
		require.False(t, ok, "%v", rc)
	}
	blk, err := NewRowBlock(3, 1, []int{0, 2}, []int{1, 0}, []float64{4, 7}) // row 1 alone
	require.NoError(t, err)
	k, ok := blk.Pattern.Index(1, 1)
	require.True(t, ok)
	require.Equal(t, 4.0, blk.Values[k])
	_, ok = blk.Pattern.Index(0, 0)
	require.False(t, ok)
}
