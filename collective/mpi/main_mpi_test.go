//go:build mpi

package mpi_test

import (
	"fmt"
	"hash/fnv"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/collective/mpi"
	"gorgonia.org/tensor"
)

// The tests run as a one-rank world under plain go test and on every rank
// under mpirun (make mpi-test). Every rank runs every test in the same
// order; each test works on its own communicator (split from the world) so
// that a failure breaks no other test's, and the exit code is the worst of
// all ranks'.

var (
	world *mpi.Comm
	seed  uint64 // chosen by rank 0, the same on every rank
)

// testTimeout bounds every wait of the tests that expect no timeout, so
// that a rank failing a test costs the others seconds, not the default
// minute.
const testTimeout = 20 * time.Second

func TestMain(m *testing.M) {
	w, err := mpi.World(mpi.WithTimeout(testTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpi.World:", err)
		os.Exit(1)
	}
	world = w
	if seed, err = sharedSeed(w); err != nil {
		fmt.Fprintln(os.Stderr, "sharing the seed:", err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("collective/mpi tests: %d ranks, seed %d (MGLA_TEST_SEED=%d repeats it), threads %s, single copy %v\n",
			w.Size(), seed, seed, mpi.ThreadLevel(), mpi.SingleCopy())
	}
	code := m.Run()
	code = worstCode(w, code)
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "mpi.Finalize:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// sharedSeed is rank 0's fresh seed (or MGLA_TEST_SEED), broadcast.
func sharedSeed(w *mpi.Comm) (uint64, error) {
	s := uint64(time.Now().UnixNano()) & (1<<52 - 1)
	if v := os.Getenv("MGLA_TEST_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 52); err != nil {
			return 0, err
		}
	}
	send, recv := []float64{float64(s)}, []float64{0}
	if err := w.Do(hostCall(collective.Call{Kind: collective.Bcast, Dtype: tensor.Float64, Count: 1}, send, recv)); err != nil {
		return 0, err
	}
	return uint64(recv[0]), nil
}

// worstCode is the largest exit code of all ranks (code when the world
// cannot say).
func worstCode(w *mpi.Comm, code int) int {
	recv := []float64{0}
	err := w.Do(hostCall(collective.Call{Kind: collective.AllReduce, Op: collective.Max, Dtype: tensor.Float64, Count: 1},
		[]float64{float64(code)}, recv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "combining the exit codes:", err)
		return max(code, 1)
	}
	return int(recv[0])
}

// hostCall returns c with send and recv (typed slices or nil) as its
// buffers.
var hostCall = collectivetest.HostCall

// newComm is a fresh communicator of every rank (ranks in world order),
// closed when the test ends.
func newComm(t *testing.T, opts ...mpi.Option) *mpi.Comm {
	t.Helper()
	view, err := mpi.World(append([]mpi.Option{mpi.WithTimeout(testTimeout)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	comms, err := view.Split(func(int) int { return 0 }, func(r int) int { return r })
	if err != nil || len(comms) != 1 {
		t.Fatalf("Split into one: %v, %d communicators", err, len(comms))
	}
	c := comms[0].(*mpi.Comm)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error("Close:", err)
		}
	})
	return c
}

// rankValues are n values that depend on the seed, the test's label and
// the rank alone, so every rank can compute every rank's data: in [-1, 1)
// (real dtypes) or its complex square, or near 1 in modulus for products.
func rankValues(label string, rank, n int, dt tensor.Dtype, forProduct bool) []complex128 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", label, rank)
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	complexDtype := dt == tensor.Complex64 || dt == tensor.Complex128
	out := make([]complex128, n)
	for i := range out {
		re, im := 2*rng.Float64()-1, 0.0
		if complexDtype {
			im = 2*rng.Float64() - 1
		}
		if forProduct {
			re, im = 1+re/2, im/2
		}
		out[i] = collectivetest.RoundTo(dt, complex(re, im))
	}
	return out
}

// typed converts values to a slice of dt.
func typed(dt tensor.Dtype, v []complex128) any {
	switch dt {
	case tensor.Float32:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(real(x))
		}
		return out
	case tensor.Float64:
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = real(x)
		}
		return out
	case tensor.Complex64:
		out := make([]complex64, len(v))
		for i, x := range v {
			out[i] = complex64(x)
		}
		return out
	}
	return append([]complex128(nil), v...)
}

// reduce is op over xs, in float64 (complex128) arithmetic.
func reduce(op collective.ReduceOp, xs []complex128) complex128 {
	acc := xs[0]
	for _, x := range xs[1:] {
		switch op {
		case collective.Sum:
			acc += x
		case collective.Prod:
			acc *= x
		case collective.Min:
			acc = complex(min(real(acc), real(x)), 0)
		case collective.Max:
			acc = complex(max(real(acc), real(x)), 0)
		}
	}
	return acc
}

// closeEnough compares got with the float64 reference want: exact for
// Min and Max, else within a tolerance of dt's precision times the terms.
func closeEnough(got, want complex128, dt tensor.Dtype, terms int) bool {
	eps := 1e-13
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		eps = 1e-6
	}
	return cmplx.Abs(got-want) <= eps*float64(terms+1)*(1+cmplx.Abs(want))
}

// sameOnEveryRank checks that s is the same string on every rank of c
// (comparing hashes with an AllGather).
func sameOnEveryRank(t *testing.T, c *mpi.Comm, s string) {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(s))
	all := make([]float64, c.Size())
	if err := c.Do(hostCall(collective.Call{Kind: collective.AllGather, Dtype: tensor.Float64, Count: 1},
		[]float64{float64(h.Sum32())}, all)); err != nil {
		t.Fatal("gathering the message hashes:", err)
	}
	for r, v := range all {
		if v != all[0] {
			t.Errorf("rank %d's text differs from rank 0's (this rank's: %q)", r, s)
		}
	}
}
