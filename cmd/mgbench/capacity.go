//go:build mglacuda

package main

// The capacity mode (-capacity potrs,potri,syevd): for each op and each GPU
// count of -gpus, the largest order N (a multiple of 1024) at which the op
// fits on the mesh of the first k GPUs through mgla's graph ops, float64.
// For each, a job
//
//  1. runs the op once at a small N (the warm-up: CUDA contexts, mgla's
//     staging buffers and kernels and the solver handles exist after it),
//     reads the free memory of the mesh's GPUs (cudaMemGetInfo, those GPUs
//     only) and predicts N_max with the memory model below;
//  2. runs the op at N_max on a fresh generator matrix and checks the answer
//     (potrs: B = A·1, so X = 1; potri: A·c_j = e_j for random columns c_j
//     of C = A⁻¹, with A's rows regenerated on the host), or, for syevd
//     (whose run at capacity takes minutes on one GPU, hours through
//     cuSolverMg) or a run estimated to take longer than -capacity-max-s or
//     to need more host memory than there is, allocates what the model
//     says the op holds at its peak instead;
//  3. does the same at N_over = N_max + 4% (rounded up to a multiple of
//     1024), which should fail with an out-of-memory error.
//
// Each job runs in a child process of its own (the same binary with
// -capacity-job op:k): mgla keeps one cuSolverMg handle per mesh and one
// cuSOLVER handle per GPU for the life of the process, with workspaces that
// only grow, so the jobs before would otherwise change what the next one
// finds free. A job prints progress lines (indented) and one summary line
// that starts with "capacity:", and writes CSV rows with path "capacity"
// (ran; seconds of the graph's RunAll, NaN when it failed) or
// "capacity-alloc" (allocated, not run; seconds of the allocation, NaN when
// it failed).
//
// # Memory model
//
// N×N float64 matrices are in the column block-cyclic layout of tile T
// (mgla's default: 2048; Syevd 1024): mesh position p holds
// 8·N·LocalCols(N, T, k, p) bytes of each, position 0 the most when the
// tiles do not divide evenly. Each op is modelled as a sequence of stages
// (ops/gpu_cuda.go, ops/linalg.go, mgla.go), each with the buffers held on
// the devices while it runs:
//
//   - potrs (mgla.Potrs: Shard, Cholesky, Potrs, Gather): A (the input's
//     copy on the mesh); Cholesky adds L and the potrf workspace; Potrs adds
//     B and X (N×1, on position 0) and the potrs workspace. On one GPU both
//     run in cuSOLVER on the shards themselves (potrs needs no workspace);
//     on several, auto dispatch runs both in cuSolverMg from N = 6144.
//   - potri (mgla.Potri: Shard, Cholesky, Potri, Gather): A; L and the
//     potrf workspace; C and, on the mesh, the potrs workspace for T
//     right-hand sides and an N×T identity block on the first GPU (mgla
//     inverts on meshes by potrs on identity blocks: cusolverMgPotri is
//     wrong on several GPUs). Auto dispatch runs potri on the first GPU
//     (N ≤ 46340) when a dense N×N copy
//     fits in the free memory there with 1/8 to spare: that copy and
//     cuSOLVER's potri workspace then join on the first GPU (ops.single
//     does not count the workspace). cusolverDn<t>potri indexes with int32:
//     it fails (CUSOLVER_STATUS_INVALID_VALUE) once N² > 2³¹-1, N > 46340,
//     whatever the memory (measured on 1 H200: N = 46080 runs, 48128 fails),
//     so above it mgla inverts on the mesh, one GPU included.
//   - syevd (mgla.Syevd with vectors: Shard, Eigen, Gather): A; the
//     eigenvector matrix V (also the work matrix); on one GPU, or when auto
//     dispatch picks the first GPU (the same 1/8 rule, always below some N),
//     a dense copy (several GPUs only), the eigenvalues (8N bytes) and
//     cuSOLVER's syevd workspace on the first GPU; otherwise cuSolverMg's
//     syevd workspace on every GPU.
//
// Workspaces are what the solvers' bufferSize queries ask for at that N
// (cusolver.Mg and cusolver.Dn *Workspace). mgla's handles keep their
// workspace and grow it when a call needs more (freeing the old one
// first), so a stage holds the largest workspace of the calls so far. The
// dense copies of the single-GPU path are freed when the call returns.
// Every buffer is rounded up to 2 MiB (the CUDA allocator's granularity),
// and deviceMargin per GPU is kept free for what the model leaves out
// (NaN flags, column maps and pointer tables of a few KiB to MiB, anything
// the solvers allocate inside a call). What the warm-up left in the
// handles' workspaces counts as used, so the prediction errs low by that
// much (MiB at the warm-up's N). N_max is the largest multiple of 1024 whose
// every stage fits on every GPU; below it, the N at which auto dispatch
// picks a single-GPU path that does not fit (a hole) are reported. On
// 2×H200 (2026-11-21) the measured peaks matched the model to 0.5 GiB per
// GPU (potrs on 1 and 2 GPUs, potri on 1 and 2).
//
// Host memory: A (8N² bytes) lives in one host buffer that the job's runs
// share (hostA); potri end to end adds the gathered C (8N²). When that
// exceeds MemAvailable (/proc/meminfo, less hostMargin and 3%) potri runs
// on a device-resident input instead (sharding.Put, ops.Input →
// ops.Cholesky → ops.Potri: C stays on the GPUs and only the checked
// columns come back), and when even A does not fit the run becomes an
// allocation.
//
// # Time model
//
// Before each run the job prints an estimate: host generation at the rate
// the warm-up measured, then per stage the matrices moved between host and
// GPUs at the graph's host-side cost per GB that the warm-up measured (on
// 4×H200 about 0.11 s/GB, far above the 58 GB/s of the upload alone:
// Potrs graphs took 1.04 s at N = 32768 and 21.1 s at N = 131072; 0.05 to
// 0.09 s/GB on 2×H200) and the kernels at kernelSecs scaled by N³. Runs
// estimated above -capacity-max-s are replaced by the allocation. Syevd's
// would-be run time is extrapolated by N³ from a run at N = 8192 on the path
// that auto dispatch takes at N_max.

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var (
	capacityOps      = flag.String("capacity", "", "capacity mode: the ops (potrs,potri,syevd; float64) whose largest N to find on each GPU count of -gpus (a number N: the old form, Potrs at N on every GPU)")
	capacityNs       = flag.String("capacity-n", "", "capacity mode: try these orders instead of the predicted largest N and the one 4% above it")
	capacityMaxS     = flag.Float64("capacity-max-s", 90, "capacity mode: a run estimated to take longer (seconds) is replaced by allocating what it would hold")
	capacityDry      = flag.Bool("capacity-dry", false, "capacity mode: predict and allocate only, run nothing at capacity")
	capacityRunFails = flag.Bool("capacity-run-fails", true, "capacity mode: run the orders the model says fail, such as N_max + 4% (false: allocate them, which takes a second)")
	capacityJob      = flag.String("capacity-job", "", "internal: the capacity job op:gpus, which the capacity mode runs in a child process")
)

