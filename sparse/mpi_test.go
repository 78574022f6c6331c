//go:build mpi

package sparse

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
)

// The MPI tests run on every rank of MPI_COMM_WORLD (one rank under go
// test, 1–4 under `make mpi-test`): each rank holds a row block of the same
// random matrix (the seed is rank 0's), and its block of the solution and of
// the gradients must match a one-process solve of the whole matrix.

func worldRNG(t *testing.T, stream uint64) (*rand.Rand, *commHandle) {
	t.Helper()
	h, err := handleOf(worldFortran())
	require.NoError(t, err)
	seed, err := h.bcast(testSeed)
	require.NoError(t, err)
	t.Logf("rank %d of %d: seed %d (stream %d)", h.rank, h.size, seed, stream)
	return rand.New(rand.NewPCG(seed, stream)), h
}

func TestMPIRowBlocks(t *testing.T) {
	eachCase(t, func(t *testing.T, i int, c solverCase, nonSym bool) {
		rng, h := worldRNG(t, uint64(500+10*i+btoi(nonSym)))
		tr := laplace2D(rng, 6+rng.IntN(8), 5+rng.IntN(8), float64(btoi(nonSym))*0.8)
		compareRowBlocks(t, rng, h, c, tr)
	})
}

// TestMPIEmptyRowBlock: a matrix of fewer rows than ranks, so that the last
// rank holds none (BlockRows gives it an empty block; from 2 ranks on): the
// graph ops run on it and give the one-process answer, forward and adjoint.
// (The gradient through a graph is not taken here: Gorgonia's own
// arithmetic, HadamardProd or Inner, panics on an empty vector.)
func TestMPIEmptyRowBlock(t *testing.T) {
	for i, c := range solverCases() {
		t.Run(c.name, func(t *testing.T) {
			rng, h := worldRNG(t, uint64(800+i))
			tr := laplace2D(rng, max(1, h.size-1), 1, 0)
			b := randVec(rng, tr.n)
			lo, rows := BlockRows(tr.n, h.rank, h.size)
			blk := tr.block(t, lo, lo+rows)
			whole := tr.whole(t)
			// 1e-12, as in every test that needs a converged solve (at
			// 1e-13 a converged BiCGStab's true residual can come out a
			// hair above the tolerance: TestGradients' comment).
			dist, err := NewSolver(blk.Pattern, append([]Option{WithTolerance(1e-12), WithComm(worldFortran())}, c.opts...)...)
			require.NoError(t, err)
			defer dist.Close()
			one, err := NewSolver(whole.Pattern, append([]Option{WithTolerance(1e-12)}, c.opts...)...)
			require.NoError(t, err)
			defer one.Close()
			g := G.NewGraph()
			x, err := c.op(dist, vecNode(g, "values", blk.Values), vecNode(g, "b", b[lo:lo+rows]))
			require.NoError(t, err)
			var xv G.Value
			G.Read(x, &xv)
			m := G.NewTapeMachine(g)
			defer m.Close()
			require.NoError(t, m.RunAll())
			for _, adjoint := range []bool{false, true} {
				want, err := one.run(c.kind, adjoint, false, whole.Values, b)
				require.NoError(t, err)
				got := nodeFloats(t, xv)
				if adjoint {
					got, err = dist.run(c.kind, true, false, blk.Values, b[lo:lo+rows])
					require.NoError(t, err)
				}
				require.Len(t, got, rows)
				if rows > 0 {
					require.Less(t, relErr(got, want[lo:lo+rows]), 1e-9, "adjoint %v", adjoint)
				}
			}
		})
	}
}

