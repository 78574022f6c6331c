//go:build mpi

package main

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

var world *mpi.Comm

func TestMain(m *testing.M) {
	w, err := mpi.World(mpi.WithTimeout(30 * time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpi.World:", err)
		os.Exit(1)
	}
	world = w
	code := m.Run()
	worst := []float64{0}
	if err := allReduce(collective.Max, []float64{float64(code)}, worst); err != nil {
		worst[0] = max(float64(code), 1)
	}
	mpi.Finalize()
	os.Exit(int(worst[0]))
}

func allReduce(op collective.ReduceOp, send, recv []float64) error {
	s, _ := sharding.NewHostBuffer(send)
	r, _ := sharding.NewHostBuffer(recv)
	return world.Do(&collective.Call{Kind: collective.AllReduce, Op: op, Dtype: tensor.Float64, Count: len(send),
		Send: []sharding.Buffer{s}, Recv: []sharding.Buffer{r}})
}

// TestSameAsOneProcess: training on the world's processes, each with its
// shard, gives the parameters of one process training on all the data
// (computed here on every rank with collective.Self), to rounding, and
// the same on every rank.
func TestSameAsOneProcess(t *testing.T) {
	cfg := defaultConfig()
	seed := []float64{float64(uint64(time.Now().UnixNano()) & (1<<52 - 1))}
	shared := []float64{0}
	if err := allReduce(collective.Max, seed, shared); err != nil {
		t.Fatal(err)
	}
	cfg.Seed, cfg.Progress = uint64(shared[0]), nil
	t.Logf("seed %d, %d processes", cfg.Seed, world.Size())
	many, err := Train(world, cfg)
	if err != nil {
		t.Fatal(err)
	}
	one, err := Train(collective.Self(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for j := range one {
		if math.Abs(many[j]-one[j]) > 1e-9*(1+math.Abs(one[j])) {
			t.Errorf("rank %d: parameter %d = %v on %d processes, %v on one", world.Rank(), j, many[j], world.Size(), one[j])
		}
	}
	lo, hi := make([]float64, len(many)), make([]float64, len(many))
	if err := allReduce(collective.Min, many, lo); err != nil {
		t.Fatal(err)
	}
	if err := allReduce(collective.Max, many, hi); err != nil {
		t.Fatal(err)
	}
	for j := range lo {
		if lo[j] != hi[j] {
			t.Errorf("parameter %d differs between ranks: %v … %v", j, lo[j], hi[j])
		}
	}
}
