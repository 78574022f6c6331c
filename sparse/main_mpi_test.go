//go:build mpi

package sparse

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

// TestMain finalises MPI after the tests (mpirun wants every rank to).
func TestMain(m *testing.M) {
	code := m.Run()
	// A solver that has run, closed after Finalize, as a deferred Close in
	// main does: it used to abort the job (hypre's objects freed MPI
	// communicators).
	late, vals, rhs, err := lateSolver()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sparse tests: a solver to close after Finalize:", err)
		code = max(code, 1)
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "sparse tests: MPI_Finalize:", err)
		code = max(code, 1)
	}
	if late != nil {
		// A run after Finalize is an error (an MPI call would abort).
		if _, _, err := late.SolveValues(vals, rhs, false); !errors.Is(err, collective.ErrClosed) {
			fmt.Fprintln(os.Stderr, "sparse tests: a run after Finalize:", err, "(want ErrClosed)")
			code = max(code, 1)
		}
		late.Free()
		late.Close()
	}
	os.Exit(code)
}

// lateSolver is a solver on the world that has solved once, with its
// values and right-hand side.
func lateSolver() (*Solver, []float64, []float64, error) {
	w, err := mpi.World()
	if err != nil {
		return nil, nil, nil, err
	}
	lo, rows := BlockRows(27, w.Rank(), w.Size())
	a, err := Poisson3D(3, lo, rows)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := NewSolver(a.Pattern, WithComm(w.Fortran()), WithTolerance(1e-12))
	if err != nil {
		return nil, nil, nil, err
	}
	b := make([]float64, rows)
	for i := range b {
		b[i] = 1
	}
	_, _, err = s.SolveValues(a.Values, b, false)
	return s, a.Values, b, err
}

// worldFortran is the Fortran handle of the job's world communicator.
func worldFortran() int {
	w, err := mpi.World()
	if err != nil {
		panic(err) // the tests cannot run without MPI
	}
	return w.Fortran()
}
