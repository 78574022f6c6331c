package builders

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Pipeline is one symmetric positive definite matrix A used by several
// dense ops in one graph: solves for several right-hand sides, the inverse
// and the eigen-decomposition.
//
// In a sharded pipeline (NewShardedPipeline) A is put on the mesh once, in
// the column block-cyclic layout, and every op reads that one sharded node;
// the solves and the inverse share one Cholesky factor. In a host pipeline
// (NewHostPipeline) each root builder gets the host node A, which is the
// simplest way to call mgla; Gorgonia merges the identical placement and
// factor nodes the builders insert, so the work is the same.
type Pipeline struct {
	Graph *G.ExprGraph
	A     *G.Node // the host matrix
	// Placed is A on the mesh (column block-cyclic), Factor its Cholesky
	// factor L, still sharded.
	Placed, Factor *G.Node
	B, X           []*G.Node // right-hand sides (host) and solutions A⁻¹B (host)
	Inverse        *G.Node   // A⁻¹ (host)
	Values         *G.Node   // eigenvalues, ascending (host vector)
	Vectors        *G.Node   // eigenvectors in the columns (host)
}

func newPipelineInputs(a *tensor.Dense, rhs []*tensor.Dense) (*Pipeline, error) {
	s := a.Shape()
	if a.Dims() != 2 || s[0] != s[1] {
		return nil, fmt.Errorf("pipeline: A must be square, got %v", s)
	}
	g := G.NewGraph()
	p := &Pipeline{Graph: g, A: G.NodeFromAny(g, a, G.WithName("A"))}
	for i, b := range rhs {
		p.B = append(p.B, G.NodeFromAny(g, b, G.WithName(fmt.Sprintf("B%d", i))))
	}
	return p, nil
}

// NewShardedPipeline places a on mesh once (ops.Shard into the column
// block-cyclic layout of width tile) and builds, from that sharded node,
// the Cholesky factor, one Potrs per right-hand side, Potri and Syevd.
func NewShardedPipeline(a *tensor.Dense, rhs []*tensor.Dense, mesh *sharding.Mesh, tile int) (p *Pipeline, err error) {
	if p, err = newPipelineInputs(a, rhs); err != nil {
		return nil, err
	}
	defer catch(&err)
	// Put A on the mesh once. The root builders below see a sharded node in
	// the cyclic layout and use it as it is: no copy, no second placement.
	p.Placed = G.Must(ops.Shard(p.A, mesh, sharding.Cyclic(tile)))
	// The factor, named here so that it can be timed. mgla.Potrs and
	// mgla.Potri insert this very node (Gorgonia merges identical nodes).
	p.Factor = G.Must(ops.Cholesky(p.Placed))
	for _, b := range p.B {
		// Each right-hand side is placed with A's tile width and solved
		// with the shared factor; the solution comes back to the host.
		p.X = append(p.X, G.Must(mgla.Potrs(p.Placed, b)))
	}
	p.Inverse = G.Must(mgla.Potri(p.Placed))
	p.Values, p.Vectors, err = mgla.Syevd(p.Placed)
	return p, err
}

// NewHostPipeline builds the same results with the root builders on the
// host node A; opts (mesh, tile) go to every builder.
func NewHostPipeline(a *tensor.Dense, rhs []*tensor.Dense, opts ...mgla.Option) (p *Pipeline, err error) {
	if p, err = newPipelineInputs(a, rhs); err != nil {
		return nil, err
	}
	defer catch(&err)
	p.Factor = G.Must(mgla.Cholesky(p.A, opts...))
	for _, b := range p.B {
		p.X = append(p.X, G.Must(mgla.Potrs(p.A, b, opts...)))
	}
	p.Inverse = G.Must(mgla.Potri(p.A, opts...))
	p.Values, p.Vectors, err = mgla.Syevd(p.A, opts...)
	return p, err
}

// Run runs the whole pipeline with one TapeMachine.
func (p *Pipeline) Run() error {
	vm := G.NewTapeMachine(p.Graph)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return mgla.Cause(err)
	}
	return nil
}

// Stage is one step of a pipeline and its run time.
type Stage struct {
	Name  string
	Nodes []*G.Node
	Time  time.Duration
}

// Stages lists the steps of a sharded pipeline in order: placement, factor,
// solves, inverse, eigensolve.
func (p *Pipeline) Stages() []Stage {
	var st []Stage
	if p.Placed != nil {
		st = append(st, Stage{Name: "place A on the mesh", Nodes: []*G.Node{p.Placed}})
	}
	st = append(st, Stage{Name: "Cholesky factor", Nodes: []*G.Node{p.Factor}})
	k := 0
	for _, b := range p.B {
		if b.Dims() == 2 {
			k += b.Shape()[1]
		} else {
			k++
		}
	}
	st = append(st,
		Stage{Name: fmt.Sprintf("Potrs ×%d (%d columns)", len(p.X), k), Nodes: p.X},
		Stage{Name: "Potri", Nodes: []*G.Node{p.Inverse}},
		Stage{Name: "Syevd", Nodes: []*G.Node{p.Values, p.Vectors}})
	return st
}

// TimeStages times each stage. A Gorgonia machine runs a whole graph, with
// no hook between ops, so stage k is timed as the run of a machine over the
// sub-graph of stages 0…k less the run of the one over stages 0…k−1. Each
// machine runs once to warm up, then up to 5 times (while under 0.2 s in
// all), and its fastest run counts; a difference below zero (noise, for tiny
// matrices) shows as zero. The last machine computes every result.
func (p *Pipeline) TimeStages() ([]Stage, error) {
	st := p.Stages()
	var roots []*G.Node
	var prev time.Duration
	for i := range st {
		roots = append(roots, st[i].Nodes...)
		best, err := timeRun(p.Graph.SubgraphRoots(roots...))
		if err != nil {
			return nil, fmt.Errorf("stage %q: %w", st[i].Name, err)
		}
		st[i].Time = max(best-prev, 0)
		prev = max(prev, best)
	}
	return st, nil
}

