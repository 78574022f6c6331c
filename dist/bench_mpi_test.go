//go:build mpi

package dist_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/internal/benchpair"
)

// The benchmarks run under mpirun, every rank the same fixed number of
// iterations (-test.benchtime=Nx), on the near-square grid of the world,
// float64 in 64×64 blocks, N×N from MGLA_DIST_BENCH_N (default 4000).
// Each times two ways of doing the same thing in turns, the order swapped
// every iteration, so that both see the same machine state, and rank 0
// prints one line per comparison for scripts:
//
//	distbench op=Potrs N=4000 P=4 grid=2x2 iters=5 a=op a_ms=… b=direct b_ms=… a/b=… cpu_a/b=… load=…
//
// a_ms and b_ms are medians over the iterations, a/b the median of the
// per-iteration ratios, cpu_a/b that of the ratios of this process's CPU
// time (rank 0's; with one process it is what the shared build VM's load
// leaves least disturbed; with more it counts MPI's busy waiting too),
// load the 1-minute load average before and after. With -test.v rank 0
// also prints each iteration's times ("distbench-iteration …").

// benchN is the order N of the benchmarks' matrices.
func benchN(b *testing.B) int {
	n := 4000
	if v := os.Getenv("MGLA_DIST_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("MGLA_DIST_BENCH_N=%q: want a positive integer", v)
		}
	}
	return n
}

// benchGrid is the near-square grid of the world, closed when b ends.
func benchGrid(b *testing.B) *dist.Grid {
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g
}

// loadAvg is the 1-minute load average ("?" where unknown).
func loadAvg() string {
	s, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(s))[0]
}

// inTurns runs fa and fb b.N times each, in turns, and prints their
// comparison on rank 0 (see the package's benchmark comment).
func inTurns(b *testing.B, g *dist.Grid, op string, n int, na string, fa func(), nb string, fb func()) {
	load := loadAvg()
	fa() // warm up: the grid's scratch array and BLACS contexts
	fb()
	pairs := benchpair.Pairs{CPU: cpuTime}
	for b.Loop() {
		pairs.Time(fa, fb)
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
	ma, mb := ms(benchpair.Median(pairs.Wall[0])), ms(benchpair.Median(pairs.Wall[1]))
	mr, mc := pairs.MedianRatio(), pairs.MedianCPURatio()
	b.ReportMetric(ma, na+"-ms")
	b.ReportMetric(mb, nb+"-ms")
	b.ReportMetric(mr, na+"/"+nb)
	if world.Rank() == 0 && testing.Verbose() {
		for i := range pairs.Wall[0] {
			fmt.Printf("distbench-iteration op=%s N=%d P=%d i=%d a_ms=%.1f b_ms=%.1f a_cpu_ms=%.1f b_cpu_ms=%.1f\n",
				op, n, world.Size(), i, ms(pairs.Wall[0][i]), ms(pairs.Wall[1][i]), ms(pairs.CPUs[0][i]), ms(pairs.CPUs[1][i]))
		}
	}
	if world.Rank() == 0 {
		p, q := g.Shape()
		fmt.Printf("distbench op=%s N=%d P=%d grid=%dx%d iters=%d a=%s a_ms=%.1f b=%s b_ms=%.1f a/b=%.3f cpu_a/b=%.3f load=%s,%s\n",
			op, n, world.Size(), p, q, len(pairs.Wall[0]), na, ma, nb, mb, mr, mc, load, loadAvg())
	}
}

// cpuTime is the CPU time this process has used (user and system, all
// threads): unlike the wall time, it does not grow while other jobs hold
// the cores.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkPotrs times dist.Potrs against p?potrf + p?potrs called straight
// on preallocated copies of the same local arrays (DirectPotrs), 16
// right-hand sides.
func BenchmarkPotrs(b *testing.B) {
	n := benchN(b)
	g := benchGrid(b)
	rng := rand.New(rand.NewPCG(1, 2))
	a := benchSPD(b, g, n)
	rhs, err := dist.NewMatrix[float64](g, n, 16, 64)
	if err != nil {
		b.Fatal(err)
	}
	rhs.Fill(func(int, int) float64 { return rng.Float64() })
	l, x := a.Clone(), rhs.Clone()
	b.Run(fmt.Sprintf("N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		inTurns(b, g, "Potrs", n, "op", func() {
			if _, err := dist.Potrs(a, rhs); err != nil {
				b.Fatal(err)
			}
		}, "direct", func() {
			if info := dist.DirectPotrs(a, rhs, l, x); info != 0 {
				b.Fatal(info)
			}
		})
	})
	// The op's extra work alone, against the copies the baseline makes
	// too: the overhead without ScaLAPACK's noise.
	b.Run(fmt.Sprintf("extras/N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		inTurns(b, g, "PotrsExtras", n, "op-extras", func() {
			if err := dist.PotrsExtras(a, rhs); err != nil {
				b.Fatal(err)
			}
		}, "direct-copies", func() { dist.DirectCopies(a, rhs, l, x) })
	})
}

