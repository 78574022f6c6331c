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
//  2. at N_max, runs Potrs end to end from the host and checks the answer
//     (B = A·1, so X = 1); Potri and Syevd, whose runs at capacity take
//     minutes (Syevd through cuSolverMg hours), and Potrs when A does not
//     fit in host memory, are not run: the job allocates what the model
//     says the op holds at its peak instead;
//  3. does the same at N_over = N_max + 4% (rounded up to a multiple of
//     1024), which should fail with an out-of-memory error.
//
// Each job runs in a child process of its own (the same binary with
// -capacity-job op:k): mgla keeps one cuSolverMg handle per list of GPUs and one
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
//     (N ≤ 46340, cuSOLVER's int32 limit) when a dense N×N copy fits in
//     the free memory there with 1/8 to spare: that copy and cuSOLVER's
//     potri workspace then join on the first GPU.
//   - syevd (mgla.Syevd with vectors: Shard, Eigen, Gather): A; the
//     eigenvector matrix V (also the work matrix); on one GPU, or when auto
//     dispatch picks the first GPU (the same 1/8 rule), a dense copy
//     (several GPUs only), the eigenvalues (8N bytes) and cuSOLVER's syevd
//     workspace on the first GPU; otherwise cuSolverMg's syevd workspace
//     on every GPU.
//
// Workspaces are what the solvers' bufferSize queries ask for at that N
// (cusolver.Mg and cusolver.Dn *Workspace). mgla's handles keep their
// workspace and grow it when a call needs more, so a stage holds the
// largest workspace of the calls so far. Every buffer is rounded up to
// 2 MiB (the CUDA allocator's granularity), and deviceMargin per GPU is
// kept free for what the model leaves out (NaN flags, pointer tables,
// anything the solvers allocate inside a call). N_max is the largest
// multiple of 1024 whose every stage fits on every GPU.

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var (
	capacityOps = flag.String("capacity", "", "capacity mode: the ops (potrs,potri,syevd; float64) whose largest N to find on each GPU count of -gpus")
	capacityNs  = flag.String("capacity-n", "", "capacity mode: try these orders instead of the predicted largest N and the one 4% above it")
	capacityJob = flag.String("capacity-job", "", "internal: the capacity job op:gpus, which the capacity mode runs in a child process")
)

const (
	gib          = 1 << 30
	allocGrain   = 2 << 20   // the CUDA allocator's granularity for large buffers
	deviceMargin = 256 << 20 // bytes per GPU the model keeps free
	hostMargin   = 4 << 30   // bytes of MemAvailable kept free, besides 3%
	overStep     = 1.04      // N_over = N_max · overStep, rounded up to 1024
)

