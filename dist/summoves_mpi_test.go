//go:build mpi

package dist_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/mgla/mgla/dist"
)

// TestSumMovesHoldTheMatrixOnce: the sum moves (below 4 ranks, matrices up
// to 512 MiB) hold the whole matrix once on a rank, plus a piece of its
// sum: Gather(-1), Gather(0) and FromRowBlocks allocate less than 1.3
// whole matrices (they allocated two: the parts sent and the sum), with
// pieces of 64 KiB; and they move every bit (−0, subnormals) as it was.
func TestSumMovesHoldTheMatrixOnce(t *testing.T) {
	defer dist.SetMoves(dist.SumMoves)()
	defer dist.SetAssembleChunk(64 << 10)()
	g, err := dist.NewGrid(world, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const n, nb = 300, 16
	rng := rand.New(rand.NewPCG(seed, 41))
	full := make([]float64, n*n)
	for i := range full {
		full[i] = rng.NormFloat64()
	}
	full[7] = math.Copysign(0, -1)
	full[11] = 5e-324 // the smallest subnormal
	same := func(what string, got []float64) {
		t.Helper()
		for i := range full {
			if math.Float64bits(got[i]) != math.Float64bits(full[i]) {
				t.Fatalf("%s, seed %d: element %d is %v, want %v", what, seed, i, got[i], full[i])
			}
		}
	}
	whole := float64(n * n * 8)
	allocated := func(f func()) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / whole
	}
	m, err := dist.FromReplicated(g, n, n, nb, full)
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []int{-1, 0} {
		var got []float64
		a := allocated(func() { got, err = m.Gather(root) })
		if err != nil {
			t.Fatal(err)
		}
		if root < 0 || world.Rank() == root {
			same(fmt.Sprintf("Gather(%d)", root), got)
		}
		if a > 1.3 {
			t.Errorf("Gather(%d) allocated %.2f whole matrices", root, a)
		}
	}
	// FromRowBlocks from bands of the rows; its own result holds a
	// rank's blocks besides.
	size, me := world.Size(), world.Rank()
	per := (n + size - 1) / size
	lo, hi := min(me*per, n), min((me+1)*per, n)
	band := make([]float64, (hi-lo)*n)
	for j := range n {
		copy(band[j*(hi-lo):(j+1)*(hi-lo)], full[lo+j*n:hi+j*n])
	}
	var back *dist.Matrix[float64]
	a := allocated(func() { back, err = dist.FromRowBlocks(g, n, nb, hi-lo, band) })
	if err != nil {
		t.Fatal(err)
	}
	if share := 1.0 / float64(size); a > 1.3+share {
		t.Errorf("FromRowBlocks allocated %.2f whole matrices (a rank's share is %.2f)", a, share)
	}
	got, err := back.Gather(-1)
	if err != nil {
		t.Fatal(err)
	}
	same("FromRowBlocks then Gather(-1)", got)
}
