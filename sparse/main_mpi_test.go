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
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "sparse tests: MPI_Finalize:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// worldFortran is the Fortran handle of the job's world communicator.
func worldFortran() int {
	w, err := mpi.World()
	if err != nil {
		panic(err) // the tests cannot run without MPI
	}
	return w.Fortran()
}
