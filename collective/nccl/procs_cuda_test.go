//go:build mglacuda

package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/cu"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The per-GPU process test. With MGLA_NCCL_PROCS=N, TestProcesses starts N
// copies of this test binary, each with CUDA_VISIBLE_DEVICES set to one GPU
// and the file bootstrap; each copy (a "child", told so by
// MGLA_NCCL_CHILD) joins one NCCL process communicator and runs
// processSuite: every collective on device and on host buffers, the graph
// ops forward and their gradients, point-to-point pairs, and, with N ≥ 2,
// calls that differ between ranks, which must give collective.ErrMismatch
// with the same text on every rank (the parent compares the texts the
// children print).
const (
	procsEnv = "MGLA_NCCL_PROCS"
	childEnv = "MGLA_NCCL_CHILD" // "rank size seed idfile"
	// mismatchMark starts the lines in which a child reports the text of
	// an expected mismatch: "MGLA-MISMATCH label text".
	mismatchMark = "MGLA-MISMATCH "
	childTimeout = 60 * time.Second
)

func TestProcesses(t *testing.T) {
	if spec := os.Getenv(childEnv); spec != "" {
		processChild(t, spec)
		return
	}
	v := os.Getenv(procsEnv)
	if v == "" {
		t.Skipf("set %s=N to run N processes of one GPU each (run-gpu.sh tests nccl-procs)", procsEnv)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of processes ≥ 1", procsEnv, v)
	}
	gpus := visibleGPUs(t)
	if n > len(gpus) {
		t.Skipf("%s=%d needs %d GPUs, this machine has %d: runs of several processes need a multi-GPU machine (issue 20)", procsEnv, n, n, len(gpus))
	}
	if n == 1 {
		t.Logf("%s=1: one process of one rank runs every call, the graph ops and the consistency checks; the cross-rank mismatches need 2 or more GPUs (issue 20's machines)", procsEnv)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d processes, seed %d", n, seed)
	id := filepath.Join(t.TempDir(), "nccl-id")
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	for r := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProcesses$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %s", childEnv, r, n, seed, id), "CUDA_VISIBLE_DEVICES="+gpus[r])
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting rank %d: %v", r, err)
		}
		cmds[r] = cmd
	}
	texts := map[string]map[int]string{} // label → rank → text
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("rank %d (gpu %s): %v; its output:\n%s", r, gpus[r], err, outs[r].String())
		} else {
			t.Logf("rank %d (gpu %s) passed:\n%s", r, gpus[r], summary(outs[r].String()))
		}
		for _, line := range strings.Split(outs[r].String(), "\n") {
			if rest, ok := strings.CutPrefix(line, mismatchMark); ok {
				label, text, _ := strings.Cut(rest, " ")
				if texts[label] == nil {
					texts[label] = map[int]string{}
				}
				texts[label][r] = text
			}
		}
	}
	// The mismatches of processSuite: collectives and Split on every rank,
	// the point-to-point one on ranks 0 and 1.
	want := map[string]int{}
	if n >= 2 {
		want = map[string]int{"collective": n, "split": n, "pair": 2}
	}
	for label, count := range want {
		if len(texts[label]) != count {
			t.Errorf("mismatch %q reported by %d ranks, want %d", label, len(texts[label]), count)
		}
	}
	for label, byRank := range texts {
		if _, ok := want[label]; !ok {
			t.Errorf("unexpected mismatch report %q", label)
		}
		var ranks []int
		for r := range byRank {
			ranks = append(ranks, r)
		}
		sort.Ints(ranks)
		for _, r := range ranks[1:] {
			if byRank[r] != byRank[ranks[0]] {
				t.Errorf("mismatch %q: rank %d says %q, rank %d says %q", label, ranks[0], byRank[ranks[0]], r, byRank[r])
			}
		}
	}
}

