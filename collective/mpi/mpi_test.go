//go:build mpi

package mpi_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/collective/mpi"
	"gorgonia.org/tensor"
)

var dtypes = []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128}

// sentinel fills the receive buffer before a call (and its element past
// RecvLen, which no call may write).
const sentinel = complex(-7.25, 3)

// expected is what rank me receives from kind over the ranks' send data
// (send[r] is rank r's), computed in float64: RecvLen elements.
func expected(c *collective.Call, send [][]complex128, me int) []complex128 {
	size, n := len(send), c.Count
	out := make([]complex128, c.RecvLen(size))
	column := func(from int, ranks int) []complex128 { // element from of ranks 0…ranks-1
		xs := make([]complex128, ranks)
		for r := range ranks {
			xs[r] = send[r][from]
		}
		return xs
	}
	switch c.Kind {
	case collective.AllReduce, collective.Reduce:
		if c.Kind == collective.Reduce && me != c.Root {
			return out
		}
		for i := range n {
			out[i] = reduce(c.Op, column(i, size))
		}
	case collective.Scan:
		for i := range n {
			out[i] = reduce(c.Op, column(i, me+1))
		}
	case collective.ReduceScatter:
		for i := range n {
			out[i] = reduce(c.Op, column(me*n+i, size))
		}
	case collective.AllGather, collective.Gather:
		if c.Kind == collective.Gather && me != c.Root {
			return out
		}
		for b := range size {
			copy(out[b*n:], send[b][:n])
		}
	case collective.AllToAll:
		for b := range size {
			copy(out[b*n:], send[b][me*n:(me+1)*n])
		}
	case collective.Bcast:
		copy(out, send[c.Root][:n])
	case collective.Scatter:
		copy(out, send[c.Root][me*n:(me+1)*n])
	}
	return out
}

// collectiveCases are every collective kind with every reduction that
// applies to the dtype, at counts 1, 7 and 1000, roots varied.
func collectiveCases(size int) []collective.Call {
	var cases []collective.Call
	kinds := []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.AllToAll,
		collective.Bcast, collective.Reduce, collective.Gather, collective.Scatter, collective.Scan}
	for _, kind := range kinds {
		for _, dt := range dtypes {
			for ci, count := range []int{1, 7, 1000} {
				ops := []collective.ReduceOp{collective.Sum}
				switch kind {
				case collective.AllReduce, collective.ReduceScatter, collective.Reduce, collective.Scan:
					ops = append(ops, collective.Prod)
					if dt == tensor.Float32 || dt == tensor.Float64 {
						ops = append(ops, collective.Min, collective.Max)
					}
				}
				for _, op := range ops {
					name := fmt.Sprintf("%v/%v/n=%d", kind, dt, count)
					if len(ops) > 1 {
						name = fmt.Sprintf("%v/%v/%v/n=%d", kind, op, dt, count)
					}
					cases = append(cases, collective.Call{Kind: kind, Op: op, Dtype: dt, Count: count,
						Root: (ci + int(kind)) % size, Name: name})
				}
			}
		}
	}
	return cases
}

// checksOption is the option of a communicator with the checks on or off.
func checksOption(checks bool) []mpi.Option {
	if checks {
		return nil
	}
	return []mpi.Option{mpi.WithoutChecks()}
}

func TestCollectives(t *testing.T) {
	for _, checks := range []bool{true, false} {
		c := newComm(t, checksOption(checks)...)
		for _, tc := range collectiveCases(c.Size()) {
			t.Run(fmt.Sprintf("checks=%v/%s/root=%d", checks, tc.Name, tc.Root), func(t *testing.T) {
				checkCollective(t, c, tc)
			})
		}
	}
}

// TestLocalWorkBeside runs the calls with local work (the root's copy of
// Bcast, the zeros of Reduce and Gather elsewhere) large enough for it to
// go beside the transfer, on a goroutine of its own (MGLA_MPI_BESIDE=1) and
// fitted into the wait (0).
func TestLocalWorkBeside(t *testing.T) {
	c := newComm(t)
	for _, beside := range []string{"0", "1"} {
		t.Setenv("MGLA_MPI_BESIDE", beside)
		for _, kind := range []collective.Kind{collective.Bcast, collective.Reduce, collective.Gather} {
			for root := range c.Size() {
				tc := collective.Call{Kind: kind, Op: collective.Sum, Dtype: tensor.Float64, Count: 70001, Root: root,
					Name: fmt.Sprintf("%v/beside=%s", kind, beside)}
				t.Run(fmt.Sprintf("%s/root=%d", tc.Name, root), func(t *testing.T) { checkCollective(t, c, tc) })
			}
		}
	}
}

