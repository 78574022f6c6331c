package mgla_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// testSeed is fresh each run and printed, so that a failure can be replayed.
var testSeed = uint64(time.Now().UnixNano())

func newRNG(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	t.Logf("seed %d (stream %d)", testSeed, stream)
	return rand.New(rand.NewPCG(testSeed, stream))
}

// hpd is a random Hermitian positive definite matrix in complex128 (real
// when cplx is false), row-major, with junk in the strict upper triangle of
// the returned input copy (the ops read the lower triangle only).
func hpd(rng *rand.Rand, n int, cplx bool) (full, withJunk []complex128) {
	m := make([]complex128, n*n)
	for i := range m {
		m[i] = complex(rng.NormFloat64(), 0)
		if cplx {
			m[i] += complex(0, rng.NormFloat64())
		}
	}
	full = make([]complex128, n*n)
	for i := range n {
		for j := range n {
			var s complex128
			for k := range n {
				s += m[i*n+k] * cmplx.Conj(m[j*n+k])
			}
			full[i*n+j] = s / complex(float64(n), 0)
		}
		full[i*n+i] += 1
	}
	withJunk = append([]complex128(nil), full...)
	for i := range n {
		for j := i + 1; j < n; j++ {
			withJunk[i*n+j] = complex(1e3*rng.NormFloat64(), 0)
		}
	}
	return full, withJunk
}

func randomMatrix(rng *rand.Rand, rows, cols int, cplx bool) []complex128 {
	b := make([]complex128, rows*cols)
	for i := range b {
		b[i] = complex(rng.NormFloat64(), 0)
		if cplx {
			b[i] += complex(0, rng.NormFloat64())
		}
	}
	return b
}

// toDense converts complex128 row-major data to a host tensor of dtype dt.
func toDense(dt tensor.Dtype, data []complex128, shape ...int) *tensor.Dense {
	var backing any
	switch dt {
	case tensor.Float32:
		s := make([]float32, len(data))
		for i, v := range data {
			s[i] = float32(real(v))
		}
		backing = s
	case tensor.Float64:
		s := make([]float64, len(data))
		for i, v := range data {
			s[i] = real(v)
		}
		backing = s
	case tensor.Complex64:
		s := make([]complex64, len(data))
		for i, v := range data {
			s[i] = complex64(v)
		}
		backing = s
	default:
		backing = append([]complex128(nil), data...)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
}

// fromValue converts a host value back to complex128.
func fromValue(t *testing.T, v G.Value) []complex128 {
	t.Helper()
	switch x := v.Data().(type) {
	case []float32:
		out := make([]complex128, len(x))
		for i, f := range x {
			out[i] = complex(float64(f), 0)
		}
		return out
	case []float64:
		out := make([]complex128, len(x))
		for i, f := range x {
			out[i] = complex(f, 0)
		}
		return out
	case []complex64:
		out := make([]complex128, len(x))
		for i, f := range x {
			out[i] = complex128(f)
		}
		return out
	case []complex128:
		return x
	case float32:
		return []complex128{complex(float64(x), 0)}
	case float64:
		return []complex128{complex(x, 0)}
	}
	t.Fatalf("unexpected value data %T", v.Data())
	return nil
}

func matmul(a []complex128, ar, ac int, b []complex128, bc int) []complex128 {
	out := make([]complex128, ar*bc)
	for i := range ar {
		for k := range ac {
			aik := a[i*ac+k]
			for j := range bc {
				out[i*bc+j] += aik * b[k*bc+j]
			}
		}
	}
	return out
}

func norm(a []complex128) float64 {
	var s float64
	for _, v := range a {
		s += real(v)*real(v) + imag(v)*imag(v)
	}
	return math.Sqrt(s)
}

func relDiff(a, b []complex128) float64 {
	d := make([]complex128, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return norm(d) / math.Max(norm(b), 1e-300)
}

// tolerance is the relative error allowed per dtype.
func tolerance(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		return 2e-4
	}
	return 1e-10
}

func isComplex(dt tensor.Dtype) bool { return dt == tensor.Complex64 || dt == tensor.Complex128 }

type opCase struct {
	n, k, tile, ndev int
	dt               tensor.Dtype
}

func opCases() []opCase {
	var cs []opCase
	for _, ndev := range []int{1, 2, 3, 5} {
		for _, dt := range sharding.Dtypes {
			cs = append(cs, opCase{n: 37, k: 3, tile: 8, ndev: ndev, dt: dt})  // 37 is not a multiple of 8
			cs = append(cs, opCase{n: 20, k: 1, tile: 64, ndev: ndev, dt: dt}) // devices with no tile
			cs = append(cs, opCase{n: 6, k: 2, tile: math.MaxInt, ndev: ndev, dt: dt})
		}
	}
	return cs
}

// lispComplexReason says why complex graphs never run on the LispMachine;
// TestLispMachineRejectsComplex checks that it still holds.
const lispComplexReason = "gorgonia's LispMachine cannot bind complex values (dual.go: \"Unhandled dtype\"), see TestLispMachineRejectsComplex"

// run executes a graph with the TapeMachine, or with the LispMachine when
// lisp is set. Complex graphs always use the TapeMachine (lispComplexReason);
// the fallback is logged.
func run(t *testing.T, g *G.ExprGraph, lisp bool) error {
	t.Helper()
	var m G.VM
	switch {
	case lisp && hasComplex(g):
		t.Logf("running with the TapeMachine instead of the LispMachine: %s", lispComplexReason)
		m = G.NewTapeMachine(g)
	case lisp:
		m = G.NewLispMachine(g, G.ExecuteFwdOnly())
	default:
		m = G.NewTapeMachine(g)
	}
	defer m.Close()
	return m.RunAll()
}

func hasComplex(g *G.ExprGraph) bool {
	for _, n := range g.AllNodes() {
		if isComplex(n.Dtype()) {
			return true
		}
	}
	return false
}

// TestLispMachineRejectsComplex pins the Gorgonia limitation behind
// lispComplexReason: if it starts to pass, drop the TapeMachine fallback in
// run and the LispMachine skips in TestRunTimeErrors.
func TestLispMachineRejectsComplex(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Complex64, tensor.Complex128} {
		const n = 3
		a := make([]complex128, n*n)
		for i := range n {
			a[i*n+i] = complex(float64(i+1), 0)
		}
		g := G.NewGraph()
		an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(dt, a, n, n)))
		_, err := mgla.Cholesky(an)
		require.NoError(t, err)
		m := G.NewLispMachine(g, G.ExecuteFwdOnly())
		err = m.RunAll()
		m.Close()
		require.Error(t, err, "%v: the LispMachine now runs complex graphs; remove the fallback in run", dt)
		require.Contains(t, err.Error(), "Unhandled dtype", "%v", dt)
	}
}

// elementBits are the bit patterns of a host value's elements (real and
// imaginary parts), so that values compare bitwise: NaN payloads, signed
// zeros and junk included.
func elementBits(t *testing.T, v G.Value) []uint64 {
	t.Helper()
	var out []uint64
	switch x := v.Data().(type) {
	case []float32:
		for _, f := range x {
			out = append(out, uint64(math.Float32bits(f)))
		}
	case []float64:
		for _, f := range x {
			out = append(out, math.Float64bits(f))
		}
	case []complex64:
		for _, f := range x {
			out = append(out, uint64(math.Float32bits(real(f))), uint64(math.Float32bits(imag(f))))
		}
	case []complex128:
		for _, f := range x {
			out = append(out, math.Float64bits(real(f)), math.Float64bits(imag(f)))
		}
	case float32:
		out = append(out, uint64(math.Float32bits(x)))
	case float64:
		out = append(out, math.Float64bits(x))
	default:
		t.Fatalf("unexpected value data %T", v.Data())
	}
	return out
}