const (
	gib          = 1 << 30
	allocGrain   = 2 << 20   // the CUDA allocator's granularity for large buffers
	deviceMargin = 256 << 20 // bytes per GPU the model keeps free
	hostMargin   = 4 << 30   // bytes of MemAvailable kept free, besides 3%
	overStep     = 1.04      // N_over = N_max · overStep, rounded up to 1024
	syevdTimeN   = 8192      // the order of syevd's timed run
)

// kernelSecs are the seconds of mgla's solver kernels at N = 65536
// (float64, T = 2048) on 1, 2 and 4 H200s, scaled by N³ for other N:
// potrf 2.17 s on 1 GPU (cuSOLVER), 1.22 and 0.85 s on 2 and 4 (cuSolverMg,
// docs/bench/gpu-4xH200-2026-11-21.csv); potri from the factor 8 × its time
// at N = 32768: 1.15 s on 1 GPU (cuSOLVER, the single path), 1.47 and
// 1.39 s on 2 and 4 (cuSolverMg). Other GPU counts use the nearest count
// below.
var kernelSecs = map[string][3]float64{
	"potrf": {2.17, 1.22, 0.85},
	"potri": {9.2, 11.8, 11.1},
}

// kernelTime estimates kernel op on k GPUs at order n.
func kernelTime(op string, k, n int) float64 {
	t := kernelSecs[op]
	i := 0
	switch {
	case k >= 4:
		i = 2
	case k >= 2:
		i = 1
	}
	return t[i] * math.Pow(float64(n)/65536, 3)
}