// summary is a passing child's output without the lines of its passing
// subtests.
func summary(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, " ") && strings.HasPrefix(trimmed, "--- PASS") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// visibleGPUs are the GPU ids a child may be given in CUDA_VISIBLE_DEVICES
// (those of this process's own CUDA_VISIBLE_DEVICES, when set).
func visibleGPUs(t *testing.T) []string {
	t.Helper()
	if _, err := sharding.GPUMesh(); errors.Is(err, sharding.ErrNoGPU) {
		t.Skipf("no GPU (%v): the NCCL engine needs one", err)
	}
	n, err := cu.NumDevices()
	if err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("CUDA_VISIBLE_DEVICES"); v != "" {
		ids := strings.Split(v, ",")
		return ids[:min(n, len(ids))]
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}

// processChild is one rank of TestProcesses.
func processChild(t *testing.T, spec string) {
	var rank, size int
	var seed uint64
	var id string
	if _, err := fmt.Sscanf(spec, "%d %d %d %s", &rank, &size, &seed, &id); err != nil {
		t.Fatalf("%s=%q: %v", childEnv, spec, err)
	}
	t.Logf("rank %d of %d, seed %d, CUDA_VISIBLE_DEVICES=%s", rank, size, seed, os.Getenv("CUDA_VISIBLE_DEVICES"))
	comm, err := NewProcess(rank, size, 0, FileBootstrap(id), WithTimeout(childTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	m, err := sharding.GPUMesh(0)
	if err != nil {
		t.Fatal(err)
	}
	report := func(label string, err error) { fmt.Printf("%s%s %s\n", mismatchMark, label, err) }
	processSuite(t, rand.New(rand.NewPCG(seed, 16)), comm, m, report)
}

// processSuite runs on a process communicator comm whose GPU is the one
// device of m; rng must be seeded alike on every rank. report, when not
// nil, prints the error of each expected mismatch.
func processSuite(t *testing.T, rng *rand.Rand, comm collective.Comm, m *sharding.Mesh, report func(label string, err error)) {
	size, me := comm.Size(), comm.LocalRanks()[0]
	t.Run("calls", func(t *testing.T) {
		for _, cc := range cases() {
			count, root := 1+rng.IntN(3000), rng.IntN(size)
			for _, host := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%v/%v/count=%d/host=%v", cc.kind, cc.op, cc.dt, count, host), func(t *testing.T) {
					runCase(t, rng, comm, m, cc, count, root, host)
				})
			}
		}
		if err := comm.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
			t.Errorf("Barrier: %v", err)
		}
	})
	t.Run("pairs", func(t *testing.T) { sendRecvPairs(t, rng, comm) })
	t.Run("graph", func(t *testing.T) { graphOps(t, rng, comm) })
	t.Run("scalars", func(t *testing.T) { scalarOps(t, comm) })
	t.Run("checks", func(t *testing.T) {
		// The check path ran: each collective advanced the call number
		// that the records carry, over records in the comm's GPU memory.
		e := comm.(*Comm).e
		before := e.seq
		x := collectivetest.Dense(tensor.Float64, tensor.Shape{5}, collectivetest.Random(rng, tensor.Float64, collective.Sum, 5))
		for range 3 {
			if err := comm.Do(hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 5}, x.Data(), make([]float64, 5))); err != nil {
				t.Fatal(err)
			}
		}
		if e.seq != before+3 || e.meta.dev == 0 {
			t.Errorf("after 3 AllReduces: call number %d (was %d), record buffers %#x; want 3 more and allocated", e.seq, before, e.meta.dev)
		}
	})
	if size < 2 {
		t.Logf("rank %d: one rank cannot disagree with another; the mismatch checks need 2 or more processes", me)
		return
	}
	t.Run("mismatch", func(t *testing.T) { mismatches(t, comm, report) })
}

// hostCall is c with host buffers over send and recv (nil: none).
var hostCall = collectivetest.HostCall

