package ops

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var lgSeed = uint64(time.Now().UnixNano())

func lgRNG(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	t.Logf("seed %d (stream %d)", lgSeed, stream)
	return rand.New(rand.NewPCG(lgSeed, stream))
}

// lgSPD is a random SPD matrix M·Mᵀ/n + I, row-major.
func lgSPD(rng *rand.Rand, n int) []float64 {
	m := make([]float64, n*n)
	for i := range m {
		m[i] = rng.NormFloat64()
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			for k := range n {
				a[i*n+j] += m[i*n+k] * m[j*n+k] / float64(n)
			}
		}
		a[i*n+i]++
	}
	return a
}

func lgRandom(rng *rand.Rand, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return d
}

func lgMatNode(g *G.ExprGraph, name string, n, k int, data []float64) *G.Node {
	return G.NewMatrix(g, tensor.Float64, G.WithShape(n, k), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(n, k), tensor.WithBacking(append([]float64(nil), data...)))))
}

func lgWeighted(x, w *G.Node) *G.Node { return G.Must(G.Sum(G.Must(G.HadamardProd(x, w)))) }

// lgCountKernels counts the kernel nodes of each kind in g.
func lgCountKernels(g *G.ExprGraph) map[kernelKind]int {
	c := map[kernelKind]int{}
	for _, n := range g.AllNodes() {
		if o, ok := n.Op().(*kernelOp); ok {
			c[o.kind]++
		}
	}
	return c
}

// lgPotrsGraph: cost = Σ W∘Potrs(A, B) + LogDet(A), with one factor.
func lgPotrsGraph(t *testing.T, rng *rand.Rand, mesh *sharding.Mesh, n, k int) (g *G.ExprGraph, a, b, cost *G.Node) {
	g = G.NewGraph()
	a = lgMatNode(g, "A", n, n, lgSPD(rng, n))
	b = lgMatNode(g, "B", n, k, lgRandom(rng, n*k))
	w := lgMatNode(g, "W", n, k, lgRandom(rng, n*k))
	ac, err := Shard(a, mesh, sharding.Cyclic(3))
	require.NoError(t, err)
	bc, err := Shard(b, mesh, sharding.Cyclic(3))
	require.NoError(t, err)
	l, err := Cholesky(ac)
	require.NoError(t, err)
	x, err := Potrs(ac, l, bc)
	require.NoError(t, err)
	xh, err := Gather(x)
	require.NoError(t, err)
	ld, err := LogDet(ac, l)
	require.NoError(t, err)
	cost = G.Must(G.Add(lgWeighted(xh, w), ld))
	return g, a, b, cost
}

func TestBackwardReusesTheFactor(t *testing.T) {
	rng := lgRNG(t, 1)
	mesh, _ := sharding.CPUMesh(2)
	g, a, b, cost := lgPotrsGraph(t, rng, mesh, 10, 2)
	before := lgCountKernels(g)
	_, err := G.Grad(cost, a, b)
	require.NoError(t, err)
	after := lgCountKernels(g)
	require.Equal(t, 1, before[kCholesky])
	require.Equal(t, 1, after[kCholesky], "the backward pass must not factor A again")
	require.Equal(t, 1, after[kPotri], "LogDet's gradient is Potri on the existing factor")
	require.Equal(t, 1, after[kCholSolve], "Potrs' B̄ is one CholSolve on the existing factor")
	require.Zero(t, after[kEigen])
	// The sharded A has several consumers, so its gradients are written
	// straight to the host (no sharded copy, no Gather of them).
	grads := 0
	for _, n := range g.AllNodes() {
		if o, ok := n.Op().(*gradOp); ok {
			grads++
			require.True(t, o.host, "%v", n)
			require.False(t, IsSharded(n))
		}
	}
	require.Equal(t, 2, grads, "PotrsGrad and LogDetGrad")
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	ga, err := a.Grad()
	require.NoError(t, err)
	require.IsType(t, &tensor.Dense{}, ga)
}

