//go:build mpi

package sparse

import (
	"fmt"
	"os"
	"testing"

	"github.com/mgla/mgla/collective/mpi"
)

// TestMain finalises MPI after the tests (mpirun wants every rank to).
func TestMain(m *testing.M) {
	code := m.Run()
	// A solver that has run, closed after Finalize, as a deferred Close in
	// main does: it used to abort the job (hypre's objects freed MPI
	// communicators).
	late, err := lateSolver()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sparse tests: a solver to close after Finalize:", err)
		code = max(code, 1)
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "sparse tests: MPI_Finalize:", err)
		code = max(code, 1)
	}
	if late != nil {
		late.Free()
		late.Close()
	}
	os.Exit(code)
}

// lateSolver is a solver on the world that has solved once.
func lateSolver() (*Solver, error) {
	w, err := mpi.World()
	if err != nil {
		return nil, err
	}
	lo, rows := BlockRows(27, w.Rank(), w.Size())
	a, err := Poisson3D(3, lo, rows)
	if err != nil {
		return nil, err
	}
	s, err := NewSolver(a.Pattern, WithComm(w.Fortran()), WithTolerance(1e-12))
	if err != nil {
		return nil, err
	}
	b := make([]float64, rows)
	for i := range b {
		b[i] = 1
	}
	_, _, err = s.SolveValues(a.Values, b, false)
	return s, err
}

// worldFortran is the Fortran handle of the job's world communicator.
func worldFortran() int {
	w, err := mpi.World()
	if err != nil {
		panic(err) // the tests cannot run without MPI
	}
	return w.Fortran()
}