// requireUnchanged fails unless after holds bitwise the same elements, shape
// and dtype as before (a clone taken before the run).
func requireUnchanged(t *testing.T, what string, before *tensor.Dense, after G.Value) {
	t.Helper()
	require.NotNil(t, after, "%s: no value", what)
	require.Equal(t, before.Dtype(), after.Dtype(), "%s: dtype changed", what)
	require.Equal(t, []int(before.Shape()), []int(after.Shape()), "%s: shape changed", what)
	want, got := elementBits(t, before), elementBits(t, after)
	require.Len(t, got, len(want), "%s", what)
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s modified by the run: element word %d is %#x, was %#x (seed %d)", what, i, got[i], want[i], testSeed)
		}
	}
}

// realDtype is the dtype of the eigenvalues and the log-determinant of a
// matrix of dtype dt.
func realDtype(dt tensor.Dtype) tensor.Dtype {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		return tensor.Float32
	}
	return tensor.Float64
}

func TestOpsAgainstReference(t *testing.T) {
	rng := newRNG(t, 1)
	for ci, c := range opCases() {
		name := fmt.Sprintf("N%d_T%d_dev%d_%v", c.n, c.tile, c.ndev, c.dt)
		t.Run(name, func(t *testing.T) {
			mesh, err := testMesh(t, c.ndev)
			require.NoError(t, err)
			full, junk := hpd(rng, c.n, isComplex(c.dt))
			b := randomMatrix(rng, c.n, c.k, isComplex(c.dt))
			// Round the reference input to the dtype, so that only the solve's error counts.
			full = fromValue(t, toDense(c.dt, full, c.n, c.n))
			b = fromValue(t, toDense(c.dt, b, c.n, c.k))

			g := G.NewGraph()
			aIn, bIn := toDense(c.dt, junk, c.n, c.n), toDense(c.dt, b, c.n, c.k)
			aBefore, bBefore := aIn.Clone().(*tensor.Dense), bIn.Clone().(*tensor.Dense)
			a := G.NewMatrix(g, c.dt, G.WithShape(c.n, c.n), G.WithName("A"), G.WithValue(aIn))
			bn := G.NewMatrix(g, c.dt, G.WithShape(c.n, c.k), G.WithName("B"), G.WithValue(bIn))
			opts := []mgla.Option{onMesh(mesh), mgla.WithTile(c.tile)}
			x := must(mgla.Potrs(a, bn, opts...))
			inv := must(mgla.Potri(a, opts...))
			l := must(mgla.Cholesky(a, opts...))
			xs := must(mgla.CholSolve(l, bn, opts...))
			ld := must(mgla.LogDet(a, opts...))
			w, v, err := mgla.Syevd(a, opts...)
			require.NoError(t, err)
			wOnly, vNil, err := mgla.Syevd(a, append(opts, mgla.EigenvaluesOnly())...)
			require.NoError(t, err)
			require.Nil(t, vNil)
			require.NoError(t, run(t, g, ci%2 == 1), "seed %d", testSeed)
			tol := tolerance(c.dt)
			n := c.n

			// No op writes to its inputs: A (junk upper triangle included) and B
			// are bitwise what they were, in the caller's tensors and in the nodes.
			requireUnchanged(t, "A", aBefore, aIn)
			requireUnchanged(t, "B", bBefore, bIn)
			requireUnchanged(t, "A's node value", aBefore, a.Value())
			requireUnchanged(t, "B's node value", bBefore, bn.Value())

			// Result dtypes: w and LogDet are real (float32 for float32 and
			// complex64, float64 for float64 and complex128), v has A's dtype.
			rdt := realDtype(c.dt)
			for _, r := range []struct {
				name  string
				node  *G.Node
				dt    tensor.Dtype
				shape []int
			}{
				{"Syevd w", w, rdt, []int{n}},
				{"Syevd w (values only)", wOnly, rdt, []int{n}},
				{"Syevd v", v, c.dt, []int{n, n}},
				{"LogDet", ld, rdt, []int{}},
			} {
				require.Equal(t, r.dt, r.node.Dtype(), "%s node dtype", r.name)
				require.Equal(t, r.dt, r.node.Value().Dtype(), "%s value dtype", r.name)
				require.Equal(t, r.shape, []int(r.node.Value().Shape()), "%s shape", r.name)
			}

			// Potrs and CholSolve: A·X = B.
			for _, xn := range []*G.Node{x, xs} {
				require.Equal(t, []int{n, c.k}, []int(xn.Shape()))
				xv := fromValue(t, xn.Value())
				require.Less(t, relDiff(matmul(full, n, n, xv, c.k), b), tol*float64(n), "seed %d", testSeed)
			}
			// Potri: A·C = I, C exactly Hermitian.
			cv := fromValue(t, inv.Value())
			eye := make([]complex128, n*n)
			for i := range n {
				eye[i*n+i] = 1
			}
			require.Less(t, relDiff(matmul(full, n, n, cv, n), eye), tol*float64(n), "seed %d", testSeed)
			for i := range n {
				for j := range n {
					require.Equal(t, cv[i*n+j], cmplx.Conj(cv[j*n+i]), "Potri not exactly Hermitian at (%d,%d)", i, j)
				}
			}
			// Cholesky: L·Lᴴ = A, strict upper triangle zero.
			lv := fromValue(t, l.Value())
			lh := make([]complex128, n*n)
			for i := range n {
				for j := range n {
					lh[i*n+j] = cmplx.Conj(lv[j*n+i])
					if j > i {
						require.Zero(t, lv[i*n+j])
					}
				}
			}
			require.Less(t, relDiff(matmul(lv, n, n, lh, n), full), tol, "seed %d", testSeed)
			// LogDet against the eigenvalues of the reference.
			ref := referenceEigenvalues(full, n)
			var want float64
			for _, e := range ref {
				want += math.Log(e)
			}
			got := real(fromValue(t, ld.Value())[0])
			require.InDelta(t, want, got, tol*10*math.Max(1, math.Abs(want)), "seed %d", testSeed)
			// Syevd: ascending values equal to the reference, A·v = w·v, VᴴV = I.
			wv, wo := fromValue(t, w.Value()), fromValue(t, wOnly.Value())
			vv := fromValue(t, v.Value())
			for i := range n {
				require.InDelta(t, ref[i], real(wv[i]), tol*10*ref[n-1], "eigenvalue %d seed %d", i, testSeed)
				require.InDelta(t, real(wv[i]), real(wo[i]), tol*10*ref[n-1])
				if i > 0 {
					require.LessOrEqual(t, real(wv[i-1]), real(wv[i]))
				}
			}
			av := matmul(full, n, n, vv, n)
			vw := make([]complex128, n*n)
			vh := make([]complex128, n*n)
			for i := range n {
				for j := range n {
					vw[i*n+j] = vv[i*n+j] * wv[j]
					vh[i*n+j] = cmplx.Conj(vv[j*n+i])
				}
			}
			require.Less(t, relDiff(av, vw), tol*float64(n), "seed %d", testSeed)
			require.Less(t, relDiff(matmul(vh, n, n, vv, n), eye), tol*float64(n), "seed %d", testSeed)
		})
	}
}

