//go:build mpi

// Command collbench times each collective made through collective/mpi
// (Comm.Do, with the cross-rank checks and without) against the same MPI
// call made directly from C in the same process (blocking, the baseline of
// the ratios, and nonblocking with MPI_Wait), for message sizes from 8 B to
// 64 MiB, and prints a Markdown table with the medians and the ratios.
//
//	go build -tags mpi ./cmd/collbench
//	mpirun --oversubscribe -n 4 ./collbench [-min 8] [-max 64Mi] [-kinds allreduce,bcast] [-budget 300ms]
//
// A size is the largest buffer of one rank: for the collectives whose
// buffer holds one block per rank (allgather, reducescatter, alltoall,
// gather, scatter) each block is size/ranks; barrier moves no data and has
// one row. In every repetition each path makes an untimed call and then,
// after a barrier, the timed one, whose time is the slowest rank's; the
// table shows the median over the repetitions, after two warm-up calls.
//
// It needs nothing but MPI and takes the ranks from mpirun, so the same
// binary runs on a laptop or a many-core host (mpirun -n 2, -n 4, ...);
// BENCHMARKS.md, "Collectives over MPI", has the command lines.
//
// The do-blocking path is do-nochecks with MPI's blocking call for every
// kind from 1 MiB (MGLA_MPI_BLOCKING; where MPI provides
// MPI_THREAD_MULTIPLE). The do-after path is do-nochecks with the rules
// collective/mpi had before MGLA_MPI_LOCAL_WORK and MGLA_MPI_BLOCKING: the
// local work after the transfer, nonblocking calls only;
// do-nochecks/do-after is what the new rules gain.
//
// The graph path is the collective graph op (package collective) on the
// checked communicator, run by a Gorgonia TapeMachine: its ratio to "do"
// is the cost of the graph layer; the op path calls the same op's Do
// directly, so graph/op is the TapeMachine's share of it, and the handoff
// path makes the call of "do" the way RunAll runs its tape (on a goroutine
// of its own while the caller holds its OS thread), so handoff/do is the
// part of that share that comes from the thread hand-off. Every path reads
// the same send buffer and writes the same receive buffer, the graph node's
// output, so that none gains or loses by where its own buffers lie. -paths picks
// paths, -cpuprofile writes each rank's CPU profile. To time another way
// of making the calls, add an entry to paths.
package main