func TestGradOpReusesItsOutput(t *testing.T) {
	rng := lgRNG(t, 2)
	mesh, _ := sharding.CPUMesh(3)
	g, a, b, cost := lgPotrsGraph(t, rng, mesh, 9, 1)
	_, err := G.Grad(cost, a, b)
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	var first map[*G.Node]G.Value
	for run := range 2 {
		m.Reset()
		require.NoError(t, m.RunAll())
		vals := map[*G.Node]G.Value{}
		for _, n := range g.AllNodes() {
			if _, ok := n.Op().(*gradOp); ok {
				vals[n] = n.Value()
			}
		}
		require.NotEmpty(t, vals)
		if run == 1 {
			for n, v := range vals {
				require.Same(t, first[n], v, "%v allocated a new output", n)
			}
		}
		first = vals
	}
}

// The eigenvector gradient at the ops level, with the eigenvalues unused and
// the Eigen node consumed by EigenVectors only (it is not differentiated).
func TestEigenVectorsOpsLevel(t *testing.T) {
	rng := lgRNG(t, 3)
	const n = 8
	mesh, _ := sharding.CPUMesh(2)
	// Well separated eigenvalues: A = diag(1..n) + a small symmetric part.
	base := make([]float64, n*n)
	for i := range n {
		base[i*n+i] = float64(i + 1)
		for j := range i {
			v := 0.1 * rng.NormFloat64()
			base[i*n+j], base[j*n+i] = v, v
		}
	}
	w := lgRandom(rng, n*n)
	build := func(data []float64) (*G.ExprGraph, *G.Node, *G.Node) {
		g := G.NewGraph()
		a := lgMatNode(g, "A", n, n, data)
		ac, err := Shard(a, mesh, sharding.Cyclic(3))
		require.NoError(t, err)
		e, err := Eigen(ac)
		require.NoError(t, err)
		vs, err := EigenVectors(ac, e)
		require.NoError(t, err)
		v, err := Gather(vs)
		require.NoError(t, err)
		return g, a, lgWeighted(G.Must(G.HadamardProd(v, v)), lgMatNode(g, "W", n, n, w))
	}
	lgCheckDirectional(t, build, base, lgSymDirection(rng, n))
}

func lgSymDirection(rng *rand.Rand, n int) []float64 {
	dir := make([]float64, n*n)
	for i := range n {
		for j := range i + 1 {
			v := rng.NormFloat64()
			dir[i*n+j], dir[j*n+i] = v, v
		}
	}
	return dir
}

// runBackward runs g forward and backward to the gradient of cost with
// respect to wrt, through Grad and the TapeMachine or through the
// LispMachine, and returns RunAll's error.
func runBackward(t *testing.T, g *G.ExprGraph, cost *G.Node, lisp bool, wrt ...*G.Node) error {
	t.Helper()
	var m G.VM
	if lisp {
		m = G.NewLispMachine(g)
	} else {
		_, err := G.Grad(cost, wrt...)
		require.NoError(t, err)
		m = G.NewTapeMachine(g)
	}
	defer m.Close()
	return m.RunAll()
}

// lgCheckDirectional compares the gradient of the cost with respect to A
// along dir, from Grad + TapeMachine and from the LispMachine, with fourth
// order central differences.
func lgCheckDirectional(t *testing.T, build func([]float64) (*G.ExprGraph, *G.Node, *G.Node), base, dir []float64) {
	t.Helper()
	eval := func(data []float64) float64 {
		g, _, cost := build(data)
		m := G.NewTapeMachine(g)
		defer m.Close()
		require.NoError(t, m.RunAll())
		return cost.Value().Data().(float64)
	}
	const h = 1e-4
	at := func(s float64) float64 {
		d := make([]float64, len(base))
		for i := range d {
			d[i] = base[i] + s*h*dir[i]
		}
		return eval(d)
	}
	fd := (8*(at(1)-at(-1)) - (at(2) - at(-2))) / (12 * h)
	for _, lisp := range []bool{false, true} {
		g, a, cost := build(base)
		require.NoError(t, runBackward(t, g, cost, lisp, a))
		ga, err := a.Grad()
		require.NoError(t, err)
		var an float64
		for i, v := range ga.Data().([]float64) {
			an += v * dir[i]
		}
		rel := math.Abs(an-fd) / math.Abs(fd)
		t.Logf("lisp=%v: analytic %.12g, finite differences %.12g, rel. err. %.1e", lisp, an, fd, rel)
		require.Less(t, rel, 1e-6, "lisp=%v seed %d", lisp, lgSeed)
	}
}