// compareRowBlocks runs the graph op of c and its gradients on this rank's
// row block of tr (BlockRows) and on the whole matrix in this process, and
// compares this rank's blocks of the solution and the gradients.
func compareRowBlocks(t *testing.T, rng *rand.Rand, h *commHandle, c solverCase, tr triplets) {
	t.Helper()
	{
		b, w := randVec(rng, tr.n), randVec(rng, tr.n)
		lo, rows := BlockRows(tr.n, h.rank, h.size)
		blk := tr.block(t, lo, lo+rows)
		whole := tr.whole(t)
		opts := append([]Option{WithTolerance(1e-12), WithMaxIterations(2000)}, c.opts...)
		dist, err := NewSolver(blk.Pattern, append(opts, WithComm(worldFortran()))...)
		require.NoError(t, err)
		defer dist.Close()
		one, err := NewSolver(whole.Pattern, opts...)
		require.NoError(t, err)
		defer one.Close()
		rowPtr := whole.Pattern.RowPtr()
		for _, lisp := range []bool{false, true} {
			x1, gv1, gb1 := gradsOf(t, one, c, whole.Values, b, w, lisp)
			xd, gvd, gbd := gradsOf(t, dist, c, blk.Values, b[lo:lo+rows], w[lo:lo+rows], lisp)
			ex := relErr(xd, x1[lo:lo+rows])
			ev := relErr(gvd, gv1[rowPtr[lo]:rowPtr[lo+rows]])
			eb := relErr(gbd, gb1[lo:lo+rows])
			t.Logf("lisp=%v rows [%d, %d) of %d: x %.1e, values gradient %.1e, b gradient %.1e; %v", lisp, lo, lo+rows, tr.n, ex, ev, eb, dist.Info())
			for _, e := range []float64{ex, ev, eb} {
				if rows > 0 {
					require.Less(t, e, 1e-9)
				}
			}
		}
	}
}

// TestMPIBadInputOnOneRank: NaN in the right-hand side, NaN in the matrix
// values, or a zero diagonal entry, on the last rank only: every rank fails
// with the same sentinels as that rank's own error, so that ranks that
// branch on them take the same branch (NaN values matched ErrNonFinite on
// the last rank only).
func TestMPIBadInputOnOneRank(t *testing.T) {
	rng, h := worldRNG(t, 600)
	tr := laplace2D(rng, 7, 6, 0)
	b := randVec(rng, tr.n)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	blk := tr.block(t, lo, lo+rows)
	last := h.rank == h.size-1
	for _, bad := range []struct {
		name  string
		spoil func(vals, b []float64)
		want  []error
		skip  func(c solverCase) bool
	}{
		{"NaN in b", func(_, b []float64) { b[len(b)-1] = math.NaN() }, []error{ErrNonFinite}, nil},
		{"NaN in the values", func(vals, _ []float64) { vals[len(vals)-1] = math.NaN() }, []error{ErrBadMatrix, ErrNonFinite}, nil},
		{"zero diagonal", func(vals, _ []float64) {
			rp, ci := blk.Pattern.RowPtr(), blk.Pattern.ColInd()
			for k := rp[rows-1]; k < rp[rows]; k++ {
				if ci[k] == lo+rows-1 {
					vals[k] = 0
				}
			}
		}, []error{ErrZeroDiagonal}, func(c solverCase) bool { return c.name == "CG/none" }}, // divides by no diagonal
	} {
		for _, c := range solverCases() {
			if bad.skip != nil && bad.skip(c) {
				continue
			}
			vals, bl := slices.Clone(blk.Values), slices.Clone(b[lo:lo+rows])
			if last {
				bad.spoil(vals, bl)
			}
			s, err := NewSolver(blk.Pattern, append(slices.Clone(c.opts), WithComm(worldFortran()))...)
			require.NoError(t, err)
			_, err = s.run(c.kind, false, false, vals, bl)
			t.Logf("%s, %s: %v", bad.name, c.name, err)
			for _, want := range bad.want {
				require.ErrorIs(t, err, want, "%s, %s", bad.name, c.name)
			}
			s.Close()
		}
	}
}

// TestMPIBadPartition: blocks that do not tile the rows are an error on
// every rank.
func TestMPIBadPartition(t *testing.T) {
	rng, h := worldRNG(t, 700)
	tr := laplace2D(rng, 5, 5, 0)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	if h.rank == 0 && rows > 0 {
		lo, rows = lo+1, rows-1 // row 0 belongs to nobody
	}
	_, err := NewSolver(tr.block(t, lo, lo+rows).Pattern, WithComm(worldFortran()))
	t.Log(err)
	require.ErrorIs(t, err, ErrBadMatrix)
}

