package sharding

import "testing"

// reclaimPace: a reclaim is due once the bytes allocated since the last one,
// less those freed explicitly, pass a quarter of the device's memory; the
// device's memory is asked once.
func TestReclaimPace(t *testing.T) {
	var p reclaimPace
	asked := 0
	total := func() int64 { asked++; return 400 }
	for i, step := range []struct {
		alloc, free int64
		reset       bool
		want        bool
	}{
		{alloc: 50, want: false},
		{alloc: 50, want: false},              // 100: a quarter, not past it
		{alloc: 1, want: true},                // 101
		{reset: true, alloc: 60},              // 60
		{free: 40, alloc: 70},                 // 20 + 70 = 90
		{free: 1000, alloc: 100},              // 0 + 100
		{alloc: 1, want: true},                // 101
		{reset: true, alloc: 500, want: true}, // one allocation past a quarter
	} {
		if step.reset {
			p.reset()
		}
		if step.free > 0 {
			p.freed(step.free)
		}
		if got := p.due(step.alloc, total); got != step.want {
			t.Errorf("step %d: due = %v, want %v (count %d)", i, got, step.want, p.since.Load())
		}
	}
	if asked != 1 {
		t.Errorf("the device's memory was asked %d times, want once", asked)
	}
}