// TestLocalWorkPlacements runs the calls with local work under every
// placement (MGLA_MPI_LOCAL_WORK; none beside: MGLA_MPI_BESIDE=0): after,
// before and during the transfer, and the pipelined Bcast, in chunks that
// do not divide the count, checking that the pipeline is taken exactly
// where it applies.
func TestLocalWorkPlacements(t *testing.T) {
	c := newComm(t)
	t.Setenv("MGLA_MPI_BESIDE", "0")
	t.Setenv("MGLA_MPI_BLOCKING", "none")
	for _, place := range []string{"after", "before", "during", "pipeline"} {
		t.Setenv("MGLA_MPI_LOCAL_WORK", place)
		for _, kind := range []collective.Kind{collective.Bcast, collective.Reduce, collective.Gather} {
			for _, tc := range []struct {
				dt    tensor.Dtype
				count int
			}{{tensor.Float64, 70001}, {tensor.Complex128, 40000}, {tensor.Float32, 1000}} {
				for root := range c.Size() {
					call := collective.Call{Kind: kind, Op: collective.Sum, Dtype: tc.dt, Count: tc.count, Root: root,
						Name: fmt.Sprintf("%v/%s/%v/n=%d", kind, place, tc.dt, tc.count)}
					before, _ := mpi.Taken()
					t.Run(fmt.Sprintf("%s/root=%d", call.Name, root), func(t *testing.T) { checkCollective(t, c, call) })
					after, _ := mpi.Taken()
					// Pipelined: a Bcast of two chunks (512 KiB) or more.
					want := place == "pipeline" && kind == collective.Bcast && tc.count*int(tc.dt.Size()) >= 512<<10
					if got := after > before; got != want {
						t.Errorf("%s root %d: pipelined %v, want %v", call.Name, root, got, want)
					}
				}
			}
		}
	}
}

// TestBlocking runs every collective large enough for MPI's blocking call
// with it (MGLA_MPI_BLOCKING naming every kind) and without ("none"), with
// the checks on and off, and checks that the blocking call is taken
// exactly where every rank has MPI_THREAD_MULTIPLE.
func TestBlocking(t *testing.T) {
	_, _, multiple := mpi.Agreed()
	all := "allreduce,allgather,reducescatter,alltoall,bcast,reduce,gather,scatter,scan"
	for _, checks := range []bool{true, false} {
		c := newComm(t, checksOption(checks)...)
		size := c.Size()
		for _, list := range []string{all, "none"} {
			t.Setenv("MGLA_MPI_BLOCKING", list)
			for _, kind := range []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.AllToAll,
				collective.Bcast, collective.Reduce, collective.Gather, collective.Scatter, collective.Scan} {
				dt := tensor.Float64
				if kind == collective.Scan || kind == collective.Reduce {
					dt = tensor.Complex64
				}
				// 1 MiB in the largest buffer of a rank, plus an odd part.
				count := (1<<20)/int(dt.Size()) + 3
				switch kind {
				case collective.AllGather, collective.ReduceScatter, collective.AllToAll, collective.Gather, collective.Scatter:
					count = count/size + 3
				}
				call := collective.Call{Kind: kind, Op: collective.Sum, Dtype: dt, Count: count, Root: size / 2,
					Name: fmt.Sprintf("%v/blocking=%v", kind, list != "none")}
				_, before := mpi.Taken()
				t.Run(fmt.Sprintf("checks=%v/%s", checks, call.Name), func(t *testing.T) { checkCollective(t, c, call) })
				_, after := mpi.Taken()
				if got, want := after > before, multiple && list != "none"; got != want {
					t.Errorf("%s: blocking call taken %v, want %v (MPI_THREAD_MULTIPLE on every rank: %v)", call.Name, got, want, multiple)
				}
			}
		}
	}
}