/*
#cgo pkg-config: ompi-c
#include <mpi.h>

// raw makes one collective (kind: collective.Kind) on float64 data with
// MPI's blocking call, or its nonblocking call and MPI_Wait.
static int raw(int kind, int nonblocking, const void *s, void *r, int count, MPI_Fint f, int dest, int src) {
	MPI_Comm comm = MPI_Comm_f2c(f);
	MPI_Datatype dt = MPI_DOUBLE;
	MPI_Request req[2];
	int n = 1, rc;
	if (!nonblocking) {
		switch (kind) {
		case 0: return MPI_Allreduce(s, r, count, dt, MPI_SUM, comm);
		case 1: return MPI_Allgather(s, count, dt, r, count, dt, comm);
		case 2: return MPI_Reduce_scatter_block(s, r, count, dt, MPI_SUM, comm);
		case 3: return MPI_Alltoall(s, count, dt, r, count, dt, comm);
		case 4: return MPI_Bcast(r, count, dt, 0, comm);
		case 5: return MPI_Reduce(s, r, count, dt, MPI_SUM, 0, comm);
		case 6: return MPI_Gather(s, count, dt, r, count, dt, 0, comm);
		case 7: return MPI_Scatter(s, count, dt, r, count, dt, 0, comm);
		case 8: return MPI_Scan(s, r, count, dt, MPI_SUM, comm);
		case 9: return MPI_Sendrecv(s, count, dt, dest, 1, r, count, dt, src, 1, comm, MPI_STATUS_IGNORE);
		case 12: return MPI_Barrier(comm);
		}
		return MPI_ERR_ARG;
	}
	switch (kind) {
	case 0: rc = MPI_Iallreduce(s, r, count, dt, MPI_SUM, comm, req); break;
	case 1: rc = MPI_Iallgather(s, count, dt, r, count, dt, comm, req); break;
	case 2: rc = MPI_Ireduce_scatter_block(s, r, count, dt, MPI_SUM, comm, req); break;
	case 3: rc = MPI_Ialltoall(s, count, dt, r, count, dt, comm, req); break;
	case 4: rc = MPI_Ibcast(r, count, dt, 0, comm, req); break;
	case 5: rc = MPI_Ireduce(s, r, count, dt, MPI_SUM, 0, comm, req); break;
	case 6: rc = MPI_Igather(s, count, dt, r, count, dt, 0, comm, req); break;
	case 7: rc = MPI_Iscatter(s, count, dt, r, count, dt, 0, comm, req); break;
	case 8: rc = MPI_Iscan(s, r, count, dt, MPI_SUM, comm, req); break;
	case 9:
		n = 2;
		rc = MPI_Irecv(r, count, dt, src, 1, comm, &req[1]);
		if (rc == MPI_SUCCESS) rc = MPI_Isend(s, count, dt, dest, 1, comm, &req[0]);
		break;
	case 12: rc = MPI_Ibarrier(comm, req); break;
	default: return MPI_ERR_ARG;
	}
	return rc != MPI_SUCCESS ? rc : MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

static int barrier(MPI_Fint f) { return MPI_Barrier(MPI_Comm_f2c(f)); }

// slowest is the largest v over the ranks.
static double slowest(MPI_Fint f, double v) {
	double out = v;
	MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_Comm_f2c(f));
	return out;
}
*/
import "C"

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A bench is one collective at one size on this rank: its buffers and
// communicators, which the paths make their calls from.
type bench struct {
	kind               collective.Kind
	count              int // elements of one block
	send, recv         []float64
	rank, size         int
	fortran            C.MPI_Fint
	checked, unchecked *mpi.Comm
	graph              *graphRun // this size's graph, which every path shares buffers with
}

// call is b as a collective.Call (SendRecv: a ring, to the next rank and
// from the previous one).
func (b *bench) call() *collective.Call {
	c := &collective.Call{Kind: b.kind, Op: collective.Sum, Dtype: tensor.Float64, Count: b.count, Name: "collbench"}
	if b.kind == collective.SendRecv {
		c.Dest, c.Src = []int{(b.rank + 1) % b.size}, []int{(b.rank + b.size - 1) % b.size}
		c.Tag = 1
	}
	if b.kind == collective.Barrier {
		return c
	}
	s, err := sharding.NewHostBuffer(b.send[:c.SendLen(b.size)])
	check(err)
	r, err := sharding.NewHostBuffer(b.recv[:c.RecvLen(b.size)])
	check(err)
	c.Send, c.Recv = []sharding.Buffer{s}, []sharding.Buffer{r}
	return c
}

// A path is a way of making a bench's call: setup returns a function that
// makes one call.
type path struct {
	name  string
	setup func(b *bench) func() error
}

// paths are the ways of making a bench's call that collbench times (-paths
// picks some); the first is the baseline of the ratios.
var paths = []path{
	{"mpi", rawPath(false)},
	{"mpi-i", rawPath(true)},
	{"do", func(b *bench) func() error { c := b.call(); return func() error { return b.checked.Do(c) } }},
	{"do-nochecks", func(b *bench) func() error { c := b.call(); return func() error { return b.unchecked.Do(c) } }},
	{"graph", graphPath},
	{"op", opPath},
	{"handoff", handoffPath},
	{"do-blocking", func(b *bench) func() error {
		c := b.call()
		return withEnv(func() error { return b.unchecked.Do(c) }, "MGLA_MPI_BLOCKING", allBlocking)
	}},
	{"do-after", func(b *bench) func() error {
		c := b.call()
		return withEnv(func() error { return b.unchecked.Do(c) }, "MGLA_MPI_LOCAL_WORK", "after", "MGLA_MPI_BLOCKING", "none")
	}},
}

// allBlocking lists every kind for MGLA_MPI_BLOCKING.
var allBlocking = "allreduce,allgather,reducescatter,alltoall,bcast,reduce,gather,scatter,scan"