// capacity runs one job per op and GPU count, each in a child process.
func capacity(ngpu int) {
	opNames, gpus, ns := strings.Split(*capacityOps, ","), ints(*gpuList), *capacityNs
	if n, err := strconv.Atoi(*capacityOps); err == nil { // the old form -capacity N
		opNames, gpus, ns = []string{"potrs"}, []int{ngpu}, strconv.Itoa(n)
	}
	for i, op := range opNames {
		opNames[i] = strings.TrimSpace(op)
		if _, ok := capOps[opNames[i]]; !ok {
			log.Fatalf("capacity: unknown op %q (potrs, potri, syevd)", op)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	for _, op := range opNames {
		for _, k := range gpus {
			if k > ngpu {
				fmt.Printf("capacity: %s float64 gpus=%d: skipped, %d GPUs visible\n", op, k, ngpu)
				continue
			}
			// Later flags win: the job's settings follow the parent's.
			args := append(append([]string(nil), os.Args[1:]...),
				"-capacity-job", fmt.Sprintf("%s:%d", op, k), "-capacity-n", ns)
			cmd := exec.Command(exe, args...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			jobStart := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Printf("capacity: %s float64 gpus=%d: the job failed after %.0f s: %v\n",
					op, k, time.Since(jobStart).Seconds(), err)
			}
		}
	}
	fmt.Printf("capacity mode: %.0f s in all\n", time.Since(start).Seconds())
}

// capOp is what the capacity mode knows of one op.
type capOp struct {
	warmN  int     // the order of the warm-up run
	copies int     // N×N matrices held at every peak (bounds the search)
	nrhs   int     // right-hand sides (CSV)
	flops  float64 // × N³: what a run computes (CSV)
	runs   bool    // run at capacity (syevd is only allocated)
}

var capOps = map[string]capOp{
	"potrs": {warmN: 8192, copies: 2, nrhs: 1, flops: 1.0 / 3, runs: true},
	"potri": {warmN: 8192, copies: 3, flops: 1, runs: true},
	"syevd": {warmN: 4096, copies: 2, flops: 4.3},
}

// buffer is one allocation held on the mesh.
type buffer struct {
	name  string
	cols  int     // > 0: an N×cols matrix sharded in the op's layout (sharding.New)
	bytes []int64 // cols == 0: bytes per mesh position, cudaMalloc'd (0: none)
}

// stage is one step of an op's run: the buffers held on the devices while it
// runs, the host memory then, and its estimated seconds.
type stage struct {
	name      string
	held      []buffer
	hostBytes int64
	seconds   float64
	limit     string // why the stage fails whatever the memory, if it does
}

// plan is the model of an op at order n.
type plan struct {
	n      int
	stages []stage
}

// job is one op on the mesh of the first k GPUs.
type job struct {
	name      string
	op        capOp
	out       *writer
	mesh      *sharding.Mesh
	ids       []int
	tile      int       // mgla's default tile for the op
	free      []int64   // free bytes per mesh position after the warm-up
	genRate   float64   // host matrix generation, bytes per second (warm-up)
	hostPerGB float64   // a graph's host-side seconds per GB moved (warm-up)
	hostN     int       // the largest order the job tries
	hostBuf   []float64 // A's host memory, reused by the runs (hostA)
	touched   int64     // bytes of hostBuf written so far
	mg        *cusolver.Mg
	dn        *cusolver.Dn
}

// capacityJobMain runs the job named by -capacity-job.
func capacityJobMain(out *writer) {
	name, ks, _ := strings.Cut(*capacityJob, ":")
	k, err := strconv.Atoi(ks)
	op, ok := capOps[name]
	if err != nil || !ok {
		log.Fatalf("capacity: bad job %q", *capacityJob)
	}
	j := &job{name: name, op: op, out: out, mesh: meshOf(k)}
	for _, d := range j.mesh.Devices() {
		j.ids = append(j.ids, d.ID)
	}
	j.tile = mgla.DefaultTile(j.mesh, 0)
	if name == "syevd" {
		j.tile = min(j.tile, 1024) // as mgla.Syevd
	}
	j.warmUp()
	j.free = freeMemory(j.ids)
	if err := j.openQueries(); err != nil {
		log.Fatalf("capacity: workspace queries: %v", err)
	}
	nMax, plans := j.predict()
	ns := ints(*capacityNs)
	if len(ns) == 0 {
		ns = []int{nMax, roundUp(int(float64(nMax)*overStep), 1024)}
	}
	for _, n := range ns {
		if _, ok := plans[n]; !ok {
			plans[n] = must(j.planAt(n))
		}
	}
	j.closeQueries() // they hold device memory
	j.hostN = slices.Max(ns)
	var parts []string
	for _, n := range ns {
		parts = append(parts, j.attempt(plans[n]))
	}
	if !op.runs {
		parts = append(parts, j.syevdRunTime(plans[ns[0]]))
	}
	fmt.Printf("capacity: %s float64 gpus=%d %s\n", name, k, strings.Join(parts, "; "))
}

func (j *job) logf(format string, args ...any) {
	fmt.Printf("  %s gpus=%d: %s\n", j.name, len(j.ids), fmt.Sprintf(format, args...))
}

// warmUp runs the op at a small N on the path of the capacity runs, twice:
// the first run makes what stays (contexts, staging buffers, handles) and
// measures the host generation rate into fresh pages, the second the
// graph's host-side cost per GB moved.
func (j *job) warmUp() {
	n := j.op.warmN
	var res string
	if j.op.runs {
		var r runResult
		for i := range 2 {
			if r = j.run(n, true); r.err != nil {
				log.Fatalf("capacity: warm-up at N=%d: %v", n, r.err)
			}
			if i == 0 { // into fresh pages, as the first run at capacity
				j.genRate = float64(8*n*n) / r.gen
			}
		}
		if r.bad {
			j.logf("warm-up at N=%d: WRONG ANSWER: %s", n, r.check)
		}
		moved, kernels := 8*float64(n)*float64(n)/1e9, kernelTime("potrf", len(j.ids), n)
		if j.name == "potri" {
			moved, kernels = 2*moved, kernels+kernelTime("potri", len(j.ids), n)
		}
		j.hostPerGB = max(0.005, (r.secs-kernels)/moved)
		res = fmt.Sprintf("ran in %.3f s, %s; graph host side %.3f s/GB", r.secs, r.check, j.hostPerGB)
	} else {
		start := time.Now()
		host := spd(tensor.Float64, n)
		j.genRate = float64(8*n*n) / time.Since(start).Seconds()
		secs, err := j.syevdTime(host, ops.DispatchAuto)
		if err != nil {
			log.Fatalf("capacity: warm-up at N=%d: %v", n, err)
		}
		res = fmt.Sprintf("Eigen ran in %.2f s", secs)
	}
	j.logf("warm-up at N=%d: %s; host generation %.1f GB/s (%d CPUs)", n, res, j.genRate/1e9, runtime.NumCPU())
}

// openQueries makes the solver handles of the workspace queries, after the
// free memory is read (they hold some). One GPU needs cuSolverMg too for
// potri above cuSOLVER's limit (model.potri).
func (j *job) openQueries() (err error) {
	if len(j.ids) > 1 || j.name == "potri" {
		if j.mg, err = cusolver.NewMg(j.ids); err != nil {
			return err
		}
	}
	j.dn, err = cusolver.NewDn(j.ids[0])
	return err
}

func (j *job) closeQueries() {
	if j.mg != nil {
		must(0, j.mg.Close())
	}
	must(0, j.dn.Close())
	j.mg, j.dn = nil, nil
}

// predict finds N_max, reports the orders below it at which the model fails
// too (auto dispatch picks a single-GPU path that does not fit), and returns
// the plans it made.
func (j *job) predict() (int, map[int]plan) {
	k := len(j.ids)
	gibs := make([]string, k)
	for p, f := range j.free {
		gibs[p] = fmt.Sprintf("%.2f", float64(f)/gib)
	}
	j.logf("free GiB on gpu %v: %s; host MemAvailable %.0f GB", j.ids, strings.Join(gibs, " "), float64(memAvailable())/1e9)
	// No order above upper fits: the copies alone, spread evenly, exceed the
	// most free memory of any GPU.
	most := slices.Max(j.free)
	upper := roundUp(int(math.Sqrt(float64(k)*float64(most)/float64(8*j.op.copies))), 1024) + 1024
	// Scan down from there to the first order that fits, then on to half of
	// it for holes.
	plans := map[int]plan{}
	nMax := 0
	var hole []int
	for n := upper; n >= 1024 && n >= nMax/2; n -= 1024 {
		plans[n] = must(j.planAt(n))
		ok, _, _ := j.fits(plans[n])
		switch {
		case ok && nMax == 0:
			nMax = n
		case !ok && nMax > 0:
			hole = append(hole, n)
		}
	}
	if nMax == 0 {
		log.Fatalf("capacity: no N up to %d fits (free GiB %s)", upper, strings.Join(gibs, " "))
	}
	if nMax == upper {
		j.logf("warning: the model fits at the search's upper bound N=%d", upper)
	}
	if len(hole) > 0 {
		_, s, p := j.fits(plans[hole[0]])
		j.logf("the model fails below N_max too, at N=%d..%d (%d orders of 1024): %q on gpu:%d: %s",
			hole[len(hole)-1], hole[0], len(hole), s.name, j.ids[p], j.describe(hole[0], s, p))
	}
	_, s, p := j.tightest(plans[nMax])
	j.logf("model at N_max=%d: tightest %q on gpu:%d: %s", nMax, s.name, j.ids[p], j.describe(nMax, s, p))
	if above, ok := plans[nMax+1024]; ok {
		_, s, p := j.fits(above)
		j.logf("model at N=%d: %q does not fit on gpu:%d: %s", above.n, s.name, j.ids[p], j.describe(above.n, s, p))
	}
	return nMax, plans
}

// model builds the stages of one op at one order.
type model struct {
	j      *job
	n      int
	held   []buffer // matrices held
	wsMg   int64    // cuSolverMg workspace held on every GPU
	wsDn   int64    // cuSOLVER workspace held on the first GPU
	stages []stage
}

func (m *model) mat(name string) buffer { return buffer{name: name, cols: m.n} }
func (m *model) vec(name string) buffer { return buffer{name: name, cols: 1} }
func (m *model) matBytes() int64        { return int64(8 * m.n * m.n) }

// first is bytes on the mesh's first GPU.
func (m *model) first(name string, bytes int64) buffer {
	b := make([]int64, len(m.j.ids))
	b[0] = bytes
	return buffer{name: name, bytes: b}
}

// now is what is held: the matrices, the handles' workspaces and extra.
func (m *model) now(extra ...buffer) []buffer {
	held := append([]buffer(nil), m.held...)
	if m.wsMg > 0 {
		b := make([]int64, len(m.j.ids))
		for p := range b {
			b[p] = m.wsMg
		}
		held = append(held, buffer{name: "cuSolverMg workspace", bytes: b})
	}
	if m.wsDn > 0 {
		held = append(held, m.first("cuSOLVER workspace", m.wsDn))
	}
	return append(held, extra...)
}

func (m *model) add(name string, secs float64, hostBytes int64, extra ...buffer) {
	m.stages = append(m.stages, stage{name: name, held: m.now(extra...), hostBytes: hostBytes, seconds: secs})
}

// single reports whether auto dispatch runs a kernel on the first GPU
// (ops.gpuSolver.single with one dense operand): on one GPU always; on
// several when the kernel's rule says so and a dense copy fits in the free
// memory of the first GPU with 1/8 to spare.
func (m *model) single(rule bool) bool {
	if len(m.j.ids) == 1 {
		return true
	}
	if !rule {
		return false
	}
	need := m.matBytes()
	return need+need/8 < m.j.free[0]-m.j.used(m.n, m.now())[0]
}

// denseCopy is the dense copy of an operand that the single-GPU path makes
// on the first GPU of a mesh of several (none on one GPU).
func (m *model) denseCopy(of string) []buffer {
	if len(m.j.ids) == 1 {
		return nil
	}
	return []buffer{m.first("dense copy of "+of, m.matBytes())}
}

// planAt models the op at order n.
func (j *job) planAt(n int) (plan, error) {
	m := &model{j: j, n: n}
	m.held = []buffer{m.mat("A")}
	m.add("upload A", float64(m.matBytes())/1e9*m.j.hostPerGB, m.matBytes())
	var err error
	switch j.name {
	case "potrs":
		if err = m.cholesky(); err == nil {
			err = m.potrs()
		}
	case "potri":
		if err = m.cholesky(); err == nil {
			err = m.potri()
		}
	case "syevd":
		err = m.syevd()
	}
	return plan{n: n, stages: m.stages}, err
}

// cholesky is ops.gpuSolver.potrf: on the first GPU below N = 6144.
func (m *model) cholesky() error {
	n := m.n
	m.held = append(m.held, m.mat("L"))
	if m.single(n < 6144) {
		ws, _, err := m.j.dn.PotrfWorkspace(tensor.Float64, n)
		m.wsDn = max(m.wsDn, ws)
		m.add("Cholesky on gpu:0 (cuSOLVER)", kernelTime("potrf", 1, n), m.matBytes(), m.denseCopy("L")...)
		return err
	}
	ws, err := m.j.mg.PotrfWorkspace(tensor.Float64, n, m.j.tile)
	m.wsMg = max(m.wsMg, ws)
	m.add("Cholesky (cuSolverMg)", kernelTime("potrf", len(m.j.ids), n), m.matBytes())
	return err
}

// potrs is ops.gpuSolver.potrs: never on one GPU of several.
func (m *model) potrs() error {
	n := m.n
	m.held = append(m.held, m.vec("B"), m.vec("X"))
	solve := 0.03 * math.Pow(float64(n)/65536, 2) // 28–31 ms at N = 65536
	if len(m.j.ids) == 1 {
		m.add("solve (cuSOLVER)", solve, m.matBytes())
		return nil
	}
	ws, err := m.j.mg.PotrsWorkspace(tensor.Float64, n, 1, m.j.tile, m.j.tile)
	m.wsMg = max(m.wsMg, ws)
	m.add("solve (cuSolverMg)", solve, m.matBytes())
	return err
}

// potri is ops.gpuSolver.potri, then the Gather: single-GPU cuSOLVER
// wherever the dense copy fits and N ≤ 46340 and N is past the crossover
// (ops.singleGPUFaster, ops.dnCanRun; any N ≤ 46340 on one GPU), else
// cuSolverMg potrs on blocks of T identity columns held on the first GPU
// (ops.gpuSolver.inverseByBlocks).
func (m *model) potri() error {
	n := m.n
	m.held = append(m.held, m.mat("C"))
	var err error
	var ws int64
	if n <= 46340 && m.single(n >= 11264 && len(m.j.ids) == 2 || n >= 14336) { // ops.dnCanRun, ops.singleGPUFaster
		ws, err = m.j.dn.PotriWorkspace(tensor.Float64, n)
		m.wsDn = max(m.wsDn, ws)
		m.add("Potri on gpu:0 (cuSOLVER)", kernelTime("potri", 1, n), m.matBytes(), m.denseCopy("C")...)
	} else {
		w := min(m.j.tile, n)
		ws, err = m.j.mg.PotrsWorkspace(tensor.Float64, n, w, m.j.tile, w)
		m.wsMg = max(m.wsMg, ws)
		m.add("Potri (cuSolverMg potrs on identity blocks)", 3*kernelTime("potri", len(m.j.ids), n), m.matBytes(),
			m.first("identity block", int64(8*n*w)))
	}
	m.add("gather C", float64(m.matBytes())/1e9*m.j.hostPerGB, 2*m.matBytes())
	return err
}

// syevd is ops.gpuSolver.syevd with vectors, then the Gather.
func (m *model) syevd() error {
	n := m.n
	m.held = append(m.held, m.mat("V"))
	var err error
	if m.single(true) {
		var ws int64
		ws, _, err = m.j.dn.SyevdWorkspace(tensor.Float64, n, true)
		m.wsDn = max(m.wsDn, ws)
		extra := append(m.denseCopy("V"), m.first("eigenvalues", int64(8*n)))
		m.add("Eigen on gpu:0 (cuSOLVER)", math.NaN(), m.matBytes(), extra...)
	} else {
		var ws int64
		ws, err = m.j.mg.SyevdWorkspace(tensor.Float64, n, m.j.tile, true)
		m.wsMg = max(m.wsMg, ws)
		m.add("Eigen (cuSolverMg)", math.NaN(), m.matBytes())
	}
	m.add("gather V", float64(m.matBytes())/1e9*m.j.hostPerGB, 2*m.matBytes())
	return err
}

// used returns the bytes that held takes on each mesh position at order n.
func (j *job) used(n int, held []buffer) []int64 {
	k := len(j.ids)
	u := make([]int64, k)
	for _, b := range held {
		for p := range u {
			bytes := int64(0)
			if b.cols > 0 {
				bytes = int64(8 * n * cusolver.LocalCols(b.cols, j.tile, k, p))
			} else {
				bytes = b.bytes[p]
			}
			u[p] += roundUp64(bytes, allocGrain)
		}
	}
	return u
}

// fits reports whether every stage fits on every GPU with deviceMargin to
// spare; if not, it returns the first stage that does not, and where.
func (j *job) fits(pl plan) (bool, stage, int) {
	for _, s := range pl.stages {
		if s.limit != "" {
			return false, s, 0
		}
		for p, u := range j.used(pl.n, s.held) {
			if u+deviceMargin > j.free[p] {
				return false, s, p
			}
		}
	}
	return true, stage{}, 0
}

// tightest returns the room left (negative: missing) at the stage and GPU
// with the least of it.
func (j *job) tightest(pl plan) (int64, stage, int) {
	var best stage
	bestP, room := 0, int64(math.MaxInt64)
	for _, s := range pl.stages {
		for p, u := range j.used(pl.n, s.held) {
			if r := j.free[p] - deviceMargin - u; r < room {
				room, best, bestP = r, s, p
			}
		}
	}
	return room, best, bestP
}

// describe lists a stage's buffers on mesh position p, in GiB (or says why
// the stage cannot run at all).
func (j *job) describe(n int, s stage, p int) string {
	if s.limit != "" {
		return s.limit
	}
	var parts []string
	total := int64(0)
	for _, b := range s.held {
		if u := j.used(n, []buffer{b})[p]; u > 0 {
			total += u
			parts = append(parts, fmt.Sprintf("%s %.2f", b.name, float64(u)/gib))
		}
	}
	return fmt.Sprintf("%s = %.2f GiB, %.2f free, %.2f kept spare", strings.Join(parts, " + "),
		float64(total)/gib, float64(j.free[p])/gib, float64(deviceMargin)/gib)
}

// attempt tries order n, by a run or an allocation, and returns its part of
// the summary line.
func (j *job) attempt(pl plan) string {
	n := pl.n
	fit, failed, p := j.fits(pl)
	upTo := pl.stages // the stages a run goes through
	if fit {
		j.logf("N=%d: the model says it fits", n)
	} else {
		j.logf("N=%d: the model says it fails at %q on gpu:%d: %s", n, failed.name, j.ids[p], j.describe(n, failed, p))
		upTo = pl.stages[:slices.IndexFunc(pl.stages, func(s stage) bool { return s.name == failed.name })+1]
	}
	if held := j.heldSinceWarmUp(); held != "" {
		j.logf("N=%d: %s", n, held)
	}
	e2e, why := j.choose(n, upTo, fit)
	if why != "" {
		return j.allocCheck(pl, fit, why)
	}
	return j.runCheck(pl, fit, e2e)
}

// choose decides how to try order n, given the stages that a run goes
// through (up to the one whose allocations fail, unless it fits), and
// prints the estimate: a run end to end from the host, a run on a
// device-resident input (potri, when the gathered C would not fit in host
// memory), or an allocation (why says why).
func (j *job) choose(n int, upTo []stage, fit bool) (e2e bool, why string) {
	switch {
	case !j.op.runs:
		return false, "syevd is not run at capacity"
	case *capacityDry:
		return false, "-capacity-dry"
	case !fit && !*capacityRunFails:
		return false, "-capacity-run-fails=false"
	}
	gen, check := float64(8*n*n)/j.genRate, 0.0
	if fit { // potri's check regenerates A's N² elements, potrs sums A's rows for B
		check = gen / 2
		if j.name == "potri" {
			check = gen
		}
	}
	secs, host := gen+check, int64(0)
	var steps []string
	for i, s := range upTo {
		host = max(host, s.hostBytes)
		if fit || i < len(upTo)-1 { // a failing stage fails at its allocations
			secs += s.seconds
			steps = append(steps, fmt.Sprintf("%s %.1f", s.name, s.seconds))
		}
	}
	avail := memAvailable()
	usable := avail - hostMargin - avail*3/100 + j.touched // A goes where the last one was
	e2e = true
	if last := upTo[len(upTo)-1]; host > usable && last.name == "gather C" && int64(8*n*n) <= usable {
		e2e, host = false, int64(8*n*n) // C stays on the GPUs
		secs -= last.seconds
		steps = steps[:len(steps)-1]
	}
	j.logf("N=%d: estimate %.0f s (generate A %.1f, check %.1f, %s s); host memory %.0f of %.0f GB available",
		n, secs, gen, check, strings.Join(steps, ", "), float64(host)/1e9, float64(avail)/1e9)
	switch {
	case host > usable:
		why = fmt.Sprintf("needs %.0f GB of host memory, %.0f GB usable", float64(host)/1e9, float64(usable)/1e9)
	case secs > *capacityMaxS:
		why = fmt.Sprintf("estimated %.0f s > -capacity-max-s %.0f", secs, *capacityMaxS)
	}
	return e2e, why
}

// heldSinceWarmUp says how much more device memory the GPUs hold now than
// after the warm-up, when that is over 1 GiB on any.
func (j *job) heldSinceWarmUp() string {
	runtime.GC()
	var parts []string
	for p, f := range freeMemory(j.ids) {
		if d := j.free[p] - f; d > gib {
			parts = append(parts, fmt.Sprintf("gpu:%d %.2f GiB", j.ids[p], float64(d)/gib))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "held since the warm-up (workspaces mgla's solver handles keep, buffers of a failed op): " + strings.Join(parts, ", ")
}

// runCheck runs order n and reports it.
func (j *job) runCheck(pl plan, expectFit bool, e2e bool) string {
	n := pl.n
	r := j.run(n, e2e)
	how := "ran end to end"
	if !e2e {
		how = fmt.Sprintf("ran on a device-resident input (upload %.1f s, not counted)", r.upload)
	}
	model := make([]int64, len(j.ids)) // the model's peak per GPU
	for _, s := range pl.stages {
		for p, u := range j.used(n, s.held) {
			model[p] = max(model[p], u)
		}
	}
	var peaks []string
	for p := range r.peak {
		peak := fmt.Sprintf("gpu:%d %.2f", j.ids[p], float64(r.peak[p])/gib)
		if r.err == nil {
			peak += fmt.Sprintf(" (model %.2f)", float64(model[p])/gib)
		}
		peaks = append(peaks, peak)
	}
	j.logf("N=%d: generated A in %.1f s, graph %.1f s; device memory used at the peak, GiB: %s",
		n, r.gen, r.secs, strings.Join(peaks, ", "))
	if r.err != nil {
		j.put("capacity", n, math.NaN(), 0)
		return fmt.Sprintf("N=%d fails: %s after %.1f s%s", n, errText(r.err), r.upload+r.secs, surprise(!expectFit))
	}
	j.put("capacity", n, r.secs, j.op.flops*math.Pow(float64(n), 3))
	verdict := "fits"
	if r.bad {
		verdict = "WRONG ANSWER"
	}
	return fmt.Sprintf("N=%d %s: %s in %.1f s, %s%s", n, verdict, how, r.secs, r.check, surprise(expectFit))
}

// surprise notes a result the model did not predict.
func surprise(expected bool) string {
	if expected {
		return ""
	}
	return " (unexpected: the model said otherwise)"
}

// errText is the op's own error, marked when it is not about memory (the
// driver API says OutOfMemory, the runtime "out of memory", cuSOLVER
// CUSOLVER_STATUS_ALLOC_FAILED).
func errText(err error) string {
	s := mgla.Cause(err).Error()
	flat := strings.ToLower(strings.ReplaceAll(err.Error(), " ", ""))
	if !strings.Contains(flat, "outofmemory") && !strings.Contains(flat, "alloc_failed") {
		s += " (not an out-of-memory error)"
	}
	return s
}

// runResult is one run of an op.
type runResult struct {
	gen, upload, secs float64 // generating A (and B), the device-resident upload, the graph
	check             string  // what the check found
	bad               bool    // the check failed
	peak              []int64 // device bytes used at the peak beyond those before, per GPU
	err               error
}

// run generates A at order n and runs the op: end to end from the host
// (mgla's builders), or, for potri, on a device-resident input.
func (j *job) run(n int, e2e bool) runResult {
	runtime.GC()
	debug.FreeOSMemory()
	var r runResult
	stop := watchFree(j.ids)
	start := time.Now()
	host := j.hostA(n)
	r.gen = time.Since(start).Seconds()
	g := G.NewGraph()
	var out *G.Node
	if e2e {
		out, r.err = j.endToEnd(g, host)
	} else {
		start := time.Now()
		a, err := sharding.Put(host, j.mesh, sharding.Cyclic(j.tile))
		r.upload = time.Since(start).Seconds()
		if r.err = err; err == nil {
			defer a.Free()
			runtime.GC() // host is dead from here on: return it
			debug.FreeOSMemory()
			out, r.err = j.onDevice(g, a)
		}
	}
	if r.err == nil {
		m := G.NewTapeMachine(g)
		start := time.Now()
		r.err = m.RunAll()
		r.secs = time.Since(start).Seconds()
		m.Close()
	}
	r.peak = stop()
	if r.err == nil {
		if j.name == "potrs" {
			r.check, r.bad = checkOnes(out.Value())
		} else {
			r.check, r.bad = checkInverse(n, out.Value())
		}
	}
	freeValues(g)
	return r
}

// hostA returns spd's matrix of order n in the job's host buffer, which is
// made once for the largest order the job tries (its pages are not
// resident until written): rewriting pages costs the generation alone,
// where fresh ones cost more, much more after large frees (2×H200: 74 GB in
// 9.1 s into fresh pages, then 77 GB in 42 s after freeing 142 GB).
func (j *job) hostA(n int) *tensor.Dense {
	if len(j.hostBuf) < n*n {
		j.hostBuf, j.touched = nil, 0
		runtime.GC()
		m := max(n, j.hostN)
		j.hostBuf = make([]float64, m*m)
		// Huge pages where the kernel has them for the asking (transparent
		// huge pages "madvise"): 512 times fewer page faults.
		_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(&j.hostBuf[0])), 8*m*m), syscall.MADV_HUGEPAGE)
	}
	j.touched = max(j.touched, int64(8*n*n))
	return spdInto(j.hostBuf[:n*n], n)
}

// endToEnd builds the op's graph from the host matrix a with mgla's
// builders (potrs: B = A·1, so X = 1), as a user would.
func (j *job) endToEnd(g *G.ExprGraph, a *tensor.Dense) (*G.Node, error) {
	n := a.Shape()[0]
	an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(a))
	if j.name == "potri" {
		return mgla.Potri(an, mgla.WithMesh(j.mesh))
	}
	b := tensor.New(tensor.WithShape(n), tensor.WithBacking(rowSums(a)))
	bn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("b"), G.WithValue(b))
	return mgla.Potrs(an, bn, mgla.WithMesh(j.mesh))
}