// referenceEigenvalues uses gonum in float64 (for complex input, the real
// symmetric 2N embedding, whose eigenvalues come in equal pairs).
func referenceEigenvalues(a []complex128, n int) []float64 {
	m := 2 * n
	e := mat.NewSymDense(m, nil)
	for i := range n {
		for j := range n {
			re, im := real(a[i*n+j]), imag(a[i*n+j])
			e.SetSym(i, j, re)
			e.SetSym(n+i, n+j, re)
			if i >= j {
				e.SetSym(n+i, j, im)
				if i != j {
					e.SetSym(n+j, i, -im)
				}
			}
		}
	}
	var es mat.EigenSym
	if !es.Factorize(e, false) {
		panic("reference eigen failed")
	}
	all := es.Values(nil)
	out := make([]float64, n)
	for i := range out {
		out[i] = all[2*i]
	}
	return out
}

func must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(err)
	}
	return n
}

func TestDiagonalSystem(t *testing.T) {
	// A = diag(1..N), b = 1 → x_i = 1/i, on every dtype and a 3-device mesh.
	const n = 11
	mesh, _ := testMesh(t, 3)
	for _, dt := range sharding.Dtypes {
		a := make([]complex128, n*n)
		b := make([]complex128, n)
		for i := range n {
			a[i*n+i] = complex(float64(i+1), 0)
			b[i] = 1
		}
		g := G.NewGraph()
		an := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(dt, a, n, n)))
		bn := G.NewVector(g, dt, G.WithShape(n), G.WithName("b"), G.WithValue(toDense(dt, b, n)))
		x := must(mgla.Potrs(an, bn, onMesh(mesh), mgla.WithTile(2)))
		require.NoError(t, run(t, g, false))
		require.Equal(t, []int{n}, []int(x.Shape()))
		xv := fromValue(t, x.Value())
		for i := range n {
			require.InDelta(t, 1/float64(i+1), real(xv[i]), 1e-6, "%v x[%d]", dt, i)
		}
	}
}

// TestSameResultForEveryMeshAndTile runs every op on meshes of 1, 2, 3 and 5
// devices with tile widths that do and do not divide N (and one wider than
// N), for every dtype, and compares each result with the one of the first
// configuration. Eigenvectors are compared column by column after aligning
// their sign (complex: phase), the freedom an eigensolver has.
func TestSameResultForEveryMeshAndTile(t *testing.T) {
	rng := newRNG(t, 2)
	const n, k = 29, 2
	type result struct {
		name    string
		build   func(a, b *G.Node, opts ...mgla.Option) (*G.Node, error)
		vectors bool // eigenvectors: columns equal up to a unit factor
	}
	results := []result{
		{name: "Potrs", build: mgla.Potrs},
		{name: "Potri", build: func(a, _ *G.Node, o ...mgla.Option) (*G.Node, error) { return mgla.Potri(a, o...) }},
		{name: "Cholesky", build: func(a, _ *G.Node, o ...mgla.Option) (*G.Node, error) { return mgla.Cholesky(a, o...) }},
		{name: "CholSolve", build: func(a, b *G.Node, o ...mgla.Option) (*G.Node, error) {
			l, err := mgla.Cholesky(a, o...)
			if err != nil {
				return nil, err
			}
			return mgla.CholSolve(l, b, o...)
		}},
		{name: "LogDet", build: func(a, _ *G.Node, o ...mgla.Option) (*G.Node, error) { return mgla.LogDet(a, o...) }},
		{name: "Syevd w", build: func(a, _ *G.Node, o ...mgla.Option) (*G.Node, error) {
			w, _, err := mgla.Syevd(a, o...)
			return w, err
		}},
		{name: "Syevd w (values only)", build: func(a, _ *G.Node, o ...mgla.Option) (*G.Node, error) {
			w, _, err := mgla.Syevd(a, append(o, mgla.EigenvaluesOnly())...)
			return w, err
		}},
		{name: "Syevd v", vectors: true, build: func(a, _ *G.Node, o ...mgla.Option) (*G.Node, error) {
			_, v, err := mgla.Syevd(a, o...)
			return v, err
		}},
	}
	for _, dt := range sharding.Dtypes {
		_, junk := hpd(rng, n, isComplex(dt))
		bv := randomMatrix(rng, n, k, isComplex(dt))
		t.Run(dt.String(), func(t *testing.T) {
			tol := tolerance(dt)
			first := map[string][]complex128{}
			for _, ndev := range []int{1, 2, 3, 5} {
				for _, tile := range []int{1, 4, 7, 29, 100} {
					mesh, err := testMesh(t, ndev)
					require.NoError(t, err)
					g := G.NewGraph()
					a := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(dt, junk, n, n)))
					b := G.NewMatrix(g, dt, G.WithShape(n, k), G.WithName("B"), G.WithValue(toDense(dt, bv, n, k)))
					nodes := make([]*G.Node, len(results))
					for i, r := range results {
						nodes[i] = must(r.build(a, b, onMesh(mesh), mgla.WithTile(tile)))
					}
					require.NoError(t, run(t, g, false), "ndev %d tile %d seed %d", ndev, tile, testSeed)
					for i, r := range results {
						got := fromValue(t, nodes[i].Value())
						want, ok := first[r.name]
						if !ok {
							first[r.name] = append([]complex128(nil), got...)
							continue
						}
						require.Len(t, got, len(want), r.name)
						if !r.vectors {
							require.Less(t, relDiff(got, want), tol, "%s: ndev %d tile %d seed %d", r.name, ndev, tile, testSeed)
							continue
						}
						for j := range n {
							gc, wc := column(got, n, j), column(want, n, j)
							var dot complex128 // wcᴴ·gc
							for e := range gc {
								dot += cmplx.Conj(wc[e]) * gc[e]
							}
							require.Greater(t, cmplx.Abs(dot), 0.5, "%s column %d: ndev %d tile %d seed %d", r.name, j, ndev, tile, testSeed)
							phase := dot / complex(cmplx.Abs(dot), 0)
							for e := range gc {
								gc[e] /= phase
							}
							require.Less(t, relDiff(gc, wc), tol*n, "%s column %d: ndev %d tile %d seed %d", r.name, j, ndev, tile, testSeed)
						}
					}
				}
			}
		})
	}
}

// column j of the row-major n×n matrix m.
func column(m []complex128, n, j int) []complex128 {
	c := make([]complex128, n)
	for i := range c {
		c[i] = m[i*n+j]
	}
	return c
}

