//go:build mpi

package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tagWay is one way of making a transfer with a tag on every rank: it
// returns what this rank received (nil where it only sent), or the first
// error.
type tagWay struct {
	name  string
	pairs bool // Send and Recv: needs 2 ranks
	run   func(c *mpi.Comm, tag int, x []float64) ([]float64, error)
}

// tagWays are SendRecv and Send with Recv, as Comm.Do calls and as graph
// ops on a TapeMachine, around the ring (rank r sends to r+1). Send and Recv
// go in an order that cannot wait on a cycle: even ranks send first, odd
// ranks receive first.
var tagWays = []tagWay{
	{"Do/SendRecv", false, func(c *mpi.Comm, tag int, x []float64) ([]float64, error) {
		next, prev := ring(c)
		got := make([]float64, len(x))
		err := c.Do(hostCall(collective.Call{Kind: collective.SendRecv, Dtype: tensor.Float64, Count: len(x), Tag: tag,
			Dest: []int{next}, Src: []int{prev}}, x, got))
		return got, err
	}},
	{"Do/Send+Recv", true, func(c *mpi.Comm, tag int, x []float64) ([]float64, error) {
		next, prev := ring(c)
		got := make([]float64, len(x))
		send := func() error {
			return c.Do(hostCall(collective.Call{Kind: collective.Send, Dtype: tensor.Float64, Count: len(x), Tag: tag, Dest: []int{next}}, x, nil))
		}
		recv := func() error {
			return c.Do(hostCall(collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: len(x), Tag: tag, Src: []int{prev}}, nil, got))
		}
		return got, inRingOrder(c, send, recv)
	}},
	{"graph/SendRecv", false, func(c *mpi.Comm, tag int, x []float64) ([]float64, error) {
		next, prev := ring(c)
		g := G.NewGraph()
		xn := G.NewVector(g, tensor.Float64, G.WithShape(len(x)), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(x))))
		y, err := collective.SendRecvNode(xn, c, []int{next}, []int{prev}, tag)
		if err != nil {
			return nil, err
		}
		return runTagGraph(g, y)
	}},
	{"graph/Send+Recv", true, func(c *mpi.Comm, tag int, x []float64) ([]float64, error) {
		next, prev := ring(c)
		g := G.NewGraph()
		xn := G.NewVector(g, tensor.Float64, G.WithShape(len(x)), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(x))))
		var y *G.Node
		send := func() error {
			_, err := collective.SendNode(xn, c, next, tag)
			return err
		}
		recv := func() (err error) {
			y, err = collective.RecvNode(g, c, tensor.Shape{len(x)}, tensor.Float64, prev, tag)
			return err
		}
		if err := inRingOrder(c, send, recv); err != nil {
			return nil, err
		}
		return runTagGraph(g, y)
	}},
}

// ring is this rank's successor and predecessor.
func ring(c *mpi.Comm) (next, prev int) {
	size, me := c.Size(), c.Rank()
	return (me + 1) % size, (me + size - 1) % size
}

// inRingOrder runs send then recv on even ranks, recv then send on odd
// ones, stopping at the first error.
func inRingOrder(c *mpi.Comm, send, recv func() error) error {
	first, second := send, recv
	if c.Rank()%2 == 1 {
		first, second = recv, send
	}
	if err := first(); err != nil {
		return err
	}
	return second()
}

// runTagGraph runs g on a TapeMachine and returns y's value.
func runTagGraph(g *G.ExprGraph, y *G.Node) ([]float64, error) {
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, mgla.Cause(err)
	}
	return append([]float64(nil), y.Value().Data().([]float64)...), nil
}

// TestTagLimit pins collective/mpi/doc.go:107 ("Tags go up to
// (MPI_TAG_UB-2)/2", with the checks on: the metadata of tag t travels with
// tags 2t+1 and 2t+2): on every rank, around the ring, SendRecv and Send
// with Recv, as Comm.Do calls and as graph ops, move the data with the tag
// (MPI_TAG_UB-2)/2, and with the tag one above it every rank's call fails
// at once with ErrBadCall naming the tag (no rank waits for a peer: the
// communicator's timeout is short, and a call that waited would end in
// ErrTimeout, not ErrBadCall), after which the communicator still works.
// With the checks off (WithoutChecks) the limit is MPI's own, MPI_TAG_UB
// (collective/mpi/do.go:190, maxTag; MPI guarantees tags 0…MPI_TAG_UB).
func TestTagLimit(t *testing.T) {
	ub := mpi.TagUB()
	if world.Rank() == 0 {
		t.Logf("MPI_TAG_UB %d", ub)
	}
	limit := (ub - 2) / 2
	cases := []struct {
		name   string
		checks bool
		tag    int
		ok     bool
	}{
		{"checks/(MPI_TAG_UB-2)/2", true, limit, true},
		{"checks/(MPI_TAG_UB-2)/2+1", true, limit + 1, false},
		{"no checks/MPI_TAG_UB", false, ub, true},
		{"no checks/MPI_TAG_UB+1", false, ub + 1, false},
	}
	for _, tc := range cases {
		for _, way := range tagWays {
			t.Run(fmt.Sprintf("%s/%s", tc.name, way.name), func(t *testing.T) {
				c := newComm(t, append(checksOption(tc.checks), mpi.WithTimeout(5*time.Second))...)
				if way.pairs && c.Size() < 2 {
					t.Skip("Send and Recv need 2 ranks")
				}
				me := c.Rank()
				_, prev := ring(c)
				data := func(r int) []float64 { return []float64{float64(100*r + 1), float64(100*r + 2), float64(100*r + 3)} }
				start := time.Now()
				got, err := way.run(c, tc.tag, data(me))
				took := time.Since(start)
				switch {
				case tc.ok && err != nil:
					t.Fatalf("rank %d: tag %d: %v", me, tc.tag, err)
				case tc.ok && fmt.Sprint(got) != fmt.Sprint(data(prev)):
					t.Fatalf("rank %d: tag %d: received %v, want rank %d's %v", me, tc.tag, got, prev, data(prev))
				case !tc.ok && (!errors.Is(err, collective.ErrBadCall) || !strings.Contains(err.Error(), fmt.Sprint(tc.tag))):
					t.Fatalf("rank %d: tag %d: got %v after %v, want ErrBadCall naming the tag", me, tc.tag, err, took)
				case !tc.ok && took > 2*time.Second:
					t.Errorf("rank %d: tag %d: ErrBadCall came after %v, want at once", me, tc.tag, took)
				}
				// The communicator still works, and the ranks are in step.
				if got, err := way.run(c, 0, data(me)); err != nil || fmt.Sprint(got) != fmt.Sprint(data(prev)) {
					t.Fatalf("rank %d: the transfer after, tag 0: %v, received %v", me, err, got)
				}
			})
		}
	}
}