// onDevice builds potri's graph on the sharded input a (ops.Input,
// ops.Cholesky, ops.Potri), whose result stays on the GPUs.
func (j *job) onDevice(g *G.ExprGraph, a *sharding.Tensor) (*G.Node, error) {
	ai := ops.Input(g, a, "A")
	l, err := ops.Cholesky(ai)
	if err != nil {
		return nil, err
	}
	return ops.Potri(ai, l)
}

// checkOnes checks X = 1 (B = A·1).
func checkOnes(x G.Value) (string, bool) {
	worst := 0.0
	for _, v := range x.Data().([]float64) {
		worst = max(worst, math.Abs(v-1))
	}
	return fmt.Sprintf("max |x-1| %.2g", worst), !(worst <= tolerance(len(x.Data().([]float64))))
}

// tolerance bounds the errors that the checks accept at order n: 10·n·ε,
// with κ(A) ≤ 3 (Gershgorin: the diagonal n, off it |a_ij| ≤ 1/2); measured
// errors are 1e-14 to 1e-13.
func tolerance(n int) float64 { return 10 * float64(n) * 0x1p-52 }

// checkInverse checks A·c_j = e_j for four random columns c_j of C = A⁻¹ (a
// host matrix or a sharded one on the GPUs), with A's rows regenerated on
// the host (spdAt): one pass of N² elements for all four. On the host the
// columns come from C's lower triangle (what the solver computed), and the
// symmetry of those rows and columns (the mirrored upper triangle) is
// checked apart.
func checkInverse(n int, c G.Value) (string, bool) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	var js [4]int
	var cols [4][]float64
	asym := 0.0 // max |C(j, k) - C(k, j)|, relative to max |C(k, j)|
	for q := range js {
		js[q] = rng.IntN(n)
		col, sym, err := column(c, js[q])
		if err != nil {
			return fmt.Sprintf("reading column %d of C: %v", js[q], err), true
		}
		cols[q], asym = col, max(asym, sym)
	}
	worst := make([]float64, n)
	parallelRows(n, func(i int) {
		var acc [4]float64
		for k := range n {
			a := spdAt(n, i, k)
			for q := range acc {
				acc[q] += a * cols[q][k]
			}
		}
		for q, jq := range js {
			if i == jq {
				acc[q]--
			}
			worst[i] = max(worst[i], math.Abs(acc[q]))
		}
	})
	w := slices.Max(worst)
	msg := fmt.Sprintf("max |A·c_j - e_j| %.2g over columns j = %v of C (seed %d)", w, js, seed)
	if !math.IsNaN(asym) {
		msg += fmt.Sprintf(", |C - Cᵀ| %.2g of max |C| there", asym)
	}
	return msg, !(w <= tolerance(n)) || asym > tolerance(n)
}

