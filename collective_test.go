package mgla

import (
	"errors"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// failingComm fails every call with an engine error, as a peer that does
// not arrive would.
type failingComm struct{ collective.MeshComm }

func (failingComm) Do(c *collective.Call) error {
	return errors.Join(collective.ErrTimeout, errors.New(c.Name))
}

// TestCollectiveErrorsThroughCause: a collective's run-time error comes out
// of a TapeMachine so that errors.Is(Cause(err), ErrTimeout) holds, and a
// build-time error is an ErrBadCall; the mgla builders are the collective
// ones.
func TestCollectiveErrorsThroughCause(t *testing.T) {
	m, err := sharding.CPUMesh(2)
	if err != nil {
		t.Fatal(err)
	}
	comm, err := NewMeshComm(m)
	if err != nil {
		t.Fatal(err)
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(4), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{1, 2, 3, 4}))))
	xs, err := ops.Shard(x, m, sharding.RowBlocks())
	if err != nil {
		t.Fatal(err)
	}
	y, err := AllReduce(xs, failingComm{comm}, ReduceSum, CollectiveName("average"))
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	err = vm.RunAll()
	if !errors.Is(Cause(err), ErrTimeout) {
		t.Fatalf("run: %v, want ErrTimeout through Cause", err)
	}
	if _, err := AllGather(y, comm); err != nil {
		t.Fatal(err)
	}
	x6 := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(6), gorgonia.WithName("x6"))
	if _, err := ReduceScatter(x6, comm, ReduceSum); !errors.Is(err, ErrBadCall) {
		t.Fatalf("ReduceScatter of 3-element rank blocks on 2 ranks: %v, want ErrBadCall", err)
	}
}
