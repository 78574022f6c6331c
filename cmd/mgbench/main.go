//go:build mglacuda

// Command mgbench measures mgla on the GPUs of one machine and writes CSV
// for cmd/benchreport: host ↔ device transfers against plain pinned and
// pageable copies, the device relayout, and Potrf, Potrs (1 and 256
// right-hand sides), Potri and Syevd (values, vectors) through mgla's graph
// ops on sharded inputs, against the same cuSolverMg call on already laid-out
// buffers (the floor), single-GPU cuSOLVER, and an end-to-end Gorgonia graph
// from host to host. Every path runs in this one process.
//
// Flop counts: potrf N³/3, potrs 2N²K, potri (from the factor) 2N³/3, syevd
// 4N³/3 for values and 4.3N³ with vectors.
//
//	mgbench -n 4096,8192,16384 -gpus 1,2,4 -dtype float64 -tile 1024 -csv out.csv
//
// The capacity mode (capacity.go) finds, for each op and GPU count, the
// largest N that fits, runs Potrs there (allocates what Potri and Syevd
// hold) and shows that 4% more does not fit:
//
//	mgbench -capacity potrs,potri,syevd -gpus 1,2,4 -csv out.csv
//
// It imports mgla, ops and sharding (what it measures), kernels/cusolver
// (the raw cuSolverMg and cuSOLVER calls it measures against, and device
// memory) and cmd/internal/benchcsv (its output format).
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/cmd/internal/benchcsv"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var (
	nList    = flag.String("n", "4096,8192,16384,32768,65536", "matrix orders")
	gpuList  = flag.String("gpus", "1,2,4", "GPU counts (meshes over the first k GPUs)")
	dtList   = flag.String("dtype", "float64", "float64,float32")
	tileList = flag.String("tile", "1024", "tile widths")
	opList   = flag.String("ops", strings.Join(opNames, ","), "what to measure")
	pathList = flag.String("paths", strings.Join(pathNames, ","), "solver paths: mg (raw cuSolverMg), mgla (op, DispatchMesh), auto (op, DispatchAuto), single (op, DispatchSingle), dn (raw cuSOLVER on GPU 0), graph (host to host)")
	reps     = flag.Int("reps", 3, "timed repetitions (median) after one warm-up")
	maxSyevd = flag.Int("max-syevd", 16384, "largest N for syevd")
	maxMgEig = flag.Int("max-syevd-mg", 8192, "largest N for syevd through cuSolverMg (paths mg, mgla), 5-8x slower than cuSOLVER")
	maxPotri = flag.Int("max-potri", 32768, "largest N for potri")
	csvPath  = flag.String("csv", "mgbench.csv", "output CSV (appended)")
	pageMax  = flag.Int("pageable-max", 16384, "largest N for the (slow) pageable-copy baseline")
)

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			v, err := strconv.Atoi(f)
			if err != nil {
				log.Fatalf("bad number %q", f)
			}
			out = append(out, v)
		}
	}
	return out
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		m[strings.TrimSpace(f)] = true
	}
	return m
}

// row is one CSV line.
// row is one measurement (the CSV format of cmd/internal/benchcsv).
type row = benchcsv.Row

// writer appends the rows to the CSV file and prints each.
type writer struct{ *benchcsv.Writer }

func newWriter(path string) *writer {
	w, err := benchcsv.Append(path)
	if err != nil {
		log.Fatal(err)
	}
	return &writer{w}
}

func (w *writer) put(r row) {
	if err := w.Write(r); err != nil {
		log.Fatal(err)
	}
	tf, gb := r.Rates()
	extra := ""
	if tf > 0 {
		extra = fmt.Sprintf("%8.2f TFLOP/s", tf)
	}
	if gb > 0 {
		extra = fmt.Sprintf("%8.1f GB/s", gb)
	}
	fmt.Printf("%-14s %-7s N=%-6d K=%-3d gpus=%d T=%-4d %-8s %10.4f s %s\n",
		r.Op, r.Dtype, r.N, r.NRHS, r.NDev, r.Tile, r.Path, r.Seconds, extra)
}