// column is column j of a symmetric N×N float64 matrix: from the lower
// triangle of a host matrix, with the largest difference between its row j
// and column j relative to the column's largest element; or copied from
// the GPU that holds it (the difference NaN: not measured).
func column(c G.Value, j int) ([]float64, float64, error) {
	switch v := c.(type) {
	case *tensor.Dense:
		n, d := v.Shape()[0], v.Data().([]float64)
		col := make([]float64, n)
		diff, big := 0.0, 0.0
		for k := range n {
			col[k] = d[max(j, k)*n+min(j, k)]
			diff, big = max(diff, math.Abs(d[j*n+k]-d[k*n+j])), max(big, math.Abs(col[k]))
		}
		return col, diff / big, nil
	case *sharding.Tensor:
		col, err := deviceColumn(v, j)
		return col, math.NaN(), err
	}
	return nil, 0, fmt.Errorf("unexpected value %T", c)
}

// deviceColumn copies column j of a float64 matrix in the column
// block-cyclic layout to the host: its tile g = j/T lives on mesh position
// g mod k as local tile g/k, column-major with leading dimension N (package
// cusolver, "Layout").
func deviceColumn(t *sharding.Tensor, j int) ([]float64, error) {
	l := t.Layout()
	if l.Kind != cyclic.ColCyclic || t.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("deviceColumn of %v", t)
	}
	n, k, g := t.Rows(), t.Mesh().Size(), j/l.Tile
	p, local := g%k, (g/k)*l.Tile+j%l.Tile
	buf, ok := t.Shard(p).(*sharding.DeviceBuffer)
	if !ok {
		return nil, fmt.Errorf("shard %d of %v is not on a GPU", p, t)
	}
	col := make([]float64, n)
	err := cusolver.MemcpyDtoH(t.Mesh().Device(p).ID, unsafe.Pointer(&col[0]), buf.Ptr()+uintptr(8*local*n), 8*n)
	return col, err
}

