package mgla_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla"
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
		}
	}
	return cs
}

// run executes a graph with the TapeMachine, or with the LispMachine when
// lisp is set. Gorgonia's LispMachine cannot bind complex values ("Unhandled
// dtype"), so complex graphs always use the TapeMachine.
func run(t *testing.T, g *G.ExprGraph, lisp bool) error {
	t.Helper()
	var m G.VM
	if lisp && !hasComplex(g) {
		m = G.NewLispMachine(g, G.ExecuteFwdOnly())
	} else {
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
			a := G.NewMatrix(g, c.dt, G.WithShape(c.n, c.n), G.WithName("A"), G.WithValue(toDense(c.dt, junk, c.n, c.n)))
			bn := G.NewMatrix(g, c.dt, G.WithShape(c.n, c.k), G.WithName("B"), G.WithValue(toDense(c.dt, b, c.n, c.k)))
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

func TestSameResultForEveryMeshAndTile(t *testing.T) {
	rng := newRNG(t, 2)
	const n = 29
	full, junk := hpd(rng, n, false)
	_ = full
	bv := randomMatrix(rng, n, 2, false)
	var first []complex128
	for _, ndev := range []int{1, 2, 3, 5} {
		for _, tile := range []int{1, 4, 7, 29, 100} {
			mesh, _ := testMesh(t, ndev)
			g := G.NewGraph()
			a := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"), G.WithValue(toDense(tensor.Float64, junk, n, n)))
			b := G.NewMatrix(g, tensor.Float64, G.WithShape(n, 2), G.WithName("B"), G.WithValue(toDense(tensor.Float64, bv, n, 2)))
			x := must(mgla.Potrs(a, b, onMesh(mesh), mgla.WithTile(tile)))
			require.NoError(t, run(t, g, false))
			got := fromValue(t, x.Value())
			if first == nil {
				first = got
				continue
			}
			require.Less(t, relDiff(got, first), 1e-12, "ndev %d tile %d seed %d", ndev, tile, testSeed)
		}
	}
}

func TestRunTimeErrors(t *testing.T) {
	mesh, _ := testMesh(t, 2)
	const n = 6
	notPD := make([]complex128, n*n)
	for i := range n {
		notPD[i*n+i] = 1
	}
	notPD[2*n+2] = -1 // the leading minor of order 3 fails
	withNaN := make([]complex128, n*n)
	for i := range n {
		withNaN[i*n+i] = 1
	}
	withNaN[4*n+1] = complex(math.NaN(), 0)
	build := map[string]func(a, b *G.Node) (*G.Node, error){
		"Potrs":    func(a, b *G.Node) (*G.Node, error) { return mgla.Potrs(a, b, onMesh(mesh), mgla.WithTile(2)) },
		"Potri":    func(a, _ *G.Node) (*G.Node, error) { return mgla.Potri(a, onMesh(mesh)) },
		"Cholesky": func(a, _ *G.Node) (*G.Node, error) { return mgla.Cholesky(a, onMesh(mesh)) },
		"LogDet":   func(a, _ *G.Node) (*G.Node, error) { return mgla.LogDet(a, onMesh(mesh)) },
		"CholSolve": func(a, b *G.Node) (*G.Node, error) {
			return mgla.CholSolve(a, b, onMesh(mesh))
		},
	}
	for name, fn := range build {
		for _, dt := range sharding.Dtypes {
			for _, lisp := range []bool{false, true} {
				for _, kind := range []string{"notPD", "nan"} {
					src := notPD
					if kind == "nan" {
						src = withNaN
					}
					if name == "CholSolve" && kind == "notPD" {
						src = append([]complex128(nil), notPD...)
						src[2*n+2] = 0 // a zero on L's diagonal
					}
					g := G.NewGraph()
					input := toDense(dt, src, n, n)
					before := input.Clone().(*tensor.Dense)
					a := G.NewMatrix(g, dt, G.WithShape(n, n), G.WithName("A"), G.WithValue(input))
					b := G.NewVector(g, dt, G.WithShape(n), G.WithName("b"), G.WithInit(G.Ones()))
					_, err := fn(a, b)
					require.NoError(t, err)
					err = run(t, g, lisp)
					require.Error(t, err, "%s %v %s", name, dt, kind)
					if kind == "notPD" {
						require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNotPositiveDefinite), "%s %v lisp=%v: %v", name, dt, lisp, err)
						require.Contains(t, err.Error(), "order 3")
					} else {
						require.True(t, errors.Is(mgla.Cause(err), mgla.ErrNonFinite), "%s %v lisp=%v: %v", name, dt, lisp, err)
					}
					// Compare printed values: NaN ≠ NaN.
					require.Equal(t, fmt.Sprint(before.Data()), fmt.Sprint(input.Data()), "input modified")
				}
			}
		}
	}
}

func TestBuildTimeErrors(t *testing.T) {
	g := G.NewGraph()
	g2 := G.NewGraph()
	sq := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("sq"))
	rect := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 3), G.WithName("rect"))
	b5 := G.NewMatrix(g, tensor.Float64, G.WithShape(5, 2), G.WithName("b5"))
	b3d := G.NewTensor(g, tensor.Float64, 3, G.WithShape(4, 2, 2), G.WithName("b3d"))
	ints := G.NewMatrix(g, tensor.Int, G.WithShape(4, 4), G.WithName("ints"))
	other := G.NewMatrix(g2, tensor.Float64, G.WithShape(4, 2), G.WithName("other"))
	b32 := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 2), G.WithName("b32"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("b"))
	m2, _ := sharding.CPUMesh(2)
	m3, _ := sharding.CPUMesh(3)
	onM2, err := ops.Shard(sq, m2, sharding.Cyclic(2))
	require.NoError(t, err)
	cases := []struct {
		name string
		fn   func() error
		want error
	}{
		{"nil a", func() error { _, err := mgla.Potrs(nil, b); return err }, mgla.ErrBadInput},
		{"nil b", func() error { _, err := mgla.Potrs(sq, nil); return err }, mgla.ErrBadInput},
		{"non-square", func() error { _, err := mgla.Potri(rect); return err }, mgla.ErrBadInput},
		{"row mismatch", func() error { _, err := mgla.Potrs(sq, b5); return err }, mgla.ErrBadInput},
		{"rank 3", func() error { _, err := mgla.Potrs(sq, b3d); return err }, mgla.ErrBadInput},
		{"dtype", func() error { _, err := mgla.LogDet(ints); return err }, mgla.ErrBadInput},
		{"dtype mismatch", func() error { _, err := mgla.Potrs(sq, b32); return err }, mgla.ErrBadInput},
		{"tile 0", func() error { _, err := mgla.Cholesky(sq, mgla.WithTile(0)); return err }, mgla.ErrBadInput},
		{"graphs", func() error { _, err := mgla.Potrs(sq, other); return err }, mgla.ErrBadInput},
		{"CholSolve non-square", func() error { _, err := mgla.CholSolve(rect, b); return err }, mgla.ErrBadInput},
		{"Syevd non-square", func() error { _, _, err := mgla.Syevd(rect); return err }, mgla.ErrBadInput},
		{"mesh mismatch", func() error { _, err := mgla.Potri(onM2, onMesh(m3)); return err }, mgla.ErrMeshMismatch},
	}
	for _, c := range cases {
		err := c.fn()
		require.Error(t, err, c.name)
		require.ErrorIs(t, err, c.want, c.name)
	}
}

func TestCauseWithoutWrapper(t *testing.T) {
	e := errors.New("plain")
	require.Equal(t, e, mgla.Cause(e))
	require.Nil(t, mgla.Cause(nil))
}