// timeIt returns the median of reps timed runs of fn after one warm-up run;
// prep runs untimed before each.
func timeIt(prep, fn func() error) (float64, error) {
	var ts []float64
	for i := 0; i <= *reps; i++ {
		if prep != nil {
			if err := prep(); err != nil {
				return math.NaN(), err
			}
		}
		start := time.Now()
		if err := fn(); err != nil {
			return math.NaN(), err
		}
		if i > 0 {
			ts = append(ts, time.Since(start).Seconds())
		}
	}
	sort.Float64s(ts)
	return ts[len(ts)/2], nil
}

// spd returns a row-major symmetric positive definite n×n host matrix
// (diagonally dominant, with junk in nothing: both triangles are filled),
// generated in parallel from a hash so that every N is fast to make.
func spd(dt tensor.Dtype, n int) *tensor.Dense {
	if dt == tensor.Float32 {
		d := make([]float32, n*n)
		parallelRows(n, func(i int) {
			for j := range n {
				d[i*n+j] = float32(spdAt(n, i, j))
			}
		})
		return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(d))
	}
	d := make([]float64, n*n)
	parallelRows(n, func(i int) {
		for j := range n {
			d[i*n+j] = spdAt(n, i, j)
		}
	})
	return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(d))
}

// spdAt is element (i, j) of spd's n×n matrix: n on the diagonal, a hash
// of the unordered pair {i, j} in [-0.5, 0.5) off it.
func spdAt(n, i, j int) float64 {
	if i == j {
		return float64(n)
	}
	a, b := min(i, j), max(i, j)
	h := uint64(a)*0x9E3779B97F4A7C15 ^ uint64(b)*0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return float64(h>>11)/float64(1<<53) - 0.5
}

func parallelRows(n int, f func(i int)) {
	var wg sync.WaitGroup
	w := runtime.NumCPU()
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += w {
				f(i)
			}
		}()
	}
	wg.Wait()
}

func ones(dt tensor.Dtype, n, k int) *tensor.Dense {
	if dt == tensor.Float32 {
		d := make([]float32, n*k)
		for i := range d {
			d[i] = 1
		}
		return tensor.New(tensor.WithShape(n, k), tensor.WithBacking(d))
	}
	d := make([]float64, n*k)
	for i := range d {
		d[i] = 1
	}
	return tensor.New(tensor.WithShape(n, k), tensor.WithBacking(d))
}