// TestBlockingTimeout: a rank that makes a large ReduceScatter late makes
// the others fail with ErrTimeout and break their communicator, by MPI's
// blocking call (MPI_THREAD_MULTIPLE) or the nonblocking one; once it
// arrives, its call completes (the others' calls are still in MPI).
func TestBlockingTimeout(t *testing.T) {
	const short = time.Second
	for _, list := range []string{"reducescatter", "none"} {
		t.Run("blocking="+list, func(t *testing.T) {
			t.Setenv("MGLA_MPI_BLOCKING", list)
			c := newComm(t, mpi.WithoutChecks(), mpi.WithTimeout(short))
			size, me := c.Size(), c.Rank()
			if size < 2 {
				t.Skip("needs 2 ranks")
			}
			late := size - 1
			call := collective.Call{Kind: collective.ReduceScatter, Op: collective.Sum, Dtype: tensor.Float64, Count: (1 << 18) / size}
			send, recv := make([]float64, call.SendLen(size)), make([]float64, call.RecvLen(size))
			if me == late {
				time.Sleep(2 * short)
				if err := c.Do(hostCall(call, send, recv)); err != nil {
					t.Errorf("the late rank: %v", err)
				}
			} else {
				err := c.Do(hostCall(call, send, recv))
				if !errors.Is(err, collective.ErrTimeout) {
					t.Errorf("got %v, want ErrTimeout", err)
				}
				if err := c.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
					t.Errorf("the call after the timeout: got %v, want ErrClosed", err)
				}
			}
			if err := world.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkCollective runs tc on c with random data and checks the result
// against the reference, the element past the receive length and the send
// buffer untouched.
func checkCollective(t *testing.T, c *mpi.Comm, tc collective.Call) {
	t.Helper()
	size, me := c.Size(), c.Rank()
	label := t.Name()
	send := make([][]complex128, size)
	for r := range size {
		send[r] = rankValues(label, r, tc.SendLen(size), tc.Dtype, tc.Op == collective.Prod)
	}
	recvInit := make([]complex128, tc.RecvLen(size)+1)
	for i := range recvInit {
		recvInit[i] = sentinel
	}
	sendData, recvData := typed(tc.Dtype, send[me]), typed(tc.Dtype, recvInit)
	call := tc
	if err := c.Do(hostCall(call, sendData, recvData)); err != nil {
		t.Fatal(err)
	}
	got, want := collectivetest.Values(recvData), expected(&tc, send, me)
	for i, w := range want {
		if !closeEnough(got[i], w, tc.Dtype, size) {
			t.Fatalf("element %d: got %v, want %v (seed %d)", i, got[i], w, seed)
		}
	}
	if last := got[len(got)-1]; last != collectivetest.RoundTo(tc.Dtype, sentinel) {
		t.Errorf("the element past the receive length changed to %v", last)
	}
	for i, v := range collectivetest.Values(sendData) {
		if v != send[me][i] {
			t.Fatalf("send element %d changed from %v to %v", i, send[me][i], v)
		}
	}
}

func TestBarrier(t *testing.T) {
	for _, checks := range []bool{true, false} {
		c := newComm(t, checksOption(checks)...)
		for range 3 {
			if err := c.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPointToPoint sends around a ring with SendRecv, and from even ranks to
// the next odd one with Send and Recv (the last rank of an odd count idles).
func TestPointToPoint(t *testing.T) {
	for _, checks := range []bool{true, false} {
		c := newComm(t, checksOption(checks)...)
		size, me := c.Size(), c.Rank()
		for _, dt := range dtypes {
			for _, count := range []int{1, 7, 1000} {
				name := fmt.Sprintf("checks=%v/%v/n=%d", checks, dt, count)
				t.Run("SendRecv/"+name, func(t *testing.T) {
					dest, src := (me+1)%size, (me+size-1)%size
					mine := rankValues(t.Name(), me, count, dt, false)
					recv := typed(dt, make([]complex128, count))
					err := c.Do(hostCall(collective.Call{Kind: collective.SendRecv, Dtype: dt, Count: count, Tag: 3,
						Dest: []int{dest}, Src: []int{src}}, typed(dt, mine), recv))
					if err != nil {
						t.Fatal(err)
					}
					want := rankValues(t.Name(), src, count, dt, false)
					for i, v := range collectivetest.Values(recv) {
						if v != want[i] {
							t.Fatalf("element %d from rank %d: got %v, want %v", i, src, v, want[i])
						}
					}
				})
				t.Run("Send+Recv/"+name, func(t *testing.T) {
					if me%2 == 0 && me+1 < size {
						err := c.Do(hostCall(collective.Call{Kind: collective.Send, Dtype: dt, Count: count, Tag: 9, Dest: []int{me + 1}},
							typed(dt, rankValues(t.Name(), me, count, dt, false)), nil))
						if err != nil {
							t.Fatal(err)
						}
					}
					if me%2 == 1 {
						recv := typed(dt, make([]complex128, count))
						err := c.Do(hostCall(collective.Call{Kind: collective.Recv, Dtype: dt, Count: count, Tag: 9, Src: []int{me - 1}}, nil, recv))
						if err != nil {
							t.Fatal(err)
						}
						want := rankValues(t.Name(), me-1, count, dt, false)
						for i, v := range collectivetest.Values(recv) {
							if v != want[i] {
								t.Fatalf("element %d: got %v, want %v", i, v, want[i])
							}
						}
					}
				})
			}
		}
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		name       string
		color, key func(r int) int
	}{
		{"odd/even", func(r int) int { return r % 2 }, func(r int) int { return r }},
		{"reversed keys", func(int) int { return 0 }, func(r int) int { return -r }},
		{"rank 0 left out", func(r int) int { return min(r, 1) - 1 + min(r, 1) }, func(r int) int { return r }},
		{"equal keys, colors by thirds", func(r int) int { return r / 3 }, func(int) int { return 7 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := newComm(t)
			size, me := parent.Size(), parent.Rank()
			comms, err := parent.Split(tc.color, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			// The members of my color in (key, rank) order, computed here.
			var members []int
			if tc.color(me) >= 0 {
				for r := range size {
					if tc.color(r) == tc.color(me) {
						members = append(members, r)
					}
				}
				for i := 1; i < len(members); i++ { // insertion sort by key, stable in rank
					for j := i; j > 0 && tc.key(members[j]) < tc.key(members[j-1]); j-- {
						members[j], members[j-1] = members[j-1], members[j]
					}
				}
			}
			if len(members) == 0 {
				if len(comms) != 0 {
					t.Fatalf("left out, got %d communicators", len(comms))
				}
				return
			}
			if len(comms) != 1 {
				t.Fatalf("got %d communicators, want 1", len(comms))
			}
			sub := comms[0].(*mpi.Comm)
			defer sub.Close()
			if sub.Size() != len(members) || members[sub.Rank()] != me {
				t.Fatalf("rank %d of %d, want rank %d of %d (members %v)", sub.Rank(), sub.Size(), indexOf(members, me), len(members), members)
			}
			got := make([]float64, sub.Size())
			if err := sub.Do(hostCall(collective.Call{Kind: collective.AllGather, Dtype: tensor.Float64, Count: 1},
				[]float64{float64(me)}, got)); err != nil {
				t.Fatal(err)
			}
			for i, r := range members {
				if got[i] != float64(r) {
					t.Fatalf("new rank %d is old rank %v, want %d", i, got[i], r)
				}
			}
		})
	}
}

// TestSplitTimeout: a Split that a rank leaves by its timeout must not
// leave the others in the blocking MPI_Comm_split, and must give every rank
// ErrTimeout and a broken parent (ErrClosed after). "late" is the race:
// rank 0, with a short timeout, gives up just before the others arrive,
// which find its record delivered and complete their exchange (rank 0
// makes the split later only to let them out; they time out confirming
// it), with rank 0 in the others' new communicator or alone. "last rank
// late": the others time out in the exchange, and the last rank comes after
// that (the late splits of the others let it out). A rank that never comes
// is not among the cases: below MPI_THREAD_MULTIPLE, the others' Splits
// would time out for the rest of the process (waitLateSplits).
func TestSplitTimeout(t *testing.T) {
	const short = 500 * time.Millisecond
	cases := []struct {
		name  string
		color func(rank int) int
		// The timeouts and arrival delays of rank 0 and of the others;
		// lastLate: the last rank comes after the others' timeout.
		timeout0, timeout, delay time.Duration
		lastLate                 bool
	}{
		{name: "late", color: func(int) int { return 0 }, timeout0: short, timeout: 3 * short, delay: 2 * short},
		{name: "late, rank 0 apart", color: func(r int) int { return min(r, 1) }, timeout0: short, timeout: 3 * short, delay: 2 * short},
		{name: "late, rank 0 alone in a color", color: func(r int) int { return -r }, timeout0: short, timeout: 3 * short, delay: 2 * short},
		{name: "last rank late", color: func(int) int { return 0 }, timeout0: short, timeout: short, lastLate: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			size, me := world.Size(), world.Rank()
			if size < 2 {
				t.Skip("needs 2 ranks")
			}
			timeout, delay := tc.timeout, tc.delay
			switch {
			case tc.lastLate && me == size-1:
				delay = 3 * short
			case me == 0:
				timeout, delay = tc.timeout0, 0
			}
			view := mpi.Retimed(newComm(t), timeout)
			time.Sleep(delay)
			done := make(chan error, 1)
			go func() {
				comms, err := view.Split(tc.color, func(r int) int { return r })
				if err == nil {
					err = fmt.Errorf("%d communicators and no error", len(comms))
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, collective.ErrTimeout) {
					t.Errorf("got %v, want ErrTimeout", err)
				} else {
					t.Log(err)
				}
			case <-time.After(testTimeout):
				// Nothing can get this goroutine out of MPI.
				fmt.Fprintf(os.Stderr, "rank %d: TestSplitTimeout/%s: Split still waiting after %v\n", me, tc.name, testTimeout)
				os.Exit(1)
			}
			if err := view.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
				t.Errorf("a call on the parent after the timeout: got %v, want ErrClosed", err)
			}
			if err := world.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSplitAfterLateSplit: ranks 0 … size-2 time out in a Split of X (the
// last rank comes late) and at once Split Y, a communicator of their own;
// the last rank's late Split of X runs while they are at it. Below
// MPI_THREAD_MULTIPLE the late split of X (made by those ranks only to let
// the last one out) used to take MPI in the middle of Y's split: a
// deadlock in 2 of 4 runs. Now Y waits there, by its timeout, for X's late
// split. Every Split must return, X's with ErrTimeout.
func TestSplitAfterLateSplit(t *testing.T) {
	size, me := world.Size(), world.Rank()
	if size < 3 {
		t.Skip("needs 3 ranks")
	}
	last := size - 1
	x := newComm(t)
	ys, err := newComm(t).Split(func(r int) int { return min(0, last-1-r) }, func(r int) int { return r })
	if err != nil {
		t.Fatal(err)
	}
	const short = 300 * time.Millisecond
	guard := func(what string, f func() error) error {
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(testTimeout):
			fmt.Fprintf(os.Stderr, "rank %d: TestSplitAfterLateSplit: %s still waiting after %v\n", me, what, testTimeout)
			os.Exit(1)
			return nil
		}
	}
	split := func(c *mpi.Comm, timeout time.Duration) error {
		_, err := mpi.Retimed(c, timeout).Split(func(int) int { return 0 }, func(r int) int { return r })
		return err
	}
	start := time.Now()
	if me == last {
		time.Sleep(short + 200*time.Millisecond)
		if err := guard("X", func() error { return split(x, 2*time.Second) }); !errors.Is(err, collective.ErrTimeout) {
			t.Errorf("X: got %v, want ErrTimeout", err)
		}
	} else {
		if err := guard("X", func() error { return split(x, short) }); !errors.Is(err, collective.ErrTimeout) {
			t.Errorf("X: got %v, want ErrTimeout", err)
		}
		if me == 1 {
			time.Sleep(time.Until(start.Add(short + 200*time.Millisecond)))
		}
		errY := guard("Y", func() error { return split(ys[0].(*mpi.Comm), 2*time.Second) })
		t.Logf("Y: %v", errY)
		ys[0].Close()
	}
	if err := world.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
		t.Fatal(err)
	}
}

// ranksText writes ranks as the messages do: "rank 2", "ranks 0,1,3".
func ranksText(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = fmt.Sprint(r)
	}
	return "ranks " + strings.Join(s, ",")
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// TestBadCall makes bad calls on rank 0 alone: they must fail with
// ErrBadCall before any communication (else the call that follows on every
// rank would mismatch or time out) and leave the buffers alone.
func TestBadCall(t *testing.T) {
	c := newComm(t)
	size := c.Size()
	f64 := func(n int) []float64 { return make([]float64, n) }
	overlap := f64(8)
	cases := []struct {
		name       string
		call       collective.Call
		send, recv any
	}{
		{"unknown kind", collective.Call{Kind: 99, Dtype: tensor.Float64, Count: 1}, f64(1), f64(1)},
		{"unknown dtype", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Bool, Count: 1}, f64(1), f64(1)},
		{"buffer of another dtype", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float32, Count: 1}, f64(1), make([]float32, 1)},
		{"short receive", collective.Call{Kind: collective.AllGather, Dtype: tensor.Float64, Count: 2}, f64(2), f64(2*size - 1)},
		{"short send", collective.Call{Kind: collective.Scatter, Dtype: tensor.Float64, Count: 2}, f64(2*size - 1), f64(2)},
		{"no receive", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 1}, f64(1), nil},
		{"negative count", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: -1}, f64(1), f64(1)},
		{"root out of range", collective.Call{Kind: collective.Bcast, Dtype: tensor.Float64, Count: 1, Root: size}, f64(1), f64(1)},
		{"max of complex", collective.Call{Kind: collective.AllReduce, Op: collective.Max, Dtype: tensor.Complex128, Count: 1},
			make([]complex128, 1), make([]complex128, 1)},
		{"destination out of range", collective.Call{Kind: collective.Send, Dtype: tensor.Float64, Count: 1, Dest: []int{size}}, f64(1), nil},
		{"negative tag", collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 1, Src: []int{0}, Tag: -1}, nil, f64(1)},
		{"tag too large", collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 1, Src: []int{0}, Tag: 1 << 30}, nil, f64(1)},
		{"overlapping buffers", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 4}, overlap[:4], overlap[2:6]},
		// (rank 0 makes the calls)
		{"send to its own rank", collective.Call{Kind: collective.Send, Dtype: tensor.Float64, Count: 1, Dest: []int{0}}, f64(1), nil},
		{"receive from its own rank", collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 1, Src: []int{0}}, nil, f64(1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c.Rank() == 0 {
				var before []complex128
				if tc.recv != nil {
					before = collectivetest.Values(tc.recv)
				}
				err := c.Do(hostCall(tc.call, tc.send, tc.recv))
				if !errors.Is(err, collective.ErrBadCall) {
					t.Fatalf("got %v, want ErrBadCall", err)
				}
				t.Log(err)
				if tc.recv != nil {
					for i, v := range collectivetest.Values(tc.recv) {
						if v != before[i] {
							t.Fatalf("receive element %d changed", i)
						}
					}
				}
			}
			got := make([]float64, 1)
			if err := c.Do(hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 1},
				[]float64{1}, got)); err != nil || got[0] != float64(size) {
				t.Fatalf("the call after: %v, sum %v, want %d", err, got[0], size)
			}
		})
	}
}

