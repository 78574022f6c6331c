//go:build mpi

package collective_test

import (
	"fmt"
	"testing"

	"github.com/mgla/mgla/sharding"
)

// TestMPIGraphIntegers: every graph op on every integer dtype, vectors and
// matrices, on host values per process, exactly the reference evaluated on
// every rank's block (every rank draws every rank's data from the shared
// seed).
func TestMPIGraphIntegers(t *testing.T) {
	comm := newComm(t)
	rng := rngFor(t.Name())
	for _, dt := range sharding.IntDtypes {
		for _, gc := range graphCases(rng, comm.Size(), comm.LocalRanks()) {
			for _, cols := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/%v/cols=%d", gc.name, dt, cols), func(t *testing.T) {
					checkGraphInts(t, rng, comm, gc, dt, cols)
				})
			}
		}
	}
}
