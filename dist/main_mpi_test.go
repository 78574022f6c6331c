//go:build mpi

package dist_test

import (
	"flag"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

var (
	world *mpi.Comm
	seed  uint64 // rank 0's, the same on every rank
)

func TestMain(m *testing.M) {
	// A stuck test fails after 20 s; a benchmark's collectives of whole
	// matrices (N = 8000: 512 MB) may take longer on a loaded machine.
	flag.Parse()
	timeout := 20 * time.Second
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		timeout = 10 * time.Minute
	}
	w, err := mpi.World(mpi.WithTimeout(timeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpi.World:", err)
		os.Exit(1)
	}
	world = w
	s := []float64{0}
	if err := w.Do(call(collective.Bcast, collective.Sum, []float64{float64(uint64(time.Now().UnixNano()) & (1<<52 - 1))}, s)); err != nil {
		fmt.Fprintln(os.Stderr, "sharing the seed:", err)
		os.Exit(1)
	}
	seed = uint64(s[0])
	if w.Rank() == 0 {
		fmt.Printf("dist tests: %d ranks, seed %d\n", w.Size(), seed)
	}
	code := m.Run()
	codes := []float64{0}
	if err := w.Do(call(collective.AllReduce, collective.Max, []float64{float64(code)}, codes)); err != nil {
		code = max(code, 1)
	} else {
		code = int(codes[0])
	}
	// A grid closed after Finalize, as a deferred Close in main does: it
	// used to abort the job (BLACS freed MPI communicators).
	late, err := dist.NewGrid(w, 0, 0)
	if err != nil {
		code = max(code, 1)
	}
	if err := mpi.Finalize(); err != nil {
		code = max(code, 1)
	}
	if late != nil {
		if err := late.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "Grid.Close after Finalize:", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// call is a float64 collective on host slices.
func call(kind collective.Kind, op collective.ReduceOp, send, recv []float64) *collective.Call {
	sb, _ := sharding.NewHostBuffer(send)
	rb, _ := sharding.NewHostBuffer(recv)
	return &collective.Call{Kind: kind, Op: op, Dtype: tensor.Float64, Count: len(send),
		Send: []sharding.Buffer{sb}, Recv: []sharding.Buffer{rb}}
}

// grids are every P×Q grid of the world's size.
func grids() [][2]int {
	var gs [][2]int
	n := world.Size()
	for p := 1; p <= n; p++ {
		if n%p == 0 {
			gs = append(gs, [2]int{p, n / p})
		}
	}
	return gs
}

func newGrid(t *testing.T, p, q int) *dist.Grid {
	t.Helper()
	g, err := dist.NewGrid(world, p, q)
	if err != nil {
		t.Fatalf("NewGrid(%d, %d): %v", p, q, err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// errorsAgree fails unless err is the same text on every rank.
func errorsAgree(t *testing.T, err error) {
	t.Helper()
	var h float64
	if err != nil {
		for _, c := range err.Error() {
			h = math.Mod(h*131+float64(c), 1<<40)
		}
	}
	lo, hi := []float64{0}, []float64{0}
	if e := world.Do(call(collective.AllReduce, collective.Max, []float64{h}, hi)); e != nil {
		t.Fatal(e)
	}
	if e := world.Do(call(collective.AllReduce, collective.Min, []float64{h}, lo)); e != nil {
		t.Fatal(e)
	}
	if lo[0] != hi[0] {
		t.Fatalf("ranks return different errors; this one: %v", err)
	}
}

// conv turns complex128 values into T.
func conv[T dist.Scalar](xs []complex128) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		switch p := any(&out[i]).(type) {
		case *float32:
			*p = float32(real(x))
		case *float64:
			*p = real(x)
		case *complex64:
			*p = complex64(x)
		case *complex128:
			*p = x
		}
	}
	return out
}

func widen[T dist.Scalar](xs []T) []complex128 {
	out := make([]complex128, len(xs))
	for i, x := range xs {
		switch v := any(x).(type) {
		case float32:
			out[i] = complex(float64(v), 0)
		case float64:
			out[i] = complex(v, 0)
		case complex64:
			out[i] = complex128(v)
		case complex128:
			out[i] = v
		}
	}
	return out
}

func isComplex[T dist.Scalar]() bool {
	switch any(*new(T)).(type) {
	case complex64, complex128:
		return true
	}
	return false
}

func tolerance[T dist.Scalar]() float64 {
	switch any(*new(T)).(type) {
	case float32, complex64:
		return 2e-3
	}
	return 1e-9
}

// randomHPD is a random n×n Hermitian positive definite matrix (complex
// only when cplx), column-major, M·Mᴴ/n + I, rounded to T's precision.
func randomHPD[T dist.Scalar](rng *rand.Rand, n int) []complex128 {
	m := randomDense[T](rng, n, n)
	a := make([]complex128, n*n)
	for i := range n {
		for j := range n {
			var s complex128
			for k := range n {
				s += m[i+k*n] * cmplx.Conj(m[j+k*n])
			}
			a[i+j*n] = s / complex(float64(n), 0)
		}
		a[i+i*n] = complex(real(a[i+i*n])+1, 0)
	}
	return widen(conv[T](a))
}

func randomDense[T dist.Scalar](rng *rand.Rand, r, c int) []complex128 {
	m := make([]complex128, r*c)
	for i := range m {
		m[i] = complex(rng.Float64()*2-1, 0)
		if isComplex[T]() {
			m[i] += complex(0, rng.Float64()*2-1)
		}
	}
	return widen(conv[T](m))
}

// refCholesky is the float64 reference lower factor of a.
func refCholesky(a []complex128, n int) []complex128 {
	l := make([]complex128, n*n)
	for j := range n {
		d := real(a[j+j*n])
		for k := range j {
			d -= real(l[j+k*n] * cmplx.Conj(l[j+k*n]))
		}
		l[j+j*n] = complex(math.Sqrt(d), 0)
		for i := j + 1; i < n; i++ {
			s := a[i+j*n]
			for k := range j {
				s -= l[i+k*n] * cmplx.Conj(l[j+k*n])
			}
			l[i+j*n] = s / l[j+j*n]
		}
	}
	return l
}

// refSolve solves A·X = B (n×k) with the reference factor.
func refSolve(a []complex128, n int, b []complex128, k int) []complex128 {
	l := refCholesky(a, n)
	x := append([]complex128(nil), b...)
	for c := range k {
		col := x[c*n : (c+1)*n]
		for i := range n {
			for j := range i {
				col[i] -= l[i+j*n] * col[j]
			}
			col[i] /= l[i+i*n]
		}
		for i := n - 1; i >= 0; i-- {
			for j := i + 1; j < n; j++ {
				col[i] -= cmplx.Conj(l[j+i*n]) * col[j]
			}
			col[i] /= cmplx.Conj(l[i+i*n])
		}
	}
	return x
}

func identity(n int) []complex128 {
	e := make([]complex128, n*n)
	for i := range n {
		e[i+i*n] = 1
	}
	return e
}

// relErr is max|got − want| / max(1, max|want|).
func relErr(got, want []complex128) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, s float64
	for i := range want {
		d = max(d, cmplx.Abs(got[i]-want[i]))
		s = max(s, cmplx.Abs(want[i]))
	}
	return d / max(1, s)
}

// sameOnEveryRank fails unless xs holds the same bits on every rank.
func sameOnEveryRank(t *testing.T, what string, xs []float64) {
	t.Helper()
	lo, hi := make([]float64, len(xs)), make([]float64, len(xs))
	if err := world.Do(call(collective.AllReduce, collective.Max, xs, hi)); err != nil {
		t.Fatal(err)
	}
	if err := world.Do(call(collective.AllReduce, collective.Min, xs, lo)); err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		if lo[i] != hi[i] {
			t.Fatalf("%s: element %d differs across ranks: [%v, %v]", what, i, lo[i], hi[i])
		}
	}
}
