//go:build !mpi

package sparse

import (
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
)

const hypreBuilt = false

// TestUnavailable: without the mpi tag the AMG runs say which tag to use.
func TestUnavailable(t *testing.T) {
	rng := testRNG(t, 4)
	tr := laplace2D(rng, 4, 3, 0)
	a := tr.whole(t)
	b := randVec(rng, tr.n)
	for _, c := range []solverCase{
		{name: "Solve", kind: runSolve},
		{name: "Preconditioner", kind: runPrecond},
		{name: "CG/AMG", kind: runCG, opts: []Option{WithPrecond(AMGPrecond)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewSolver(a.Pattern, c.opts...)
			require.NoError(t, err)
			g, _, _, _, _ := solveGraph(t, s, c, a.Values, b, b)
			m := G.NewTapeMachine(g)
			defer m.Close()
			err = m.RunAll()
			t.Log(err)
			require.ErrorIs(t, cause(err), collective.ErrUnavailable)
			require.ErrorContains(t, err, "-tags mpi")
		})
	}
	blk := tr.block(t, 0, 5)
	_, err := NewSolver(blk.Pattern)
	require.ErrorIs(t, err, collective.ErrUnavailable)
	// WithComm (MPI mode) fails at NewSolver, naming the tag, on a whole
	// matrix as on a row block.
	for _, p := range []*Pattern{a.Pattern, blk.Pattern} {
		s, err := NewSolver(p, WithComm(0))
		require.Nil(t, s)
		require.ErrorIs(t, err, collective.ErrUnavailable)
		require.ErrorContains(t, err, "-tags mpi")
	}
}
