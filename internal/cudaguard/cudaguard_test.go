package cudaguard

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A MultiGPU launch never runs beside a Blocking call or another launch;
// Blocking calls run beside each other; errors come back.
func TestGuard(t *testing.T) {
	var launches, blocking, worst atomic.Int32
	var both atomic.Bool
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%4 == 0 {
				_ = MultiGPU(func() error {
					if launches.Add(1) > 1 || blocking.Load() > 0 {
						both.Store(true)
					}
					time.Sleep(200 * time.Microsecond)
					launches.Add(-1)
					return nil
				})
				return
			}
			_ = Blocking(func() error {
				n := blocking.Add(1)
				if launches.Load() > 0 {
					both.Store(true)
				}
				for w := worst.Load(); n > w && !worst.CompareAndSwap(w, n); w = worst.Load() {
				}
				time.Sleep(time.Millisecond)
				blocking.Add(-1)
				return nil
			})
		}()
	}
	wg.Wait()
	if both.Load() {
		t.Error("a MultiGPU launch ran beside a Blocking call or another launch")
	}
	if worst.Load() < 2 {
		t.Errorf("at most %d Blocking calls ran at once, want them beside each other", worst.Load())
	}
	errWant := errTest{}
	if err := MultiGPU(func() error { return errWant }); err != errWant {
		t.Errorf("MultiGPU returned %v, want the launch's error", err)
	}
	if err := Blocking(func() error { return errWant }); err != errWant {
		t.Errorf("Blocking returned %v, want the call's error", err)
	}
}

type errTest struct{}

func (errTest) Error() string { return "test" }

// The deadlock Aborting exists for: a blocking call waits for kernels that
// only an abort ends, a launch queues behind that call, and the abort must
// not queue behind the launch. An abort still waits for a launch under way.
func TestAbortPassesQueuedLaunches(t *testing.T) {
	aborted := make(chan struct{})
	blockingDone := make(chan struct{})
	go func() { // a cudaFree waiting for a hung kernel
		_ = Blocking(func() error { <-aborted; return nil })
		close(blockingDone)
	}()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.readers == 1 }, "the blocking call to start")
	launched := make(chan struct{})
	go func() { _ = MultiGPU(func() error { close(launched); return nil }) }()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.waiting == 1 }, "the launch to queue")
	abortDone := make(chan struct{})
	go func() { _ = Aborting(func() error { close(aborted); return nil }); close(abortDone) }()
	for _, c := range []struct {
		done chan struct{}
		what string
	}{{abortDone, "the abort, queued behind a waiting launch"}, {blockingDone, "the blocking call"}, {launched, "the launch"}} {
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not run within 5 s", c.what)
		}
	}

	// An abort waits for a launch under way.
	inLaunch, release := make(chan struct{}), make(chan struct{})
	go func() { _ = MultiGPU(func() error { close(inLaunch); <-release; return nil }) }()
	<-inLaunch
	var ranDuringLaunch atomic.Bool
	var launchOver atomic.Bool
	done := make(chan struct{})
	go func() {
		_ = Aborting(func() error { ranDuringLaunch.Store(!launchOver.Load()); return nil })
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	launchOver.Store(true)
	close(release)
	<-done
	if ranDuringLaunch.Load() {
		t.Error("an abort ran during a launch")
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// An abort waits for a launch under way at most AbortWait: a launch that
// waits for the kernels the abort ends (a cuSolverMg routine synchronizing
// a device with a hung NCCL kernel) must not hang it.
func TestAbortWaitsBoundedForALaunch(t *testing.T) {
	defer func(w time.Duration) { AbortWait = w }(AbortWait)
	AbortWait = 50 * time.Millisecond
	aborted := make(chan struct{})
	inLaunch := make(chan struct{})
	launchDone := make(chan struct{})
	go func() {
		_ = MultiGPU(func() error { close(inLaunch); <-aborted; return nil })
		close(launchDone)
	}()
	<-inLaunch
	start := time.Now()
	done := make(chan struct{})
	go func() { _ = Aborting(func() error { close(aborted); return nil }); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("an abort waited more than 5 s for a launch that waits for it")
	}
	if waited := time.Since(start); waited < AbortWait {
		t.Errorf("the abort ran after %v, before AbortWait (%v): it must wait for a launch under way first", waited, AbortWait)
	}
	<-launchDone
	// The guard is usable after: a launch and a blocking call run.
	if err := MultiGPU(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := Blocking(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}