// TestRunTimeErrors checks the errors that RunAll returns, on both machines:
// a matrix that is not positive definite, and NaN or Inf in A or b. Each
// error names its cause, matches its sentinel through mgla.Cause, and leaves
// the inputs bitwise unchanged. The same graphs on clean inputs must run
// (so that the errors come from the bad entries), and Syevd must accept an
// indefinite matrix.
func TestRunTimeErrors(t *testing.T) {
	mesh, _ := testMesh(t, 2)
	const n = 6
	const (
		clean  = "clean"
		notPD  = "notPD" // the leading minor of order 3 fails
		nanA   = "NaN_in_A"
		infA   = "Inf_in_A"
		nanB   = "NaN_in_b"
		infB   = "Inf_in_b"
		orderK = "order 3"
	)
	solveKinds := []string{clean, notPD, nanA, infA, nanB, infB}
	factorKinds := []string{clean, notPD, nanA, infA}
	eigenKinds := []string{clean, notPD, nanA, infA} // notPD must succeed
	builders := []struct {
		name  string
		kinds []string
		build func(a, b *G.Node) error
	}{
		{"Potrs", solveKinds, func(a, b *G.Node) error { _, err := mgla.Potrs(a, b, onMesh(mesh), mgla.WithTile(2)); return err }},
		{"CholSolve", solveKinds, func(l, b *G.Node) error { _, err := mgla.CholSolve(l, b, onMesh(mesh), mgla.WithTile(2)); return err }},
		{"Potri", factorKinds, func(a, _ *G.Node) error { _, err := mgla.Potri(a, onMesh(mesh)); return err }},
		{"Cholesky", factorKinds, func(a, _ *G.Node) error { _, err := mgla.Cholesky(a, onMesh(mesh)); return err }},
		{"LogDet", factorKinds, func(a, _ *G.Node) error { _, err := mgla.LogDet(a, onMesh(mesh), mgla.WithTile(4)); return err }},
		{"Syevd", eigenKinds, func(a, _ *G.Node) error { _, _, err := mgla.Syevd(a, onMesh(mesh), mgla.WithTile(4)); return err }},
		{"SyevdValuesOnly", eigenKinds, func(a, _ *G.Node) error {
			_, _, err := mgla.Syevd(a, onMesh(mesh), mgla.WithTile(4), mgla.EigenvaluesOnly())
			return err
		}},
	}
	for _, bc := range builders {
		for _, dt := range sharding.Dtypes {
			for _, kind := range bc.kinds {
				for _, lisp := range []bool{false, true} {
					machine := map[bool]string{false: "tape", true: "lisp"}[lisp]
					t.Run(fmt.Sprintf("%s/%v/%s/%s", bc.name, dt, kind, machine), func(t *testing.T) {
						if lisp && isComplex(dt) {
							t.Skip(lispComplexReason)
						}
						av := make([]complex128, n*n)
						bv := make([]complex128, n)
						for i := range n {
							av[i*n+i] = 1
							if i+1 < n {
								av[i*n+i+1] = 7 // junk in the upper triangle
							}
							bv[i] = complex(float64(i+1), 0)
						}
						// Inf in the real part for real dtypes, in the imaginary part
						// for complex ones (the check must look at both parts).
						inf := complex(math.Inf(1), 0)
						if isComplex(dt) {
							inf = complex(0, math.Inf(-1))
						}
						switch kind {
						case notPD:
							av[2*n+2] = -1
							if bc.name == "CholSolve" {
								av[2*n+2] = 0 // a zero on L's diagonal
							}
						case nanA:
							av[4*n+1] = complex(math.NaN(), 0)
						case infA:
							av[4*n+1] = inf
						case nanB:
							bv[3] = complex(math.NaN(), 0)
						case infB:
							bv[3] = inf
						}
						g := G.NewGraph()
						aIn, bIn := toDense(dt, av, n, n), toDense(dt, bv, n)
						aBefore, bBefore := aIn.Clone().(*tensor.Dense), bIn.Clone().(*tensor.Dense)
						a := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(aIn))
						b := G.NewVector(g, dt, G.WithShape(n), G.WithName("b"), G.WithValue(bIn))
						require.NoError(t, bc.build(a, b))
						err := run(t, g, lisp)

						requireUnchanged(t, "A", aBefore, aIn)
						requireUnchanged(t, "b", bBefore, bIn)
						requireUnchanged(t, "A's node value", aBefore, a.Value())
						requireUnchanged(t, "b's node value", bBefore, b.Value())

						switch {
						case kind == clean || (kind == notPD && strings.HasPrefix(bc.name, "Syevd")):
							require.NoError(t, err)
						case kind == notPD:
							require.Error(t, err)
							require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNotPositiveDefinite), "want ErrNotPositiveDefinite, got %v", err)
							require.Contains(t, err.Error(), orderK)
						default:
							require.Error(t, err, "non-finite input accepted")
							require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNonFinite), "want ErrNonFinite, got %v", err)
							require.Contains(t, err.Error(), "NaN or Inf")
							if kind == nanB || kind == infB {
								require.Contains(t, err.Error(), "right-hand side")
							}
						}
					})
				}
			}
		}
	}
}

// graphState lists a graph's nodes (ID and name, in order), to check that a
// failed build leaves the graph as it was.
func graphState(g *G.ExprGraph) []string {
	var s []string
	for _, nd := range g.AllNodes() {
		s = append(s, fmt.Sprintf("%d:%s", nd.ID(), nd.Name()))
	}
	return s
}

