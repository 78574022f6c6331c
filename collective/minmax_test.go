package collective_test

import (
	"fmt"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// MinMaxCalls are the calls of the check that Min and Max of floats follow
// Go's min and max (collectivetest.Specials): every reducing kind, both
// float dtypes, count elements, root 0.
func minMaxCalls(count int) []collective.Call {
	var calls []collective.Call
	for _, kind := range []collective.Kind{collective.AllReduce, collective.ReduceScatter, collective.Reduce, collective.Scan} {
		for _, op := range []collective.ReduceOp{collective.Min, collective.Max} {
			for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				calls = append(calls, collective.Call{Kind: kind, Op: op, Dtype: dt, Count: count,
					Name: fmt.Sprintf("%v/%v/%v", kind, op, dt)})
			}
		}
	}
	return calls
}

// TestMeshMinMaxFollowGo: on the CPU mesh, Min and Max of floats give NaN
// where any rank holds one and take -0 below +0, as Go's min and max do.
func TestMeshMinMaxFollowGo(t *testing.T) {
	for size := 1; size <= 4; size++ {
		m, err := sharding.CPUMesh(size)
		if err != nil {
			t.Fatal(err)
		}
		comm, err := collective.NewMesh(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range minMaxCalls(16) {
			send := make([][]complex128, size)
			call.Send, call.Recv = make([]sharding.Buffer, size), make([]sharding.Buffer, size)
			for r := range size {
				send[r] = collectivetest.Specials(r, size, call.SendLen(size))
				if call.Send[r], err = sharding.NewHostBuffer(collectivetest.Dense(call.Dtype, tensor.Shape{len(send[r])}, send[r]).Data()); err != nil {
					t.Fatal(err)
				}
				if call.Recv[r], err = sharding.NewHostBuffer(collectivetest.Dense(call.Dtype, tensor.Shape{call.RecvLen(size)}, nil).Data()); err != nil {
					t.Fatal(err)
				}
			}
			if err := comm.Do(&call); err != nil {
				t.Fatalf("%d ranks, %s: %v", size, call.Name, err)
			}
			want := collectivetest.Reference(&call, size, send)
			for r := range size {
				got := collectivetest.Values(call.Recv[r].(*sharding.HostBuffer).Data())
				for i, w := range want[r] {
					if !collectivetest.SameFloat(got[i], w) {
						t.Fatalf("%d ranks, %s: rank %d element %d (pattern %d) = %v, want %v", size, call.Name, r, i, i%8, real(got[i]), real(w))
					}
				}
			}
		}
	}
}
