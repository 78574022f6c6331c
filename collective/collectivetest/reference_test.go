package collectivetest

import (
	"math/cmplx"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"gorgonia.org/tensor"
)

// The references agree with each other where the collectives' definitions
// say they must, on random data for 1-5 ranks: ReduceScatter is AllReduce
// cut in blocks, Scan's last rank is AllReduce, Gather at the root is
// AllGather, Scatter of the root's AllGather gives back every rank's block,
// Bcast is the root's data, AllToAll twice is the identity, and SendRecv
// along a ring shifts the data by one rank.
func TestReferenceIdentities(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	eq := func(what string, got, want []complex128) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for i := range got {
			if cmplx.Abs(got[i]-want[i]) > 1e-12*(1+cmplx.Abs(want[i])) {
				t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	for size := 1; size <= 5; size++ {
		for _, op := range []collective.ReduceOp{collective.Sum, collective.Prod, collective.Min, collective.Max} {
			n := 1 + rng.IntN(7)
			root := rng.IntN(size)
			data := func(m int) [][]complex128 {
				s := make([][]complex128, size)
				for r := range s {
					s[r] = Random(rng, tensor.Float64, op, m)
				}
				return s
			}
			wide := data(size * n)
			all := Reference(&collective.Call{Kind: collective.AllReduce, Op: op, Count: size * n}, size, wide)
			rs := Reference(&collective.Call{Kind: collective.ReduceScatter, Op: op, Count: n}, size, wide)
			for r := range size {
				eq("ReduceScatter", rs[r], all[r][r*n:(r+1)*n])
			}
			narrow := data(n)
			ar := Reference(&collective.Call{Kind: collective.AllReduce, Op: op, Count: n}, size, narrow)
			scan := Reference(&collective.Call{Kind: collective.Scan, Op: op, Count: n}, size, narrow)
			eq("Scan of the last rank", scan[size-1], ar[0])
			eq("Scan of rank 0", scan[0], narrow[0])
			red := Reference(&collective.Call{Kind: collective.Reduce, Op: op, Count: n, Root: root}, size, narrow)
			eq("Reduce at the root", red[root], ar[0])
			ag := Reference(&collective.Call{Kind: collective.AllGather, Count: n}, size, narrow)
			g := Reference(&collective.Call{Kind: collective.Gather, Count: n, Root: root}, size, narrow)
			eq("Gather at the root", g[root], ag[0])
			sc := Reference(&collective.Call{Kind: collective.Scatter, Count: n, Root: root}, size, ag)
			bc := Reference(&collective.Call{Kind: collective.Bcast, Count: n, Root: root}, size, narrow)
			a2a := Reference(&collective.Call{Kind: collective.AllToAll, Count: n}, size, wide)
			back := Reference(&collective.Call{Kind: collective.AllToAll, Count: n}, size, a2a)
			ring := &collective.Call{Kind: collective.SendRecv, Count: n}
			for r := range size {
				ring.Dest = append(ring.Dest, (r+1)%size)
				ring.Src = append(ring.Src, (r+size-1)%size)
			}
			shifted := Reference(ring, size, narrow)
			for r := range size {
				eq("Scatter of AllGather", sc[r], narrow[r])
				eq("Bcast", bc[r], narrow[root])
				eq("AllToAll twice", back[r], wide[r])
				eq("SendRecv ring", shifted[r], narrow[(r+size-1)%size])
				if r != root {
					eq("Reduce off the root", red[r], make([]complex128, n))
					eq("Gather off the root", g[r], make([]complex128, size*n))
				}
			}
		}
	}
}