// withEnv returns run with the environment variables (name, value pairs)
// set for its duration: collective/mpi reads its switches on every call,
// so a path can time a way of making the calls other than the default
// (every rank sets the same).
func withEnv(run func() error, kv ...string) func() error {
	return func() error {
		old, set := make([]string, len(kv)), make([]bool, len(kv))
		for i := 0; i < len(kv); i += 2 {
			old[i], set[i] = os.LookupEnv(kv[i])
			os.Setenv(kv[i], kv[i+1])
		}
		defer func() {
			for i := 0; i < len(kv); i += 2 {
				if set[i] {
					os.Setenv(kv[i], old[i])
				} else {
					os.Unsetenv(kv[i])
				}
			}
		}()
		return run()
	}
}

// A graphRun is the graph of the graph and op paths at one size: one
// collective node (package collective, the checked communicator) on an
// input node that holds b.send, and the TapeMachine that runs it. It has
// run once, so the node's output exists; that output is every path's
// receive buffer (b.recv), so that all paths read and write the same memory
// and no path gains or loses by where its own buffers lie (pages, caches,
// NUMA).
type graphRun struct {
	node  *G.Node
	input *tensor.Dense
	vm    G.VM
}

// newGraphRun builds b's graph, runs it once and points b.recv at the
// node's output.
func newGraphRun(b *bench) *graphRun {
	g, node, x := graphNode(b)
	gr := &graphRun{node: node, input: x, vm: G.NewTapeMachine(g)}
	check(gr.vm.RunAll())
	out, ok := node.Value().(*tensor.Dense)
	if !ok {
		check(fmt.Errorf("the %v node's value is %T, not a host tensor", b.kind, node.Value()))
	}
	gr.vm.Reset()
	want := b.call().RecvLen(b.size)
	recv, ok := out.Data().([]float64)
	if !ok || len(recv) < want {
		check(fmt.Errorf("the %v node's output holds %d elements, want float64 and at least %d", b.kind, out.Size(), want))
	}
	// The op path writes where the graph path does only if the machine
	// hands on the op's own output rather than a copy of it.
	direct, err := node.Op().Do(x)
	check(err)
	if d, ok := direct.(*tensor.Dense); !ok || d.Uintptr() != out.Uintptr() {
		check(fmt.Errorf("the %v node's value is not the memory its op writes", b.kind))
	}
	b.recv = recv
	return gr
}

// close frees the machine and hands b.recv back its own buffer.
func (gr *graphRun) close(b *bench, own []float64) {
	gr.vm.Close()
	b.recv = own
}

// graphPath makes the call as the graph op run by a TapeMachine, run and
// reset per call.
func graphPath(b *bench) func() error {
	vm := b.graph.vm
	return func() error {
		defer vm.Reset()
		return vm.RunAll()
	}
}

// opPath calls the Do method of graphPath's op directly, on the same input
// value, without a TapeMachine: with graph, it tells the op's cost from the
// machine's. The op keeps its output between calls, so it writes where the
// graph path does.
func opPath(b *bench) func() error {
	op, x := b.graph.node.Op(), b.graph.input
	return func() error {
		_, err := op.Do(x)
		return err
	}
}

// handoffPath makes the call as "do" does, on a new goroutine while the
// caller's goroutine holds its OS thread, as TapeMachine.RunAll runs its
// tape: handoff/do is what that hand-off between threads costs, and
// graph/handoff the rest of the graph layer (the machine and the op).
func handoffPath(b *bench) func() error {
	c := b.call()
	return func() error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done := make(chan error)
		go func() { done <- b.checked.Do(c) }()
		return <-done
	}
}

