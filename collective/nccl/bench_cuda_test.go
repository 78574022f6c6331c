//go:build mglacuda

package nccl

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkCollectives times Comm.Do, the collective graph op run by a
// TapeMachine, and the op's Do alone, against the same NCCL call issued raw
// (rawCall) on the same communicator, in one process, for float32 AllReduce
// (sum), AllGather and ReduceScatter of 1 MiB to 1 GiB on the mesh of every
// visible GPU. The four paths take turns in one loop on the same device
// buffers (the graph's input and output), so none gains from the others'
// data in the L2 cache. The graph is one collective node on a sharded input
// already on the GPUs (RowBlocks, one flat block per device), run with
// Reset + RunAll per call as a training loop runs it; the op's Do alone
// tells the op's share of the graph path from the machine's (Gorgonia's
// TapeMachine runs the program on a goroutine of its own and waits for it
// on the caller's locked OS thread).
//
// The size is nccl-tests' convention: the bytes of one rank's AllReduce
// buffer, of the AllGather output and of the ReduceScatter input. Metrics:
// busbw of raw, Do and the graph in GB/s (algbw·2(n-1)/n for AllReduce,
// ·(n-1)/n for the others, so 0 on one GPU), raw's algbw, each path's time
// per call, and do/raw, graph/raw and opdo/raw, each path's bandwidth as a
// fraction of raw's.
func BenchmarkCollectives(b *testing.B) {
	m, h := benchMesh(b)
	comm, n := collective.Comm(h), m.Size()
	for _, kind := range []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter} {
		for mib := 1; mib <= 1024; mib *= 4 {
			bytes := mib << 20
			count := bytes / 4 // AllReduce: per-rank elements
			if kind != collective.AllReduce {
				count = bytes / 4 / n // the block of one rank
			}
			c := &collective.Call{Kind: kind, Op: collective.Sum, Dtype: tensor.Float32, Count: count}
			gc := newGraphCollective(b, m, comm, kind, c.SendLen(n))
			sp, rp := gc.buffers(c)
			busFactor := float64(n-1) / float64(n)
			if kind == collective.AllReduce {
				busFactor *= 2
			}
			b.Run(fmt.Sprintf("%v/%dMiB/gpus=%d", kind, mib, n), func(b *testing.B) {
				// Warm up every path (NCCL connects lazily).
				if err := h.rawCall(kind, sp, rp, count); err != nil {
					b.Fatal(err)
				}
				if err := comm.Do(c); err != nil {
					b.Fatal(err)
				}
				var raw, do, graph, op time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if err := h.rawCall(kind, sp, rp, count); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := comm.Do(c); err != nil {
						b.Fatal(err)
					}
					t2 := time.Now()
					gc.vm.Reset()
					if err := gc.vm.RunAll(); err != nil {
						b.Fatal(err)
					}
					t3 := time.Now()
					if _, err := gc.node.Op().Do(gc.in); err != nil {
						b.Fatal(err)
					}
					raw += t1.Sub(t0)
					do += t2.Sub(t1)
					graph += t3.Sub(t2)
					op += time.Since(t3)
				}
				gb := float64(bytes) * float64(b.N) / 1e9
				perCall := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
				b.ReportMetric(gb/raw.Seconds(), "raw_algbw_GB/s")
				b.ReportMetric(gb/raw.Seconds()*busFactor, "raw_busbw_GB/s")
				b.ReportMetric(gb/do.Seconds()*busFactor, "busbw_GB/s")
				b.ReportMetric(gb/graph.Seconds()*busFactor, "graph_busbw_GB/s")
				b.ReportMetric(raw.Seconds()/do.Seconds(), "do/raw")
				b.ReportMetric(raw.Seconds()/graph.Seconds(), "graph/raw")
				b.ReportMetric(raw.Seconds()/op.Seconds(), "opdo/raw")
				b.ReportMetric(perCall(raw), "raw_us/op")
				b.ReportMetric(perCall(do), "do_us/op")
				b.ReportMetric(perCall(graph), "graph_us/op")
			})
			gc.close()
		}
	}
}

// BenchmarkProcessChecks times Do on a one-rank process communicator with
// the consistency checks (the default) against the same engine without them
// (WithoutChecks), alternating in one loop, for float32 AllReduce (sum) of
// 256 B to 16 MiB on device buffers, and on host buffers (staged through
// the GPU). Metrics: checked_us/op, unchecked_us/op and checked/unchecked,
// the time ratio. One rank's record exchange is a local copy: this measures
// the checks' fixed cost (the NCCL call, two small copies and the host
// round trip), not the link between GPUs.
func BenchmarkProcessChecks(b *testing.B) {
	m, err := sharding.GPUMesh(0)
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	comm, err := NewProcess(0, 1, 0, FileBootstrap(filepath.Join(b.TempDir(), "id")))
	if err != nil {
		b.Fatal(err)
	}
	defer comm.Close()
	checked := comm.(*Comm)
	unchecked := &Comm{e: checked.e, timeout: checked.timeout} // the same communicator, checks off
	for _, host := range []bool{false, true} {
		for _, bytes := range []int{256, 64 << 10, 16 << 20} {
			count := bytes / 4
			c := &collective.Call{Kind: collective.AllReduce, Op: collective.Sum, Dtype: tensor.Float32, Count: count}
			if host {
				send, _ := sharding.NewHostBuffer(make([]float32, count))
				recv, _ := sharding.NewHostBuffer(make([]float32, count))
				c.Send, c.Recv = []sharding.Buffer{send}, []sharding.Buffer{recv}
			} else {
				send, err := sharding.New(m, tensor.Shape{count, 1}, tensor.Float32, sharding.ColBlocks())
				if err != nil {
					b.Fatal(err)
				}
				defer send.Free()
				recv, err := sharding.New(m, tensor.Shape{count, 1}, tensor.Float32, sharding.ColBlocks())
				if err != nil {
					b.Fatal(err)
				}
				defer recv.Free()
				c.Send, c.Recv = []sharding.Buffer{send.Shard(0)}, []sharding.Buffer{recv.Shard(0)}
			}
			b.Run(fmt.Sprintf("AllReduce/%dB/host=%v", bytes, host), func(b *testing.B) {
				for _, h := range []*Comm{checked, unchecked} { // warm up
					if err := h.Do(c); err != nil {
						b.Fatal(err)
					}
				}
				var on, off time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if err := checked.Do(c); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := unchecked.Do(c); err != nil {
						b.Fatal(err)
					}
					on += t1.Sub(t0)
					off += time.Since(t1)
				}
				b.ReportMetric(float64(on.Nanoseconds())/1e3/float64(b.N), "checked_us/op")
				b.ReportMetric(float64(off.Nanoseconds())/1e3/float64(b.N), "unchecked_us/op")
				b.ReportMetric(on.Seconds()/off.Seconds(), "checked/unchecked")
			})
		}
	}
}

