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
		{solvePotri, 4096, true}, {solvePotri, 8192, true}, {solvePotri, 16384, true},
		{solvePotrf, 4096, true}, {solvePotrf, 8192, false}, {solvePotrf, 65536, false},
		{solvePotrs, 1024, false}, {solvePotrs, 65536, false},
	} {
		if got := singleGPUFaster(c.k, c.n, 2); got != c.single {
			t.Errorf("kernel %d at N=%d: single = %v, want %v", c.k, c.n, got, c.single)
		}
	}
	// On wider meshes potri stays on the mesh between the crossovers.
	for _, c := range []struct {
		n, ndev int
		single  bool
	}{{4096, 3, true}, {6143, 4, true}, {6144, 4, false}, {8192, 3, false}, {11263, 4, false}, {11264, 3, true}, {16384, 4, true}, {10240, 2, true}} {
		if got := singleGPUFaster(solvePotri, c.n, c.ndev); got != c.single {
			t.Errorf("potri at N=%d on %d GPUs: single = %v, want %v", c.n, c.ndev, got, c.single)
		}
	}
}

// Single-GPU cuSOLVER inverts up to N = 46340 (N² < 2³¹), every other
// kernel at any order.
func TestDnCanRun(t *testing.T) {
	for _, c := range []struct {
		k  solverKernel
		n  int
		ok bool
	}{{solvePotri, 46340, true}, {solvePotri, 46341, false}, {solvePotrf, 100000, true}, {solveSyevd, 60000, true}} {
		if got := dnCanRun(c.k, c.n); got != c.ok {
			t.Errorf("kernel %d at N=%d: %v, want %v", c.k, c.n, got, c.ok)
		}
	}
}
