package ops

import "testing"

// The dispatch rule keeps the measured crossovers (see singleGPUFaster).
func TestDispatchRule(t *testing.T) {
	for _, c := range []struct {
		k      solverKernel
		n      int
		single bool
	}{
		{solveSyevd, 4096, true}, {solveSyevd, 65536, true},
		{solvePotri, 8192, false}, {solvePotri, 16384, true},
		{solvePotrf, 4096, true}, {solvePotrf, 8192, false}, {solvePotrf, 65536, false},
		{solvePotrs, 1024, false}, {solvePotrs, 65536, false},
	} {
		if got := singleGPUFaster(c.k, c.n, 2); got != c.single {
			t.Errorf("kernel %d at N=%d: single = %v, want %v", c.k, c.n, got, c.single)
		}
	}
}
