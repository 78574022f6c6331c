package sharding

import "testing"

// reclaimPace: a reclaim is due once the bytes allocated since the last one,
// less those freed since, pass a quarter of the device's memory, or a 64th
// of it while the device would be left with less than an eighth free; the
// device's memory is asked once, its free memory only past a 64th and then
// at most once a 256th.
func TestReclaimPace(t *testing.T) {
	var p reclaimPace
	totalAsked, freeAsked := 0, 0
	free := int64(6400)
	// A quarter is 1600, a 64th 100, a 256th 25, an eighth 800.
	total := func() int64 { totalAsked++; return 6400 }
	devFree := func() int64 { freeAsked++; return free }
	for i, step := range []struct {
		alloc, free  int64
		reset        bool
		deviceFree   int64 // 0: unchanged
		want         bool
		wantFreeAsks int // the free memory asked so far
	}{
		{alloc: 50},
		{alloc: 49},                                               // 99: below a 64th, free not asked
		{alloc: 1, wantFreeAsks: 1},                               // 100: a 64th, 6399 free after
		{alloc: 24, wantFreeAsks: 1},                              // 124: less than a 256th since the last ask
		{alloc: 1, wantFreeAsks: 2},                               // 125: a 256th since
		{alloc: 1000, wantFreeAsks: 3},                            // 1125: 5400 free after, plenty
		{alloc: 475, wantFreeAsks: 4},                             // 1600: a quarter, not past it
		{alloc: 1, want: true, wantFreeAsks: 4},                   // 1601: past a quarter, free not needed
		{reset: true, alloc: 60, wantFreeAsks: 4},                 // 60
		{free: 40, alloc: 70, wantFreeAsks: 4},                    // 20 + 70 = 90
		{free: 1000, alloc: 100, wantFreeAsks: 5},                 // 0 + 100: a 64th, 6300 free after
		{alloc: 30, want: true, deviceFree: 820, wantFreeAsks: 6}, // 130: 790 free after, below an eighth
		{reset: true, alloc: 99, deviceFree: 10, wantFreeAsks: 6}, // a device nearly full, little garbage here
		{alloc: 1, deviceFree: 801, wantFreeAsks: 7},              // 100: 800 free after, an eighth, not below
		{free: 50, alloc: 1, deviceFree: 10, wantFreeAsks: 7},     // 51: below a 64th again
		{alloc: 60, want: true, wantFreeAsks: 8},                  // 111: 61 allocated since the ask, frees aside
		{reset: true, alloc: 5000, want: true, wantFreeAsks: 8},   // one allocation past a quarter
	} {
		if step.reset {
			p.reset()
		}
		if step.free > 0 {
			p.freed(step.free)
		}
		if step.deviceFree > 0 {
			free = step.deviceFree
		}
		if got := p.due(step.alloc, total, devFree); got != step.want {
			t.Errorf("step %d: due = %v, want %v (count %d)", i, got, step.want, p.since.Load())
		}
		if freeAsked != step.wantFreeAsks {
			t.Errorf("step %d: the free memory was asked %d times, want %d", i, freeAsked, step.wantFreeAsks)
		}
	}
	if totalAsked != 1 {
		t.Errorf("the device's memory was asked %d times, want once", totalAsked)
	}
}

// A reset between due's counts and its swap of the asked mark (a reclaim
// beside the allocation) leaves the mark above the new count: the next due
// asks the free memory at once instead of never until the count catches up.
func TestReclaimPaceStaleMark(t *testing.T) {
	var p reclaimPace
	asked := 0
	total := func() int64 { return 6400 }
	devFree := func() int64 { asked++; return 10 }
	p.total.Store(6400)
	p.asked.Store(60000) // the mark of a count before a reset
	p.made.Store(200)
	p.since.Store(200)
	if !p.due(1, total, devFree) || asked != 1 {
		t.Errorf("with a stale mark the free memory was asked %d times (want 1) and no reclaim was due", asked)
	}
	// count adds to both counts.
	p.reset()
	p.count(300)
	if p.since.Load() != 300 || p.made.Load() != 300 {
		t.Errorf("count(300) after a reset: since %d, made %d; want 300 and 300", p.since.Load(), p.made.Load())
	}
}