// capacity runs one job per op and GPU count, each in a child process.
func capacity(ngpu int) {
	opNames := strings.Split(*capacityOps, ",")
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
		for _, k := range ints(*gpuList) {
			if k > ngpu {
				fmt.Printf("capacity: %s float64 gpus=%d: skipped, %d GPUs visible\n", op, k, ngpu)
				continue
			}
			// Later flags win: the job's settings follow the parent's.
			args := append(append([]string(nil), os.Args[1:]...), "-capacity-job", fmt.Sprintf("%s:%d", op, k))
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
	runs   bool    // run at capacity (the others are allocated)
}

var capOps = map[string]capOp{
	"potrs": {warmN: 8192, copies: 2, nrhs: 1, flops: 1.0 / 3, runs: true},
	"potri": {warmN: 8192, copies: 3, flops: 1},
	"syevd": {warmN: 4096, copies: 2, flops: 4.3},
}

// buffer is one allocation held on the mesh.
type buffer struct {
	name  string
	cols  int     // > 0: an N×cols matrix sharded in the op's layout (sharding.New)
	bytes []int64 // cols == 0: bytes per mesh position, cudaMalloc'd (0: none)
}

// stage is one step of an op's run: the buffers held on the devices while it
// runs.
type stage struct {
	name string
	held []buffer
}

// plan is the model of an op at order n.
type plan struct {
	n      int
	stages []stage
}

// job is one op on the mesh of the first k GPUs.
type job struct {
	name string
	op   capOp
	out  *writer
	mesh *sharding.Mesh
	ids  []int
	tile int     // mgla's default tile for the op
	free []int64 // free bytes per mesh position after the warm-up
	mg   *cusolver.Mg
	dn   *cusolver.Dn
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
	start := time.Now()
	if r := j.run(op.warmN); r.err != nil {
		log.Fatalf("capacity: warm-up at N=%d: %v", op.warmN, r.err)
	} else {
		j.logf("warm-up at N=%d: ran in %.2f s (%.1f s in all) %s", op.warmN, r.secs, time.Since(start).Seconds(), r.check)
	}
	j.free = freeMemory(j.ids)
	if err := j.openQueries(); err != nil {
		log.Fatalf("capacity: workspace queries: %v", err)
	}
	ns := ints(*capacityNs)
	if len(ns) == 0 {
		nMax := j.predict()
		ns = []int{nMax, roundUp(int(float64(nMax)*overStep), 1024)}
	}
	plans := make([]plan, len(ns))
	for i, n := range ns {
		plans[i] = must(j.planAt(n))
	}
	j.closeQueries() // they hold device memory
	var parts []string
	for _, pl := range plans {
		parts = append(parts, j.attempt(pl))
	}
	fmt.Printf("capacity: %s float64 gpus=%d %s\n", name, k, strings.Join(parts, "; "))
}

func (j *job) logf(format string, args ...any) {
	fmt.Printf("  %s gpus=%d: %s\n", j.name, len(j.ids), fmt.Sprintf(format, args...))
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

// predict returns N_max: the largest order, scanning down, whose every
// stage fits.
func (j *job) predict() int {
	k := len(j.ids)
	gibs := make([]string, k)
	for p, f := range j.free {
		gibs[p] = fmt.Sprintf("%.2f", float64(f)/gib)
	}
	j.logf("free GiB on gpu %v: %s; host MemAvailable %.0f GB", j.ids, strings.Join(gibs, " "), float64(memAvailable())/1e9)
	// No order above upper fits: the copies alone, spread evenly, exceed the
	// most free memory of any GPU.
	upper := roundUp(int(math.Sqrt(float64(k)*float64(slices.Max(j.free))/float64(8*j.op.copies))), 1024) + 1024
	for n := upper; n >= 1024; n -= 1024 {
		pl := must(j.planAt(n))
		if ok, _, _ := j.fits(pl); ok {
			_, s, p := j.tightest(pl)
			j.logf("model at N_max=%d: tightest %q on gpu:%d: %s", n, s.name, j.ids[p], j.describe(n, s, p))
			return n
		}
	}
	log.Fatalf("capacity: no N up to %d fits (free GiB %s)", upper, strings.Join(gibs, " "))
	return 0
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

func (m *model) add(name string, extra ...buffer) {
	m.stages = append(m.stages, stage{name: name, held: m.now(extra...)})
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
	m.add("upload A")
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
		m.add("Cholesky on gpu:0 (cuSOLVER)", m.denseCopy("L")...)
		return err
	}
	ws, err := m.j.mg.PotrfWorkspace(tensor.Float64, n, m.j.tile)
	m.wsMg = max(m.wsMg, ws)
	m.add("Cholesky (cuSolverMg)")
	return err
}

// potrs is ops.gpuSolver.potrs: never on one GPU of several.
func (m *model) potrs() error {
	n := m.n
	m.held = append(m.held, m.vec("B"), m.vec("X"))
	if len(m.j.ids) == 1 {
		m.add("solve (cuSOLVER)")
		return nil
	}
	ws, err := m.j.mg.PotrsWorkspace(tensor.Float64, n, 1, m.j.tile, m.j.tile)
	m.wsMg = max(m.wsMg, ws)
	m.add("solve (cuSolverMg)")
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
		m.add("Potri on gpu:0 (cuSOLVER)", m.denseCopy("C")...)
	} else {
		w := min(m.j.tile, n)
		ws, err = m.j.mg.PotrsWorkspace(tensor.Float64, n, w, m.j.tile, w)
		m.wsMg = max(m.wsMg, ws)
		m.add("Potri (cuSolverMg potrs on identity blocks)", m.first("identity block", int64(8*n*w)))
	}
	m.add("gather C")
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
		m.add("Eigen on gpu:0 (cuSOLVER)", extra...)
	} else {
		var ws int64
		ws, err = m.j.mg.SyevdWorkspace(tensor.Float64, n, m.j.tile, true)
		m.wsMg = max(m.wsMg, ws)
		m.add("Eigen (cuSolverMg)")
	}
	m.add("gather V")
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

// describe lists a stage's buffers on mesh position p, in GiB.
func (j *job) describe(n int, s stage, p int) string {
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

// attempt tries order n, by a run (potrs, when A fits in host memory) or
// an allocation, and returns its part of the summary line.
func (j *job) attempt(pl plan) string {
	n := pl.n
	fit, failed, p := j.fits(pl)
	if fit {
		j.logf("N=%d: the model says it fits", n)
	} else {
		j.logf("N=%d: the model says it fails at %q on gpu:%d: %s", n, failed.name, j.ids[p], j.describe(n, failed, p))
	}
	avail := memAvailable()
	usable := avail - hostMargin - avail*3/100
	switch {
	case !j.op.runs:
		return j.allocCheck(pl, fit, j.name+" is not run at capacity")
	case int64(8*n*n) > usable:
		return j.allocCheck(pl, fit, fmt.Sprintf("A needs %.0f GB of host memory, %.0f GB usable", float64(8*n*n)/1e9, float64(usable)/1e9))
	}
	r := j.run(n)
	if r.err != nil {
		j.put("capacity", n, math.NaN(), 0)
		return fmt.Sprintf("N=%d fails: %s after %.1f s%s", n, errText(r.err), r.secs, surprise(!fit))
	}
	j.put("capacity", n, r.secs, j.op.flops*math.Pow(float64(n), 3))
	verdict := "fits"
	if r.bad {
		verdict = "WRONG ANSWER"
	}
	return fmt.Sprintf("N=%d %s: ran end to end in %.1f s (A generated in %.1f s), %s%s", n, verdict, r.secs, r.gen, r.check, surprise(fit))
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
	gen, secs float64 // generating A (and B), the graph
	check     string  // what the check found (potrs)
	bad       bool    // the check failed
	err       error
}

// run generates A at order n and runs the op end to end from the host with
// mgla's builders, as a user would (potrs: B = A·1, so X = 1, checked).
func (j *job) run(n int) runResult {
	runtime.GC()
	debug.FreeOSMemory()
	var r runResult
	start := time.Now()
	a := spd(tensor.Float64, n)
	r.gen = time.Since(start).Seconds()
	g := G.NewGraph()
	an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(a))
	var x *G.Node
	switch j.name {
	case "potrs":
		b := tensor.New(tensor.WithShape(n), tensor.WithBacking(rowSums(a)))
		bn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("b"), G.WithValue(b))
		x, r.err = mgla.Potrs(an, bn, mgla.WithMesh(j.mesh))
	case "potri":
		_, r.err = mgla.Potri(an, mgla.WithMesh(j.mesh))
	case "syevd":
		_, _, r.err = mgla.Syevd(an, mgla.WithMesh(j.mesh))
	}
	if r.err == nil {
		m := G.NewTapeMachine(g)
		start := time.Now()
		r.err = m.RunAll()
		r.secs = time.Since(start).Seconds()
		m.Close()
	}
	if r.err == nil && x != nil {
		r.check, r.bad = checkOnes(x.Value())
	}
	freeValues(g)
	return r
}

// checkOnes checks X = 1 (B = A·1) to 10·n·ε (κ(A) ≤ 3 by Gershgorin: the
// diagonal n, off it |a_ij| ≤ 1/2; measured errors are 1e-14 to 1e-13).
func checkOnes(x G.Value) (string, bool) {
	xs := x.Data().([]float64)
	worst := 0.0
	for _, v := range xs {
		worst = max(worst, math.Abs(v-1))
	}
	return fmt.Sprintf("max |x-1| %.2g", worst), !(worst <= 10*float64(len(xs))*0x1p-52)
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
	j.out.put(row{Op: j.name, Dtype: "float64", Path: path, N: n, NRHS: j.op.nrhs, NDev: len(j.ids), Tile: j.tile,
		Seconds: secs, Flops: flops})
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
