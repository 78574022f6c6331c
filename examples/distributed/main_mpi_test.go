//go:build mpi

package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/examples/builders"
)

var world *mpi.Comm

func TestMain(m *testing.M) {
	w, err := mpi.World(mpi.WithTimeout(60 * time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpi.World:", err)
		os.Exit(1)
	}
	world = w
	code := m.Run()
	if err := mpi.Finalize(); err != nil {
		code = max(code, 1)
	}
	os.Exit(code)
}

// TestSameAsOneProcess: both ways of making K on the grid learn the
// parameters of examples/gp's single-process graph, to 1e-9 (relative),
// on the world's processes, with blocks that do not divide N.
func TestSameAsOneProcess(t *testing.T) {
	grid, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer grid.Close()
	demo := builders.DefaultGPDemo()
	demo.Data.N, demo.Iters = 45, 30
	single, err := demo.Run(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, kernel := range []string{"grid", "bands"} {
		learned, nll, err := train(world, grid, demo, kernel, 7, 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", kernel, err)
		}
		if diff := learned.MaxRelErr(single.Learned); !(diff <= 1e-9) {
			t.Errorf("%s on %d processes: learned %v (NLL %v), one process %v (NLL %v): %.2g apart", kernel, world.Size(), learned, nll, single.Learned, single.NLL, diff)
		}
	}
	if _, _, err := train(world, grid, demo, "rows", 7, 0, nil); err == nil {
		t.Error("-kernel rows: no error")
	}
	// Fewer points than processes: the grid kernel takes them (ranks
	// holding no row of K), the bands need a row on every rank.
	demo.Data.N, demo.Iters = 2, 3
	single, err = demo.Run(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	learned, _, err := train(world, grid, demo, "grid", 1, 0, nil)
	if err != nil {
		t.Fatalf("grid, N = 2: %v", err)
	}
	if diff := learned.MaxRelErr(single.Learned); !(diff <= 1e-9) {
		t.Errorf("grid, N = 2 on %d processes: learned %v, one process %v", world.Size(), learned, single.Learned)
	}
	if _, _, err := train(world, grid, demo, "bands", 1, 0, nil); (err == nil) != (world.Size() <= 2) {
		t.Errorf("bands, N = 2 on %d processes: %v", world.Size(), err)
	}
}