func meshOf(k int) *sharding.Mesh {
	ids := make([]int, k)
	for i := range ids {
		ids[i] = i
	}
	m, err := sharding.GPUMesh(ids...)
	if err != nil {
		log.Fatal(err)
	}
	return m
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

func main() {
	flag.Parse()
	if err := checkFlags(*reps, *opList, *pathList); err != nil {
		log.Fatal(err)
	}
	out := newWriter(*csvPath)
	defer out.Close()
	if *capacityJob != "" {
		capacityJobMain(out)
		return
	}
	ngpu, err := cusolver.DeviceCount()
	if err != nil || ngpu == 0 {
		log.Fatalf("no GPU: %v", err)
	}
	rv, dv, _ := cusolver.Versions()
	fmt.Printf("mgbench: %d GPUs, CUDA runtime %d, driver %d, libraries %v, %d CPUs\n", ngpu, rv, dv, cusolver.LoadedLibraries(), runtime.NumCPU())
	if *capacityOps != "" {
		capacity(ngpu)
		return
	}
	opsOn, paths := words(*opList), words(*pathList)
	gpuCounts, skipped := splitGPUCounts(ints(*gpuList), ngpu)
	for _, k := range skipped {
		fmt.Printf("mgbench: gpus=%d: skipped, %d GPUs visible\n", k, ngpu)
	}
	for _, dtName := range strings.Split(*dtList, ",") {
		dt, ok := map[string]tensor.Dtype{"float64": tensor.Float64, "float32": tensor.Float32}[dtName]
		if !ok {
			log.Fatalf("dtype %q", dtName)
		}
		for _, n := range ints(*nList) {
			host := spd(dt, n)
			for _, ndev := range gpuCounts {
				mesh := meshOf(ndev)
				for _, tile := range ints(*tileList) {
					b := bench{out: out, dt: dt, dtName: dtName, n: n, ndev: ndev, tile: tile, mesh: mesh, host: host, paths: paths}
					if opsOn["transfer"] {
						b.transfers()
					}
					b.solvers(opsOn)
				}
			}
			runtime.GC()
		}
	}
}

type bench struct {
	out    *writer
	dt     tensor.Dtype
	dtName string
	n      int
	ndev   int
	tile   int
	mesh   *sharding.Mesh
	host   *tensor.Dense
	paths  map[string]bool
}

func (b *bench) put(op, path string, nrhs, tile int, secs, flops, nbytes float64) {
	ndev := b.ndev
	if path == "dn" {
		ndev = 1
	}
	b.out.put(row{Op: op, Dtype: b.dtName, Path: path, N: b.n, NRHS: nrhs, NDev: ndev, Tile: tile, Seconds: secs, Flops: flops, Bytes: nbytes})
}

func (b *bench) fail(op, path string, err error) {
	fmt.Printf("%-14s N=%d gpus=%d T=%d %s: %v\n", op, b.n, b.ndev, b.tile, path, err)
	b.put(op, path, 0, b.tile, math.NaN(), 0, 0)
}

// transfers: upload and download through mgla (the default, staged through
// pinned buffers), the same from a host matrix registered once with
// sharding.RegisterHost (copied in place; path registered), the cost of
// registering and unregistering the matrix, the relayout from row blocks,
// a parallel host memcpy of the matrix (path memcpy: the ceiling of the
// staged default), and plain pinned and pageable copies of the same bytes to
// the same GPUs.
func (b *bench) transfers() {
	bytes := float64(b.n) * float64(b.n) * float64(b.dt.Size())
	b.roundTrip("mgla", bytes)
	secs, err := timeIt(nil, func() error {
		unregister, err := sharding.RegisterHost(b.host)
		if err != nil {
			return err
		}
		return unregister()
	})
	if err != nil {
		b.fail("register", "mgla", err)
	} else {
		b.put("register", "mgla", 0, 0, secs, 0, bytes)
	}
	if unregister, err := sharding.RegisterHost(b.host); err != nil {
		b.fail("upload", "registered", err)
	} else {
		b.roundTrip("registered", bytes)
		if err := unregister(); err != nil {
			log.Fatal(err)
		}
	}
	layout := sharding.Cyclic(b.tile)
	var rb *sharding.Tensor
	switch {
	case b.n > *pageMax:
		// The relayout from row blocks moves column by column: too slow.
	case func() bool { rb, err = sharding.Put(b.host, b.mesh, sharding.RowBlocks()); return err != nil }():
		b.fail("relayout", "mgla", err)
	default:
		var moved *sharding.Tensor
		secs, err := timeIt(func() error {
			if moved != nil {
				moved.Free()
			}
			return nil
		}, func() (err error) { moved, err = rb.Relayout(layout); return err })
		if err != nil {
			b.fail("relayout", "mgla", err)
		} else {
			b.put("relayout", "mgla", 0, b.tile, secs, 0, bytes)
			moved.Free()
		}
		rb.Free()
	}
	if secs, err := hostCopy(b.host); err == nil {
		b.put("hostcopy", "memcpy", 0, 0, secs, 0, bytes)
	} else {
		b.fail("hostcopy", "memcpy", err)
	}
	if secs, err := plainCopies(b.ndev, int(bytes), true, b.host); err == nil {
		b.put("upload", "pinned", 0, 0, secs, 0, bytes)
	} else {
		b.fail("upload", "pinned", err)
	}
	if b.n > *pageMax {
		return
	}
	if secs, err := plainCopies(b.ndev, int(bytes), false, b.host); err == nil {
		b.put("upload", "pageable", 0, 0, secs, 0, bytes)
	} else {
		b.fail("upload", "pageable", err)
	}
}

// roundTrip times the upload of the host matrix into the block-cyclic
// layout (Put, which allocates the shards: op upload; Load into them: op
// load) and the download back into it, reported under path.
func (b *bench) roundTrip(path string, bytes float64) {
	layout := sharding.Cyclic(b.tile)
	var st *sharding.Tensor
	secs, err := timeIt(func() error {
		if st != nil {
			st.Free()
		}
		return nil
	}, func() (err error) { st, err = sharding.Put(b.host, b.mesh, layout); return err })
	if err != nil {
		b.fail("upload", path, err)
		return
	}
	defer st.Free()
	b.put("upload", path, 0, b.tile, secs, 0, bytes)
	// The same into the shards already allocated: the transfer alone, like
	// the plain pinned copies, without Put's device allocation.
	secs, err = timeIt(nil, func() error { return st.Load(b.host) })
	if err != nil {
		b.fail("load", path, err)
		return
	}
	b.put("load", path, 0, b.tile, secs, 0, bytes)
	// Back into the host matrix itself (the same values): in place when
	// it is page-locked.
	secs, err = timeIt(nil, func() error { return st.GatherInto(b.host) })
	if err != nil {
		b.fail("download", path, err)
		return
	}
	b.put("download", path, 0, b.tile, secs, 0, bytes)
}

// hostCopy times a copy of the host matrix into another Go slice by one
// goroutine per CPU: the host memory bandwidth that bounds the default
// upload of an unregistered matrix, which copies every byte into pinned
// staging buffers before the DMA reads it again.
func hostCopy(host *tensor.Dense) (float64, error) {
	n := host.DataSize() * int(host.Dtype().Size())
	src := unsafe.Slice((*byte)(dataPtr(host)), n)
	dst := make([]byte, n)
	workers := runtime.NumCPU()
	per := (n + workers - 1) / workers
	return timeIt(nil, func() error {
		var wg sync.WaitGroup
		for lo := 0; lo < n; lo += per {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				copy(dst[lo:hi], src[lo:hi])
			}(lo, min(lo+per, n))
		}
		wg.Wait()
		return nil
	})
}