// A sharded factor with two consumers (CholSolve and Gather): its gradients
// are summed on the host and Cholesky's backward gets a host L̄.
func TestFactorWithTwoConsumers(t *testing.T) {
	rng := lgRNG(t, 5)
	const n, k = 9, 2
	mesh, _ := sharding.CPUMesh(3)
	base := lgSPD(rng, n)
	bdata, w1, w2 := lgRandom(rng, n*k), lgRandom(rng, n*n), lgRandom(rng, n*k)
	build := func(data []float64) (*G.ExprGraph, *G.Node, *G.Node) {
		g := G.NewGraph()
		a := lgMatNode(g, "A", n, n, data)
		b := lgMatNode(g, "B", n, k, bdata)
		ac, err := Shard(a, mesh, sharding.Cyclic(4))
		require.NoError(t, err)
		bc, err := Shard(b, mesh, sharding.Cyclic(4))
		require.NoError(t, err)
		l, err := Cholesky(ac)
		require.NoError(t, err)
		x, err := CholSolve(l, bc)
		require.NoError(t, err)
		lh, err := Gather(l)
		require.NoError(t, err)
		xh, err := Gather(x)
		require.NoError(t, err)
		cost := G.Must(G.Add(lgWeighted(lh, lgMatNode(g, "W1", n, n, w1)), lgWeighted(xh, lgMatNode(g, "W2", n, k, w2))))
		return g, a, cost
	}
	lgCheckDirectional(t, build, base, lgSymDirection(rng, n))
}

// A sharded node that one op takes twice (Potrs(A, L, A)) has two
// gradients for Gorgonia's Add to sum, so they are gathered as for two
// consumers (the TapeMachine failed: Add got sharded values).
func TestNodeTwiceInOneOp(t *testing.T) {
	rng := lgRNG(t, 6)
	const n = 7
	mesh, _ := sharding.CPUMesh(3)
	base, w1, w2 := lgSPD(rng, n), lgRandom(rng, n*n), lgRandom(rng, n*n)
	build := func(data []float64) (*G.ExprGraph, *G.Node, *G.Node) {
		g := G.NewGraph()
		a := lgMatNode(g, "A", n, n, data)
		ac, err := Shard(a, mesh, sharding.Cyclic(1))
		require.NoError(t, err)
		a2, err := Shard(a, mesh, sharding.Cyclic(2))
		require.NoError(t, err)
		l, err := Cholesky(a2)
		require.NoError(t, err)
		x, err := Potrs(ac, l, ac) // A⁻¹A
		require.NoError(t, err)
		lh, err := Gather(l)
		require.NoError(t, err)
		xh, err := Gather(x)
		require.NoError(t, err)
		cost := G.Must(G.Add(lgWeighted(lh, lgMatNode(g, "W1", n, n, w1)), lgWeighted(xh, lgMatNode(g, "W2", n, n, w2))))
		return g, a, cost
	}
	lgCheckDirectional(t, build, base, lgSymDirection(rng, n))
}

// A sharded node with one consumer keeps its gradient on the mesh, unless
// it is a host node's Shard (TestHostGradientOfShard): here a Relayout.
func TestSingleConsumerGradientStaysSharded(t *testing.T) {
	rng := lgRNG(t, 4)
	const n = 7
	mesh, _ := sharding.CPUMesh(3)
	g := G.NewGraph()
	a := lgMatNode(g, "A", n, n, lgSPD(rng, n))
	a3, err := Shard(a, mesh, sharding.Cyclic(3))
	require.NoError(t, err)
	ac, err := Relayout(a3, sharding.Cyclic(2))
	require.NoError(t, err)
	l, err := Cholesky(ac)
	require.NoError(t, err)
	lh, err := Gather(l)
	require.NoError(t, err)
	cost := lgWeighted(lh, lgMatNode(g, "W", n, n, lgRandom(rng, n*n)))
	_, err = G.Grad(cost, a)
	require.NoError(t, err)
	var found bool
	for _, nd := range g.AllNodes() {
		if o, ok := nd.Op().(*gradOp); ok {
			found = true
			require.False(t, o.host)
			p, ok := PlacementOf(nd)
			require.True(t, ok)
			require.True(t, p.Mesh.Same(mesh))
			require.Equal(t, sharding.Cyclic(2), p.Layout)
		}
	}
	require.True(t, found)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	ga, err := a.Grad()
	require.NoError(t, err)
	require.Len(t, ga.Data().([]float64), n*n)
}