// graphCollective is BenchmarkCollectives' graph: a sharded input of
// sendLen float32 per device (one flat block each, so the op exchanges it
// as it is), one collective node on it, the machine that runs it, and the
// node's output after a first run.
type graphCollective struct {
	in, out *sharding.Tensor
	node    *G.Node
	vm      G.VM
}

func newGraphCollective(b *testing.B, m *sharding.Mesh, comm collective.Comm, kind collective.Kind, sendLen int) *graphCollective {
	b.Helper()
	x, err := sharding.New(m, tensor.Shape{m.Size() * sendLen}, tensor.Float32, sharding.RowBlocks())
	if err != nil {
		b.Fatal(err)
	}
	g := G.NewGraph()
	in := ops.Input(g, x, "x")
	var y *G.Node
	switch kind {
	case collective.AllReduce:
		y, err = collective.AllReduceNode(in, comm, collective.Sum)
	case collective.AllGather:
		y, err = collective.AllGatherNode(in, comm)
	case collective.ReduceScatter:
		y, err = collective.ReduceScatterNode(in, comm, collective.Sum)
	default:
		err = fmt.Errorf("no graph path for %v", kind)
	}
	if err != nil {
		b.Fatal(err)
	}
	gc := &graphCollective{in: x, node: y, vm: G.NewTapeMachine(g)}
	if err := gc.vm.RunAll(); err != nil {
		b.Fatal(err)
	}
	out, ok := y.Value().(*sharding.Tensor)
	if !ok {
		b.Fatalf("the %v node's value is %T, not on the GPUs", kind, y.Value())
	}
	gc.out = out
	return gc
}

// buffers makes the graph's input and output c's send and receive buffers
// (one shard per rank) and returns their device addresses, for the raw
// call.
func (gc *graphCollective) buffers(c *collective.Call) (send, recv []uintptr) {
	for r := range gc.in.Mesh().Size() {
		c.Send = append(c.Send, gc.in.Shard(r))
		c.Recv = append(c.Recv, gc.out.Shard(r))
		send = append(send, gc.in.Shard(r).(*sharding.DeviceBuffer).Ptr())
		recv = append(recv, gc.out.Shard(r).(*sharding.DeviceBuffer).Ptr())
	}
	return send, recv
}

// benchMesh is the mesh of every visible GPU and its NCCL communicator
// (the benchmark is skipped without GPUs).
func benchMesh(b *testing.B) (*sharding.Mesh, *Comm) {
	m, err := sharding.GPUMesh()
	if err != nil {
		b.Skipf("no GPU mesh: %v", err)
	}
	comm, err := NewMesh(m)
	if err != nil {
		b.Fatal(err)
	}
	return m, comm.(*Comm)
}

// close frees the machine and the device memory of the input and output.
func (gc *graphCollective) close() {
	gc.vm.Close()
	gc.in.Free()
	gc.out.Free()
}

// BenchmarkCollectivePaths times each path of BenchmarkCollectives in a
// loop of its own (float32 AllReduce, sum, of 1 and 64 MiB on every visible
// GPU): the raw NCCL call, Comm.Do, the op's Do, the op's Do on a new
// goroutine while the caller's OS thread is locked (what a TapeMachine
// does with every program it runs), and the graph on a TapeMachine. The
// differences between them place the graph path's cost.
func BenchmarkCollectivePaths(b *testing.B) {
	m, h := benchMesh(b)
	comm, n := collective.Comm(h), m.Size()
	for _, mib := range []int{1, 64} {
		count := mib << 20 / 4
		c := &collective.Call{Kind: collective.AllReduce, Op: collective.Sum, Dtype: tensor.Float32, Count: count}
		gc := newGraphCollective(b, m, comm, collective.AllReduce, count)
		sp, rp := gc.buffers(c)
		paths := []struct {
			name string
			run  func() error
		}{
			{"raw", func() error { return h.rawCall(collective.AllReduce, sp, rp, count) }},
			{"do", func() error { return comm.Do(c) }},
			{"opdo", func() error { _, err := gc.node.Op().Do(gc.in); return err }},
			{"opdo-goroutine", func() error {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				done := make(chan error)
				go func() { _, err := gc.node.Op().Do(gc.in); done <- err }()
				return <-done
			}},
			{"graph", func() error { gc.vm.Reset(); return gc.vm.RunAll() }},
		}
		for _, p := range paths {
			b.Run(fmt.Sprintf("AllReduce/%dMiB/gpus=%d/%s", mib, n, p.name), func(b *testing.B) {
				if err := p.run(); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if err := p.run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		gc.close()
	}
}