// plainCopies times host → device copies of total bytes split evenly over
// GPUs 0..ndev-1, all at once, in chunks of at most 1 GiB: from pinned
// memory (cudaHostAlloc) or from the pageable host matrix.
func plainCopies(ndev, total int, pinned bool, host *tensor.Dense) (float64, error) {
	const chunk = 1 << 30
	share := total / ndev
	src := make([]unsafe.Pointer, ndev)
	dst := make([]uintptr, ndev)
	hostBase := dataPtr(host)
	for d := range ndev {
		var err error
		if dst[d], err = cusolver.Malloc(d, min(chunk, share)); err != nil {
			return 0, err
		}
		defer cusolver.Free(d, dst[d])
		if pinned {
			if src[d], err = cusolver.HostAlloc(min(chunk, share)); err != nil {
				return 0, err
			}
			defer cusolver.FreeHost(src[d])
		}
	}
	return timeIt(nil, func() error {
		errs := make([]error, ndev)
		var wg sync.WaitGroup
		for d := range ndev {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for off := 0; off < share; off += chunk {
					c := min(chunk, share-off)
					s := src[d]
					if !pinned {
						s = unsafe.Add(hostBase, d*share+off)
					}
					if err := cusolver.MemcpyHtoD(d, dst[d], s, c); err != nil {
						errs[d] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		return nil
	})
}

func dataPtr(d *tensor.Dense) unsafe.Pointer {
	switch s := d.Data().(type) {
	case []float32:
		return unsafe.Pointer(&s[0])
	case []float64:
		return unsafe.Pointer(&s[0])
	}
	panic("dtype")
}

// solvers measures each solver op on every requested path.
func (b *bench) solvers(opsOn map[string]bool) {
	n, nf := b.n, float64(b.n)
	layout := sharding.Cyclic(b.tile)
	a := must(sharding.Put(b.host, b.mesh, layout))
	defer a.Free()
	factor := must(sharding.New(b.mesh, a.Shape(), b.dt, layout))
	defer factor.Free()
	if err := runOps(func(g *G.ExprGraph) (*G.Node, error) {
		return ops.Cholesky(ops.Input(g, a, "A"))
	}, factor); err != nil {
		log.Fatalf("factoring: %v", err)
	}
	ids := make([]int, b.ndev)
	for i := range ids {
		ids[i] = i
	}
	mg := must(cusolver.NewMg(ids))
	defer mg.Close()
	dn := must(cusolver.NewDn(0))
	defer dn.Close()

	type kernel struct {
		name  string
		nrhs  int
		flops float64
		input *sharding.Tensor // copied into work before each raw call
		raw   func(p []uintptr, rhs *sharding.Tensor) error
		dense func(p uintptr, rhs uintptr) error
		graph func(g *G.ExprGraph, d ops.Dispatch, rhs *sharding.Tensor) (*G.Node, error)
		e2e   func(g *G.ExprGraph, a, rhs *G.Node) (*G.Node, error)
	}
	ks := []kernel{
		{name: "potrf", flops: nf * nf * nf / 3, input: a,
			raw:   func(p []uintptr, _ *sharding.Tensor) error { return mg.Potrf(b.dt, n, b.tile, p) },
			dense: func(p, _ uintptr) error { return dn.Potrf(b.dt, n, p, n) },
			graph: func(g *G.ExprGraph, d ops.Dispatch, _ *sharding.Tensor) (*G.Node, error) {
				return ops.Cholesky(ops.Input(g, a, "A"), ops.WithDispatch(d))
			},
			e2e: func(g *G.ExprGraph, an, _ *G.Node) (*G.Node, error) { return mgla.Cholesky(an, b.opts()...) }},
		{name: "potri", flops: 2 * nf * nf * nf / 3, input: factor,
			raw:   func(p []uintptr, _ *sharding.Tensor) error { return mg.Potri(b.dt, n, b.tile, p) },
			dense: func(p, _ uintptr) error { return dn.Potri(b.dt, n, p, n) },
			graph: func(g *G.ExprGraph, d ops.Dispatch, _ *sharding.Tensor) (*G.Node, error) {
				return ops.Potri(ops.Input(g, a, "A"), ops.Input(g, factor, "L"), ops.WithDispatch(d))
			},
			e2e: func(g *G.ExprGraph, an, _ *G.Node) (*G.Node, error) { return mgla.Potri(an, b.opts()...) }},
	}
	for _, k := range []int{1, 256} {
		ks = append(ks, kernel{name: fmt.Sprintf("potrs%d", k), nrhs: k, flops: 2 * nf * nf * float64(k), input: factor,
			raw: func(p []uintptr, rhs *sharding.Tensor) error {
				lp := ptrs(factor)
				return mg.PotrsBlock(b.dt, n, k, b.tile, b.tile, lp, ptrs(rhs))
			},
			graph: func(g *G.ExprGraph, d ops.Dispatch, rhs *sharding.Tensor) (*G.Node, error) {
				return ops.Potrs(ops.Input(g, a, "A"), ops.Input(g, factor, "L"), ops.Input(g, rhs, "B"), ops.WithDispatch(d))
			},
			e2e: func(g *G.ExprGraph, an, bn *G.Node) (*G.Node, error) { return mgla.Potrs(an, bn, b.opts()...) }})
	}
	for _, vec := range []bool{false, true} {
		name, fl := "syevd-values", 4*nf*nf*nf/3
		if vec {
			name, fl = "syevd-vectors", 4.3*nf*nf*nf
		}
		ks = append(ks, kernel{name: name, flops: fl, input: a,
			raw: func(p []uintptr, _ *sharding.Tensor) error {
				return mg.Syevd(b.dt, n, b.tile, p, make([]float64, n), vec)
			},
			graph: func(g *G.ExprGraph, d ops.Dispatch, _ *sharding.Tensor) (*G.Node, error) {
				an := ops.Input(g, a, "A")
				if vec {
					return ops.Eigen(an, ops.WithDispatch(d))
				}
				return ops.EigenValues(an, nil, ops.WithDispatch(d))
			},
			e2e: func(g *G.ExprGraph, an, _ *G.Node) (*G.Node, error) {
				opts := b.opts()
				if !vec {
					opts = append(opts, mgla.EigenvaluesOnly())
				}
				w, _, err := mgla.Syevd(an, opts...)
				return w, err
			}})
	}

	for _, k := range ks {
		if !opsOn[k.name] {
			continue
		}
		if strings.HasPrefix(k.name, "syevd") && (n > *maxSyevd || b.tile > 1024) || k.name == "potri" && n > *maxPotri {
			continue
		}
		op, nrhs := k.name, k.nrhs
		if strings.HasPrefix(op, "potrs") {
			op = "potrs"
		}
		var rhs *sharding.Tensor
		if nrhs > 0 {
			rhs = must(sharding.Put(ones(b.dt, n, nrhs), b.mesh, layout))
		}
		if b.paths["mg"] && !b.slowMgEig(op) {
			work := must(sharding.New(b.mesh, a.Shape(), b.dt, layout))
			secs, err := timeIt(func() error {
				if rhs != nil {
					return nil // potrs overwrites B with X: the same work each time
				}
				return k.input.RelayoutInto(work)
			}, func() error { return k.raw(ptrs(work), rhs) })
			work.Free()
			if err != nil {
				b.fail(op, "mg", err)
			} else {
				b.put(op, "mg", nrhs, b.tile, secs, k.flops, 0)
			}
		}
		for _, p := range []struct {
			path string
			d    ops.Dispatch
		}{{"mgla", ops.DispatchMesh}, {"auto", ops.DispatchAuto}, {"single", ops.DispatchSingle}} {
			if !b.paths[p.path] || (p.path != "mgla" && b.ndev == 1) || (p.path == "mgla" && b.slowMgEig(op)) ||
				(p.path == "single" && strings.HasPrefix(op, "syevd")) { // auto is single for syevd
				continue
			}
			secs, err := timeGraph(func(g *G.ExprGraph) (*G.Node, error) { return k.graph(g, p.d, rhs) })
			if err != nil {
				b.fail(op, p.path, err)
			} else {
				b.put(op, p.path, nrhs, b.tile, secs, k.flops, 0)
			}
		}
		if b.paths["dn"] && b.ndev == 1 && b.tile == ints(*tileList)[0] && (k.dense != nil || op == "potrs" || strings.HasPrefix(op, "syevd")) {
			secs, err := b.denseTime(k.name, k.input, rhs, dn)
			if err != nil {
				b.fail(op, "dn", err)
			} else {
				b.put(op, "dn", nrhs, 0, secs, k.flops, 0)
			}
		}
		if rhs != nil {
			rhs.Free()
		}
	}
	// End to end from the host, with the device copies above released first.
	a.Free()
	factor.Free()
	for _, k := range ks {
		if !opsOn[k.name] || !b.paths["graph"] || strings.HasPrefix(k.name, "syevd") && (n > *maxSyevd || b.tile > 1024) || k.name == "potri" && n > *maxPotri {
			continue
		}
		op := k.name
		if strings.HasPrefix(op, "potrs") {
			op = "potrs"
		}
		secs, err := b.endToEnd(k.e2e, k.nrhs)
		if err != nil {
			b.fail(op, "graph", err)
		} else {
			b.put(op, "graph", k.nrhs, b.tile, secs, k.flops, 0)
		}
	}
}

// slowMgEig reports whether op is a syevd too large for the cuSolverMg paths.
func (b *bench) slowMgEig(op string) bool {
	return strings.HasPrefix(op, "syevd") && b.n > *maxMgEig
}

func (b *bench) opts() []mgla.Option {
	return []mgla.Option{mgla.WithMesh(b.mesh), mgla.WithTile(b.tile)}
}

// denseTime times single-GPU cuSOLVER on GPU 0 with the whole matrix there
// (a one-GPU mesh's shard is the dense column-major matrix).
func (b *bench) denseTime(name string, input, rhs *sharding.Tensor, dn *cusolver.Dn) (float64, error) {
	n := b.n
	buf := must(input.ToDense(0))
	defer buf.Release()
	var rbuf *sharding.DeviceBuffer
	if rhs != nil {
		rbuf = must(rhs.ToDense(0))
		defer rbuf.Release()
	}
	w := must(cusolver.Malloc(0, n*8))
	defer cusolver.Free(0, w)
	prep := func() error { return nil }
	if rhs == nil {
		prep = func() error { return input.IntoDense(buf) }
	}
	return timeIt(prep, func() error {
		switch {
		case name == "potrf":
			return dn.Potrf(b.dt, n, buf.Ptr(), n)
		case name == "potri":
			return dn.Potri(b.dt, n, buf.Ptr(), n)
		case strings.HasPrefix(name, "potrs"):
			return dn.Potrs(b.dt, n, rhs.Cols(), buf.Ptr(), n, rbuf.Ptr(), n)
		default:
			return dn.Syevd(b.dt, n, buf.Ptr(), n, w, name == "syevd-vectors")
		}
	})
}

// endToEnd times a Gorgonia graph from host A (and B) to the host result.
func (b *bench) endToEnd(build func(g *G.ExprGraph, a, rhs *G.Node) (*G.Node, error), nrhs int) (float64, error) {
	return timeGraph(func(g *G.ExprGraph) (*G.Node, error) {
		an := G.NewMatrix(g, b.dt, G.WithShape(b.n, b.n), G.WithName("A"), G.WithValue(b.host))
		var bn *G.Node
		if nrhs > 0 {
			bn = G.NewMatrix(g, b.dt, G.WithShape(b.n, nrhs), G.WithName("B"), G.WithValue(ones(b.dt, b.n, nrhs)))
		}
		return build(g, an, bn)
	})
}

// timeGraph builds a graph once and times TapeMachine.RunAll.
func timeGraph(build func(g *G.ExprGraph) (*G.Node, error)) (float64, error) {
	g := G.NewGraph()
	if _, err := build(g); err != nil {
		return math.NaN(), err
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	secs, err := timeIt(func() error { m.Reset(); return nil }, m.RunAll)
	freeValues(g)
	return secs, err
}

// runOps runs a one-op graph and copies its sharded result into dst.
func runOps(build func(g *G.ExprGraph) (*G.Node, error), dst *sharding.Tensor) error {
	g := G.NewGraph()
	out, err := build(g)
	if err != nil {
		return err
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return err
	}
	err = out.Value().(*sharding.Tensor).RelayoutInto(dst)
	freeValues(g)
	return err
}

// freeValues releases the device memory of a graph's sharded values that
// the graph made (not its inputs), Eigen's too (a sharded tensor carrying
// the eigenvalues).
func freeValues(g *G.ExprGraph) {
	type sharded interface {
		Free()
		Mesh() *sharding.Mesh
	}
	for _, nd := range g.AllNodes() {
		if nd.Op() == nil {
			continue
		}
		if t, ok := nd.Value().(sharded); ok {
			t.Free()
		}
	}
}

func ptrs(t *sharding.Tensor) []uintptr {
	p := make([]uintptr, t.Mesh().Size())
	for d := range p {
		p[d] = t.Shard(d).(*sharding.DeviceBuffer).Ptr()
	}
	return p
}