func TestBuildTimeErrors(t *testing.T) {
	g := G.NewGraph()
	g2 := G.NewGraph()
	sq := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("sq"))
	rect := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 3), G.WithName("rect"))
	b5 := G.NewMatrix(g, tensor.Float64, G.WithShape(5, 2), G.WithName("b5"))
	b3d := G.NewTensor(g, tensor.Float64, 3, G.WithShape(4, 2, 2), G.WithName("b3d"))
	a3d := G.NewTensor(g, tensor.Float64, 3, G.WithShape(4, 4, 4), G.WithName("a3d"))
	vec := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("vec"))
	ints := G.NewMatrix(g, tensor.Int, G.WithShape(4, 4), G.WithName("ints"))
	other := G.NewMatrix(g2, tensor.Float64, G.WithShape(4, 2), G.WithName("other"))
	otherSq := G.NewMatrix(g2, tensor.Float64, G.WithShape(4, 4), G.WithName("otherSq"))
	b32 := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 2), G.WithName("b32"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("b"))
	empty := G.NewMatrix(g, tensor.Float64, G.WithShape(0, 0), G.WithName("empty"))
	noCols := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 0), G.WithName("noCols"))
	constSq := G.NewConstant(tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16))))
	constB5 := G.NewConstant(tensor.New(tensor.WithShape(5, 1), tensor.WithBacking(make([]float64, 5))))
	constB := G.NewConstant(tensor.New(tensor.WithShape(4, 1), tensor.WithBacking(make([]float64, 4))))
	m2, _ := sharding.CPUMesh(2)
	m3, _ := sharding.CPUMesh(3)
	onM2, err := ops.Shard(sq, m2, sharding.Cyclic(2))
	require.NoError(t, err)
	bOnM2, err := ops.Shard(b, m2, sharding.Cyclic(2))
	require.NoError(t, err)
	bOnM3, err := ops.Shard(b, m3, sharding.Cyclic(2))
	require.NoError(t, err)
	one := func(n *G.Node, err error) ([]*G.Node, error) { return []*G.Node{n}, err }
	two := func(w, v *G.Node, err error) ([]*G.Node, error) { return []*G.Node{w, v}, err }
	cases := []struct {
		name string
		fn   func() ([]*G.Node, error)
		want error
	}{
		{"nil a", func() ([]*G.Node, error) { return one(mgla.Potrs(nil, b)) }, mgla.ErrBadInput},
		{"nil b", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, nil)) }, mgla.ErrBadInput},
		{"Potri nil", func() ([]*G.Node, error) { return one(mgla.Potri(nil)) }, mgla.ErrBadInput},
		{"Syevd nil", func() ([]*G.Node, error) { return two(mgla.Syevd(nil)) }, mgla.ErrBadInput},
		{"CholSolve nil b", func() ([]*G.Node, error) { return one(mgla.CholSolve(sq, nil)) }, mgla.ErrBadInput},
		{"non-square", func() ([]*G.Node, error) { return one(mgla.Potri(rect)) }, mgla.ErrBadInput},
		{"row mismatch", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, b5)) }, mgla.ErrBadInput},
		{"CholSolve row mismatch", func() ([]*G.Node, error) { return one(mgla.CholSolve(sq, b5)) }, mgla.ErrBadInput},
		{"rank 3 b", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, b3d)) }, mgla.ErrBadInput},
		{"Potrs rank 3 a", func() ([]*G.Node, error) { return one(mgla.Potrs(a3d, b)) }, mgla.ErrBadInput},
		{"Potri rank 3 a", func() ([]*G.Node, error) { return one(mgla.Potri(a3d)) }, mgla.ErrBadInput},
		{"Cholesky rank 3 a", func() ([]*G.Node, error) { return one(mgla.Cholesky(a3d)) }, mgla.ErrBadInput},
		{"CholSolve rank 3 l", func() ([]*G.Node, error) { return one(mgla.CholSolve(a3d, b)) }, mgla.ErrBadInput},
		{"LogDet rank 3 a", func() ([]*G.Node, error) { return one(mgla.LogDet(a3d)) }, mgla.ErrBadInput},
		{"Syevd rank 3 a", func() ([]*G.Node, error) { return two(mgla.Syevd(a3d)) }, mgla.ErrBadInput},
		{"Syevd rank 1 a", func() ([]*G.Node, error) { return two(mgla.Syevd(vec)) }, mgla.ErrBadInput},
		{"Potrs rank 1 a", func() ([]*G.Node, error) { return one(mgla.Potrs(vec, b)) }, mgla.ErrBadInput},
		{"dtype", func() ([]*G.Node, error) { return one(mgla.LogDet(ints)) }, mgla.ErrBadInput},
		{"Syevd dtype", func() ([]*G.Node, error) { return two(mgla.Syevd(ints)) }, mgla.ErrBadInput},
		{"dtype mismatch", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, b32)) }, mgla.ErrBadInput},
		{"tile 0", func() ([]*G.Node, error) { return one(mgla.Cholesky(sq, mgla.WithTile(0))) }, mgla.ErrBadInput},
		{"unknown dispatch", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, b, mgla.WithDispatch(9))) }, mgla.ErrBadInput},
		{"Syevd tile -1", func() ([]*G.Node, error) { return two(mgla.Syevd(sq, mgla.WithTile(-1))) }, mgla.ErrBadInput},
		{"graphs", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, other)) }, mgla.ErrBadInput},
		{"CholSolve graphs", func() ([]*G.Node, error) { return one(mgla.CholSolve(otherSq, b)) }, mgla.ErrBadInput},
		{"CholSolve non-square", func() ([]*G.Node, error) { return one(mgla.CholSolve(rect, b)) }, mgla.ErrBadInput},
		{"Syevd non-square", func() ([]*G.Node, error) { return two(mgla.Syevd(rect)) }, mgla.ErrBadInput},
		{"mesh mismatch", func() ([]*G.Node, error) { return one(mgla.Potri(onM2, onMesh(m3))) }, mgla.ErrMeshMismatch},
		{"Syevd mesh mismatch", func() ([]*G.Node, error) { return two(mgla.Syevd(onM2, onMesh(m3))) }, mgla.ErrMeshMismatch},
		{"Potrs b on another mesh", func() ([]*G.Node, error) { return one(mgla.Potrs(onM2, bOnM3)) }, mgla.ErrMeshMismatch},
		{"CholSolve b on another mesh", func() ([]*G.Node, error) { return one(mgla.CholSolve(onM2, bOnM3)) }, mgla.ErrMeshMismatch},
		{"Potrs b off WithMesh", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, bOnM2, onMesh(m3))) }, mgla.ErrMeshMismatch},
		{"Potrs 0×0", func() ([]*G.Node, error) { return one(mgla.Potrs(empty, b)) }, mgla.ErrBadInput},
		{"Potri 0×0", func() ([]*G.Node, error) { return one(mgla.Potri(empty)) }, mgla.ErrBadInput},
		{"Syevd 0×0", func() ([]*G.Node, error) { return two(mgla.Syevd(empty)) }, mgla.ErrBadInput},
		{"Cholesky 0×0", func() ([]*G.Node, error) { return one(mgla.Cholesky(empty)) }, mgla.ErrBadInput},
		{"CholSolve 0×0", func() ([]*G.Node, error) { return one(mgla.CholSolve(empty, b)) }, mgla.ErrBadInput},
		{"LogDet 0×0", func() ([]*G.Node, error) { return one(mgla.LogDet(empty)) }, mgla.ErrBadInput},
		{"Potrs 4×0 b", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, noCols)) }, mgla.ErrBadInput},
		{"CholSolve 4×0 b", func() ([]*G.Node, error) { return one(mgla.CholSolve(sq, noCols)) }, mgla.ErrBadInput},
		{"zero Mesh", func() ([]*G.Node, error) { return one(mgla.Potri(sq, mgla.WithMesh(&sharding.Mesh{}))) }, mgla.ErrBadInput},
		// A constant (of no graph) joins the other operand's graph only once
		// every check has passed; alone it has no graph to join.
		{"Potri constant", func() ([]*G.Node, error) { return one(mgla.Potri(constSq)) }, mgla.ErrBadInput},
		{"Potrs constants only", func() ([]*G.Node, error) { return one(mgla.Potrs(constSq, constB)) }, mgla.ErrBadInput},
		{"Potrs constant b, row mismatch", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, constB5)) }, mgla.ErrBadInput},
		{"CholSolve constant L, b of 5 rows", func() ([]*G.Node, error) { return one(mgla.CholSolve(constSq, b5)) }, mgla.ErrBadInput},
		{"Potrs constant b, tile 0", func() ([]*G.Node, error) { return one(mgla.Potrs(sq, constB, mgla.WithTile(0))) }, mgla.ErrBadInput},
		{"zero Mesh with a tile", func() ([]*G.Node, error) {
			return one(mgla.Potrs(sq, b, mgla.WithMesh(&sharding.Mesh{}), mgla.WithTile(2)))
		}, mgla.ErrBadInput},
	}
	for _, c := range cases {
		before, before2 := graphState(g), graphState(g2)
		nodes, err := c.fn()
		require.Error(t, err, c.name)
		require.ErrorIs(t, err, c.want, c.name)
		require.ErrorIs(t, err, mgla.ErrBadInput, "%s: every build-time error is bad input", c.name)
		for _, nd := range nodes {
			require.Nil(t, nd, "%s: a node with the error", c.name)
		}
		require.Equal(t, before, graphState(g), "%s: the graph changed", c.name)
		require.Equal(t, before2, graphState(g2), "%s: the other graph changed", c.name)
	}
	// The check can fail: a successful build adds nodes.
	before := graphState(g)
	_, err = mgla.Potrs(sq, b, mgla.WithMesh(m2))
	require.NoError(t, err)
	require.Greater(t, len(graphState(g)), len(before))
}

// TestConstantOperands: a right-hand side or a matrix passed as a
// gorgonia.NewConstant (fixed data, of no graph) joins the other operand's
// graph, as in Gorgonia's own ops, and gives the results and the gradient
// of the same values as graph nodes, on both machines. (It was refused:
// "belong to different graphs".)
func TestConstantOperands(t *testing.T) {
	aData := []float64{4, 1, 0, 1, 3, 1, 0, 1, 2}
	bData := []float64{1, -2, 0.5}
	type built struct{ out, wrt *G.Node }
	cases := []struct {
		name  string
		build func(g *G.ExprGraph, constA, constB bool) (built, error)
	}{
		{"Potrs, b constant", func(g *G.ExprGraph, constA, constB bool) (built, error) {
			a, b := operands(g, aData, bData, constA, constB)
			x, err := mgla.Potrs(a, b)
			return built{x, a}, err
		}},
		{"CholSolve, b constant", func(g *G.ExprGraph, constA, constB bool) (built, error) {
			a, b := operands(g, aData, bData, constA, constB)
			l, err := mgla.Cholesky(a)
			if err != nil {
				return built{}, err
			}
			x, err := mgla.CholSolve(l, b)
			return built{x, a}, err
		}},
		{"Potrs, A constant", func(g *G.ExprGraph, constA, constB bool) (built, error) {
			a, b := operands(g, aData, bData, constA, constB)
			x, err := mgla.Potrs(a, b)
			return built{x, b}, err
		}},
	}
	for _, c := range cases {
		for _, lisp := range []bool{false, true} {
			var results [2][]float64
			for k, constant := range []bool{false, true} {
				g := G.NewGraph()
				constA := constant && strings.Contains(c.name, "A constant")
				bc, err := c.build(g, constA, constant && !constA)
				require.NoError(t, err, "%s constant=%v", c.name, constant)
				cost := G.Must(G.Sum(bc.out))
				require.NoError(t, grRunBackward(t, g, cost, lisp, bc.wrt), "%s constant=%v lisp=%v", c.name, constant, lisp)
				grad, err := bc.wrt.Grad()
				require.NoError(t, err)
				results[k] = append(slices.Clone(bc.out.Value().Data().([]float64)), grad.Data().([]float64)...)
			}
			require.Equal(t, results[0], results[1], "%s lisp=%v: x and the gradient, as nodes and with a constant", c.name, lisp)
		}
	}
}

