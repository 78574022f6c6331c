//go:build mpi

package mpi

import "time"

// ThreadLevel is the thread level MPI provided (for the tests' log).
func ThreadLevel() string { return engine.provided }

// MCAInt reads an integer MCA parameter as MPI uses it.
var MCAInt = mcaInt

// LibnbcReduce is the environment variable World sets for MPI_Ireduce.
const LibnbcReduce = libnbcReduce

// Taken is how many calls went by the pipelined Bcast and by MPI's
// blocking calls so far.
func Taken() (pipelined, blocking int64) { return taken.pipelined.Load(), taken.blocking.Load() }

// Agreed is what the ranks agreed on when World started.
func Agreed() (singleCopy, spare, multiple bool) {
	return agreed.singleCopy, agreed.spare, agreed.multiple
}

// Retimed is another view of c's communicator with timeout d.
func Retimed(c *Comm, d time.Duration) *Comm {
	cfg := c.cfg
	cfg.timeout = d
	return &Comm{st: c.st, cfg: cfg}
}