// sendRecvPairs: lone Sends and Recvs around the ring (even ranks send
// first, odd ranks receive first, so that no two ranks wait for each
// other), on host buffers. One rank alone would send to itself, which a
// lone Send never completes (TestCallTimeout), so it has nothing to do.
func sendRecvPairs(t *testing.T, rng *rand.Rand, comm collective.Comm) {
	size, me := comm.Size(), comm.LocalRanks()[0]
	if size < 2 {
		t.Skip("one rank: no peer to send to")
	}
	const n = 77
	data := make([][]complex128, size)
	for r := range data {
		data[r] = collectivetest.Random(rng, tensor.Complex128, collective.Sum, n)
	}
	dest, src := (me+1)%size, (me+size-1)%size
	got := make([]complex128, n)
	send := func() error {
		return comm.Do(hostCall(collective.Call{Kind: collective.Send, Dest: []int{dest}, Tag: 1, Dtype: tensor.Complex128, Count: n}, data[me], nil))
	}
	recv := func() error {
		return comm.Do(hostCall(collective.Call{Kind: collective.Recv, Src: []int{src}, Tag: 1, Dtype: tensor.Complex128, Count: n}, nil, got))
	}
	steps := []func() error{send, recv}
	if me%2 == 1 {
		steps = []func() error{recv, send}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range got {
		if got[i] != data[src][i] {
			t.Fatalf("rank %d received %v at %d from rank %d, which sent %v", me, got[i], i, src, data[src][i])
		}
	}
}

// graphCase is one graph op for graphOps: how to build it, the reference
// call of its forward value and that of its gradient (the adjoint, applied
// to the weights of the loss Σ w∘y on every rank).
type graphCase struct {
	name    string
	build   func(x *G.Node) (*G.Node, error)
	forward collective.Call
	adjoint *collective.Call // nil: the identity (Barrier)
	parts   bool             // the forward call's Count is one part of a rank's block
	reverse bool             // the adjoint is the reverse inclusive scan
}

func graphCases(comm collective.Comm, root int) []graphCase {
	size, me := comm.Size(), comm.LocalRanks()[0]
	dest, src := make([]int, size), make([]int, size)
	for r := range size {
		dest[r], src[r] = (r+1)%size, (r+size-1)%size
	}
	sum := collective.Sum
	return []graphCase{
		{"AllReduce", func(x *G.Node) (*G.Node, error) { return collective.AllReduceNode(x, comm, sum) },
			collective.Call{Kind: collective.AllReduce}, &collective.Call{Kind: collective.AllReduce}, false, false},
		{"AllGather", func(x *G.Node) (*G.Node, error) { return collective.AllGatherNode(x, comm) },
			collective.Call{Kind: collective.AllGather}, &collective.Call{Kind: collective.ReduceScatter}, false, false},
		{"ReduceScatter", func(x *G.Node) (*G.Node, error) { return collective.ReduceScatterNode(x, comm, sum) },
			collective.Call{Kind: collective.ReduceScatter}, &collective.Call{Kind: collective.AllGather}, true, false},
		{"AllToAll", func(x *G.Node) (*G.Node, error) { return collective.AllToAllNode(x, comm) },
			collective.Call{Kind: collective.AllToAll}, &collective.Call{Kind: collective.AllToAll}, true, false},
		{"Bcast", func(x *G.Node) (*G.Node, error) { return collective.BcastNode(x, comm, root) },
			collective.Call{Kind: collective.Bcast, Root: root}, &collective.Call{Kind: collective.Reduce, Root: root}, false, false},
		{"Reduce", func(x *G.Node) (*G.Node, error) { return collective.ReduceNode(x, comm, sum, root) },
			collective.Call{Kind: collective.Reduce, Root: root}, &collective.Call{Kind: collective.Bcast, Root: root}, false, false},
		{"Gather", func(x *G.Node) (*G.Node, error) { return collective.GatherNode(x, comm, root) },
			collective.Call{Kind: collective.Gather, Root: root}, &collective.Call{Kind: collective.Scatter, Root: root}, false, false},
		{"Scatter", func(x *G.Node) (*G.Node, error) { return collective.ScatterNode(x, comm, root) },
			collective.Call{Kind: collective.Scatter, Root: root}, &collective.Call{Kind: collective.Gather, Root: root}, true, false},
		{"Scan", func(x *G.Node) (*G.Node, error) { return collective.ScanNode(x, comm, sum) },
			collective.Call{Kind: collective.Scan}, &collective.Call{Kind: collective.Scan}, false, true},
		{"SendRecv", func(x *G.Node) (*G.Node, error) {
			return collective.SendRecvNode(x, comm, dest[me:me+1], src[me:me+1], 2)
		}, collective.Call{Kind: collective.SendRecv, Src: src}, &collective.Call{Kind: collective.SendRecv, Src: dest}, false, false},
		{"Barrier", func(x *G.Node) (*G.Node, error) { return collective.BarrierNode(x, comm) },
			collective.Call{Kind: collective.Barrier}, nil, false, false},
	}
}

// graphOps runs every graph op on host values of every dtype against the
// reference, and for the real dtypes the gradient of Σ w∘op(x) (Grad with
// the TapeMachine, and the LispMachine) against the reference of the
// adjoint collective applied to every rank's w.
func graphOps(t *testing.T, rng *rand.Rand, comm collective.Comm) {
	size, me := comm.Size(), comm.LocalRanks()[0]
	block := tensor.Shape{2 * size, 3} // parts of 2 rows: not a multiple of anything
	elems := block.TotalSize()
	for _, gc := range graphCases(comm, rng.IntN(size)) {
		for _, dt := range sharding.Dtypes {
			xs, ws := make([][]complex128, size), make([][]complex128, size)
			for r := range size {
				xs[r] = collectivetest.Random(rng, dt, collective.Sum, elems)
			}
			count := elems
			if gc.parts {
				count /= size
			}
			fwd := gc.forward
			fwd.Count = count
			want := xs
			if gc.forward.Kind != collective.Barrier {
				want = collectivetest.Reference(&fwd, size, xs)
			}
			outElems := len(want[me])
			for r := range size {
				ws[r] = collectivetest.Random(rng, dt, collective.Sum, outElems)
			}
			name := fmt.Sprintf("%s/%v", gc.name, dt)
			grads := !collectivetest.IsComplex(dt)
			for _, lisp := range []bool{false, true} {
				if lisp && !grads {
					continue
				}
				g := G.NewGraph()
				x := G.NewTensor(g, dt, 2, G.WithShape(block...), G.WithName("x"), G.WithValue(collectivetest.Dense(dt, block, xs[me])))
				y, err := gc.build(x)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var vm G.VM
				if grads {
					w := G.NewTensor(g, dt, y.Dims(), G.WithShape(y.Shape()...), G.WithName("w"), G.WithValue(collectivetest.Dense(dt, y.Shape(), ws[me])))
					loss := G.Must(G.Sum(G.Must(G.HadamardProd(y, w))))
					if !lisp {
						if _, err := G.Grad(loss, x); err != nil {
							t.Fatalf("%s: Grad: %v", name, err)
						}
					}
				}
				if lisp {
					vm = G.NewLispMachine(g)
				} else {
					vm = G.NewTapeMachine(g)
				}
				err = vm.RunAll()
				vm.Close()
				if err != nil {
					t.Fatalf("%s lisp=%v: %v", name, lisp, err)
				}
				closeTo(t, fmt.Sprintf("%s lisp=%v: rank %d's value", name, lisp, me), collectivetest.Values(y.Value()), want[me], dt, size)
				if !grads {
					continue
				}
				gv, err := x.Grad()
				if err != nil {
					t.Fatalf("%s lisp=%v: %v", name, lisp, err)
				}
				closeTo(t, fmt.Sprintf("%s lisp=%v: rank %d's gradient", name, lisp, me), collectivetest.Values(gv), adjointOf(gc, size, count, ws)[me], dt, size)
			}
		}
	}
}

// scalarOps: a scalar (a per-rank loss) through AllReduce-sum comes back a
// Gorgonia scalar, the sum over the ranks, and the gradient of w_r·y on
// each rank is Σ_r w_r, on both machines.
func scalarOps(t *testing.T, comm collective.Comm) {
	size, me := comm.Size(), comm.LocalRanks()[0]
	var sum, wsum float64
	for r := range size {
		sum += float64(r + 1)
		wsum += float64(r + 2)
	}
	for _, lisp := range []bool{false, true} {
		g := G.NewGraph()
		x := G.NewScalar(g, tensor.Float64, G.WithName("x"), G.WithValue(float64(me+1)))
		y, err := collective.AllReduceNode(x, comm, collective.Sum)
		if err != nil {
			t.Fatal(err)
		}
		cost := G.Must(G.Mul(y, G.NewConstant(float64(me+2))))
		var vm G.VM
		if lisp {
			vm = G.NewLispMachine(g)
		} else {
			if _, err := G.Grad(cost, x); err != nil {
				t.Fatal(err)
			}
			vm = G.NewTapeMachine(g)
		}
		err = vm.RunAll()
		vm.Close()
		if err != nil {
			t.Fatalf("lisp=%v: %v", lisp, err)
		}
		if v, ok := y.Value().(*G.F64); !ok || float64(*v) != sum {
			t.Errorf("lisp=%v: AllReduce of a scalar: %T %v, want the scalar %v", lisp, y.Value(), y.Value(), sum)
		}
		if gv, err := x.Grad(); err != nil || gv.Data() != wsum {
			t.Errorf("lisp=%v: gradient %v (%v), want %v", lisp, gv, err, wsum)
		}
	}
}

// adjointOf is every rank's gradient of Σ_r w_r∘op(x_r) for the weights ws.
func adjointOf(gc graphCase, size, count int, ws [][]complex128) [][]complex128 {
	if gc.adjoint == nil {
		return ws
	}
	a := *gc.adjoint
	a.Count = count // the forward's part is the adjoint's: AllGather's block is ReduceScatter's part
	if !gc.reverse {
		return collectivetest.Reference(&a, size, ws)
	}
	// Σ over ranks k ≥ r: the inclusive scan of the ranks in reverse order.
	rev := make([][]complex128, size)
	for r := range size {
		rev[r] = ws[size-1-r]
	}
	scan := collectivetest.Reference(&a, size, rev)
	out := make([][]complex128, size)
	for r := range size {
		out[r] = scan[size-1-r]
	}
	return out
}

func closeTo(t *testing.T, what string, got, want []complex128, dt tensor.Dtype, size int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	tol := tolerance(dt, size)
	for i := range want {
		if e := cmplx.Abs(got[i] - want[i]); e > tol*math.Max(1, cmplx.Abs(want[i])) {
			t.Fatalf("%s: element %d = %v, want %v (error %.3g)", what, i, got[i], want[i], e)
		}
	}
}

// mismatches: calls that differ between ranks give ErrMismatch on every
// rank taking part, move no data, and leave the communicator working.
func mismatches(t *testing.T, comm collective.Comm, report func(string, error)) {
	size, me := comm.Size(), comm.LocalRanks()[0]
	if report == nil {
		report = func(string, error) {}
	}
	// The last rank's count is one more.
	count := 6
	if me == size-1 {
		count = 7
	}
	recv := []float64{-1, -1, -1, -1, -1, -1, -1}
	start := time.Now()
	err := comm.Do(hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: count, Name: "grad"},
		[]float64{1, 2, 3, 4, 5, 6, 7}, recv))
	t.Logf("mismatched AllReduce after %v: %v", time.Since(start), err)
	if !errors.Is(err, collective.ErrMismatch) {
		t.Fatalf("AllReduce with count %d on rank %d: %v, want ErrMismatch", count, me, err)
	}
	if !strings.Contains(err.Error(), `AllReduce "grad" #`) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d has count 7", size-1)) {
		t.Errorf("the error does not name the call and the rank: %v", err)
	}
	report("collective", err)
	for i, v := range recv {
		if v != -1 {
			t.Fatalf("the mismatched AllReduce wrote element %d of the receive buffer: %v", i, v)
		}
	}
	// The communicator still works.
	sum := []float64{0}
	if err := comm.Do(hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 1}, []float64{float64(me)}, sum)); err != nil {
		t.Fatalf("AllReduce after the mismatch: %v", err)
	}
	if want := float64(size*(size-1)) / 2; sum[0] != want {
		t.Fatalf("AllReduce after the mismatch: %v, want %v", sum[0], want)
	}
	// Split: the last rank orders the ranks differently.
	key := func(r int) int { return r }
	if me == size-1 {
		key = func(r int) int { return -r }
	}
	subs, err := comm.Split(func(int) int { return 0 }, key)
	if !errors.Is(err, collective.ErrMismatch) || !strings.Contains(err.Error(), "colors and keys") {
		t.Fatalf("Split with different keys: %v, %v; want ErrMismatch on colors and keys", subs, err)
	}
	report("split", err)
	// Send and Recv: rank 0 sends 5 elements, rank 1 expects 6.
	switch me {
	case 0:
		err = comm.Do(hostCall(collective.Call{Kind: collective.Send, Dest: []int{1}, Dtype: tensor.Float32, Count: 5, Name: "x"}, make([]float32, 5), nil))
	case 1:
		err = comm.Do(hostCall(collective.Call{Kind: collective.Recv, Src: []int{0}, Dtype: tensor.Float32, Count: 6, Name: "x"}, nil, make([]float32, 6)))
	}
	if me < 2 {
		want := `Send "x" rank 0 → rank 1: rank 0 sends 5 float32, rank 1 receives 6 float32`
		if !errors.Is(err, collective.ErrMismatch) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Send of 5 to a Recv of 6: %v; want ErrMismatch %q", err, want)
		}
		report("pair", err)
	}
	if err := comm.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
		t.Fatalf("Barrier after the mismatches: %v", err)
	}
}