// benchSPD is the n×n symmetric matrix with n on the diagonal and
// symmetricNoise off it (positive definite) on g in 64×64 blocks.
func benchSPD(b *testing.B, g *dist.Grid, n int) *dist.Matrix[float64] {
	a, err := dist.NewMatrix[float64](g, n, n, 64)
	if err != nil {
		b.Fatal(err)
	}
	a.Fill(func(r, c int) float64 {
		if r == c {
			return float64(n)
		}
		return symmetricNoise(r, c)
	})
	return a
}

// symmetricNoise is a value in [−0.5, 0.5) that depends on {r, c} only.
func symmetricNoise(r, c int) float64 {
	lo, hi := uint64(min(r, c)), uint64(max(r, c))
	h := (lo*0x9E3779B97F4A7C15 ^ hi) * 0xBF58476D1CE4E5B9
	h ^= h >> 31
	return float64(h>>11)/(1<<53) - 0.5
}

// BenchmarkGather times Matrix.Gather to rank 0 and to every rank, through
// a sum over MPI against through p?gemr2d.
func BenchmarkGather(b *testing.B) {
	n := benchN(b)
	g := benchGrid(b)
	m, err := dist.NewMatrix[float64](g, n, n, 64)
	if err != nil {
		b.Fatal(err)
	}
	m.Fill(func(r, c int) float64 { return float64(r - c) })
	for _, root := range []int{0, -1} {
		name := "Gather(0)"
		if root < 0 {
			name = "Gather(all)"
		}
		b.Run(fmt.Sprintf("%s/N=%d/P=%d", name, n, world.Size()), func(b *testing.B) {
			inTurns(b, g, name, n, "sum", movesRun(b, dist.SumMoves, func() error { _, err := m.Gather(root); return err }),
				"gemr2d", movesRun(b, dist.Gemr2dMoves, func() error { _, err := m.Gather(root); return err }))
		})
	}
}

// BenchmarkScatter times FromRoot (from rank 0) and FromRowBlocks (the
// block split of the rows, ⌈N/P⌉ on each rank but the last), through a
// broadcast or sum over MPI against through p?gemr2d.
func BenchmarkScatter(b *testing.B) {
	n := benchN(b)
	g := benchGrid(b)
	var full []float64
	if world.Rank() == 0 {
		full = make([]float64, n*n)
		for i := range full {
			full[i] = float64(i % 1009)
		}
	}
	split := (n + world.Size() - 1) / world.Size()
	rows := max(0, min(split, n-world.Rank()*split))
	band := make([]float64, rows*n)
	for i := range band {
		band[i] = float64(i % 1013)
	}
	b.Run(fmt.Sprintf("FromRoot/N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		from := func() error { _, err := dist.FromRoot(g, 0, n, n, 64, full); return err }
		inTurns(b, g, "FromRoot", n, "bcast", movesRun(b, dist.SumMoves, from), "gemr2d", movesRun(b, dist.Gemr2dMoves, from))
	})
	b.Run(fmt.Sprintf("FromRowBlocks/N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		from := func() error { _, err := dist.FromRowBlocks(g, n, 64, rows, band); return err }
		inTurns(b, g, "FromRowBlocks", n, "sum", movesRun(b, dist.SumMoves, from), "gemr2d", movesRun(b, dist.Gemr2dMoves, from))
	})
}