// TestMPIBadInputOnOneRankOnly: a right-hand side of the wrong length on
// the last rank only, and a last rank that gives the matrix another order:
// every rank returns an error, none waits for the others.
func TestMPIBadInputOnOneRankOnly(t *testing.T) {
	rng, h := worldRNG(t, 650)
	tr := laplace2D(rng, 7, 6, 0)
	b := randVec(rng, tr.n)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	last := h.rank == h.size-1
	blk := tr.block(t, lo, lo+rows)
	s, err := NewSolver(blk.Pattern, WithComm(worldFortran()))
	require.NoError(t, err)
	defer s.Close()
	bl := b[lo : lo+rows]
	if last {
		bl = bl[:rows-1]
	}
	_, info, err := s.SolveValues(blk.Values, bl, false)
	t.Logf("wrong length on the last rank: %v; %v", err, info)
	require.ErrorIs(t, err, ErrBadInput)
	require.Equal(t, Failed, info.Status)

	// The last rank's block is of a matrix of two more rows, its last rows
	// those of the others (no rank's block alone is wrong).
	n := tr.n
	if last {
		n += 2
	}
	var r, c []int
	var v []float64
	for k, i := range tr.rows {
		if i >= lo && i < lo+rows {
			r, c, v = append(r, i), append(c, tr.cols[k]), append(v, tr.vals[k])
		}
	}
	other, err := RowBlockFromTriplets(n, lo, rows, r, c, v)
	require.NoError(t, err)
	_, err = NewSolver(other.Pattern, WithComm(worldFortran()))
	t.Log("another order on the last rank:", err)
	if h.size > 1 || last {
		require.ErrorIs(t, err, ErrBadMatrix)
	}
}

// TestMPIValuesChangeOnOneRank: new values on the last rank's block only:
// every rank loads and sets up again, and the answer is the one-process
// solve of the new matrix.
func TestMPIValuesChangeOnOneRank(t *testing.T) {
	rng, h := worldRNG(t, 1000)
	tr := laplace2D(rng, 9, 8, 0)
	b := randVec(rng, tr.n)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	s, err := NewSolver(tr.block(t, lo, lo+rows).Pattern, WithComm(worldFortran()), WithTolerance(1e-12))
	require.NoError(t, err)
	defer s.Close()
	x, _, err := s.SolveValues(tr.block(t, lo, lo+rows).Values, b[lo:lo+rows], false)
	require.NoError(t, err)
	require.Less(t, relErr(x, denseSolve(tr.n, tr.dense(), b, false)[lo:lo+rows]), 1e-9)
	last, _ := BlockRows(tr.n, h.size-1, h.size)
	for k, i := range tr.rows {
		if i >= last && i == tr.cols[k] {
			tr.vals[k] *= 2
		}
	}
	x, _, err = s.SolveValues(tr.block(t, lo, lo+rows).Values, b[lo:lo+rows], false)
	require.NoError(t, err)
	e := relErr(x, denseSolve(tr.n, tr.dense(), b, false)[lo:lo+rows])
	t.Logf("rank %d: error %.1e after the change, %d setups", h.rank, e, s.Stats().Setups)
	require.Less(t, e, 1e-9)
	require.Equal(t, 2, s.Stats().Setups)
}

// TestMPIPreconditioner: the V-cycle on row blocks is symmetric and an
// approximate inverse over all ranks (its hierarchy depends on the
// partition, so it is not compared with one process's), and its gradient
// through the op is M⁻¹w on every rank.
func TestMPIPreconditioner(t *testing.T) {
	rng, h := worldRNG(t, 1100)
	tr := laplace2D(rng, 13, 12, 0)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	blk := tr.block(t, lo, lo+rows)
	s, err := NewSolver(blk.Pattern, WithComm(worldFortran()))
	require.NoError(t, err)
	defer s.Close()
	r1, r2, w := randVec(rng, tr.n)[lo:lo+rows], randVec(rng, tr.n)[lo:lo+rows], randVec(rng, tr.n)[lo:lo+rows]
	z1, err := s.run(runPrecond, false, false, blk.Values, r1)
	require.NoError(t, err)
	z2, err := s.run(runPrecond, false, false, blk.Values, r2)
	require.NoError(t, err)
	d12, err := s.eng.dot(r2, z1)
	require.NoError(t, err)
	d21, err := s.eng.dot(r1, z2)
	require.NoError(t, err)
	require.InDelta(t, d12, d21, 1e-10*math.Abs(d12))
	az := make([]float64, rows)
	require.NoError(t, s.eng.matvec(false, z1, az))
	for i := range az {
		az[i] -= r1[i]
	}
	num, err := s.eng.dot(az, az)
	require.NoError(t, err)
	den, err := s.eng.dot(r1, r1)
	require.NoError(t, err)
	t.Logf("rank %d: one V-cycle on %d ranks: ‖r − A·M⁻¹r‖/‖r‖ = %.2g", h.rank, h.size, math.Sqrt(num/den))
	require.Less(t, math.Sqrt(num/den), 0.5)
	c := solverCase{name: "Preconditioner", kind: runPrecond}
	for _, lisp := range []bool{false, true} {
		_, _, gb := gradsOfB(t, s, c, blk.Values, r1, w, lisp)
		mw, err := s.run(runPrecond, false, false, blk.Values, w)
		require.NoError(t, err)
		require.Less(t, relErr(gb, mw), 1e-12)
	}
	require.Equal(t, 1, s.Stats().Setups)
}