func timeRun(g *G.ExprGraph) (time.Duration, error) {
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	var best, spent time.Duration
	for run := 0; run <= 5 && (run < 2 || spent < 200*time.Millisecond); run++ {
		vm.Reset()
		t0 := time.Now()
		if err := vm.RunAll(); err != nil {
			return 0, mgla.Cause(err)
		}
		d := time.Since(t0)
		if run == 0 {
			continue // warm-up: first allocation of the ops' buffers
		}
		spent += d
		if best == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

// ExpKernelSPD is the N×N covariance of n random points in the unit cube
// under the exponential kernel exp(−|x−y|/ℓ) with ℓ = 0.2, plus 0.1 on the
// diagonal: symmetric positive definite for any n, and O(n²) to make.
func ExpKernelSPD(n int, seed uint64) *tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 0x737064))
	pts := make([][3]float64, n)
	for i := range pts {
		pts[i] = [3]float64{rng.Float64(), rng.Float64(), rng.Float64()}
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range i + 1 {
			dx, dy, dz := pts[i][0]-pts[j][0], pts[i][1]-pts[j][1], pts[i][2]-pts[j][2]
			v := math.Exp(-math.Sqrt(dx*dx+dy*dy+dz*dz) / 0.2)
			a[i*n+j], a[j*n+i] = v, v
		}
		a[i*n+i] += 0.1
	}
	return dense(a, n, n)
}

// RandomMatrix is an rows×cols matrix of standard normal entries (a vector
// when cols is 0).
func RandomMatrix(rows, cols int, seed, stream uint64) *tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, stream))
	size := rows * max(cols, 1)
	d := make([]float64, size)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	if cols == 0 {
		return dense(d, rows)
	}
	return dense(d, rows, cols)
}

// SolveResidual is ‖A·X − B‖_F / ‖B‖_F for host tensors (X and B of one
// shape, N×K or length N).
func SolveResidual(a, x, b *tensor.Dense) float64 {
	n := a.Shape()[0]
	k := 1
	if b.Dims() == 2 {
		k = b.Shape()[1]
	}
	av, xv, bv := a.Data().([]float64), x.Data().([]float64), b.Data().([]float64)
	var num, den float64
	for i := range n {
		row := av[i*n : i*n+n]
		for j := range k {
			s := -bv[i*k+j]
			for l, v := range row {
				s += v * xv[l*k+j]
			}
			num += s * s
			den += bv[i*k+j] * bv[i*k+j]
		}
	}
	return math.Sqrt(num / den)
}

// MatMul is the row-major product of host tensors a (m×k) and b (k×n, or a
// length-k vector), as a tensor of b's rank.
func MatMul(a, b *tensor.Dense) *tensor.Dense {
	m, k := a.Shape()[0], a.Shape()[1]
	n := 1
	if b.Dims() == 2 {
		n = b.Shape()[1]
	}
	av, bv := a.Data().([]float64), b.Data().([]float64)
	out := make([]float64, m*n)
	for i := range m {
		for l, v := range av[i*k : i*k+k] {
			if v == 0 {
				continue
			}
			for j, w := range bv[l*n : l*n+n] {
				out[i*n+j] += v * w
			}
		}
	}
	if b.Dims() == 1 {
		return dense(out, m)
	}
	return dense(out, m, n)
}

// RelDiff is ‖a − b‖_F / ‖b‖_F for host tensors of one shape.
func RelDiff(a, b *tensor.Dense) float64 {
	av, bv := a.Data().([]float64), b.Data().([]float64)
	var num, den float64
	for i := range av {
		num += (av[i] - bv[i]) * (av[i] - bv[i])
		den += bv[i] * bv[i]
	}
	return math.Sqrt(num / den)
}

// EigenResidual is max over the columns j in cols of ‖A·v_j − w_j·v_j‖₂ /
// |w|max, for A, its eigenvalues w and eigenvectors v (host tensors).
func EigenResidual(a, w, v *tensor.Dense, cols []int) float64 {
	n := a.Shape()[0]
	av, wv, vv := a.Data().([]float64), w.Data().([]float64), v.Data().([]float64)
	scale := max(math.Abs(wv[0]), math.Abs(wv[n-1]))
	var worst float64
	for _, j := range cols {
		var s2 float64
		for i := range n {
			s := -wv[j] * vv[i*n+j]
			for l, x := range av[i*n : i*n+n] {
				s += x * vv[l*n+j]
			}
			s2 += s * s
		}
		worst = max(worst, math.Sqrt(s2)/scale)
	}
	return worst
}

// Orthogonality is max |v_iᵀ·v_j − δ_ij| over the columns i, j in cols of
// the n×n host matrix v (every column when cols is nil).
func Orthogonality(v *tensor.Dense, cols []int) float64 {
	n := v.Shape()[0]
	c := v.Shape()[1]
	if cols == nil {
		cols = make([]int, c)
		for j := range cols {
			cols[j] = j
		}
	}
	vv := v.Data().([]float64)
	var worst float64
	for a, i := range cols {
		for _, j := range cols[a:] {
			var s float64
			for r := range n {
				s += vv[r*c+i] * vv[r*c+j]
			}
			if i == j {
				s--
			}
			worst = max(worst, math.Abs(s))
		}
	}
	return worst
}