// UnwrapSymDiff pins the field of gorgonia.SymDiffError it reads.
func TestUnwrapSymDiff(t *testing.T) {
	mesh, _ := sharding.CPUMesh(1)
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Complex128, G.WithShape(3, 3), G.WithName("A"), G.WithInit(G.Zeroes()))
	ac, err := Shard(a, mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	l, err := Cholesky(ac)
	require.NoError(t, err)
	ld, err := LogDet(ac, l)
	require.NoError(t, err)
	_, err = G.Grad(ld, a)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrComplexGradient), "Gorgonia started unwrapping: UnwrapSymDiff can go")
	require.ErrorIs(t, UnwrapSymDiff(err), ErrComplexGradient)
	require.Nil(t, UnwrapSymDiff(errors.New("plain")))
	require.Nil(t, UnwrapSymDiff(nil))
}

func TestIsZeroGrad(t *testing.T) {
	mesh, _ := sharding.CPUMesh(2)
	z, err := sharding.New(mesh, tensor.Shape{4, 4}, tensor.Float64, sharding.Cyclic(1))
	require.NoError(t, err)
	require.True(t, isZeroGrad(z))
	require.True(t, isZeroGrad(&eigenValue{Tensor: z}))
	nz, err := sharding.Put(tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16))), mesh, sharding.Cyclic(1))
	require.NoError(t, err)
	one := tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16)))
	one.Data().([]float64)[7] = 1
	require.NoError(t, nz.Load(one))
	require.False(t, isZeroGrad(nz))
	require.False(t, isZeroGrad(one))
	require.True(t, isZeroGrad(G.NewF32(0)))
	require.False(t, isZeroGrad(G.NewF64(2)))
}