// graphNode builds the graph of graphRun and returns it, its collective
// node and the input's value.
func graphNode(b *bench) (*G.ExprGraph, *G.Node, *tensor.Dense) {
	c := b.call()
	n := max(c.SendLen(b.size), 1) // Barrier: a one-element value passes through
	g := G.NewGraph()
	xv := tensor.New(tensor.WithShape(n), tensor.WithBacking(b.send[:n]))
	x := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("x"), G.WithValue(xv))
	var node *G.Node
	var err error
	switch b.kind {
	case collective.AllReduce:
		node, err = collective.AllReduceNode(x, b.checked, collective.Sum)
	case collective.AllGather:
		node, err = collective.AllGatherNode(x, b.checked)
	case collective.ReduceScatter:
		node, err = collective.ReduceScatterNode(x, b.checked, collective.Sum)
	case collective.AllToAll:
		node, err = collective.AllToAllNode(x, b.checked)
	case collective.Bcast:
		node, err = collective.BcastNode(x, b.checked, 0)
	case collective.Reduce:
		node, err = collective.ReduceNode(x, b.checked, collective.Sum, 0)
	case collective.Gather:
		node, err = collective.GatherNode(x, b.checked, 0)
	case collective.Scatter:
		node, err = collective.ScatterNode(x, b.checked, 0)
	case collective.Scan:
		node, err = collective.ScanNode(x, b.checked, collective.Sum)
	case collective.SendRecv:
		node, err = collective.SendRecvNode(x, b.checked, c.Dest, c.Src, c.Tag)
	case collective.Barrier:
		node, err = collective.BarrierNode(x, b.checked)
	default:
		err = fmt.Errorf("no graph op for %v", b.kind)
	}
	check(err)
	return g, node, xv
}

// rawPath calls MPI from C, blocking or nonblocking with MPI_Wait.
func rawPath(nonblocking bool) func(b *bench) func() error {
	nb := C.int(0)
	if nonblocking {
		nb = 1
	}
	return func(b *bench) func() error {
		kind, count := C.int(b.kind), C.int(b.count)
		dest, src := C.int((b.rank+1)%b.size), C.int((b.rank+b.size-1)%b.size)
		return func() error {
			if rc := C.raw(kind, nb, unsafePointer(b.send), unsafePointer(b.recv), count, b.fortran, dest, src); rc != 0 {
				return fmt.Errorf("MPI error %d", int(rc))
			}
			return nil
		}
	}
}

func main() {
	minBytes := flag.String("min", "8", "smallest size in bytes (suffixes Ki, Mi)")
	maxBytes := flag.String("max", "64Mi", "largest size in bytes")
	only := flag.String("kinds", "", "comma-separated collectives (default all)")
	budget := flag.Duration("budget", 300*time.Millisecond, "time per size for all paths together, which sets the repetitions every path makes (7 to 200)")
	onlyPaths := flag.String("paths", "", "comma-separated paths after mpi, the baseline (default all)")
	cpuProfile := flag.String("cpuprofile", "", "write each rank's CPU profile to this file name with .rank appended")
	flag.Parse()
	lo, hi := parseBytes(*minBytes), parseBytes(*maxBytes)
	check(checkSizes(lo, hi))
	check(checkKinds(*only))
	choosePaths(*onlyPaths)

	checked, err := mpi.World()
	check(err)
	unchecked, err := mpi.World(mpi.WithoutChecks())
	check(err)
	b := &bench{rank: checked.Rank(), size: checked.Size(), fortran: C.MPI_Fint(checked.Fortran()), checked: checked, unchecked: unchecked}
	if *cpuProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *cpuProfile, b.rank))
		check(err)
		check(pprof.StartCPUProfile(f))
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	// At least one element per rank: the blocks of one rank are never empty.
	b.send, b.recv = make([]float64, max(hi/8, b.size)), make([]float64, max(hi/8, b.size))
	for i := range b.send {
		b.send[i] = float64(i%7) + 1
	}
	if b.rank == 0 {
		fmt.Printf("collbench: %d ranks; median µs of the slowest rank; ratios against %s; single copy %v\n\n", b.size, paths[0].name, mpi.SingleCopy())
		head := "| collective | bytes | reps |"
		line := "|---|---:|---:|"
		for _, p := range paths {
			head += " " + p.name + " µs |"
			line += "---:|"
		}
		for _, p := range paths[1:] {
			head += " " + p.name + "/" + paths[0].name + " |"
			line += "---:|"
		}
		fmt.Println(head)
		fmt.Println(line)
	}
	for _, k := range kinds {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), k.name) {
			continue
		}
		for bytes := lo; bytes <= hi; bytes = nextSize(bytes, hi) {
			b.kind, b.count = k.kind, max(bytes/8, 1)
			switch k.kind {
			case collective.AllGather, collective.ReduceScatter, collective.AllToAll, collective.Gather, collective.Scatter:
				b.count = max(bytes/8/b.size, 1)
			case collective.Barrier:
				b.count, bytes = 0, hi // no data: one row
			}
			medians, reps := b.measure(*budget)
			if b.rank == 0 {
				shown := showBytes(bytes)
				if b.kind == collective.Barrier {
					shown = "0 B"
				}
				row := fmt.Sprintf("| %s | %s | %d |", k.name, shown, reps)
				for _, m := range medians {
					row += fmt.Sprintf(" %.1f |", m.Seconds()*1e6)
				}
				for _, m := range medians[1:] {
					row += fmt.Sprintf(" %.2f |", m.Seconds()/medians[0].Seconds())
				}
				fmt.Println(row)
			}
			if bytes == hi {
				break
			}
		}
	}
	check(mpi.Finalize())
}

