//go:build openblas

package cpubackend

import "testing"

// TestSyevdFits: the LAPACK eigensolvers with vectors take orders whose
// workspace (1 + 6n + 2n² reals) fits a 32-bit INTEGER, up to 32766; from
// 32767 the pure-Go eigensolver runs. Without vectors every order fits.
func TestSyevdFits(t *testing.T) {
	for _, c := range []struct {
		n       int
		vectors bool
		want    bool
	}{{1, true, true}, {32766, true, true}, {32767, true, false}, {100000, true, false}, {100000, false, true}} {
		if got := syevdFits(c.n, c.vectors); got != c.want {
			t.Errorf("syevdFits(%d, %v) = %v, want %v", c.n, c.vectors, got, c.want)
		}
	}
}