// TestKernelBuildErrors: operands that do not fit the op are build errors,
// not run-time panics or silent results: a factor or an Eigen node of
// another shape, an Eigen node of another matrix, a sharded node moved to
// another mesh. Every one matches sharding.ErrBadInput (mgla.ErrBadInput;
// a kernel's mesh mismatch matched ErrMeshMismatch alone).
func TestKernelBuildErrors(t *testing.T) {
	const n = 4
	mesh, _ := sharding.CPUMesh(2)
	other, _ := sharding.CPUMesh(3)
	g := G.NewGraph()
	shard := func(name string, rows, cols int) *G.Node {
		node, err := Shard(lgMatNode(g, name, rows, cols, make([]float64, rows*cols)), mesh, sharding.Cyclic(2))
		require.NoError(t, err)
		return node
	}
	a, b := shard("A", n, n), shard("A2", n, n)
	narrow, rhs := shard("L43", n, 3), shard("B", n, 2)
	eb, err := Eigen(b)
	require.NoError(t, err)
	la, err := Cholesky(a)
	require.NoError(t, err)
	elsewhere, err := Shard(lgMatNode(g, "B3", n, 2, make([]float64, 2*n)), other, sharding.Cyclic(2))
	require.NoError(t, err)
	host := lgMatNode(g, "H", n, n, make([]float64, n*n))
	rows, err := Shard(lgMatNode(g, "R", n, n, make([]float64, n*n)), mesh, sharding.RowBlocks())
	require.NoError(t, err)
	f32, err := Shard(G.NewMatrix(g, tensor.Float32, G.WithShape(n, 2), G.WithName("B32")), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	tall, err := Shard(lgMatNode(g, "T", n+1, 2, make([]float64, 2*n+2)), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	ints, err := Shard(G.NewMatrix(g, tensor.Int32, G.WithShape(n, n), G.WithName("I")), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	cube := G.NewTensor(g, tensor.Float64, 3, G.WithShape(2, 2, 2), G.WithName("C"))
	for _, tc := range []struct {
		name  string
		build func() (*G.Node, error)
		want  error
	}{
		{"Potrs with a 4×3 factor", func() (*G.Node, error) { return Potrs(a, narrow, rhs) }, nil},
		{"Potri with a 4×3 factor", func() (*G.Node, error) { return Potri(a, narrow) }, nil},
		{"EigenVectors of a 4×3 node", func() (*G.Node, error) { return EigenVectors(a, narrow) }, nil},
		{"EigenVectors of Eigen(another A)", func() (*G.Node, error) { return EigenVectors(a, eb) }, nil},
		{"EigenValues of Eigen(another A)", func() (*G.Node, error) { return EigenValues(a, eb) }, nil},
		{"Shard to another mesh", func() (*G.Node, error) { return Shard(a, other, sharding.Cyclic(2)) }, sharding.ErrMeshMismatch},
		{"Shard to a zero Mesh", func() (*G.Node, error) { return Shard(a, &sharding.Mesh{}, sharding.Cyclic(2)) }, nil},
		{"Shard to a nil mesh", func() (*G.Node, error) { return Shard(a, nil, sharding.Cyclic(2)) }, nil},
		{"Shard with tile 0", func() (*G.Node, error) { return Shard(host, mesh, sharding.Cyclic(0)) }, nil},
		{"Potrs with B on another mesh", func() (*G.Node, error) { return Potrs(a, la, elsewhere) }, sharding.ErrMeshMismatch},
		{"CholSolve with B on another mesh", func() (*G.Node, error) { return CholSolve(la, elsewhere) }, sharding.ErrMeshMismatch},
		{"Cholesky of a host node", func() (*G.Node, error) { return Cholesky(host) }, ErrNotCyclic},
		{"Cholesky of row blocks", func() (*G.Node, error) { return Cholesky(rows) }, ErrNotCyclic},
		{"Cholesky of a 4×3 node", func() (*G.Node, error) { return Cholesky(narrow) }, nil},
		{"Cholesky of nil", func() (*G.Node, error) { return Cholesky(nil) }, nil},
		{"CholSolve with a float32 B", func() (*G.Node, error) { return CholSolve(la, f32) }, nil},
		{"CholSolve with B of 5 rows", func() (*G.Node, error) { return CholSolve(la, tall) }, nil},
		{"Cholesky of an int32 matrix", func() (*G.Node, error) { return Cholesky(ints) }, nil},
		{"Shard of a rank-3 node", func() (*G.Node, error) { return Shard(cube, mesh, sharding.Cyclic(2)) }, nil},
		{"Relayout of a host node", func() (*G.Node, error) { return Relayout(host, sharding.RowBlocks()) }, nil},
		{"EigenVectors of nil", func() (*G.Node, error) { return EigenVectors(a, nil) }, nil},
	} {
		nodes := len(g.AllNodes())
		n, err := tc.build()
		require.Error(t, err, tc.name)
		require.Nil(t, n, tc.name)
		require.ErrorIs(t, err, sharding.ErrBadInput, tc.name)
		if tc.want != nil {
			require.ErrorIs(t, err, tc.want, tc.name)
		}
		require.Len(t, g.AllNodes(), nodes, "%s: nodes added", tc.name)
	}
}

// TestRelayoutEigen: an Eigen node's value moves (Relayout, Gather) as its
// eigenvectors.
func TestRelayoutEigen(t *testing.T) {
	rng := lgRNG(t, 40)
	const n = 6
	mesh, _ := sharding.CPUMesh(2)
	g := G.NewGraph()
	a, err := Shard(lgMatNode(g, "A", n, n, lgSPD(rng, n)), mesh, sharding.Cyclic(2))
	require.NoError(t, err)
	e, err := Eigen(a)
	require.NoError(t, err)
	moved, err := Relayout(e, sharding.RowBlocks())
	require.NoError(t, err)
	vs, err := EigenVectors(a, e)
	require.NoError(t, err)
	got, err := Gather(moved)
	require.NoError(t, err)
	want, err := Gather(vs)
	require.NoError(t, err)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	require.Equal(t, want.Value().Data(), got.Value().Data())
}

// TestVectorOfWidens: the eigenvalue gradient, a float32 sharded vector, is
// read as float64 for gradInRange's second pass (it was refused: the
// shards hold []float32), as float32 for the first, on meshes of 1 and 2
// devices.
func TestVectorOfWidens(t *testing.T) {
	for _, devices := range []int{1, 2} {
		mesh, err := sharding.CPUMesh(devices)
		require.NoError(t, err)
		want := []float32{1.5, -2, 3e38, 7}
		v, err := sharding.Put(tensor.New(tensor.WithShape(4), tensor.WithBacking(append([]float32(nil), want...))), mesh, sharding.Cyclic(1))
		require.NoError(t, err)
		wide, err := gVectorOf[float64](v, 4)
		require.NoError(t, err, "devices=%d", devices)
		narrow, err := gVectorOf[float32](v, 4)
		require.NoError(t, err, "devices=%d", devices)
		for i, x := range want {
			require.Equal(t, float64(x), wide[i], "devices=%d", devices)
			require.Equal(t, x, narrow[i], "devices=%d", devices)
		}
	}
}

// Potri's gradient of Σ W∘Potri(A) for an antisymmetric W is exactly zero
// (Potri(A) is symmetric: the cost is 0 for every symmetric A), however
// large W: C̄ is symmetrized before the products, where the rounding of its
// antisymmetric part would come through (2e28 here when it did).
func TestPotriGradientOfAntisymmetricWeights(t *testing.T) {
	const n = 12
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		a, w := make([]complex128, n*n), make([]complex128, n*n)
		for i := range n {
			for j := range n {
				a[i*n+j] = complex(1e-3/(1+math.Abs(float64(i-j))), 0)
				if i > j {
					v := complex(1e30*math.Sin(float64(7*i+3*j)), 0)
					w[i*n+j], w[j*n+i] = v, -v
				}
			}
			a[i*n+i] = 3e-3
		}
		for _, devices := range []int{1, 3} {
			mesh, err := sharding.CPUMesh(devices)
			require.NoError(t, err)
			g := G.NewGraph()
			an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(denseOf(dt, n, a)))
			wn := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("W"), G.WithValue(denseOf(dt, n, w)))
			ac, err := Shard(an, mesh, sharding.Cyclic(2))
			require.NoError(t, err)
			l, err := Cholesky(ac)
			require.NoError(t, err)
			c, err := Potri(ac, l)
			require.NoError(t, err)
			ch, err := Gather(c)
			require.NoError(t, err)
			cost := G.Must(G.Sum(G.Must(G.HadamardProd(ch, wn))))
			_, err = G.Grad(cost, an)
			require.NoError(t, err)
			m := G.NewTapeMachine(g)
			require.NoError(t, m.RunAll())
			gv, err := an.Grad()
			require.NoError(t, err)
			grad := gv.Data()
			if f, ok := grad.([]float32); ok {
				for k, v := range f {
					require.Zero(t, v, "%v on %d devices: dcost/dA[%d]", dt, devices, k)
				}
			} else {
				for k, v := range grad.([]float64) {
					require.Zero(t, v, "%v on %d devices: dcost/dA[%d]", dt, devices, k)
				}
			}
			m.Close()
		}
	}
}