// rowSums is A·1.
func rowSums(a *tensor.Dense) []float64 {
	n := a.Shape()[0]
	d := a.Data().([]float64)
	s := make([]float64, n)
	parallelRows(n, func(i int) {
		for _, v := range d[i*n : (i+1)*n] {
			s[i] += v
		}
	})
	return s
}

// allocCheck allocates what the op holds at the tightest stage of the plan
// (or at the first stage that does not fit) and reports it.
func (j *job) allocCheck(pl plan, expectFit bool, why string) string {
	n := pl.n
	_, s, p := j.tightest(pl)
	if ok, failed, q := j.fits(pl); !ok {
		s, p = failed, q
	}
	if s.limit != "" {
		return fmt.Sprintf("N=%d fails at %q: %s (not run: %s)", n, s.name, s.limit, why)
	}
	runtime.GC()
	start := time.Now()
	left, err := j.allocate(n, s)
	secs := time.Since(start).Seconds()
	if err != nil {
		j.put("capacity-alloc", n, math.NaN(), 0)
		return fmt.Sprintf("N=%d fails: %s after %.2f s (allocated what %q holds, not run: %s)%s",
			n, errText(err), secs, s.name, why, surprise(!expectFit))
	}
	j.put("capacity-alloc", n, secs, 0)
	j.logf("N=%d: allocated what %q holds: %s; %.2f GiB left free on gpu:%d", n, s.name, j.describe(n, s, p),
		float64(left[p])/gib, j.ids[p])
	return fmt.Sprintf("N=%d fits: allocated, not run (%s): %.2f GiB on gpu:%d at %q, %.2f GiB left free%s",
		n, why, float64(j.used(n, s.held)[p])/gib, j.ids[p], s.name, float64(left[p])/gib, surprise(expectFit))
}

