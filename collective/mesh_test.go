package collective

import (
	"errors"
	"fmt"
	"math/cmplx"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// seed is fresh every run and printed, so a failure can be replayed.
var seed = uint64(time.Now().UnixNano())

func init() { fmt.Printf("collective tests: seed %d\n", seed) }

func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(seed, uint64(len(t.Name()))))
}

// hostBuffer makes a buffer of dtype dt holding vals (converted).
func hostBuffer(t *testing.T, dt tensor.Dtype, vals []complex128) sharding.Buffer {
	t.Helper()
	var data any
	switch dt {
	case tensor.Float32:
		s := make([]float32, len(vals))
		for i, v := range vals {
			s[i] = float32(real(v))
		}
		data = s
	case tensor.Float64:
		s := make([]float64, len(vals))
		for i, v := range vals {
			s[i] = real(v)
		}
		data = s
	case tensor.Complex64:
		s := make([]complex64, len(vals))
		for i, v := range vals {
			s[i] = complex64(v)
		}
		data = s
	case tensor.Complex128:
		data = append([]complex128(nil), vals...)
	}
	b, err := sharding.NewHostBuffer(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bufferValues(b sharding.Buffer) []complex128 {
	var out []complex128
	switch s := b.(*sharding.HostBuffer).Data().(type) {
	case []float32:
		for _, v := range s {
			out = append(out, complex(float64(v), 0))
		}
	case []float64:
		for _, v := range s {
			out = append(out, complex(v, 0))
		}
	case []complex64:
		for _, v := range s {
			out = append(out, complex128(v))
		}
	case []complex128:
		out = append(out, s...)
	}
	return out
}

// randomValues draws n values; real for real dtypes. Products stay tame:
// values lie in [0.5, 1.5) in magnitude with random signs.
func randomValues(rng *rand.Rand, dt tensor.Dtype, n int) []complex128 {
	v := make([]complex128, n)
	for i := range v {
		re := (0.5 + rng.Float64()) * float64(1-2*rng.IntN(2))
		if dt == tensor.Complex64 || dt == tensor.Complex128 {
			v[i] = complex(re, rng.Float64()-0.5)
		} else {
			v[i] = complex(re, 0)
		}
	}
	return v
}

// referenceReduce folds op over the values of ranks at position i, in
// complex128 (real parts for min/max, the dtypes where these exist).
func referenceReduce(op ReduceOp, vals []complex128) complex128 {
	acc := vals[0]
	for _, v := range vals[1:] {
		switch op {
		case Sum:
			acc += v
		case Prod:
			acc *= v
		case Min:
			if real(v) < real(acc) {
				acc = v
			}
		case Max:
			if real(v) > real(acc) {
				acc = v
			}
		}
	}
	return acc
}

// reference computes what every rank receives, element by element from
// the definitions in comm.go.
func reference(c *Call, size int, send [][]complex128) [][]complex128 {
	n := c.Count
	out := make([][]complex128, size)
	for r := range size {
		out[r] = make([]complex128, c.RecvLen(size))
		for i := range out[r] {
			column := func(ranks []int, pos int) []complex128 {
				var v []complex128
				for _, j := range ranks {
					v = append(v, send[j][pos])
				}
				return v
			}
			switch c.Kind {
			case AllReduce:
				out[r][i] = referenceReduce(c.Op, column(upTo(size), i))
			case Scan:
				out[r][i] = referenceReduce(c.Op, column(upTo(r+1), i))
			case Reduce:
				if r == c.Root {
					out[r][i] = referenceReduce(c.Op, column(upTo(size), i))
				}
			case ReduceScatter:
				out[r][i] = referenceReduce(c.Op, column(upTo(size), r*n+i))
			case AllGather:
				out[r][i] = send[i/n][i%n]
			case Gather:
				if r == c.Root {
					out[r][i] = send[i/n][i%n]
				}
			case AllToAll:
				out[r][i] = send[i/n][r*n+i%n]
			case Bcast:
				out[r][i] = send[c.Root][i]
			case Scatter:
				out[r][i] = send[c.Root][r*n+i]
			case SendRecv:
				out[r][i] = send[c.Src[r]][i]
			}
		}
	}
	return out
}

func tolerance(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		return 1e-5
	}
	return 1e-13
}

func TestHostMeshEveryKind(t *testing.T) {
	rng := newRand(t)
	kinds := []Kind{AllReduce, AllGather, ReduceScatter, AllToAll, Bcast, Reduce, Gather, Scatter, Scan, SendRecv, Barrier}
	for size := 1; size <= 5; size++ {
		comm := cpuMeshComm(t, size)
		if got := comm.LocalRanks(); len(got) != size || got[size-1] != size-1 {
			t.Fatalf("size %d: LocalRanks = %v", size, got)
		}
		for _, kind := range kinds {
			for _, dt := range sharding.Dtypes {
				for _, count := range []int{0, 1, 3, 7} {
					ops := []ReduceOp{Sum}
					switch kind {
					case AllReduce, ReduceScatter, Reduce, Scan:
						ops = []ReduceOp{Sum, Prod}
						if dt == tensor.Float32 || dt == tensor.Float64 {
							ops = append(ops, Min, Max)
						}
					}
					for _, op := range ops {
						call := &Call{Kind: kind, Op: op, Root: rng.IntN(size), Dtype: dt, Count: count}
						if kind == SendRecv {
							perm := rng.Perm(size) // rank r sends to perm[r]
							call.Dest, call.Src = perm, make([]int, size)
							for r, d := range perm {
								call.Src[d] = r
							}
						}
						name := fmt.Sprintf("size%d/%v/%v/%v/n%d/root%d", size, kind, dt, op, count, call.Root)
						checkCall(t, rng, comm, call, name)
					}
				}
			}
		}
	}
}

// checkCall runs call on comm with random send buffers (one element longer
// than needed, which must be ignored) and compares with the reference; the
// send buffers must come back untouched.
func checkCall(t *testing.T, rng *rand.Rand, comm Comm, call *Call, name string) {
	t.Helper()
	size := comm.Size()
	sendVals := make([][]complex128, size)
	if n := call.SendLen(size); n > 0 && call.Kind != Barrier {
		call.Send = make([]sharding.Buffer, size)
		for r := range size {
			sendVals[r] = randomValues(rng, call.Dtype, n+1)
			call.Send[r] = hostBuffer(t, call.Dtype, sendVals[r])
		}
	}
	if n := call.RecvLen(size); n > 0 && call.Kind != Barrier {
		call.Recv = make([]sharding.Buffer, size)
		for r := range size {
			call.Recv[r] = hostBuffer(t, call.Dtype, randomValues(rng, call.Dtype, n+1))
		}
	}
	if err := comm.Do(call); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if call.Kind == Barrier || call.Count == 0 {
		return
	}
	want := reference(call, size, sendVals)
	tol := tolerance(call.Dtype)
	for r := range size {
		got := bufferValues(call.Recv[r])
		for i, w := range want[r] {
			if cmplx.Abs(got[i]-w) > tol*(1+cmplx.Abs(w)) {
				t.Fatalf("%s: rank %d element %d = %v, want %v", name, r, i, got[i], w)
			}
		}
		sent := bufferValues(call.Send[r])
		for i, v := range sendVals[r] {
			if cmplx.Abs(sent[i]-v) > tol*(1+cmplx.Abs(v)) {
				t.Fatalf("%s: send buffer of rank %d changed at %d", name, r, i)
			}
		}
	}
}

func TestHostMeshBadCalls(t *testing.T) {
	m, _ := sharding.CPUMesh(3)
	comm, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	f64 := func(n int) []sharding.Buffer {
		bs := make([]sharding.Buffer, 3)
		for i := range bs {
			bs[i], _ = sharding.NewHostBuffer(make([]float64, n))
		}
		return bs
	}
	f32 := func(n int) []sharding.Buffer {
		bs := make([]sharding.Buffer, 3)
		for i := range bs {
			bs[i], _ = sharding.NewHostBuffer(make([]float32, n))
		}
		return bs
	}
	for _, tc := range []struct {
		name string
		call Call
		want error
	}{
		{"send alone", Call{Kind: Send, Dtype: tensor.Float64, Count: 2, Dest: []int{1, 2, 0}, Send: f64(2)}, ErrBadCall},
		{"recv alone", Call{Kind: Recv, Dtype: tensor.Float64, Count: 2, Src: []int{1, 2, 0}, Recv: f64(2)}, ErrBadCall},
		{"root out of range", Call{Kind: Bcast, Root: 3, Dtype: tensor.Float64, Count: 2, Send: f64(2), Recv: f64(2)}, ErrBadCall},
		{"short receive", Call{Kind: AllGather, Dtype: tensor.Float64, Count: 2, Send: f64(2), Recv: f64(5)}, ErrBadCall},
		{"short send", Call{Kind: Scatter, Dtype: tensor.Float64, Count: 2, Send: f64(5), Recv: f64(2)}, ErrBadCall},
		{"dtype of buffers", Call{Kind: AllReduce, Dtype: tensor.Float64, Count: 2, Send: f32(2), Recv: f32(2)}, ErrBadCall},
		{"min of complex", Call{Kind: AllReduce, Op: Min, Dtype: tensor.Complex128, Count: 2}, ErrBadCall},
		{"bool dtype", Call{Kind: AllReduce, Dtype: tensor.Bool, Count: 2}, ErrBadCall},
		{"unmatched pairs", Call{Kind: SendRecv, Dtype: tensor.Float64, Count: 2, Dest: []int{1, 2, 0}, Src: []int{1, 2, 0}, Send: f64(2), Recv: f64(2)}, ErrMismatch},
		{"too few peers", Call{Kind: SendRecv, Dtype: tensor.Float64, Count: 2, Dest: []int{1, 0}, Src: []int{1, 0}, Send: f64(2), Recv: f64(2)}, ErrBadCall},
		{"unknown kind", Call{Kind: Kind(99)}, ErrBadCall},
	} {
		call := tc.call
		if err := comm.Do(&call); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := comm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := comm.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := comm.Do(&Call{Kind: Barrier}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
}

func TestHostMeshSplit(t *testing.T) {
	rng := newRand(t)
	m, _ := sharding.CPUMesh(5)
	comm, _ := NewMesh(m)
	// colors: even ranks 0, odd ranks 1, rank 4 left out; keys reverse.
	color := func(r int) int {
		if r == 4 {
			return -1
		}
		return r % 2
	}
	subs, err := comm.Split(color, func(r int) int { return -r })
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || subs[0].Size() != 2 || subs[1].Size() != 2 {
		t.Fatalf("Split sizes: %d comms", len(subs))
	}
	for i, s := range subs {
		checkCall(t, rng, s, &Call{Kind: Scan, Dtype: tensor.Float64, Count: 4}, fmt.Sprintf("sub %d scan", i))
	}
	if err := subs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := subs[1].Do(&Call{Kind: Barrier}); err != nil {
		t.Fatalf("closing one sub-communicator closed another: %v", err)
	}
	if err := comm.Do(&Call{Kind: Barrier}); err != nil {
		t.Fatalf("closing a sub-communicator closed the parent: %v", err)
	}
}

func TestNewMeshErrors(t *testing.T) {
	if _, err := NewMesh(nil); !errors.Is(err, ErrBadCall) {
		t.Errorf("nil mesh: %v", err)
	}
}

// TestSelf: the one-rank process communicator is not a mesh and runs
// every collective of one rank.
func TestSelf(t *testing.T) {
	rng := newRand(t)
	c := Self()
	if _, ok := c.(MeshComm); ok || c.Size() != 1 || len(c.LocalRanks()) != 1 {
		t.Fatalf("Self: %T size %d local %v", c, c.Size(), c.LocalRanks())
	}
	for _, k := range []Kind{AllReduce, AllGather, ReduceScatter, AllToAll, Bcast, Reduce, Gather, Scatter, Scan} {
		checkCall(t, rng, c, &Call{Kind: k, Dtype: tensor.Complex64, Count: 5}, k.String())
	}
	if err := c.Do(&Call{Kind: Send, Dtype: tensor.Float64, Count: 1, Dest: []int{0}}); !errors.Is(err, ErrBadCall) {
		t.Fatalf("Send on Self: %v", err)
	}
}
