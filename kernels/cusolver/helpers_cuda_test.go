//go:build mglacuda

package cusolver

import (
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/tensor"
)

var (
	flagBench  = flag.Bool("mgla.bench", false, "run TestBenchPotrf: Potrf timings for N = -mgla.benchn on 1, 2 and 4 GPUs")
	flagBenchN = flag.Int("mgla.benchn", 16384, "matrix order for -mgla.bench")
	flagSeed   = flag.Uint64("mgla.seed", 0, "base random seed (0: taken from the clock; printed either way)")
)

var baseSeed uint64

func TestMain(m *testing.M) {
	flag.Parse()
	baseSeed = *flagSeed
	if baseSeed == 0 {
		baseSeed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("cusolver tests: base seed %d (rerun with -mgla.seed=%d)\n", baseSeed, baseSeed)
	if err := Load(); err != nil {
		fmt.Printf("cusolver tests: Load failed: %v\n", err)
	} else {
		r, d, err := Versions()
		n, err2 := DeviceCount()
		fmt.Printf("cusolver tests: libraries %q; runtime %d, driver %d (%v); %d devices (%v); unresolved symbols %v\n",
			LoadedLibraries(), r, d, err, n, err2, missingSymbols())
	}
	os.Exit(m.Run())
}

// gpus returns the number of devices; a Load failure fails the test (the
// binary is only run on GPU machines), no device skips it.
func gpus(t testing.TB) int {
	t.Helper()
	if err := Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	n, err := DeviceCount()
	if err != nil {
		t.Fatalf("DeviceCount: %v", err)
	}
	if n == 0 {
		t.Skip("no CUDA device")
	}
	return n
}

// newRNG derives a reproducible generator from the base seed and the test
// name.
func newRNG(t testing.TB) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	s := h.Sum64()
	t.Logf("seed: base %d, test hash %d", baseSeed, s)
	return rand.New(rand.NewPCG(baseSeed, s))
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// ---- precisions ------------------------------------------------------------

type prec struct {
	dt   tensor.Dtype
	name string
	real bool
	eps  float64
}

var precs = []prec{
	{tensor.Float32, "float32", true, 0x1p-23},
	{tensor.Float64, "float64", true, 0x1p-52},
	{tensor.Complex64, "complex64", false, 0x1p-23},
	{tensor.Complex128, "complex128", false, 0x1p-52},
}

func (p prec) round(v complex128) complex128 {
	switch p.dt {
	case tensor.Float32:
		return complex(float64(float32(real(v))), 0)
	case tensor.Float64:
		return complex(real(v), 0)
	case tensor.Complex64:
		return complex128(complex64(v))
	}
	return v
}

// encode converts values to the little-endian device representation of dt.
func encode(dt tensor.Dtype, v []complex128) []byte {
	es := ElemSize(dt)
	b := make([]byte, len(v)*es)
	le := binary.LittleEndian
	for i, x := range v {
		o := b[i*es:]
		switch dt {
		case tensor.Float32:
			le.PutUint32(o, math.Float32bits(float32(real(x))))
		case tensor.Float64:
			le.PutUint64(o, math.Float64bits(real(x)))
		case tensor.Complex64:
			le.PutUint32(o, math.Float32bits(float32(real(x))))
			le.PutUint32(o[4:], math.Float32bits(float32(imag(x))))
		case tensor.Complex128:
			le.PutUint64(o, math.Float64bits(real(x)))
			le.PutUint64(o[8:], math.Float64bits(imag(x)))
		}
	}
	return b
}

func decode(dt tensor.Dtype, b []byte) []complex128 {
	es := ElemSize(dt)
	v := make([]complex128, len(b)/es)
	le := binary.LittleEndian
	for i := range v {
		o := b[i*es:]
		switch dt {
		case tensor.Float32:
			v[i] = complex(float64(math.Float32frombits(le.Uint32(o))), 0)
		case tensor.Float64:
			v[i] = complex(math.Float64frombits(le.Uint64(o)), 0)
		case tensor.Complex64:
			v[i] = complex(float64(math.Float32frombits(le.Uint32(o))), float64(math.Float32frombits(le.Uint32(o[4:]))))
		case tensor.Complex128:
			v[i] = complex(math.Float64frombits(le.Uint64(o)), math.Float64frombits(le.Uint64(o[8:])))
		}
	}
	return v
}

// ---- host matrices (column-major, complex128) ------------------------------

type cmat struct {
	r, c int
	d    []complex128
}

func newCmat(r, c int) *cmat { return &cmat{r, c, make([]complex128, r*c)} }

func (m *cmat) at(i, j int) complex128     { return m.d[i+j*m.r] }
func (m *cmat) set(i, j int, v complex128) { m.d[i+j*m.r] = v }
func (m *cmat) col(j int) []complex128     { return m.d[j*m.r : (j+1)*m.r] }

func (m *cmat) clone() *cmat {
	c := newCmat(m.r, m.c)
	copy(c.d, m.d)
	return c
}

func (p prec) rnd(rng *rand.Rand) complex128 {
	if p.real {
		return complex(2*rng.Float64()-1, 0)
	}
	return complex(2*rng.Float64()-1, 2*rng.Float64()-1)
}

// randHPD returns a random Hermitian positive definite matrix, rounded to p:
// uniform entries in [-1, 1] (real and imaginary parts) plus 4·√n on the
// diagonal, so its spectrum lies in about [2.3√n, 5.7√n].
func randHPD(rng *rand.Rand, n int, p prec) *cmat {
	a := newCmat(n, n)
	shift := 4 * math.Sqrt(float64(n))
	for j := 0; j < n; j++ {
		for i := j + 1; i < n; i++ {
			v := p.round(p.rnd(rng))
			a.set(i, j, v)
			a.set(j, i, cmplx.Conj(v))
		}
		a.set(j, j, p.round(complex(2*rng.Float64()-1+shift, 0)))
	}
	return a
}

func randMat(rng *rand.Rand, r, c int, p prec) *cmat {
	m := newCmat(r, c)
	for i := range m.d {
		m.d[i] = p.round(p.rnd(rng))
	}
	return m
}

// parallel runs f(j) for j in [0, n) on GOMAXPROCS goroutines.
func parallel(n int, f func(j int)) {
	w := runtime.GOMAXPROCS(0)
	if w > n {
		w = n
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				j := next
				next++
				mu.Unlock()
				if j >= n {
					return
				}
				f(j)
			}
		}()
	}
	wg.Wait()
}