// TestCholeskyGradientByBlocks: Cholesky's backward computation (gCholesky,
// which forms Φ(Lᵀ·L̄) by column blocks of 256) against the formula in
// float64 through gonum's dense products, at orders of one, two and three
// blocks, the last partial.
func TestCholeskyGradientByBlocks(t *testing.T) {
	rng := lgRNG(t, 40)
	for _, n := range []int{100, 256, 300, 600} {
		// L lower triangular, well conditioned; L̄ with junk above the
		// diagonal (only its lower triangle enters).
		l, lbar := make([]float64, n*n), make([]float64, n*n)
		for i := range n {
			for j := range n {
				lbar[i*n+j] = rng.NormFloat64()
				if j < i {
					l[i*n+j] = rng.NormFloat64() / float64(n)
				}
			}
			l[i*n+i] = 2 + rng.Float64()
		}
		want := choleskyGradReference(n, l, lbar)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			out := tensor.New(tensor.Of(dt), tensor.WithShape(n, n))
			require.NoError(t, runGradHost(gCholesky, nil, out, hostTensor(dt, n, n, l), hostTensor(dt, n, n, lbar)), "n=%d %v", n, dt)
			var diff, norm float64
			for i, w := range want {
				var got float64
				switch d := out.Data().(type) {
				case []float64:
					got = d[i]
				case []float32:
					got = float64(d[i])
				}
				diff += (got - w) * (got - w)
				norm += w * w
			}
			tol := 1e-13
			if dt == tensor.Float32 {
				tol = 1e-5
			}
			if e := math.Sqrt(diff / norm); !(e <= tol) {
				t.Errorf("n=%d %v: relative error %.3g, want ≤ %g", n, dt, e, tol)
			}
		}
	}
}

