// Package benchpair times two functions in turns, the way mgla's benchmarks
// compare an op with its baseline in the same process: each iteration runs
// both, the one that goes first swapped every iteration so that both see the
// same machine state, and keeps both times. Its statistics are those a
// shared machine disturbs least: the median of the per-iteration ratios
// (which one slow iteration of either side does not move) and the ratio of
// each side's fastest iteration (a neighbour on the machine only ever slows
// a call down). It imports only the standard library.
package benchpair

import (
	"slices"
	"time"
)

// Pairs holds the times of two functions, a and b, timed in turns by Time.
type Pairs struct {
	// CPU, when set, is a clock of the process's CPU time, read around each
	// call as well (CPU below).
	CPU func() time.Duration

	Wall [2][]time.Duration // a's and b's wall time, one per iteration
	CPUs [2][]time.Duration // the same in CPU time, with CPU set
}

// Time runs a and b once each, a first in the even iterations and b first
// in the odd ones, and records their times.
func (p *Pairs) Time(a, b func()) {
	fs := [2]func(){a, b}
	order := [2]int{0, 1}
	if len(p.Wall[0])%2 == 1 {
		order = [2]int{1, 0}
	}
	for _, k := range order {
		var c time.Duration
		if p.CPU != nil {
			c = p.CPU()
		}
		w := time.Now()
		fs[k]()
		p.Wall[k] = append(p.Wall[k], time.Since(w))
		if p.CPU != nil {
			p.CPUs[k] = append(p.CPUs[k], p.CPU()-c)
		}
	}
}

// Total is side k's (0: a, 1: b) wall time over all iterations.
func (p *Pairs) Total(k int) time.Duration {
	var t time.Duration
	for _, d := range p.Wall[k] {
		t += d
	}
	return t
}

// Fastest is side k's fastest iteration.
func (p *Pairs) Fastest(k int) time.Duration { return slices.Min(p.Wall[k]) }

// FastestRatio is a's fastest iteration over b's.
func (p *Pairs) FastestRatio() float64 { return float64(p.Fastest(0)) / float64(p.Fastest(1)) }

// MedianRatio is the median over the iterations of a's wall time over b's.
func (p *Pairs) MedianRatio() float64 { return Median(ratios(p.Wall)) }

// MedianCPURatio is MedianRatio in CPU time.
func (p *Pairs) MedianCPURatio() float64 { return Median(ratios(p.CPUs)) }

// Ratios are a's wall times over b's, one per iteration, in ascending order.
func (p *Pairs) Ratios() []float64 { return slices.Sorted(slices.Values(ratios(p.Wall))) }

func ratios(t [2][]time.Duration) []float64 {
	r := make([]float64, min(len(t[0]), len(t[1])))
	for i := range r {
		r[i] = float64(t[0][i]) / float64(t[1][i])
	}
	return r
}

// Median is the median of xs (the mean of the middle two for an even
// count; zero for none), xs left as it is.
func Median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