// put writes a CSV row of the job at order n.
func (j *job) put(path string, n int, secs, flops float64) {
	j.out.put(row{op: j.name, dtype: "float64", path: path, n: n, nrhs: j.op.nrhs, ndev: len(j.ids), tile: j.tile,
		seconds: secs, flops: flops})
}

// allocate takes the buffers of stage s in order (sharded matrices with
// sharding.New, as the ops do, the rest with cudaMalloc), reads the free
// memory left on each GPU, and frees them again.
func (j *job) allocate(n int, s stage) ([]int64, error) {
	var frees []func()
	defer func() {
		for i := len(frees) - 1; i >= 0; i-- {
			frees[i]()
		}
	}()
	for _, b := range s.held {
		if b.cols > 0 {
			t, err := sharding.New(j.mesh, tensor.Shape{n, b.cols}, tensor.Float64, sharding.Cyclic(j.tile))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", b.name, err)
			}
			frees = append(frees, t.Free)
			continue
		}
		for p, bytes := range b.bytes {
			if bytes == 0 {
				continue
			}
			dev := j.ids[p]
			ptr, err := cusolver.Malloc(dev, int(bytes))
			if err != nil {
				return nil, fmt.Errorf("%s on gpu:%d: %w", b.name, dev, err)
			}
			frees = append(frees, func() { must(0, cusolver.Free(dev, ptr)) })
		}
	}
	return freeMemory(j.ids), nil
}