// TestMismatch makes the last rank (or rank 0) call something else: every
// rank must get ErrMismatch with the same text, and the communicator must
// still work.
func TestMismatch(t *testing.T) {
	c := newComm(t)
	size, me := c.Size(), c.Rank()
	if size < 2 {
		t.Skip("needs 2 ranks or more (mpirun -n 2)")
	}
	last := size - 1
	var firsts, odds []int
	for r := range size {
		if r < last {
			firsts = append(firsts, r)
		}
		if r%2 == 1 {
			odds = append(odds, r)
		}
	}
	// differ is how a message lists a field on which the last rank differs
	// from the others: smaller groups first, ties by lowest rank.
	differ := func(field, lastValue, othersValue string) string {
		if size == 2 {
			return fmt.Sprintf("rank 0 has %s %s, rank 1 has %s %s", field, othersValue, field, lastValue)
		}
		return fmt.Sprintf("rank %d has %s %s, %s have %s %s", last, field, lastValue, ranksText(firsts), field, othersValue)
	}
	has := " has "
	if len(odds) > 1 {
		has = " have "
	}
	f64 := func(n int) []float64 { return make([]float64, n) }
	cases := []struct {
		name string
		call func(r int) (collective.Call, any, any)
		want string
	}{
		{"count", func(r int) (collective.Call, any, any) {
			n := 6
			if r == last {
				n = 5
			}
			return collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: n, Name: "grad"}, f64(n), f64(n)
		}, `AllReduce "grad" #%d: ` + differ("count", "5", "6")},
		{"kind and root", func(r int) (collective.Call, any, any) {
			if r == last {
				return collective.Call{Kind: collective.Bcast, Root: 1, Dtype: tensor.Float64, Count: 3}, f64(3), f64(3)
			}
			return collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 3}, f64(3), f64(3)
		}, "AllReduce #%d: " + differ("kind", "Bcast", "AllReduce") + "; " + differ("root", "1", "0")},
		{"dtype", func(r int) (collective.Call, any, any) {
			if r == 0 {
				return collective.Call{Kind: collective.Scan, Dtype: tensor.Float32, Count: 2}, make([]float32, 2), make([]float32, 2)
			}
			return collective.Call{Kind: collective.Scan, Dtype: tensor.Float64, Count: 2}, f64(2), f64(2)
		}, "dtype"},
		{"name", func(r int) (collective.Call, any, any) {
			return collective.Call{Kind: collective.Barrier, Name: fmt.Sprintf("node%d", r%2)}, nil, nil
		}, ranksText(odds) + has + `name "node1"`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			call, send, recv := tc.call(me)
			err := c.Do(hostCall(call, send, recv))
			if !errors.Is(err, collective.ErrMismatch) {
				t.Fatalf("got %v, want ErrMismatch", err)
			}
			want := tc.want
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, 2*i) // each case is the communicator's call 2i (the hash gather is 2i+1)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("got %q, want it to contain %q", err, want)
			}
			sameOnEveryRank(t, c, err.Error())
		})
	}
	t.Run("Send and Recv", func(t *testing.T) {
		// Rank 0 sends 5 to rank 1, which expects 6; then both try again right.
		switch me {
		case 0:
			err := c.Do(hostCall(collective.Call{Kind: collective.Send, Dtype: tensor.Float64, Count: 5, Dest: []int{1}, Name: "x"}, f64(5), nil))
			checkPairMismatch(t, c, err)
			if err := c.Do(hostCall(collective.Call{Kind: collective.Send, Dtype: tensor.Float64, Count: 6, Dest: []int{1}}, f64(6), nil)); err != nil {
				t.Fatal("the right Send after:", err)
			}
		case 1:
			err := c.Do(hostCall(collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 6, Src: []int{0}}, nil, f64(6)))
			checkPairMismatch(t, c, err)
			if err := c.Do(hostCall(collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 6, Src: []int{0}}, nil, f64(6))); err != nil {
				t.Fatal("the right Recv after:", err)
			}
		default:
			checkPairMismatch(t, c, nil)
		}
	})
}

