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
