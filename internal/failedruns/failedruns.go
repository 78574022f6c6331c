// Package failedruns counts, per graph, the forward runs of mgla's
// cross-process ops that failed, so that a LispMachine backward step can
// tell that its run failed after its op's forward. Gorgonia's LispMachine
// (v0.9.18) goes on with a failed run's backward pass on its own goroutine
// after RunAll has returned the error; that pass's calls across processes
// would pair with the next graph's on the other ranks. An op records
// Now(graph) when its forward succeeds and calls Failed(graph) when it
// fails; its backward step runs only when Check finds no failure since.
// The key is the graph, not the communicator or solver, so that another
// goroutine's graph failing on a shared one does not refuse this graph's
// backward steps.
//
// The cross-process ops fail on every rank alike (their errors are agreed
// across the ranks), so every rank refuses the same backward steps. The
// dense kernels on a mesh (package ops) count their failures too, so that
// a graph's collectives after a failed Potrs, say, make no calls; a rank
// whose own kernel failed leaves the others to time out in their next
// collective, which counts there. A failure of another op (Gorgonia's
// own, a user's) is not counted: that run's backward pass still makes its
// calls.
package failedruns

import (
	"errors"
	"fmt"
	"sync"
)

// ErrFailedRun is returned by Check for a backward step whose run failed
// after the op's forward.
var ErrFailedRun = errors.New("a run failed after this op's forward (the LispMachine goes on with a failed run's backward pass after RunAll returned its error: build the graph again)")

var (
	mu    sync.Mutex
	count = map[any]uint64{}
)

// Failed records a failed forward run of an op keyed by key.
func Failed(key any) {
	mu.Lock()
	defer mu.Unlock()
	count[key]++
}

// Now is key's count of failed runs, which an op records when its forward
// succeeds.
func Now(key any) uint64 {
	mu.Lock()
	defer mu.Unlock()
	return count[key]
}

// Record is what an op's forward does once it returned err: Failed(key)
// on an error, else *ranAt = Now(key) for its backward step's Check.
func Record(key any, err error, ranAt *uint64) {
	if err != nil {
		Failed(key)
		return
	}
	*ranAt = Now(key)
}

// Check is ErrFailedRun, naming op, when an op keyed by key failed after
// the forward that recorded ranAt.
func Check(key any, ranAt uint64, op fmt.Stringer) error {
	if Now(key) != ranAt {
		return fmt.Errorf("%v: %w", op, ErrFailedRun)
	}
	return nil
}