// choleskyGradReference is Ā = sym(L⁻ᵀ·Φ(Lᵀ·tril(L̄))·L⁻¹) in float64 (L
// and L̄ row-major n×n; Φ keeps the lower triangle and halves the
// diagonal), by dense products and explicit inverses.
func choleskyGradReference(n int, l, lbar []float64) []float64 {
	lt := mat.NewTriDense(n, mat.Lower, append([]float64(nil), l...))
	lb := mat.NewDense(n, n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			lb.Set(i, j, lbar[i*n+j])
		}
	}
	var p mat.Dense
	p.Mul(lt.T(), lb)
	for i := range n {
		for j := i + 1; j < n; j++ {
			p.Set(i, j, 0)
		}
		p.Set(i, i, p.At(i, i)/2)
	}
	var inv mat.TriDense
	if err := inv.InverseTri(lt); err != nil {
		panic(err)
	}
	var s, s2 mat.Dense
	s.Mul(inv.T(), &p)
	s2.Mul(&s, &inv)
	out := make([]float64, n*n)
	for i := range n {
		for j := range n {
			out[i*n+j] = (s2.At(i, j) + s2.At(j, i)) / 2
		}
	}
	return out
}

// The backward computations refuse operands whose columns do not fit the
// kind (gradCheckColumns, on the host and, through it, on CPU meshes),
// with an error that gives the columns, and leave the result untouched.
func TestGradCheckColumns(t *testing.T) { checkGradColumns(t, nil) }

// checkGradColumns runs TestGradCheckColumns's cases with the op's mesh
// (nil: the host code alone).
func checkGradColumns(t *testing.T, mesh *sharding.Mesh) {
	const n = 4
	mat := func(cols int) *tensor.Dense {
		return tensor.New(tensor.WithShape(n, cols), tensor.WithBacking(make([]float64, n*cols)))
	}
	scalar := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1}))
	cases := []struct {
		name string
		kind gradKind
		vals []G.Value
	}{
		{"PotrsGrad, K = 2 and 3", gSymOuter, []G.Value{mat(2), mat(3)}},
		{"CholSolveGradL, B̄ and X of 2 and 3 columns", gCholSolveL, []G.Value{mat(2), mat(3), mat(n)}},
		{"CholSolveGradL, L of 3 columns", gCholSolveL, []G.Value{mat(2), mat(2), mat(3)}},
		{"PotriGrad, C̄ of 3 columns", gSandwich, []G.Value{mat(n), mat(3)}},
		{"LogDetGrad, A⁻¹ of 3 columns", gScale, []G.Value{mat(3), scalar}},
		{"GaussianLogDensityGrad, A⁻¹ of 3 columns", gLogDensity, []G.Value{mat(3), mat(2), scalar}},
		{"CholeskyGrad, L of 3 columns", gCholesky, []G.Value{mat(3), mat(n)}},
		{"EigenVectorsGrad, not an Eigen value", gEigVectors, []G.Value{mat(n), mat(n)}},
	}
	for _, c := range cases {
		out := tensor.New(tensor.WithShape(n, n), tensor.WithBacking([]float64{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}))
		err := runGradHost(c.kind, mesh, out, c.vals...)
		require.Error(t, err, c.name)
		require.Regexp(t, "columns|Eigen node", err.Error(), c.name)
		for k, v := range out.Data().([]float64) {
			require.Equal(t, 7.0, v, "%s: element %d written", c.name, k)
		}
	}
}

// hostTensor is the row-major rows×cols x as a host tensor of dt.
func hostTensor(dt tensor.Dtype, rows, cols int, x []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(y))
	}
	return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float64(nil), x...)))
}
