//go:build mpi

package finalizetest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/collective/mpi"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestFinalize pins collective/mpi/comm.go:95-98 (Finalize "ends MPI for
// this process: call it once at the end of the program, after the last
// call on every Comm (later calls return ErrClosed). Calling it again, or
// when World never initialised MPI, does nothing") and Finalized (comm.go:
// 113, "reports whether Finalize was called"), on every rank:
//
//   - before World, Finalize returns nil, Finalized stays false, and World
//     then initialises MPI as if it had not been called;
//   - after Finalize (nil, and Finalized true) every later call returns an
//     error wrapping ErrClosed, without touching MPI: World, Do of a
//     collective, of a Barrier and of a SendRecv on the world and on a
//     communicator made by Split, Split, and the next run of a graph whose
//     collective node ran before Finalize (the node keeps its engine call);
//   - Finalize again returns nil and changes nothing: the calls after it
//     still return ErrClosed; Close of the split communicator after
//     Finalize returns nil (what a program's deferred Close meets; Close
//     does not free a communicator once MPI is finalized).
//
// Finalizing MPI ends it for the process, so the test runs once per
// process (it skips when an earlier run in this process, -test.count > 1,
// finalized MPI).
func TestFinalize(t *testing.T) {
	if mpi.Finalized() {
		t.Skip("an earlier run of this test in this process finalized MPI")
	}
	// Before World.
	if err := mpi.Finalize(); err != nil {
		t.Fatalf("Finalize before World: %v, want nil", err)
	}
	if mpi.Finalized() {
		t.Fatal("Finalize before World marked MPI finalized")
	}
	world, err := mpi.World(mpi.WithTimeout(20 * time.Second))
	if err != nil {
		t.Fatalf("World after a Finalize before it: %v", err)
	}
	size, me := world.Size(), world.Rank()
	subs, err := world.Split(func(int) int { return 0 }, func(r int) int { return size - 1 - r })
	if err != nil || len(subs) != 1 {
		t.Fatalf("Split: %v, %d communicators", err, len(subs))
	}
	sub := subs[0].(*mpi.Comm)
	sum := func(c *mpi.Comm) error {
		got := []float64{0}
		if err := c.Do(collectivetest.HostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 1}, []float64{1}, got)); err != nil {
			return err
		}
		if got[0] != float64(size) {
			t.Errorf("AllReduce sum of 1 on %d ranks: %v", size, got[0])
		}
		return nil
	}
	// A graph whose collective node runs once before Finalize, once after.
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2}))))
	if _, err := mgla.AllReduce(x, world, mgla.ReduceSum); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	runGraph := func() error {
		defer vm.Reset()
		return mgla.Cause(vm.RunAll())
	}
	for _, before := range []struct {
		name string
		call func() error
	}{
		{"AllReduce on the world", func() error { return sum(world) }},
		{"AllReduce on the split", func() error { return sum(sub) }},
		{"the graph", runGraph},
	} {
		if err := before.call(); err != nil {
			t.Fatalf("%s before Finalize: %v", before.name, err)
		}
	}

	if err := mpi.Finalize(); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	if !mpi.Finalized() {
		t.Fatal("Finalized() is false after Finalize")
	}
	next, prev := (me+1)%size, (me+size-1)%size
	split := func(c *mpi.Comm) error {
		_, err := c.Split(func(int) int { return 0 }, func(r int) int { return r })
		return err
	}
	cases := []struct {
		name string
		call func() error
		want error // nil: succeeds
	}{
		{"World", func() error { _, err := mpi.World(); return err }, collective.ErrClosed},
		{"Do AllReduce on the world", func() error { return sum(world) }, collective.ErrClosed},
		{"Do AllReduce on the split", func() error { return sum(sub) }, collective.ErrClosed},
		{"Do Barrier on the world", func() error { return world.Do(&collective.Call{Kind: collective.Barrier}) }, collective.ErrClosed},
		{"Do SendRecv on the world", func() error {
			return world.Do(collectivetest.HostCall(collective.Call{Kind: collective.SendRecv, Dtype: tensor.Float64, Count: 2, Dest: []int{next}, Src: []int{prev}},
				[]float64{1, 2}, make([]float64, 2)))
		}, collective.ErrClosed},
		{"Split of the world", func() error { return split(world) }, collective.ErrClosed},
		{"Split of the split", func() error { return split(sub) }, collective.ErrClosed},
		{"the graph's next run", runGraph, collective.ErrClosed},
		{"Finalize again", mpi.Finalize, nil},
		{"Finalized after Finalize again", func() error {
			if !mpi.Finalized() {
				return errors.New("Finalized() is false")
			}
			return nil
		}, nil},
		{"Do AllReduce on the world after Finalize again", func() error { return sum(world) }, collective.ErrClosed},
		{"Close of the split", sub.Close, nil},
		{"Do AllReduce on the closed split", func() error { return sum(sub) }, collective.ErrClosed},
		{"World after all", func() error { _, err := mpi.World(); return err }, collective.ErrClosed},
	}
	for _, tc := range cases {
		err := tc.call()
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("rank %d: %s: %v, want nil", me, tc.name, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("rank %d: %s: %v, want an error wrapping %v", me, tc.name, err, tc.want)
		}
	}
}
