//go:build mpi

package mpi_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// rankInts are n values of the integer dtype dt that depend on the seed, the
// test's label and the rank alone (so every rank can compute every rank's
// data), overflow-free for op over size ranks.
func rankInts(label string, rank, n int, dt tensor.Dtype, op collective.ReduceOp, size int) any {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", label, rank)
	return collectivetest.RandomInts(rand.New(rand.NewPCG(seed, h.Sum64())), dt, op, n, size)
}

// TestIntegerCollectives: every collective kind and every reduction of
// every integer dtype, counts 1, 7 and 1000, with the checks on and (count
// 7) off, against the exact reference: the element past the receive length
// and the send buffer stay as they were.
func TestIntegerCollectives(t *testing.T) {
	for _, checks := range []bool{true, false} {
		c := newComm(t, checksOption(checks)...)
		size, me := c.Size(), c.Rank()
		for ki, kind := range []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter,
			collective.AllToAll, collective.Bcast, collective.Reduce, collective.Gather, collective.Scatter, collective.Scan} {
			ops := []collective.ReduceOp{collective.Sum}
			switch kind {
			case collective.AllReduce, collective.ReduceScatter, collective.Reduce, collective.Scan:
				ops = append(ops, collective.Prod, collective.Min, collective.Max)
			}
			for _, dt := range sharding.IntDtypes {
				for ci, count := range []int{1, 7, 1000} {
					if !checks && count != 7 {
						continue
					}
					for _, op := range ops {
						call := collective.Call{Kind: kind, Op: op, Dtype: dt, Count: count, Root: (ci + ki) % size}
						name := fmt.Sprintf("checks=%v/%v/%v/%v/n=%d/root=%d", checks, kind, op, dt, count, call.Root)
						t.Run(name, func(t *testing.T) {
							sends := make([]any, size)
							for r := range size {
								sends[r] = rankInts(t.Name(), r, call.SendLen(size), dt, op, size)
							}
							send := collectivetest.Clone(sends[me])
							recv := rankInts(t.Name()+"/recv", me, call.RecvLen(size)+1, dt, collective.Sum, 1)
							past := collectivetest.Clone(collectivetest.Slice(recv, call.RecvLen(size), call.RecvLen(size)+1))
							if err := c.Do(hostCall(call, send, recv)); err != nil {
								t.Fatal(err)
							}
							want := collectivetest.ReferenceInts(&call, size, sends)[me]
							if got := collectivetest.Slice(recv, 0, call.RecvLen(size)); !reflect.DeepEqual(got, want) {
								t.Fatalf("got %v, want %v (seed %d)", got, want, seed)
							}
							if got := collectivetest.Slice(recv, call.RecvLen(size), call.RecvLen(size)+1); !reflect.DeepEqual(got, past) {
								t.Errorf("the element past the receive length changed to %v from %v", got, past)
							}
							if !reflect.DeepEqual(send, sends[me]) {
								t.Errorf("the send buffer changed")
							}
						})
					}
				}
			}
		}
	}
}

// TestIntegerPointToPoint: SendRecv around a ring and Send/Recv from even
// ranks to the next odd one move every bit of every integer dtype.
func TestIntegerPointToPoint(t *testing.T) {
	c := newComm(t)
	size, me := c.Size(), c.Rank()
	for _, dt := range sharding.IntDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			const count = 37
			label := t.Name()
			dest, src := (me+1)%size, (me+size-1)%size
			recv := reflect.MakeSlice(reflect.SliceOf(dt.Type), count, count).Interface()
			err := c.Do(hostCall(collective.Call{Kind: collective.SendRecv, Dtype: dt, Count: count, Tag: 4,
				Dest: []int{dest}, Src: []int{src}}, rankInts(label, me, count, dt, collective.Sum, 1), recv))
			if err != nil {
				t.Fatal(err)
			}
			if want := rankInts(label, src, count, dt, collective.Sum, 1); !reflect.DeepEqual(recv, want) {
				t.Fatalf("SendRecv from rank %d: got %v, want %v (seed %d)", src, recv, want, seed)
			}
			if me%2 == 0 && me+1 < size {
				err := c.Do(hostCall(collective.Call{Kind: collective.Send, Dtype: dt, Count: count, Tag: 8, Dest: []int{me + 1}},
					rankInts(label+"/p2p", me, count, dt, collective.Sum, 1), nil))
				if err != nil {
					t.Fatal(err)
				}
			}
			if me%2 == 1 {
				recv := reflect.MakeSlice(reflect.SliceOf(dt.Type), count, count).Interface()
				if err := c.Do(hostCall(collective.Call{Kind: collective.Recv, Dtype: dt, Count: count, Tag: 8, Src: []int{me - 1}}, nil, recv)); err != nil {
					t.Fatal(err)
				}
				if want := rankInts(label+"/p2p", me-1, count, dt, collective.Sum, 1); !reflect.DeepEqual(recv, want) {
					t.Fatalf("Recv from rank %d: got %v, want %v (seed %d)", me-1, recv, want, seed)
				}
			}
		})
	}
}