// checkPairMismatch checks err on ranks 0 and 1 and that both have the same
// text (every rank takes part in the comparison).
func checkPairMismatch(t *testing.T, c *mpi.Comm, err error) {
	t.Helper()
	text := "none"
	if c.Rank() < 2 {
		want := `Send "x" rank 0 → rank 1 (tag 0): rank 0 sends 5 float64, rank 1 receives 6 float64`
		if !errors.Is(err, collective.ErrMismatch) || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want ErrMismatch with %q", err, want)
		}
		if err != nil {
			text = err.Error()
		}
	}
	all := make([]float64, c.Size())
	mine := 0.0
	if c.Rank() < 2 {
		mine = float64(len(text)) + float64(strings.Count(text, "rank"))
	}
	if err := c.Do(hostCall(collective.Call{Kind: collective.AllGather, Dtype: tensor.Float64, Count: 1}, []float64{mine}, all)); err != nil {
		t.Fatal(err)
	}
	if all[0] != all[1] {
		t.Errorf("ranks 0 and 1 have different messages (this rank's: %q)", text)
	}
}

// TestTimeout: the last rank skips a call; the others must get ErrTimeout
// naming it within the communicator's short timeout, and ErrClosed after.
// A checked Recv from the skipper (a checked Recv from its own rank is
// ErrBadCall at once, TestBadCall); without checks, on one rank too, a Recv
// from the skipper itself, which nobody sends.
func TestTimeout(t *testing.T) {
	const short = 1500 * time.Millisecond
	cases := []struct {
		name   string
		checks bool
		call   collective.Call
		need   int // ranks
		names  bool
		// rootOnly: only the root (rank 0) must time out; the other ranks
		// of a rooted call without checks may finish without the skipper.
		rootOnly bool
	}{
		{"AllReduce", true, collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 4}, 2, true, false},
		{"Barrier", true, collective.Call{Kind: collective.Barrier}, 2, true, false},
		{"AllGather without checks", false, collective.Call{Kind: collective.AllGather, Dtype: tensor.Float32, Count: 4}, 2, false, false},
		{"Recv", true, collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 4}, 2, true, false},
		{"Recv without checks", false, collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 4}, 1, true, false},
		// Large enough for the root's copy (Bcast) and the zeros of the
		// others (Reduce, Gather) to be done while the rank waits.
		{"Bcast", true, collective.Call{Kind: collective.Bcast, Dtype: tensor.Float64, Count: 1 << 20}, 2, true, false},
		{"Bcast without checks", false, collective.Call{Kind: collective.Bcast, Dtype: tensor.Float64, Count: 1 << 20}, 2, false, true},
		{"Reduce without checks", false, collective.Call{Kind: collective.Reduce, Dtype: tensor.Complex128, Count: 1 << 18}, 2, false, true},
		{"Gather without checks", false, collective.Call{Kind: collective.Gather, Dtype: tensor.Float32, Count: 1 << 18}, 2, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newComm(t, append(checksOption(tc.checks), mpi.WithTimeout(short))...)
			size, me := c.Size(), c.Rank()
			if size < tc.need {
				t.Skipf("needs %d ranks", tc.need)
			}
			skipper := size - 1
			call := tc.call
			if call.Kind == collective.Recv {
				call.Src = []int{skipper} // it sends nothing
			}
			n := call.SendLen(size)
			var send, recv any
			if n > 0 {
				send = typed(call.Dtype, make([]complex128, n))
			}
			if n = call.RecvLen(size); n > 0 {
				recv = typed(call.Dtype, make([]complex128, n))
			}
			if me != skipper || call.Kind == collective.Recv && !tc.checks {
				err := c.Do(hostCall(call, send, recv))
				switch {
				case tc.rootOnly && me != call.Root && err == nil:
					t.Logf("rank %d finished without rank %d", me, skipper)
				case !errors.Is(err, collective.ErrTimeout):
					t.Errorf("got %v, want ErrTimeout", err)
				default:
					t.Log(err)
					if tc.names && !strings.Contains(err.Error(), fmt.Sprintf("rank %d", skipper)) {
						t.Errorf("%q does not name rank %d", err, skipper)
					}
					if err := c.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) || !strings.Contains(err.Error(), "timed out") {
						t.Errorf("the call after the timeout: got %v, want ErrClosed saying why", err)
					}
				}
			}
			// Wait for everyone on the healthy world before the next case.
			if err := world.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestClose(t *testing.T) {
	c := newComm(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	err := c.Do(&collective.Call{Kind: collective.Barrier})
	if !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Do after Close: got %v, want ErrClosed", err)
	}
	if _, err := c.Split(func(int) int { return 0 }, func(r int) int { return r }); !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Split after Close: got %v, want ErrClosed", err)
	}
	view, err := mpi.World(mpi.WithTimeout(testTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if err := view.Close(); err != nil {
		t.Fatal(err)
	}
	if err := view.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Do on a closed world view: got %v, want ErrClosed", err)
	}
	if err := world.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
		t.Fatal("another world view after one closed:", err)
	}
}

