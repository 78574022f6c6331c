package mgla_test

import (
	"fmt"
	"log"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Example_collectives sums the rows of a 3×2 matrix across the three ranks
// of a CPU mesh with AllReduce (rank r holds row r) and differentiates
// through it. With MPI the same graph runs on every process, each with its
// own row as a host value and mpi.World() as the communicator.
func Example_collectives() {
	mesh, err := sharding.CPUMesh(3) // three ranks in this process
	if err != nil {
		log.Fatal(err)
	}
	comm, err := mgla.NewMeshComm(mesh)
	if err != nil {
		log.Fatal(err)
	}
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
	rows, err := ops.Shard(x, mesh, sharding.RowBlocks()) // row r on rank r
	if err != nil {
		log.Fatal(err)
	}
	sum, err := mgla.AllReduce(rows, comm, mgla.ReduceSum)
	if err != nil {
		log.Fatal(err)
	}
	perRank, err := ops.Gather(sum) // every rank's result, stacked: 3×2
	if err != nil {
		log.Fatal(err)
	}
	// Read copies the value out as it is computed (the backward pass may
	// reuse the node's memory).
	var sums G.Value
	G.Read(perRank, &sums)
	cost := G.Must(G.Sum(G.Must(G.Square(perRank))))
	grads, err := G.Grad(cost, x)
	if err != nil {
		log.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		log.Fatal(mgla.Cause(err))
	}
	fmt.Println("sums per rank:", sums.Data())
	fmt.Println("gradient:     ", grads[0].Value().Data())
	// Output:
	// sums per rank: [9 12 9 12 9 12]
	// gradient:      [54 72 54 72 54 72]
}

// TestReadmeCollectives keeps README.md's collectives program in step with
// Example_collectives.
func TestReadmeCollectives(t *testing.T) {
	checkReadmeProgram(t, "## Collectives as graph ops", "collective_example_test.go", "Example_collectives")
}