// TestConstantsThatPrintAlike: two constant right-hand sides in one graph
// whose printed values agree (Gorgonia elides tensors of more than eight
// elements, and prints float32 as float64) stay two: each solve gets its
// own. (Added with g.AddNode, the second became the first: a wrong x with no
// error, and a float32 call refused as a dtype mismatch.)
func TestConstantsThatPrintAlike(t *testing.T) {
	const n = 20
	aData := make([]float64, n*n)
	for i := range n {
		aData[i*n+i] = 4
		if i > 0 {
			aData[i*n+i-1], aData[(i-1)*n+i] = 1, 1
		}
	}
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(aData))))
	e := make([]float64, n)
	e[10] = 1
	c0 := G.NewConstant(tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float64, n))))
	c1 := G.NewConstant(tensor.New(tensor.WithShape(n), tensor.WithBacking(e)))
	require.Equal(t, c0.Name(), c1.Name(), "the two constants print alike")
	x0, err := mgla.Potrs(a, c0)
	require.NoError(t, err)
	x1, err := mgla.Potrs(a, c1)
	require.NoError(t, err)
	a32 := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 2), G.WithName("A32"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float32{2, 0, 0, 2}))))
	b64 := G.NewConstant(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	b32 := G.NewConstant(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2})))
	a64 := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("A64"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{2, 0, 0, 2}))))
	y64, err := mgla.Potrs(a64, b64)
	require.NoError(t, err)
	y32, err := mgla.Potrs(a32, b32)
	require.NoError(t, err, "a float32 constant beside a float64 one that prints alike")
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	require.Equal(t, make([]float64, n), x0.Value().Data())
	got := x1.Value().Data().([]float64)
	// x1 = A⁻¹e₁₀: A·x1 = e₁₀.
	for i := range n {
		var r float64
		for j := range n {
			r += aData[i*n+j] * got[j]
		}
		require.InDelta(t, e[i], r, 1e-12, "row %d of A·x1", i)
	}
	require.InDeltaSlice(t, []float64{0.5, 1}, y64.Value().Data(), 1e-15)
	y := y32.Value().Data().([]float32)
	require.InDeltaSlice(t, []float64{0.5, 1}, []float64{float64(y[0]), float64(y[1])}, 1e-6)
}

// operands are the 3×3 A and the length-3 b of TestConstantOperands, as
// constants or as nodes of g.
func operands(g *G.ExprGraph, a, b []float64, constA, constB bool) (*G.Node, *G.Node) {
	at := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(slices.Clone(a)))
	bt := tensor.New(tensor.WithShape(3), tensor.WithBacking(slices.Clone(b)))
	an, bn := G.NewConstant(at), G.NewConstant(bt)
	if !constA {
		an = G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A"), G.WithValue(at))
	}
	if !constB {
		bn = G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("b"), G.WithValue(bt))
	}
	return an, bn
}

// TestNilOptions checks that the builders, Options and the collective
// builders skip nil options (as when an option is chosen conditionally)
// and still apply the others.
func TestNilOptions(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	b := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("b"))
	var opt mgla.Option
	_, err := mgla.Potrs(a, b, opt)
	require.NoError(t, err)
	_, err = mgla.Cholesky(a, mgla.Options(nil))
	require.NoError(t, err)
	_, _, err = mgla.Syevd(a, nil, mgla.Options(opt, nil), mgla.EigenvaluesOnly())
	require.NoError(t, err)
	_, err = mgla.LogDet(a, nil, mgla.Options(nil, mgla.WithTile(0)))
	require.ErrorIs(t, err, mgla.ErrBadInput, "the option beside the nil ones applies")

	m2, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	comm, err := mgla.NewMeshComm(m2)
	require.NoError(t, err)
	xs, err := ops.Shard(b, m2, sharding.RowBlocks())
	require.NoError(t, err)
	var copt mgla.CollectiveOption
	_, err = mgla.AllReduce(xs, comm, mgla.ReduceSum, copt, mgla.CollectiveName("sum"), nil)
	require.NoError(t, err)
	_, err = mgla.Barrier(xs, comm, nil)
	require.NoError(t, err)
}

func TestCauseWithoutWrapper(t *testing.T) {
	e := errors.New("plain")
	require.Equal(t, e, mgla.Cause(e))
	require.Nil(t, mgla.Cause(nil))
}

// TestResultsBeyondRange: a finite input whose result leaves the dtype's
// range is ErrNonFinite on every engine, never a silent Inf: a solve of a
// right-hand side near the largest value, the inverse of a matrix with a
// subnormal pivot (float64 and complex128: the GPUs keep float64 subnormals),
// the eigenvalues of a matrix of entries near the largest value.
func TestResultsBeyondRange(t *testing.T) {
	for _, ndev := range []int{1, 2} {
		for _, dt := range sharding.Dtypes {
			t.Run(fmt.Sprintf("dev%d_%v", ndev, dt), func(t *testing.T) {
				mesh, err := testMesh(t, ndev)
				require.NoError(t, err)
				huge := 1.7e308
				if dt == tensor.Float32 || dt == tensor.Complex64 {
					huge = 3e38
				}
				const n = 3
				diag := func(d ...complex128) []complex128 {
					a := make([]complex128, n*n)
					for i, v := range d {
						a[i*n+i] = v
					}
					return a
				}
				full := make([]complex128, n*n)
				for i := range full {
					full[i] = complex(huge, 0)
				}
				cases := []struct {
					name  string
					a     []complex128
					build func(a *G.Node) (*G.Node, error)
				}{
					{"Potrs", diag(0.5, 1, 1), func(a *G.Node) (*G.Node, error) {
						b := G.NewMatrix(a.Graph(), dt, G.WithShape(n, 1), G.WithName("b"),
							G.WithValue(toDense(dt, []complex128{complex(huge, 0), 1, 1}, n, 1)))
						return mgla.Potrs(a, b, onMesh(mesh), mgla.WithTile(2))
					}},
					{"Syevd", full, func(a *G.Node) (*G.Node, error) {
						w, _, err := mgla.Syevd(a, onMesh(mesh), mgla.WithTile(2), mgla.EigenvaluesOnly())
						return w, err
					}},
				}
				if dt == tensor.Float64 || dt == tensor.Complex128 {
					cases = append(cases, struct {
						name  string
						a     []complex128
						build func(a *G.Node) (*G.Node, error)
					}{"Potri", diag(1e-310, 1, 1), func(a *G.Node) (*G.Node, error) {
						return mgla.Potri(a, onMesh(mesh), mgla.WithTile(2))
					}})
				}
				for _, c := range cases {
					g := G.NewGraph()
					a := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(dt, c.a, n, n)))
					_, err := c.build(a)
					require.NoError(t, err, c.name)
					m := G.NewTapeMachine(g)
					err = m.RunAll()
					m.Close()
					require.Error(t, err, c.name)
					require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNonFinite), "%s: want ErrNonFinite, got %v", c.name, err)
					// The inputs are finite: the message must not say otherwise.
					require.NotContains(t, err.Error(), "matrix has NaN", c.name)
				}
			})
		}
	}
}