// mul returns a·b.
func mul(a, b *cmat) *cmat {
	if a.c != b.r {
		panic("mul: shape mismatch")
	}
	c := newCmat(a.r, b.c)
	parallel(b.c, func(j int) {
		cj := c.col(j)
		bj := b.col(j)
		for k := 0; k < a.c; k++ {
			s := bj[k]
			if s == 0 {
				continue
			}
			ak := a.col(k)
			for i := range cj {
				cj[i] += ak[i] * s
			}
		}
	})
	return c
}

// mulAdj returns aᴴ·b.
func mulAdj(a, b *cmat) *cmat {
	if a.r != b.r {
		panic("mulAdj: shape mismatch")
	}
	c := newCmat(a.c, b.c)
	parallel(b.c, func(j int) {
		bj := b.col(j)
		for i := 0; i < a.c; i++ {
			ai := a.col(i)
			var s complex128
			for k := range bj {
				s += cmplx.Conj(ai[k]) * bj[k]
			}
			c.set(i, j, s)
		}
	})
	return c
}

// norm1 is the largest column sum of absolute values.
func norm1(m *cmat) float64 {
	var mx float64
	for j := 0; j < m.c; j++ {
		var s float64
		for _, v := range m.col(j) {
			s += cmplx.Abs(v)
		}
		mx = math.Max(mx, s)
	}
	return mx
}

// hermFromLower builds the full Hermitian matrix from the lower triangle of m.
func hermFromLower(m *cmat) *cmat {
	h := newCmat(m.r, m.c)
	for j := 0; j < m.c; j++ {
		for i := j; i < m.r; i++ {
			v := m.at(i, j)
			if i == j {
				v = complex(real(v), 0)
			}
			h.set(i, j, v)
			h.set(j, i, cmplx.Conj(v))
		}
	}
	return h
}

// ---- residual ratios (LAPACK testing style; < 30 passes) -------------------

const ratioLimit = 30

