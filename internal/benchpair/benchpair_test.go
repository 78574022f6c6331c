package benchpair

import (
	"slices"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{4, 1}, 2.5},
		{[]float64{5, 1, 3}, 3},
		{[]float64{7, 1, 3, 5}, 4},
	} {
		in := append([]float64(nil), c.xs...)
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.xs[i] {
				t.Errorf("Median reordered its input: %v, was %v", c.xs, in)
			}
		}
	}
	if got := Median([]time.Duration{3, 1, 2, 10}); got != 2 {
		t.Errorf("Median of durations = %v, want 2 (the mean of 2 and 3, truncated)", got)
	}
}

// TestTime checks the alternating order, the recorded times and the
// statistics, on functions whose times are known from a fake clock.
func TestTime(t *testing.T) {
	var calls []string
	var clock time.Duration
	p := Pairs{CPU: func() time.Duration { return clock }}
	costs := [][2]time.Duration{{4, 2}, {6, 2}, {2, 1}} // a, b per iteration (CPU)
	for _, c := range costs {
		p.Time(func() { calls = append(calls, "a"); clock += c[0] }, func() { calls = append(calls, "b"); clock += c[1] })
	}
	if got, want := calls, []string{"a", "b", "b", "a", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("call order %v, want %v", got, want)
	}
	for i, c := range costs {
		if p.CPUs[0][i] != c[0] || p.CPUs[1][i] != c[1] {
			t.Errorf("iteration %d: CPU times %v, %v, want %v", i, p.CPUs[0][i], p.CPUs[1][i], c)
		}
	}
	if got := p.MedianCPURatio(); got != 2 { // ratios 2, 3, 2
		t.Errorf("MedianCPURatio = %v, want 2", got)
	}
	// Wall times: set them directly.
	p.Wall = [2][]time.Duration{{10, 30, 20}, {10, 10, 5}}
	if got := p.MedianRatio(); got != 3 { // ratios 1, 3, 4
		t.Errorf("MedianRatio = %v, want 3", got)
	}
	if got := p.FastestRatio(); got != 2 { // 10 / 5
		t.Errorf("FastestRatio = %v, want 2", got)
	}
	if got := p.Total(0); got != 60 {
		t.Errorf("Total(0) = %v, want 60", got)
	}
	if got := p.Ratios(); !slices.Equal(got, []float64{1, 3, 4}) {
		t.Errorf("Ratios = %v, want [1 3 4]", got)
	}
}