// TestIntegerDtypeMismatch: ranks that pass the same count of different
// dtypes (an integer type on one rank, float32 or another integer type of
// the same width elsewhere) get ErrMismatch naming both dtypes, the same
// text on every rank, and the communicator still works; a Send and Recv
// that disagree on the dtype likewise.
func TestIntegerDtypeMismatch(t *testing.T) {
	c := newComm(t)
	size, me := c.Size(), c.Rank()
	if size < 2 {
		t.Skip("needs 2 ranks or more (mpirun -n 2)")
	}
	for _, tc := range []struct{ first, others tensor.Dtype }{
		{tensor.Int32, tensor.Float32},
		{tensor.Float64, tensor.Int64},
		{tensor.Int, tensor.Int64},
		{tensor.Uint8, tensor.Int8},
	} {
		t.Run(fmt.Sprintf("%v/%v", tc.first, tc.others), func(t *testing.T) {
			dt := tc.others
			if me == 0 {
				dt = tc.first
			}
			const n = 5
			buf := func() any { return reflect.MakeSlice(reflect.SliceOf(dt.Type), n, n).Interface() }
			recv := buf()
			err := c.Do(hostCall(collective.Call{Kind: collective.AllReduce, Dtype: dt, Count: n, Name: "mixed"}, buf(), recv))
			if !errors.Is(err, collective.ErrMismatch) {
				t.Fatalf("got %v, want ErrMismatch", err)
			}
			for _, want := range []string{"dtype " + tc.first.String(), "dtype " + tc.others.String()} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not name %q", err, want)
				}
			}
			sameOnEveryRank(t, c, err.Error())
			ok := []int64{int64(me)}
			all := make([]int64, size)
			if err := c.Do(hostCall(collective.Call{Kind: collective.AllGather, Dtype: tensor.Int64, Count: 1}, ok, all)); err != nil {
				t.Fatalf("the call after the mismatch: %v", err)
			}
			for r, v := range all {
				if v != int64(r) {
					t.Fatalf("AllGather after the mismatch: %v", all)
				}
			}
		})
	}
	t.Run("Send and Recv", func(t *testing.T) {
		text := "none"
		switch me {
		case 0:
			err := c.Do(hostCall(collective.Call{Kind: collective.Send, Dtype: tensor.Int32, Count: 4, Dest: []int{1}, Name: "ids"}, make([]int32, 4), nil))
			text = checkIntPair(t, err)
		case 1:
			err := c.Do(hostCall(collective.Call{Kind: collective.Recv, Dtype: tensor.Float32, Count: 4, Src: []int{0}}, nil, make([]float32, 4)))
			text = checkIntPair(t, err)
		}
		if me >= 2 {
			text = checkIntPairText
		}
		sameOnEveryRank(t, c, text)
	})
}

const checkIntPairText = `Send "ids" rank 0 → rank 1 (tag 0): rank 0 sends 4 int32, rank 1 receives 4 float32`

func checkIntPair(t *testing.T, err error) string {
	t.Helper()
	if !errors.Is(err, collective.ErrMismatch) || !strings.Contains(err.Error(), checkIntPairText) {
		t.Errorf("got %v, want ErrMismatch with %q", err, checkIntPairText)
		return fmt.Sprint(err)
	}
	return checkIntPairText
}