// TestMeshFromShardedRightHandSide: with no WithMesh, a host matrix goes to
// the mesh of a sharded right-hand side (Potrs and CholSolve), as WithMesh
// says, rather than ErrMeshMismatch against the default mesh.
func TestMeshFromShardedRightHandSide(t *testing.T) {
	mesh, err := sharding.CPUMesh(3)
	if err != nil {
		t.Fatal(err)
	}
	a := []float64{4, 1, 0, 1, 5, 2, 0, 2, 6}
	bv := []float64{1, 2, 3}
	for _, op := range []string{"Potrs", "CholSolve"} {
		g := G.NewGraph()
		an := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A"),
			G.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(append([]float64(nil), a...)))))
		sb, err := sharding.Put(tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), bv...))), mesh, sharding.RowBlocks())
		if err != nil {
			t.Fatal(err)
		}
		b := ops.Input(g, sb, "b")
		var x *G.Node
		if op == "Potrs" {
			x, err = mgla.Potrs(an, b)
		} else {
			var l *G.Node
			if l, err = mgla.Cholesky(an, mgla.WithMesh(mesh)); err == nil {
				x, err = mgla.CholSolve(l, b)
			}
		}
		if err != nil {
			t.Fatalf("%s(host A, sharded b): %v", op, err)
		}
		m := G.NewTapeMachine(g)
		if err := m.RunAll(); err != nil {
			t.Fatalf("%s: %v", op, mgla.Cause(err))
		}
		m.Close()
		got := x.Value().Data().([]float64)
		for i := range 3 { // A·x = b
			var r float64
			for j := range 3 {
				r += a[i*3+j] * got[j]
			}
			if math.Abs(r-bv[i]) > 1e-12 {
				t.Fatalf("%s: A·x = b fails in row %d: %v", op, i, got)
			}
		}
	}
}

// TestStridedHostInputs binds A and b as views of larger tensors and as
// Clones of views (strided tensors that are not views), row- and
// column-major: Potrs, LogDet and a collective must read their logical
// contents (a Clone of a view used to be read from its backing array: wrong
// answers, or a panic for a column-major one) and leave them unchanged.
func TestStridedHostInputs(t *testing.T) {
	// A = [[4 1] [1 9]] in the top left of a 3×3, b = [1 2] in column 0 of a
	// 2×2; x = A⁻¹b = [0.2 0.2], log det A = log 35.
	dense := func(fortran bool, r, c int, rowMajor, colMajor []float64) *tensor.Dense {
		if fortran {
			return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(colMajor), tensor.AsFortran(nil))
		}
		return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(rowMajor))
	}
	view := func(d *tensor.Dense, clone bool, s ...tensor.Slice) *tensor.Dense {
		v, err := d.Slice(s...)
		require.NoError(t, err)
		if clone {
			return v.(*tensor.Dense).Clone().(*tensor.Dense)
		}
		return v.(*tensor.Dense)
	}
	for _, tc := range []struct {
		name           string
		fortran, clone bool
	}{
		{"view", false, false},
		{"clone of a view", false, true},
		{"column-major view", true, false},
		{"clone of a column-major view", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sym := []float64{4, 1, 0, 1, 9, 0, 0, 0, 1}
			a := view(dense(tc.fortran, 3, 3, sym, sym), tc.clone, tensor.S(0, 2), tensor.S(0, 2))
			b := view(dense(tc.fortran, 2, 2, []float64{1, 7, 2, 7}, []float64{1, 2, 7, 7}), tc.clone, nil, tensor.S(0))
			aBefore, bBefore := fmt.Sprint(a), fmt.Sprint(b)
			g := G.NewGraph()
			an := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("A"), G.WithValue(a))
			bn := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("b"), G.WithValue(b))
			x, err := mgla.Potrs(an, bn)
			require.NoError(t, err)
			ld, err := mgla.LogDet(an)
			require.NoError(t, err)
			sum, err := mgla.AllReduce(an, collective.Self(), mgla.ReduceSum)
			require.NoError(t, err)
			m := G.NewTapeMachine(g)
			defer m.Close()
			require.NoError(t, mgla.Cause(m.RunAll()))
			require.InDeltaSlice(t, []float64{0.2, 0.2}, x.Value().Data(), 1e-14)
			require.InDelta(t, math.Log(35), ld.Value().Data(), 1e-14)
			require.Equal(t, []float64{4, 1, 1, 9}, sum.Value().Data())
			require.Equal(t, aBefore, fmt.Sprint(a), "A changed")
			require.Equal(t, bBefore, fmt.Sprint(b), "b changed")
		})
	}
}

// TestRightHandSideReboundInEquivalentShape: Gorgonia's Let takes a (1, n)
// value for an (n) node and a (k) value for a (1, k) node; Potrs and
// CholSolve read them in the node's shape (the first panicked in the
// kernels, killing the process), on both machines' TapeMachine path.
func TestRightHandSideReboundInEquivalentShape(t *testing.T) {
	dense := func(shape []int, v ...float64) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	for _, tc := range []struct {
		name        string
		a           *tensor.Dense
		node, bound *tensor.Dense
		want        []float64
	}{
		{"(1, 3) value of a (3) node", dense([]int{3, 3}, 2, 0, 0, 0, 2, 0, 0, 0, 2), dense([]int{3}, 0, 0, 0), dense([]int{1, 3}, 2, 4, 6), []float64{1, 2, 3}},
		{"(3) value of a (1, 3) node", dense([]int{1, 1}, 2), dense([]int{1, 3}, 0, 0, 0), dense([]int{3}, 2, 4, 6), []float64{1, 2, 3}},
	} {
		for _, op := range []string{"Potrs", "CholSolve"} {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				g := G.NewGraph()
				a := G.NodeFromAny(g, tc.a.Clone().(*tensor.Dense), G.WithName("A"))
				b := G.NodeFromAny(g, tc.node.Clone().(*tensor.Dense), G.WithName("B"))
				var x *G.Node
				var err error
				if op == "Potrs" {
					x, err = mgla.Potrs(a, b)
				} else {
					var l *G.Node
					if l, err = mgla.Cholesky(a); err == nil {
						x, err = mgla.CholSolve(l, b)
					}
				}
				require.NoError(t, err)
				require.NoError(t, G.Let(b, tc.bound))
				m := G.NewTapeMachine(g)
				defer m.Close()
				require.NoError(t, mgla.Cause(m.RunAll()))
				require.InDeltaSlice(t, tc.want, x.Value().Data(), 1e-14)
			})
		}
	}
}

