//go:build mglacuda

package nccl

import (
	"fmt"
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