// TestConcurrentComms runs AllReduces on two communicators from two
// goroutines at once (whatever the thread level MPI provides).
func TestConcurrentComms(t *testing.T) {
	a, b := newComm(t), newComm(t)
	size := a.Size()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []*mpi.Comm{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				got := make([]float64, 3)
				v := float64(i*100 + k)
				if err := c.Do(hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 3},
					[]float64{v, v, v}, got)); err != nil {
					errs[i] = err
					return
				}
				if got[0] != v*float64(size) {
					errs[i] = fmt.Errorf("communicator %d, round %d: sum %v, want %v", i, k, got[0], v*float64(size))
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestFortranHandle(t *testing.T) {
	c := newComm(t)
	if c.Fortran() == world.Fortran() {
		t.Errorf("a split communicator has the world's Fortran handle %d", c.Fortran())
	}
	if world.Fortran() < 0 {
		t.Errorf("negative Fortran handle %d", world.Fortran())
	}
}

// TestIreduceAlgorithm: World makes Open MPI's MPI_Ireduce use the binomial
// tree (or what the environment asked for), and MPI reports that value.
func TestIreduceAlgorithm(t *testing.T) {
	newComm(t)
	env, ok := os.LookupEnv(mpi.LibnbcReduce)
	if !ok {
		t.Fatalf("%s is not set after World", mpi.LibnbcReduce)
	}
	want, err := strconv.Atoi(env)
	if err != nil {
		t.Fatalf("%s=%q", mpi.LibnbcReduce, env)
	}
	got, err := mpi.MCAInt("coll_libnbc_ireduce_algorithm")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("MPI uses ireduce algorithm %d, the environment says %d", got, want)
	}
}