// TestMPIReviewedEdges: the last rank holds rows without entries (used to
// hang the others in the AMG setup after its load failed), and a zero
// diagonal on the last rank only is ErrZeroDiagonal on every rank (the
// others said "bad input on another rank").
func TestMPIReviewedEdges(t *testing.T) {
	_, h := worldRNG(t, 660)
	n := 2 * h.size
	lo, rows := BlockRows(n, h.rank, h.size)
	last := h.rank == h.size-1
	var r, c []int
	var v []float64
	for i := lo; i < lo+rows; i++ {
		if last && h.size > 1 {
			continue // no entries in the last rank's rows
		}
		r, c, v = append(r, i), append(c, i), append(v, 2)
	}
	blk, err := RowBlockFromTriplets(n, lo, rows, r, c, v)
	require.NoError(t, err)
	s, err := NewSolver(blk.Pattern, WithComm(worldFortran()))
	require.NoError(t, err)
	_, _, err = s.SolveValues(blk.Values, make([]float64, rows), false)
	t.Logf("rows without entries on the last rank: %v", err)
	if h.size > 1 {
		require.ErrorIs(t, err, ErrZeroDiagonal)
	}
	s.Close()

	// Every row has its diagonal, zero on the last rank's first row.
	r, c, v = nil, nil, nil
	for i := lo; i < lo+rows; i++ {
		d := 2.0
		if last && i == lo {
			d = 0
		}
		r, c, v = append(r, i), append(c, i), append(v, d)
	}
	blk, err = RowBlockFromTriplets(n, lo, rows, r, c, v)
	require.NoError(t, err)
	s, err = NewSolver(blk.Pattern, WithComm(worldFortran()))
	require.NoError(t, err)
	defer s.Close()
	ones := make([]float64, rows)
	for i := range ones {
		ones[i] = 1
	}
	_, _, err = s.SolveValues(blk.Values, ones, false)
	require.ErrorIs(t, err, ErrZeroDiagonal, "rank %d", h.rank)
}

// TestMPICommClosedBeforeSolve: the solver keeps its own duplicate of the
// WithComm communicator, so closing the caller's after NewSolver leaves the
// solver working (it used to crash the process: SIGSEGV in C on the freed
// communicator).
func TestMPICommClosedBeforeSolve(t *testing.T) {
	w, err := mpi.World()
	require.NoError(t, err)
	subs, err := w.Split(func(int) int { return 0 }, func(r int) int { return r })
	require.NoError(t, err)
	sub := subs[0].(*mpi.Comm)
	lo, rows := BlockRows(27, sub.Rank(), sub.Size())
	a, err := Poisson3D(3, lo, rows)
	require.NoError(t, err)
	s, err := NewSolver(a.Pattern, WithComm(sub.Fortran()), WithTolerance(1e-12))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, sub.Close())
	b := make([]float64, rows)
	for i := range b {
		b[i] = 1
	}
	x, info, err := s.SolveValues(a.Values, b, false)
	require.NoError(t, err)
	require.Len(t, x, rows)
	require.Equal(t, Success, info.Status, "%v", info)
}