// solveRatio = ‖B − A·X‖₁ / (‖A‖₁·‖X‖₁·n·eps).
func solveRatio(a, x, b *cmat, eps float64) float64 {
	r := mul(a, x)
	for i := range r.d {
		r.d[i] = b.d[i] - r.d[i]
	}
	return norm1(r) / (norm1(a) * norm1(x) * float64(a.r) * eps)
}

// inverseRatio = ‖I − A·Ainv‖₁ / (n·‖A‖₁·‖Ainv‖₁·eps).
func inverseRatio(a, ainv *cmat, eps float64) float64 {
	r := mul(a, ainv)
	for i := 0; i < r.r; i++ {
		r.set(i, i, r.at(i, i)-1)
	}
	return norm1(r) / (float64(a.r) * norm1(a) * norm1(ainv) * eps)
}

// eigRatios returns ‖A·V − V·Λ‖₁/(n·‖A‖₁·eps) and ‖I − Vᴴ·V‖₁/(n·eps).
func eigRatios(a, v *cmat, w []float64, eps float64) (res, orth float64) {
	n := float64(a.r)
	av := mul(a, v)
	for j := 0; j < v.c; j++ {
		vj, avj := v.col(j), av.col(j)
		for i := range avj {
			avj[i] -= vj[i] * complex(w[j], 0)
		}
	}
	res = norm1(av) / (n * norm1(a) * eps)
	g := mulAdj(v, v)
	for i := 0; i < g.r; i++ {
		g.set(i, i, g.at(i, i)-1)
	}
	orth = norm1(g) / (n * eps)
	return res, orth
}

// eigValueChecks checks ascending order, and returns |Σw − tr A| /
// (n·‖A‖₁·eps).
func traceRatio(t *testing.T, a *cmat, w []float64, eps float64) float64 {
	t.Helper()
	var tr, sw float64
	for i := 0; i < a.r; i++ {
		tr += real(a.at(i, i))
		sw += w[i]
		if i > 0 && w[i] < w[i-1] {
			t.Errorf("eigenvalues not ascending: w[%d] = %g < w[%d] = %g", i, w[i], i-1, w[i-1])
			break
		}
	}
	return math.Abs(sw-tr) / (float64(a.r) * norm1(a) * eps)
}

func checkRatio(t *testing.T, what string, r float64) {
	t.Helper()
	if math.IsNaN(r) || r > ratioLimit {
		t.Errorf("%s: ratio %.3g exceeds %d", what, r, ratioLimit)
	} else {
		t.Logf("%s: ratio %.3g", what, r)
	}
}

// ---- distributed device matrices -------------------------------------------

// dmat is a rows×cols matrix laid out 1-D column block-cyclic (tile width
// tile) over devs: device position d holds tiles d, d+nd, … contiguously,
// column-major, leading dimension rows.
type dmat struct {
	devs             []int
	dt               tensor.Dtype
	rows, cols, tile int
	bufs             []uintptr // allocations (≥ 1 column per device)
	ptrs             []uintptr // what the solver gets (0 for empty devices when nilEmpty)
}

// localColumns lists the global columns device position d holds, in local
// order.
func localColumns(cols, tile, nd, d int) []int {
	var out []int
	for g := d; g*tile < cols; g += nd {
		for c := g * tile; c < (g+1)*tile && c < cols; c++ {
			out = append(out, c)
		}
	}
	return out
}

func newDmat(t testing.TB, devs []int, dt tensor.Dtype, m *cmat, tile int, nilEmpty bool) *dmat {
	t.Helper()
	nd := len(devs)
	d := &dmat{devs: devs, dt: dt, rows: m.r, cols: m.c, tile: tile,
		bufs: make([]uintptr, nd), ptrs: make([]uintptr, nd)}
	for i, dev := range devs {
		lc := LocalCols(m.c, tile, nd, i)
		if got := len(localColumns(m.c, tile, nd, i)); got != lc {
			t.Fatalf("LocalCols(%d, %d, %d, %d) = %d, layout has %d", m.c, tile, nd, i, lc, got)
		}
		p, err := Malloc(dev, m.r*max(lc, 1)*ElemSize(dt))
		if err != nil {
			d.free()
			t.Fatalf("Malloc: %v", err)
		}
		d.bufs[i] = p
		if lc > 0 || !nilEmpty {
			d.ptrs[i] = p
		}
	}
	d.put(t, m)
	return d
}

