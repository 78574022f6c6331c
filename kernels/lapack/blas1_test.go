package lapack

import (
	"math"
	"testing"
)

// TestNrm2 checks the scaled 2-norm against values known exactly, down to
// subnormal entries, whose reciprocal overflows (the norm used to be +Inf,
// or NaN beside a zero, which broke the reductions of Syevd).
func TestNrm2(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0, 0}, 0},
		{[]float64{3, 4}, 5},
		{[]float64{-3e300, 4e300}, 5e300},
		{[]float64{3e-300, 4e-300}, 5e-300},
		{[]float64{1e-310}, 1e-310},
		{[]float64{0, 1e-310}, 1e-310},
		{[]float64{3e-320, -4e-320}, 5e-320},
		{[]float64{5e-324}, 5e-324},
		{[]float64{math.Inf(-1), 1}, math.Inf(1)},
	} {
		if got := nrm2(c.x); got != c.want && math.Abs(got-c.want) > 1e-15*c.want {
			t.Errorf("nrm2(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := znrm2([]complex128{complex(0, 1e-310), 0}); got != 1e-310 {
		t.Errorf("znrm2 of 1e-310i = %v", got)
	}
	if got := nrm2([]float64{math.NaN(), 1}); !math.IsNaN(got) {
		t.Errorf("nrm2 with NaN = %v", got)
	}
}