// TestMPIOptionsDifferOnOneRank: solver options that differ on one rank are
// ErrMismatch from NewSolver on every rank (a looser tolerance, an
// iteration limit or another method on one rank left the others waiting in
// hypre's reductions for ever); the progress function may differ.
func TestMPIOptionsDifferOnOneRank(t *testing.T) {
	rng, h := worldRNG(t, 800)
	tr := laplace2D(rng, 7, 6, 0)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	blk := tr.block(t, lo, lo+rows)
	last := h.rank == h.size-1
	for _, c := range []struct {
		name     string
		opts     []Option
		mismatch bool
	}{
		{"tolerance", []Option{WithTolerance(1e-2)}, true},
		{"iterations", []Option{WithMaxIterations(2)}, true},
		{"method", []Option{WithMethod(GMRES)}, true},
		{"status only", []Option{WithStatusOnly()}, true},
		{"BoomerAMG setting", []Option{WithHypre("MaxLevels", 3)}, true},
		{"print level", []Option{WithPrintLevel(1)}, true}, // hypre's statistics are collective
		{"progress", []Option{WithProgress(func(Info) {})}, false},
		// A rank with another timeout would give up on a late peer while
		// the others still wait: the timeout is agreed like the rest.
		{"timeout", []Option{WithTimeout(7 * time.Second)}, true},
		// WithKeepHierarchy defaults the smoother to symmetric Gauss–Seidel:
		// an explicit ℓ1 one differs from it, an explicit symmetric one not.
		{"keep hierarchy, ℓ1 smoother", []Option{WithKeepHierarchy(), WithSmoother(L1GaussSeidel)}, true},
		{"keep hierarchy, symmetric smoother", []Option{WithKeepHierarchy(), WithSmoother(SymGaussSeidel)}, false},
	} {
		opts := []Option{WithComm(worldFortran()), WithTolerance(1e-10)}
		if strings.HasPrefix(c.name, "keep hierarchy") {
			opts = append(opts, WithKeepHierarchy())
		}
		if last {
			opts = append(opts, c.opts...)
		}
		s, err := NewSolver(blk.Pattern, opts...)
		if h.size == 1 { // nothing differs
			require.NoError(t, err, c.name)
			s.Close()
			continue
		}
		if !c.mismatch {
			require.NoError(t, err, c.name)
			x, _, err := s.SolveValues(blk.Values, randVec(rng, rows), false)
			require.NoError(t, err, c.name)
			require.Len(t, x, rows)
			s.Close()
			continue
		}
		require.ErrorIs(t, err, collective.ErrMismatch, c.name)
		require.Nil(t, s, c.name)
	}
	// An option or a pattern refused on one rank: ErrBadInput on every rank
	// (the refusing rank returned before any collective, and the others'
	// NewSolver paired with its next call).
	for _, c := range []struct {
		name    string
		pattern *Pattern
		opts    []Option
	}{
		{"tolerance outside (0, 1)", blk.Pattern, []Option{WithTolerance(2)}},
		{"unknown BoomerAMG setting", blk.Pattern, []Option{WithHypre("NoSuchSetting", 1)}},
		{"nil pattern", nil, nil},
	} {
		pattern, opts := blk.Pattern, []Option{WithComm(worldFortran())}
		if last {
			pattern, opts = c.pattern, append(opts, c.opts...)
		}
		s, err := NewSolver(pattern, opts...)
		require.ErrorIs(t, err, ErrBadInput, c.name)
		require.Nil(t, s, c.name)
	}
}

// smallSystem is this rank's row block of a 42-unknown Laplacian and of a
// random right-hand side, for the tests that need 2 ranks (skipped on one).
func smallSystem(t *testing.T, stream uint64) (h *commHandle, blk *CSR, b []float64, rows int) {
	t.Helper()
	rng, h := worldRNG(t, stream)
	if h.size == 1 {
		t.Skip("needs 2 ranks")
	}
	tr := laplace2D(rng, 7, 6, 0)
	lo, rows := BlockRows(tr.n, h.rank, h.size)
	return h, tr.block(t, lo, lo+rows), randVec(rng, rows), rows
}