// TestMinMaxFollowGo: Min and Max of floats follow Go's min and max, as on
// the CPU mesh: a NaN on any rank gives NaN (MPI_MIN and MPI_MAX drop it or
// keep it by the order they meet it), and -0 is below +0; with counts that
// take the blocking and the nonblocking paths.
func TestMinMaxFollowGo(t *testing.T) {
	c := newComm(t)
	size, me := c.Size(), c.Rank()
	for _, count := range []int{16, 1 << 16} {
		for _, kind := range []collective.Kind{collective.AllReduce, collective.ReduceScatter, collective.Reduce, collective.Scan} {
			for _, op := range []collective.ReduceOp{collective.Min, collective.Max} {
				for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
					call := collective.Call{Kind: kind, Op: op, Dtype: dt, Count: count, Root: size - 1}
					send := make([][]complex128, size)
					for r := range size {
						send[r] = collectivetest.Specials(r, size, call.SendLen(size))
					}
					recv := typed(dt, make([]complex128, call.RecvLen(size)))
					if err := c.Do(hostCall(call, typed(dt, send[me]), recv)); err != nil {
						t.Fatal(err)
					}
					got, want := collectivetest.Values(recv), collectivetest.Reference(&call, size, send)[me]
					for i, w := range want {
						if !collectivetest.SameFloat(got[i], w) {
							t.Fatalf("%v %v %v n=%d: element %d (pattern %d) = %v, want %v", kind, op, dt, count, i, i%8, real(got[i]), real(w))
						}
					}
				}
			}
		}
	}
}