// movesRun is run with the data moves forced to m.
func movesRun(b *testing.B, m dist.Moves, run func() error) func() {
	return func() {
		restore := dist.SetMoves(m)
		defer restore()
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRowMajor times the row-major ways in and out against what the
// graph ops do without them: convert the whole row-major matrix to
// column-major on every rank that holds it (the plain double loop of
// transpose) and then call the column-major function, or gather
// column-major and convert back. The data moves by the rule (AutoMoves).
// FromReplicated and Gather(all) are the graph's; FromRoot from rank 0,
// FromRowBlocks from the block split of the rows and Gather(0) are the
// user's.
func BenchmarkRowMajor(b *testing.B) {
	n := benchN(b)
	g := benchGrid(b)
	const nb = 64
	rm := make([]float64, n*n)
	for i := range rm {
		rm[i] = float64(i%1009) - 504
	}
	var root []float64
	if world.Rank() == 0 {
		root = rm
	}
	split := (n + world.Size() - 1) / world.Size()
	r0 := min(n, world.Rank()*split)
	rows := min(split, n-r0)
	band := rm[r0*n : (r0+rows)*n]
	m, err := dist.FromReplicatedRowMajor(g, n, n, nb, rm)
	if err != nil {
		b.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name         string
		rowMajor, cm func() error
	}{{
		"FromReplicated",
		func() error { _, err := dist.FromReplicatedRowMajor(g, n, n, nb, rm); return err },
		func() error { _, err := dist.FromReplicated(g, n, n, nb, transpose(rm, n, n)); return err },
	}, {
		"FromRoot",
		func() error { _, err := dist.FromRootRowMajor(g, 0, n, n, nb, root); return err },
		func() error {
			var cm []float64
			if root != nil {
				cm = transpose(root, n, n)
			}
			_, err := dist.FromRoot(g, 0, n, n, nb, cm)
			return err
		},
	}, {
		"FromRowBlocks",
		func() error { _, err := dist.FromRowBlocksRowMajor(g, n, nb, rows, band); return err },
		func() error { _, err := dist.FromRowBlocks(g, n, nb, rows, transpose(band, n, rows)); return err },
	}, {
		"Gather(all)",
		func() error { _, err := m.GatherRowMajor(-1); return err },
		func() error {
			cm, err := m.Gather(-1)
			if err == nil {
				transpose(cm, n, n)
			}
			return err
		},
	}, {
		"Gather(0)",
		func() error { _, err := m.GatherRowMajor(0); return err },
		func() error {
			cm, err := m.Gather(0)
			if cm != nil {
				transpose(cm, n, n)
			}
			return err
		},
	}} {
		b.Run(fmt.Sprintf("%s/N=%d/P=%d", c.name, n, world.Size()), func(b *testing.B) {
			inTurns(b, g, "RowMajor-"+c.name, n, "rowmajor", func() { must(c.rowMajor()) },
				"convert", func() { must(c.cm()) })
		})
	}
}

// BenchmarkInverseFromFactor times A⁻¹ from the Cholesky factor already on
// the grid (InverseFromFactor, what the graph's Potri and LogDet gradient
// can use once Potrs, LogDet or Cholesky has factored A) against Potri,
// which factors A again.
func BenchmarkInverseFromFactor(b *testing.B) {
	n := benchN(b)
	g := benchGrid(b)
	a := benchSPD(b, g, n)
	l, err := dist.Cholesky(a)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("N=%d/P=%d", n, world.Size()), func(b *testing.B) {
		inTurns(b, g, "InverseFromFactor", n, "fromfactor", func() {
			if _, err := dist.InverseFromFactor(l); err != nil {
				b.Fatal(err)
			}
		}, "potri", func() {
			if _, err := dist.Potri(a); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkRowBands times FromRowBlocksRowMajor and RowBlock from and into
// bands that are not the block split of the rows — a data loader's
// (sizes differing by one, the first ranks larger) and skewed ones (rank r
// holding a share proportional to r+1; where N divides evenly, the
// loader's rank 0 holds one row fewer and rank 1 one more, so that they are
// never the block split) — through reband and p?gemr2d,
// against the block split through p?gemr2d alone, and the loader's bands
// through reband and p?gemr2d against the sum of the whole matrix (the way
// such bands took before). Before the timings each path runs twice more
// (to warm up, then for its memory): rank 0 prints, per path, the largest over the ranks of
// the rise of the process's peak resident memory (VmHWM, reset through
// /proc/self/clear_refs after returning the free heap to the system: Go's
// and ScaLAPACK's and MPI's buffers alike) and of the bytes the Go heap
// allocated:
//
//	distmem op=… path=… N=… P=… peak_MB=… alloc_MB=…
func BenchmarkRowBands(b *testing.B) {
	n := benchN(b)
	g := benchGrid(b)
	const nb = 64
	me, size := world.Rank(), world.Size()
	rm := make([]float64, n*n)
	for i := range rm {
		rm[i] = float64(i%1009) - 504
	}
	split := (n + size - 1) / size
	splits := map[string]func(r int) int{
		"split": func(r int) int { return min(n, r*split) },
		"loader": func(r int) int {
			if n%size == 0 && r == 1 && size > 1 {
				return n/size - 1 // never the block split: rank 0 one row short
			}
			return r*(n/size) + min(r, n%size)
		},
		"skewed": func(r int) int { return n * r * (r + 1) / (size * (size + 1)) },
	}
	bandOf := func(s string) (rows int, band []float64) {
		r0, r1 := splits[s](me), splits[s](me+1)
		return r1 - r0, rm[r0*n : r1*n]
	}
	m, err := dist.FromReplicatedRowMajor(g, n, n, nb, rm)
	if err != nil {
		b.Fatal(err)
	}
	from := func(s string, mv dist.Moves) func() {
		rows, band := bandOf(s)
		return movesRun(b, mv, func() error { _, err := dist.FromRowBlocksRowMajor(g, n, nb, rows, band); return err })
	}
	back := func(s string, mv dist.Moves) func() {
		rows, _ := bandOf(s)
		return movesRun(b, mv, func() error { _, err := m.RowBlock(rows); return err })
	}
	type path struct {
		name string
		run  func()
	}
	for _, c := range []struct {
		op   string
		a, b path
	}{
		{"FromRowBlocks-loader", path{"loader", from("loader", dist.Gemr2dMoves)}, path{"split", from("split", dist.Gemr2dMoves)}},
		{"FromRowBlocks-skewed", path{"skewed", from("skewed", dist.Gemr2dMoves)}, path{"split", from("split", dist.Gemr2dMoves)}},
		{"FromRowBlocks-loader-sum", path{"reband", from("loader", dist.Gemr2dMoves)}, path{"sum", from("loader", dist.SumMoves)}},
		{"RowBlock-loader", path{"loader", back("loader", dist.Gemr2dMoves)}, path{"split", back("split", dist.Gemr2dMoves)}},
		{"RowBlock-loader-sum", path{"reband", back("loader", dist.Gemr2dMoves)}, path{"sum", back("loader", dist.SumMoves)}},
	} {
		b.Run(fmt.Sprintf("%s/N=%d/P=%d", c.op, n, size), func(b *testing.B) {
			for _, p := range []path{c.a, c.b} {
				p.run() // BLACS contexts, MPI's buffers
				peak, alloc := memoryOf(p.run)
				worst := []float64{0, 0}
				if err := world.Do(call(collective.AllReduce, collective.Max, []float64{peak, alloc}, worst)); err != nil {
					b.Fatal(err)
				}
				if me == 0 {
					fmt.Printf("distmem op=%s path=%s N=%d P=%d peak_MB=%.1f alloc_MB=%.1f\n", c.op, p.name, n, size, worst[0], worst[1])
				}
			}
			inTurns(b, g, c.op, n, c.a.name, c.a.run, c.b.name, c.b.run)
		})
	}
}

// memoryOf runs f and returns by how many MB it raised this process's peak
// resident memory (0 where /proc/self/clear_refs cannot reset it) and how
// many MB the Go heap allocated meanwhile.
func memoryOf(f func()) (peakMB, allocMB float64) {
	var before, after runtime.MemStats
	debug.FreeOSMemory()
	rss := statusKB("VmRSS")
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if reset {
		peakMB = float64(statusKB("VmHWM")-rss) / 1024
	}
	return peakMB, float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
}

// statusKB is the field of /proc/self/status in kB (0 if absent).
func statusKB(field string) int {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}