// TestMPIDifferentRuns: ranks in different runs of one solver (a gradient
// built on one rank only; Solve on one rank and CG on the others) get
// ErrMismatch on every rank before hypre (they waited there, or in the
// solver's agreements, for ever); the next run alike on every rank works.
func TestMPIDifferentRuns(t *testing.T) {
	h, blk, b, rows := smallSystem(t, 900)
	last := h.rank == h.size-1
	s, err := NewSolver(blk.Pattern, WithComm(worldFortran()), WithTolerance(1e-10))
	require.NoError(t, err)
	defer s.Close()
	for _, c := range []struct {
		name  string
		build func(g *G.ExprGraph, v, bn *G.Node) error
	}{
		{"gradient on the last rank only", func(g *G.ExprGraph, v, bn *G.Node) error {
			x, err := s.Solve(v, bn)
			if err != nil || !last {
				return err
			}
			_, err = G.Grad(G.Must(G.Sum(G.Must(G.Square(x)))), bn)
			return err
		}},
		{"CG on the last rank, Solve on the others", lastRunsOther(last, s.CG, s.Solve)},
		{"Preconditioner on the last rank, Solve on the others", lastRunsOther(last, s.Preconditioner, s.Solve)},
	} {
		g := G.NewGraph()
		v, bn := vecNode(g, "v", blk.Values), vecNode(g, "b", b)
		require.NoError(t, c.build(g, v, bn), c.name)
		m := G.NewTapeMachine(g)
		err := m.RunAll()
		m.Close()
		require.ErrorIs(t, cause(err), collective.ErrMismatch, c.name)
		x, _, err := s.SolveValues(blk.Values, b, false)
		require.NoError(t, err, "%s: the next run", c.name)
		require.Len(t, x, rows)
	}
}

// TestMPIRunTimeout: a rank that comes to a run later than the others'
// timeout, at its start or between two of its exchanges. Every rank gets
// collective.ErrTimeout, the late one too (it completes one exchange
// against the others' abandoned requests and times out in the next, which
// they never make), no rank enters hypre alone, the solver refuses later
// runs with collective.ErrClosed, it can be closed, and a new solver works.
// Cases: the last rank starts the run twice the timeout late; rank 0 is
// held up twice the timeout before the second exchange (it hung in hypre
// when only the first two exchanges were timed: a review's reproduction).
// Closing the broken solver freed its communicator under the abandoned
// request, and the next MPI call crashed.
func TestMPIRunTimeout(t *testing.T) {
	h, blk, b, rows := smallSystem(t, 901)
	for _, c := range []struct {
		name    string
		timeout time.Duration
		late    func(s *Solver, rank int) // holds this rank up
	}{
		{"the last rank starts late", 1500 * time.Millisecond, func(s *Solver, rank int) {
			if rank == h.size-1 {
				time.Sleep(2 * s.cfg.timeout)
			}
		}},
		{"rank 0 held up before the second exchange", 500 * time.Millisecond, func(s *Solver, rank int) {
			if rank == 0 {
				s.eng = &stallBeforeExchange{engine: s.eng, at: 2, pause: 2 * s.cfg.timeout}
			}
		}},
	} {
		s, err := NewSolver(blk.Pattern, WithComm(worldFortran()), WithTolerance(1e-10), WithTimeout(c.timeout))
		require.NoError(t, err, c.name)
		start := time.Now()
		c.late(s, h.rank)
		_, _, err = s.SolveValues(blk.Values, b, false)
		require.ErrorIs(t, err, collective.ErrTimeout, c.name)
		require.Less(t, time.Since(start), 6*c.timeout, "%s: the error came too late", c.name)
		require.Equal(t, Failed, s.Info().Status, "%s: the timed-out run's Info", c.name)
		_, _, err = s.SolveValues(blk.Values, b, false)
		require.ErrorIs(t, err, collective.ErrClosed, "%s: a run on the broken solver", c.name)
		require.Equal(t, Failed, s.Info().Status, "%s: the refused run's Info", c.name)
		s.Close()

		fresh, err := NewSolver(blk.Pattern, WithComm(worldFortran()), WithTolerance(1e-10))
		require.NoError(t, err, c.name)
		x, _, err := fresh.SolveValues(blk.Values, b, false)
		require.NoError(t, err, "%s: a new solver", c.name)
		require.Len(t, x, rows)
		fresh.Close()
	}
}

// stallBeforeExchange is an engine held up for pause before its at-th
// maxAll.
type stallBeforeExchange struct {
	engine
	n, at int
	pause time.Duration
}

func (s *stallBeforeExchange) maxAll(x float64) (float64, error) {
	if s.n++; s.n == s.at {
		time.Sleep(s.pause)
	}
	return s.engine.maxAll(x)
}

// lastRunsOther builds op on the last rank and other on the others.
func lastRunsOther(last bool, op, other func(v, b *G.Node) (*G.Node, error)) func(g *G.ExprGraph, v, bn *G.Node) error {
	return func(_ *G.ExprGraph, v, bn *G.Node) error {
		if !last {
			op = other
		}
		_, err := op(v, bn)
		return err
	}
}

