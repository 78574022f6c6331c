package collectivetest

import (
	"testing"

	"gorgonia.org/tensor"
)

// Dense and Values are inverses for every dtype, for one element too, and
// carry integers.
func TestDenseValues(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128} {
		for _, vals := range [][]complex128{{complex(0.5, 0.25)}, {1, complex(-2, 0.5), 3.25, 4, 5, complex(6, -1)}} {
			want := make([]complex128, len(vals))
			for i, v := range vals {
				want[i] = RoundTo(dt, v)
			}
			d := Dense(dt, tensor.Shape{len(vals)}, vals)
			if d.Dtype() != dt {
				t.Fatalf("%v: Dense made %v", dt, d.Dtype())
			}
			for what, got := range map[string][]complex128{"tensor": Values(d), "slice": Values(d.Data())} {
				if len(got) != len(want) {
					t.Fatalf("%v %s: %d values, want %d", dt, what, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%v %s: element %d = %v, want %v", dt, what, i, got[i], want[i])
					}
				}
			}
		}
	}
	ints := []complex128{-3, 0, 7}
	for _, dt := range []tensor.Dtype{tensor.Int, tensor.Int8, tensor.Uint32} {
		vals := ints
		if dt == tensor.Uint32 {
			vals = ints[1:]
		}
		got := Values(Dense(dt, tensor.Shape{len(vals)}, vals))
		for i := range vals {
			if got[i] != vals[i] {
				t.Errorf("%v: element %d = %v, want %v", dt, i, got[i], vals[i])
			}
		}
	}
}
