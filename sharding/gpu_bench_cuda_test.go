//go:build mglacuda

package sharding

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/kernels/ptx"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

var bandN = flag.Int("mgla.band-n", 65536, "order of the float64 matrix of BenchmarkRowBandPhases")

// BenchmarkRowBandPhases takes the upload of a page-locked float64 matrix
// (N = -mgla.band-n, T = 1024) on meshes of 1, 2 and 4 GPUs apart, to find
// what bounds it:
//   - alloc-zeroed, alloc: New's allocation of the shards (and Free), and
//     Put's, which skips the memset;
//   - dma-hostalloc-64M, dma-hostalloc-1G: the DMA of the row bands alone
//     from three 64 MiB (the staging slots) or one 1 GiB cudaHostAlloc
//     buffers per device (what a plain pinned copy reads);
//   - dma-registered: the same from the bands' places in a Go matrix
//     registered as it is (4 KiB pages); dma-hugepage: from the same bytes
//     in memory mapped with MADV_HUGEPAGE, registered (2 MiB pages);
//   - scatter: the scatter kernel alone on bands already on the devices;
//   - up-registered, up-hugepage: DMA and scatter, the whole transfer into
//     allocated shards; put-registered: sharding.Put, allocation and
//     transfer (and Free).
//
// Every phase runs once untimed first. Metric: GB/s of the whole matrix,
// all devices at once.
func BenchmarkRowBandPhases(b *testing.B) {
	n := *bandN
	const elem = 8
	nbytes := n * n * elem
	goMatrix := make([]float64, n*n)
	registered := unsafe.Pointer(&goMatrix[0])
	parallelFill(registered, nbytes)
	start := time.Now()
	unregister, err := RegisterHost(goMatrix)
	require.NoError(b, err)
	defer unregister()
	registering := time.Since(start)
	// The same bytes in 2 MiB pages: memory mapped with MADV_HUGEPAGE
	// before it is touched, then registered.
	huge, err := syscall.Mmap(-1, 0, nbytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(b, err)
	defer syscall.Munmap(huge)
	require.NoError(b, syscall.Madvise(huge, syscall.MADV_HUGEPAGE))
	hugeMatrix := unsafe.Pointer(&huge[0])
	parallelFill(hugeMatrix, nbytes)
	unregister, err = cusolver.RegisterHost(hugeMatrix, nbytes)
	require.NoError(b, err)
	defer unregister()
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	b.Logf("N=%d (%.1f GB); THP %s; RegisterHost %.2f s", n, float64(nbytes)/1e9, strings.TrimSpace(string(thp)), registering.Seconds())
	host := tensor.New(tensor.WithShape(n, n), tensor.WithBacking(goMatrix))

	visible, err := cu.NumDevices()
	require.NoError(b, err)
	hostAlloc := func(count, size int) map[int][]unsafe.Pointer {
		bufs := map[int][]unsafe.Pointer{}
		for d := range visible {
			for range count {
				p, err := cusolver.HostAlloc(size)
				require.NoError(b, err)
				b.Cleanup(func() { cusolver.FreeHost(p) })
				bufs[d] = append(bufs[d], p)
			}
		}
		return bufs
	}
	small, large := hostAlloc(nslots, stageBytes), hostAlloc(1, 1<<30)
	fromBuffers := func(bufs map[int][]unsafe.Pointer, per int) func(r *rowBands, k int) unsafe.Pointer {
		return func(r *rowBands, k int) unsafe.Pointer {
			list := bufs[r.g.id]
			return unsafe.Add(list[k%len(list)], (k/len(list))%per*stageBytes)
		}
	}
	fromMatrix := func(r *rowBands, k int) unsafe.Pointer { p, _ := r.hostBand(r.bands[k]); return p }
	for _, ndev := range []int{1, 2, 4} {
		if ndev > visible {
			break
		}
		ids := make([]int, ndev)
		for d := range ids {
			ids[d] = d
		}
		mesh, err := GPUMesh(ids...)
		require.NoError(b, err)
		t, err := New(mesh, tensor.Shape{n, n}, tensor.Float64, Cyclic(1024))
		require.NoError(b, err)
		bands := func(host unsafe.Pointer, move func(*rowBands) error) func() error {
			return func() error { return eachRowBands(t, host, true, 1, move) }
		}
		allocFree := func(zero bool) func() error {
			return func() error {
				a, err := newTensor(mesh, tensor.Shape{n, n}, tensor.Float64, Cyclic(1024), zero)
				if err == nil {
					a.Free()
				}
				return err
			}
		}
		phases := []struct {
			name string
			run  func() error
		}{
			{"alloc-zeroed", allocFree(true)},
			{"alloc", allocFree(false)},
			{"dma-hostalloc-64M", bands(nil, dmaOnly(fromBuffers(small, 1)))},
			{"dma-hostalloc-1G", bands(nil, dmaOnly(fromBuffers(large, (1<<30)/stageBytes)))},
			{"dma-registered", bands(registered, dmaOnly(fromMatrix))},
			{"dma-hugepage", bands(hugeMatrix, dmaOnly(fromMatrix))},
			{"scatter", bands(nil, (*rowBands).scatterOnly)},
			{"up-registered", bands(registered, (*rowBands).up)},
			{"up-hugepage", bands(hugeMatrix, (*rowBands).up)},
			{"put-registered", func() error {
				st, err := Put(host, mesh, Cyclic(1024))
				if err == nil {
					st.Free()
				}
				return err
			}},
		}
		for _, p := range phases {
			require.NoError(b, p.run(), p.name)
			b.Run(fmt.Sprintf("gpus=%d/%s", ndev, p.name), func(b *testing.B) {
				for b.Loop() {
					require.NoError(b, p.run())
				}
				b.ReportMetric(float64(nbytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
		t.Free()
	}
}

// dmaOnly returns a move that copies every band of a device's share from
// host memory at src(r, k) to a device slot, with nothing else.
func dmaOnly(src func(r *rowBands, k int) unsafe.Pointer) func(*rowBands) error {
	return func(r *rowBands) error {
		for k, b := range r.bands {
			n := b[1] * r.cols * r.elem
			if err := cu.MemcpyHtoDAsync(r.g.slots[k%nslots].dev, src(r, k), int64(n), r.g.copies); err != nil {
				return err
			}
		}
		return nil
	}
}

// scatterOnly scatters every band of r from a device slot into the shards,
// with no copy from the host.
func (r *rowBands) scatterOnly() error {
	for k, b := range r.bands {
		if err := r.kernel(ptx.ScatterRows[r.elem], k%nslots, b); err != nil {
			return err
		}
	}
	return nil
}

// parallelFill writes a byte pattern to n bytes at p with many goroutines
// (touching every page).
func parallelFill(p unsafe.Pointer, n int) {
	pattern := make([]byte, 1<<20)
	for i := range pattern {
		pattern[i] = byte(i * 7)
	}
	const chunk = 1 << 20
	done := make(chan struct{})
	workers := 64
	for w := range workers {
		go func() {
			for off := w * chunk; off < n; off += workers * chunk {
				copy(unsafe.Slice((*byte)(unsafe.Add(p, off)), min(chunk, n-off)), pattern)
			}
			done <- struct{}{}
		}()
	}
	for range workers {
		<-done
	}
}

// BenchmarkMulLower times MulLower, MulHermitian and MulCholesky, the
// products of the check of a factor computed on the mesh, on every GPU:
// float64, N = 16384, T = 2048. Metric: GB/s of the lower triangle read.
func BenchmarkMulLower(b *testing.B) {
	mesh, err := GPUMesh()
	require.NoError(b, err)
	const n = 16384
	data := make([]float64, n*n)
	for i := range data {
		data[i] = float64(i%7919) / 7919
	}
	a, err := Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(data)), mesh, Cyclic(2048))
	require.NoError(b, err)
	defer a.Free()
	x := make([]complex128, n)
	for i := range x {
		x[i] = complex(float64(i%13)-6, 0)
	}
	for _, adjoint := range []bool{false, true} {
		b.Run(fmt.Sprintf("gpus=%d/adjoint=%v", mesh.Size(), adjoint), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := a.MulLower(x, nil, adjoint, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(n+1)/2*8/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GB/s")
		})
	}
	// The chains: two reads of the triangle each, one round trip.
	for name, mul := range map[string]func([]complex128, []float64) ([]complex128, []float64, error){
		"hermitian": a.MulHermitian, "cholesky": a.MulCholesky} {
		b.Run(fmt.Sprintf("gpus=%d/%s", mesh.Size(), name), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := mul(x, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(n)*float64(n+1)/2*8/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GB/s")
		})
	}
	// The same into reused results (no page faults on fresh memory).
	y, yAbs := make([]complex128, n), make([]float64, n)
	for name, mul := range map[string]func([]complex128, []float64, []complex128, []float64) error{
		"hermitian-into": a.MulHermitianInto, "cholesky-into": a.MulCholeskyInto} {
		b.Run(fmt.Sprintf("gpus=%d/%s", mesh.Size(), name), func(b *testing.B) {
			for b.Loop() {
				if err := mul(y, yAbs, x, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(n)*float64(n+1)/2*8/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GB/s")
		})
	}
	// The kernels alone on the first GPU's shard, and a device-to-device
	// copy of as many bytes as its part of the triangle, the bandwidth the
	// kernels could reach.
	db := a.shards[0].(*DeviceBuffer)
	_, lcols := a.LocalShape(0)
	triangle := 0
	for lc := range lcols {
		j := (lc/2048)*mesh.Size()*2048 + lc%2048
		triangle += 8 * (n - j)
	}
	run := func(b *testing.B, step func(g *gpuDevice, x, y cu.DevicePtr) error) {
		require.NoError(b, onDevice(db.dev, func() error {
			g, err := deviceState(db.dev.ID)
			if err != nil {
				return err
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			buf, err := cu.MemAlloc(int64(max(4*8*n, triangle)))
			if err != nil {
				return err
			}
			defer cu.MemFree(buf)
			// x: doubles near 1 (0x3ff00000 in both halves).
			if err := cu.MemsetD32(buf, 0x3ff00000, int64(max(4*8*n, triangle)/4)); err != nil {
				return err
			}
			for b.Loop() {
				if err := step(g, buf, buf+cu.DevicePtr(8*n)); err != nil {
					return err
				}
				if err := cu.Synchronize(); err != nil {
					return err
				}
			}
			return nil
		}))
		b.ReportMetric(float64(triangle)/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GB/s")
	}
	for _, adjoint := range []bool{false, true} {
		for _, withXAbs := range []bool{false, true} {
			b.Run(fmt.Sprintf("kernel/adjoint=%v/xabs=%v", adjoint, withXAbs), func(b *testing.B) {
				run(b, func(g *gpuDevice, x, y cu.DevicePtr) error {
					yAbs, xAbs := y+cu.DevicePtr(8*n), cu.DevicePtr(0)
					if withXAbs {
						xAbs = yAbs + cu.DevicePtr(8*n)
					}
					if adjoint {
						return g.launch(ptx.LowerMhv['d'], ceilDiv(lcols, mhvWarps), 1, 32*mhvWarps, 1, uint64(db.ptr), uint64(n), 2048,
							uint64(mesh.Size()), 0, uint64(lcols), uint64(x), uint64(xAbs), uint64(y), uint64(yAbs), 0)
					}
					return g.launch(ptx.LowerMv['d'], ceilDiv(n, 256), ceilDiv(lcols, mvCols), 256, 1, uint64(db.ptr), uint64(n), 2048,
						uint64(mesh.Size()), 0, uint64(lcols), uint64(x), uint64(xAbs), uint64(y), uint64(yAbs), 0)
				})
			})
		}
	}
	b.Run("copy", func(b *testing.B) {
		scratch, err := New(mesh, tensor.Shape{n, n}, tensor.Float64, Cyclic(2048))
		require.NoError(b, err)
		defer scratch.Free()
		dst := scratch.shards[0].(*DeviceBuffer).ptr
		run(b, func(g *gpuDevice, x, y cu.DevicePtr) error {
			return cu.MemcpyDtoD(dst, db.ptr, int64(triangle))
		})
	})
}