// TestMPINewSolverTimeout: a rank that does not call NewSolver, whose
// WithComm is refused, or that comes later than the timeout gives the others
// collective.ErrTimeout from NewSolver within the timeout (they waited for
// ever in a blocking MPI_Allreduce), the late one too. Each case runs on a
// communicator of its own, which a timeout leaves holding an abandoned
// request; a communicator made before the cases (an abandoned
// MPI_Comm_idup blocked every later one made from it) and the world still
// host a solver and split.
func TestMPINewSolverTimeout(t *testing.T) {
	h, blk, b, rows := smallSystem(t, 902)
	w, err := mpi.World()
	require.NoError(t, err)
	last := h.rank == h.size-1
	const timeout = time.Second
	split := func(c *mpi.Comm) *mpi.Comm {
		subs, err := c.Split(func(int) int { return 0 }, func(r int) int { return r })
		require.NoError(t, err)
		return subs[0].(*mpi.Comm)
	}
	// The cases' communicators first, then one of a higher context id: an
	// abandoned MPI_Comm_idup on a case's held back every communicator
	// made from one of higher id (Open MPI's context-id allocation).
	subs := []*mpi.Comm{split(w), split(w), split(w)}
	other := split(w)
	for i, c := range []struct {
		name string
		last func(comm int) error // what the last rank does
	}{
		{"the last rank does not call NewSolver", func(int) error { return nil }},
		{"the last rank's WithComm is refused", func(int) error {
			_, err := NewSolver(blk.Pattern, WithComm(1<<24), WithTimeout(timeout))
			require.ErrorIs(t, err, ErrBadInput)
			return nil
		}},
		{"the last rank comes late", func(comm int) error {
			time.Sleep(2 * timeout)
			_, err := NewSolver(blk.Pattern, WithComm(comm), WithTimeout(timeout))
			return err
		}},
	} {
		sub := subs[i] // not closed: it may hold an abandoned request
		start := time.Now()
		if last {
			err = c.last(sub.Fortran())
		} else {
			_, err = NewSolver(blk.Pattern, WithComm(sub.Fortran()), WithTimeout(timeout))
		}
		if !last || strings.Contains(c.name, "late") {
			require.ErrorIs(t, err, collective.ErrTimeout, c.name)
			require.Contains(t, err.Error(), "abandoned", c.name)
			require.Less(t, time.Since(start), 4*timeout, "%s: the error came too late", c.name)
		}
		_, err = h.bcast(0) // every rank done with the case
		require.NoError(t, err, c.name)
	}
	for _, c := range []*mpi.Comm{other, w} {
		s, err := NewSolver(blk.Pattern, WithComm(c.Fortran()), WithTolerance(1e-10), WithTimeout(5*time.Second))
		require.NoError(t, err)
		x, _, err := s.SolveValues(blk.Values, b, false)
		require.NoError(t, err)
		require.Len(t, x, rows)
		s.Close()
		require.NoError(t, split(c).Close())
	}
	require.NoError(t, other.Close())
}

// TestMPIFreeOnOneRank: Free on one rank makes every rank set up again at
// the next run, with and without WithKeepHierarchy (rank 0 set up alone and
// waited in hypre for ever, past the timeout), and the answer stays.
func TestMPIFreeOnOneRank(t *testing.T) {
	h, blk, b, _ := smallSystem(t, 903)
	for _, keep := range []bool{false, true} {
		opts := []Option{WithComm(worldFortran()), WithTolerance(1e-10), WithTimeout(5 * time.Second)}
		if keep {
			opts = append(opts, WithKeepHierarchy())
		}
		s, err := NewSolver(blk.Pattern, opts...)
		require.NoError(t, err)
		x1, _, err := s.SolveValues(blk.Values, b, false)
		require.NoError(t, err)
		before := s.Stats().Setups
		if h.rank == 0 {
			s.Free()
		}
		x2, _, err := s.SolveValues(blk.Values, b, false)
		require.NoError(t, err, "keep %v", keep)
		require.Equal(t, before+1, s.Stats().Setups, "keep %v: every rank sets up again", keep)
		require.Less(t, relErr(x2, x1), 1e-8)
		x3, _, err := s.SolveValues(blk.Values, b, false)
		require.NoError(t, err)
		require.Equal(t, before+1, s.Stats().Setups, "keep %v: once", keep)
		require.Equal(t, x2, x3)
		s.Close()
	}
}
