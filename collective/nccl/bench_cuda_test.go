//go:build mglacuda

package nccl

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// BenchmarkCollectives times Comm.Do against the same NCCL call issued raw
// (rawCall) on the same communicators, buffers and streams, in one process,
// for float32 AllReduce (sum), AllGather and ReduceScatter of 1 MiB to
// 1 GiB on the mesh of every visible GPU. The size is nccl-tests' convention:
// the bytes of one rank's AllReduce buffer, of the AllGather output and of
// the ReduceScatter input. Metrics: algbw and busbw of Do in GB/s (busbw =
// algbw·2(n-1)/n for AllReduce, ·(n-1)/n for the others, so 0 on one GPU),
// the raw call's algbw, and do/raw, Do's bandwidth as a fraction of raw.
func BenchmarkCollectives(b *testing.B) {
	m, err := sharding.GPUMesh()
	if err != nil {
		b.Skipf("no GPU mesh: %v", err)
	}
	comm, err := NewMesh(m)
	if err != nil {
		b.Fatal(err)
	}
	h := comm.(*Comm)
	n := m.Size()
	for _, kind := range []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter} {
		for mib := 1; mib <= 1024; mib *= 4 {
			bytes := mib << 20
			count := bytes / 4 // AllReduce: per-rank elements
			if kind != collective.AllReduce {
				count = bytes / 4 / n // the block of one rank
			}
			c := &collective.Call{Kind: kind, Op: collective.Sum, Dtype: tensor.Float32, Count: count}
			send, err := sharding.New(m, tensor.Shape{c.SendLen(n), n}, tensor.Float32, sharding.ColBlocks())
			if err != nil {
				b.Fatal(err)
			}
			recv, err := sharding.New(m, tensor.Shape{c.RecvLen(n), n}, tensor.Float32, sharding.ColBlocks())
			if err != nil {
				b.Fatal(err)
			}
			var sp, rp []uintptr
			for r := range n {
				c.Send = append(c.Send, send.Shard(r))
				c.Recv = append(c.Recv, recv.Shard(r))
				sp = append(sp, send.Shard(r).(*sharding.DeviceBuffer).Ptr())
				rp = append(rp, recv.Shard(r).(*sharding.DeviceBuffer).Ptr())
			}
			busFactor := float64(n-1) / float64(n)
			if kind == collective.AllReduce {
				busFactor *= 2
			}
			b.Run(fmt.Sprintf("%v/%dMiB/gpus=%d", kind, mib, n), func(b *testing.B) {
				// Warm up both paths (NCCL connects lazily).
				if err := h.rawCall(kind, sp, rp, count); err != nil {
					b.Fatal(err)
				}
				if err := comm.Do(c); err != nil {
					b.Fatal(err)
				}
				var raw, do time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if err := h.rawCall(kind, sp, rp, count); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := comm.Do(c); err != nil {
						b.Fatal(err)
					}
					raw += t1.Sub(t0)
					do += time.Since(t1)
				}
				gb := float64(bytes) * float64(b.N) / 1e9
				b.ReportMetric(gb/do.Seconds(), "algbw_GB/s")
				b.ReportMetric(gb/do.Seconds()*busFactor, "busbw_GB/s")
				b.ReportMetric(gb/raw.Seconds(), "raw_algbw_GB/s")
				b.ReportMetric(raw.Seconds()/do.Seconds(), "do/raw")
				b.ReportMetric(float64(do.Microseconds())/float64(b.N), "do_us/op")
				b.ReportMetric(float64(raw.Microseconds())/float64(b.N), "raw_us/op")
			})
			send.Free()
			recv.Free()
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