// choosePaths keeps the baseline and the paths named in list (all when
// list is empty), in the order of paths.
func choosePaths(list string) {
	if list == "" {
		return
	}
	names := strings.Split(list, ",")
	kept := []path{paths[0]} // a new array: paths is read while kept grows
	for _, p := range paths[1:] {
		if slices.Contains(names, p.name) {
			kept = append(kept, p)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(kept, func(p path) bool { return p.name == n }) && n != paths[0].name {
			log.Fatalf("collbench: no path %q", n)
		}
	}
	paths = kept
}

// measure times every path on b: two warm-up calls each, then repetitions
// (the same number on every rank) of all paths in turn. In a repetition
// each path makes one untimed call and then, after a barrier, the timed
// one, so that every path is timed in its own steady state (its buffers
// where its previous call left them in the caches) rather than in the
// state the path before it left; the time is the slowest rank's.
func (b *bench) measure(budget time.Duration) ([]time.Duration, int) {
	own := b.recv
	b.graph = newGraphRun(b)
	defer b.graph.close(b, own)
	runs := make([]func() error, len(paths))
	for i, p := range paths {
		runs[i] = p.setup(b)
	}
	one := func(run func() error) time.Duration {
		if rc := C.barrier(b.fortran); rc != 0 {
			log.Fatalf("MPI_Barrier: error %d", int(rc))
		}
		start := time.Now()
		check(run())
		return time.Duration(float64(C.slowest(b.fortran, C.double(time.Since(start).Seconds()))) * 1e9)
	}
	var round time.Duration
	for _, run := range runs {
		one(run)
		round += 2 * one(run)
	}
	reps := int(min(max(budget/max(round, 1), 7), 200))
	times := make([][]time.Duration, len(paths))
	for range reps {
		for i, run := range runs {
			check(run())
			times[i] = append(times[i], one(run))
		}
	}
	medians := make([]time.Duration, len(paths))
	for i, ts := range times {
		slices.Sort(ts)
		medians[i] = ts[len(ts)/2]
	}
	return medians, reps
}

// nextSize steps through the sizes: powers of 4 times 8 bytes, with 1 MiB
// and the largest size included.
func nextSize(bytes, hi int) int {
	next := bytes * 4
	if bytes < 1<<20 && next > 1<<20 {
		next = 1 << 20
	}
	return min(next, hi)
}

func parseBytes(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "Ki"):
		s, mult = strings.TrimSuffix(s, "Ki"), 1<<10
	case strings.HasSuffix(s, "Mi"):
		s, mult = strings.TrimSuffix(s, "Mi"), 1<<20
	}
	n, err := strconv.Atoi(s)
	if err != nil || n*mult < 8 {
		log.Fatalf("collbench: size %q: want bytes ≥ 8 (suffixes Ki, Mi)", s)
	}
	return n * mult
}

func showBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func unsafePointer(s []float64) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "collbench:", err)
		os.Exit(1)
	}
}