// put scatters m into the device buffers.
func (d *dmat) put(t testing.TB, m *cmat) {
	t.Helper()
	if err := d.putErr(m); err != nil {
		t.Fatal(err)
	}
}

func (d *dmat) putErr(m *cmat) error {
	nd := len(d.devs)
	for i, dev := range d.devs {
		cols := localColumns(d.cols, d.tile, nd, i)
		if len(cols) == 0 {
			continue
		}
		v := make([]complex128, 0, len(cols)*d.rows)
		for _, c := range cols {
			v = append(v, m.col(c)...)
		}
		b := encode(d.dt, v)
		if err := MemcpyHtoD(dev, d.bufs[i], unsafe.Pointer(&b[0]), len(b)); err != nil {
			return fmt.Errorf("MemcpyHtoD: %w", err)
		}
	}
	return nil
}

// get gathers the device buffers into a host matrix.
func (d *dmat) get(t testing.TB) *cmat {
	t.Helper()
	m, err := d.getErr()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (d *dmat) getErr() (*cmat, error) {
	m := newCmat(d.rows, d.cols)
	nd := len(d.devs)
	for i, dev := range d.devs {
		cols := localColumns(d.cols, d.tile, nd, i)
		if len(cols) == 0 {
			continue
		}
		b := make([]byte, len(cols)*d.rows*ElemSize(d.dt))
		if err := MemcpyDtoH(dev, unsafe.Pointer(&b[0]), d.bufs[i], len(b)); err != nil {
			return nil, fmt.Errorf("MemcpyDtoH: %w", err)
		}
		v := decode(d.dt, b)
		for k, c := range cols {
			copy(m.col(c), v[k*d.rows:(k+1)*d.rows])
		}
	}
	return m, nil
}

func (d *dmat) free() {
	for i, p := range d.bufs {
		Free(d.devs[i], p)
		d.bufs[i] = 0
	}
}

// ---- single-device matrices with a leading dimension ------------------------

type ldmat struct {
	dev    int
	dt     tensor.Dtype
	r, c   int
	ld     int
	p      uintptr
	nbytes int
}

func newLdmat(t testing.TB, dev int, dt tensor.Dtype, m *cmat, ld int) *ldmat {
	t.Helper()
	d := &ldmat{dev: dev, dt: dt, r: m.r, c: m.c, ld: ld, nbytes: ld * m.c * ElemSize(dt)}
	p, err := Malloc(dev, d.nbytes)
	if err != nil {
		t.Fatalf("Malloc: %v", err)
	}
	d.p = p
	d.put(t, m)
	return d
}

func (d *ldmat) put(t testing.TB, m *cmat) {
	t.Helper()
	v := make([]complex128, d.ld*d.c)
	for j := 0; j < d.c; j++ {
		copy(v[j*d.ld:], m.col(j))
		for i := d.r; i < d.ld; i++ {
			v[j*d.ld+i] = complex(12345, 0) // padding must stay untouched
		}
	}
	b := encode(d.dt, v)
	if err := MemcpyHtoD(d.dev, d.p, unsafe.Pointer(&b[0]), len(b)); err != nil {
		t.Fatalf("MemcpyHtoD: %v", err)
	}
}

func (d *ldmat) get(t testing.TB) *cmat {
	t.Helper()
	b := make([]byte, d.nbytes)
	if err := MemcpyDtoH(d.dev, unsafe.Pointer(&b[0]), d.p, len(b)); err != nil {
		t.Fatalf("MemcpyDtoH: %v", err)
	}
	v := decode(d.dt, b)
	m := newCmat(d.r, d.c)
	for j := 0; j < d.c; j++ {
		copy(m.col(j), v[j*d.ld:j*d.ld+d.r])
		for i := d.r; i < d.ld; i++ {
			if v[j*d.ld+i] != complex(12345, 0) {
				t.Errorf("padding element (%d, %d) overwritten: %v", i, j, v[j*d.ld+i])
				return m
			}
		}
	}
	return m
}

func (d *ldmat) free() { Free(d.dev, d.p) }