// syevdTime times Eigen (vectors) through ops on host uploaded first, with
// dispatch d.
func (j *job) syevdTime(host *tensor.Dense, d ops.Dispatch) (float64, error) {
	a, err := sharding.Put(host, j.mesh, sharding.Cyclic(j.tile))
	if err != nil {
		return 0, err
	}
	defer a.Free()
	g := G.NewGraph()
	if _, err := ops.Eigen(ops.Input(g, a, "A"), ops.WithDispatch(d)); err != nil {
		return 0, err
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	start := time.Now()
	err = m.RunAll()
	secs := time.Since(start).Seconds()
	freeValues(g)
	return secs, err
}

// syevdRunTime times syevd at N = 8192 on the path that auto dispatch takes
// in pl and extrapolates to pl's N by N³.
func (j *job) syevdRunTime(pl plan) string {
	d, path, est := ops.DispatchSingle, "cuSOLVER on gpu:0", 0.55 // 4×H200, vectors
	for _, s := range pl.stages {
		if strings.Contains(s.name, "cuSolverMg") {
			d, path, est = ops.DispatchMesh, "cuSolverMg", 1.81
		}
	}
	if len(j.ids) == 1 {
		d = ops.DispatchAuto
	}
	j.logf("timing Eigen at N=%d (%s): estimate %.1f s", syevdTimeN, path, est)
	secs, err := j.syevdTime(spd(tensor.Float64, syevdTimeN), d)
	if err != nil {
		return fmt.Sprintf("timing at N=%d failed: %v", syevdTimeN, err)
	}
	run := secs * math.Pow(float64(pl.n)/syevdTimeN, 3)
	return fmt.Sprintf("a run at N=%d would take ≈ %s (%.2f s at N=%d on %s, × (N/%d)³)",
		pl.n, time.Duration(run*float64(time.Second)).Round(time.Second), secs, syevdTimeN, path, syevdTimeN)
}

// freeMemory is the free device memory of each GPU.
func freeMemory(ids []int) []int64 {
	free := make([]int64, len(ids))
	for p, id := range ids {
		f, _, err := cusolver.MemGetInfo(id)
		if err != nil {
			log.Fatalf("capacity: free memory of gpu:%d: %v", id, err)
		}
		free[p] = int64(f)
	}
	return free
}

// watchFree polls the free memory of the GPUs every 20 ms until the
// returned function is called, which returns the device memory used at the
// peak beyond what was used when watching began, per GPU.
func watchFree(ids []int) (stop func() []int64) {
	before := freeMemory(ids)
	least := append([]int64(nil), before...)
	sample := func() {
		for p, id := range ids {
			if f, _, err := cusolver.MemGetInfo(id); err == nil {
				least[p] = min(least[p], int64(f))
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() []int64 {
		close(done)
		wg.Wait()
		sample()
		peak := make([]int64, len(ids))
		for p := range peak {
			peak[p] = before[p] - least[p]
		}
		return peak
	}
}

// memAvailable is the host's MemAvailable in bytes (/proc/meminfo), after
// returning freed memory to the system.
func memAvailable() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		log.Fatalf("capacity: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	log.Fatalf("capacity: no MemAvailable in /proc/meminfo")
	return 0
}

func roundUp(n, m int) int       { return (n + m - 1) / m * m }
func roundUp64(n, m int64) int64 { return (n + m - 1) / m * m }