// TestScalarBoundWithLet: Gorgonia's Let binds a Go number to a tensor node
// without a shape check; every op that reads the node refuses it at run time
// with ErrBadInput naming the node's shape (it said "want a matrix or a
// vector, got shape ()", unclassified), on both machines, and writes no
// output.
func TestScalarBoundWithLet(t *testing.T) {
	const n = 3
	builders := []struct {
		name  string
		build func(a, b *G.Node, mesh *sharding.Mesh) (*G.Node, error)
	}{
		{"Potrs", func(a, b *G.Node, mesh *sharding.Mesh) (*G.Node, error) {
			return mgla.Potrs(a, b, onMesh(mesh), mgla.WithTile(2))
		}},
		{"CholSolve", func(a, b *G.Node, mesh *sharding.Mesh) (*G.Node, error) {
			return mgla.CholSolve(a, b, onMesh(mesh), mgla.WithTile(2))
		}},
		{"Potri", func(a, _ *G.Node, mesh *sharding.Mesh) (*G.Node, error) { return mgla.Potri(a, onMesh(mesh)) }},
		{"Cholesky", func(a, _ *G.Node, mesh *sharding.Mesh) (*G.Node, error) { return mgla.Cholesky(a, onMesh(mesh)) }},
		{"LogDet", func(a, _ *G.Node, mesh *sharding.Mesh) (*G.Node, error) { return mgla.LogDet(a, onMesh(mesh)) }},
		{"Syevd", func(a, _ *G.Node, mesh *sharding.Mesh) (*G.Node, error) {
			w, _, err := mgla.Syevd(a, onMesh(mesh))
			return w, err
		}},
		{"AllReduce", func(a, _ *G.Node, mesh *sharding.Mesh) (*G.Node, error) {
			var comm mgla.Comm = collective.Self()
			if mesh.Size() > 1 {
				var err error
				if comm, err = mgla.NewMeshComm(mesh); err != nil {
					return nil, err
				}
			}
			return mgla.AllReduce(a, comm, mgla.ReduceSum)
		}},
	}
	for _, bc := range builders {
		for _, ndev := range []int{1, 3} {
			for _, bound := range []string{"A", "b"} {
				if bound == "b" && bc.name != "Potrs" && bc.name != "CholSolve" {
					continue
				}
				for _, lisp := range []bool{false, true} {
					machine := map[bool]string{false: "tape", true: "lisp"}[lisp]
					t.Run(fmt.Sprintf("%s/%d/%s/%s", bc.name, ndev, bound, machine), func(t *testing.T) {
						mesh, err := testMesh(t, ndev)
						require.NoError(t, err)
						g := G.NewGraph()
						a := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
							G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking([]float64{4, 0, 0, 0, 4, 0, 0, 0, 4}))))
						b := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("b"),
							G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking([]float64{1, 2, 3}))))
						out, err := bc.build(a, b, mesh)
						require.NoError(t, err)
						require.NoError(t, G.Let(map[string]*G.Node{"A": a, "b": b}[bound], 3.0))
						err = mgla.Cause(run(t, g, lisp))
						require.Error(t, err)
						require.True(t, errors.Is(err, mgla.ErrBadInput), "want ErrBadInput, got %v", err)
						require.Contains(t, err.Error(), "shape")
						require.Nil(t, out.Value(), "an output was written")
					})
				}
			}
		}
	}
}

// TestOtherMeshBoundWithLet: a sharded value on another mesh than its node's
// (ops.Input rebound with gorgonia.Let) is refused at run time with
// ErrMeshMismatch and ErrBadInput, as at build time, by every op that
// reads it, on both machines (it matched ErrMeshMismatch alone).
func TestOtherMeshBoundWithLet(t *testing.T) {
	m2, err := testMesh(t, 2)
	require.NoError(t, err)
	m3, err := testMesh(t, 3)
	require.NoError(t, err)
	spd := func() *tensor.Dense {
		return tensor.New(tensor.WithShape(4, 4), tensor.WithBacking([]float64{4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 4}))
	}
	on2, err := sharding.Put(spd(), m2, sharding.Cyclic(2))
	require.NoError(t, err)
	on3, err := sharding.Put(spd(), m3, sharding.Cyclic(2))
	require.NoError(t, err)
	for _, bc := range []struct {
		name  string
		build func(a *G.Node) (*G.Node, error)
	}{
		{"Potrs", func(a *G.Node) (*G.Node, error) {
			b := G.NewVector(a.Graph(), tensor.Float64, G.WithShape(4), G.WithName("b"), G.WithInit(G.Ones()))
			return mgla.Potrs(a, b, mgla.WithTile(2))
		}},
		{"Potri", func(a *G.Node) (*G.Node, error) { return mgla.Potri(a, mgla.WithTile(2)) }},
		{"Cholesky", func(a *G.Node) (*G.Node, error) { return mgla.Cholesky(a, mgla.WithTile(2)) }},
		{"LogDet", func(a *G.Node) (*G.Node, error) { return mgla.LogDet(a, mgla.WithTile(2)) }},
		{"Syevd", func(a *G.Node) (*G.Node, error) {
			w, _, err := mgla.Syevd(a, mgla.WithTile(2), mgla.EigenvaluesOnly())
			return w, err
		}},
		{"Relayout", func(a *G.Node) (*G.Node, error) {
			r, err := ops.Relayout(a, sharding.Cyclic(1))
			if err != nil {
				return nil, err
			}
			return ops.Gather(r)
		}},
		{"AllReduce", func(a *G.Node) (*G.Node, error) {
			comm, err := mgla.NewMeshComm(m2)
			if err != nil {
				return nil, err
			}
			return mgla.AllReduce(a, comm, mgla.ReduceSum)
		}},
	} {
		for _, lisp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s", bc.name, map[bool]string{false: "tape", true: "lisp"}[lisp]), func(t *testing.T) {
				g := G.NewGraph()
				a := ops.Input(g, on2, "A")
				out, err := bc.build(a)
				require.NoError(t, err)
				require.NoError(t, G.Let(a, on3))
				err = mgla.Cause(run(t, g, lisp))
				require.ErrorIs(t, err, mgla.ErrMeshMismatch)
				require.ErrorIs(t, err, mgla.ErrBadInput)
				require.Nil(t, out.Value(), "an output was written")
			})
		}
	}
}

// TestMeshMismatchAtBuild: a collective of a node on another mesh than its
// communicator's, and Shard of a sharded node to another mesh, are refused
// with ErrMeshMismatch and ErrBadInput (collectives with ErrBadCall too, as
// their other build errors), as the dense builders' are (they matched
// ErrMeshMismatch alone).
func TestMeshMismatchAtBuild(t *testing.T) {
	m2, err := testMesh(t, 2)
	require.NoError(t, err)
	m3, err := testMesh(t, 3)
	require.NoError(t, err)
	comm2, err := mgla.NewMeshComm(m2)
	require.NoError(t, err)
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(6), G.WithName("x"), G.WithInit(G.Ones()))
	on3, err := ops.Shard(x, m3, sharding.RowBlocks())
	require.NoError(t, err)
	for _, comm := range []mgla.Comm{comm2, collective.Self()} {
		_, err := mgla.AllReduce(on3, comm, mgla.ReduceSum)
		for _, want := range []error{mgla.ErrMeshMismatch, mgla.ErrBadInput, mgla.ErrBadCall} {
			require.ErrorIs(t, err, want, "AllReduce on %v", comm)
		}
	}
	_, err = ops.Shard(on3, m2, sharding.RowBlocks())
	require.ErrorIs(t, err, mgla.ErrMeshMismatch)
	require.ErrorIs(t, err, mgla.ErrBadInput)
}

// DefaultTile of a nil mesh is the default mesh's, as WithMesh(nil) means
// the default mesh (it dereferenced nil).
func TestDefaultTile(t *testing.T) {
	def, err := sharding.DefaultMesh()
	require.NoError(t, err)
	cpu, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		mesh *sharding.Mesh
		want int
	}{
		{"nil", nil, mgla.DefaultTile(def, 100)},
		{"CPU", cpu, 256},
	} {
		require.Equal(t, c.want, mgla.DefaultTile(c.mesh, 100), c.name)
	}
}
