package collectivetest

import (
	"math/big"
	"math/cmplx"
	"math/rand/v2"
	"reflect"
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

// RandomInts stays in range: op over ranks values, in big integers, fits
// the type (and the values cover negative ones for signed types and the
// type's extremes' neighbourhood for Min and Max), and ReferenceInts agrees
// with the complex128 reference where that one is exact (small values).
func TestRandomIntsAndReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 12))
	dtypes := []tensor.Dtype{tensor.Int, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
		tensor.Uint, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	for _, dt := range dtypes {
		bits := 8 * int(dt.Size())
		lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), uint(bits))
		hi.Sub(hi, big.NewInt(1))
		if signed(dt) {
			lo.Neg(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
			hi.Rsh(hi, 1)
		}
		for _, op := range []collective.ReduceOp{collective.Sum, collective.Prod, collective.Min, collective.Max} {
			for ranks := 1; ranks <= 5; ranks++ {
				const n = 200
				vals := make([]reflect.Value, ranks)
				for r := range vals {
					vals[r] = reflect.ValueOf(RandomInts(rng, dt, op, n, ranks))
				}
				negative, wide := false, false
				for i := range n {
					acc := bigOf(vals[0].Index(i))
					for r := 1; r < ranks; r++ {
						x := bigOf(vals[r].Index(i))
						switch op {
						case collective.Sum:
							acc.Add(acc, x)
						case collective.Prod:
							acc.Mul(acc, x)
						}
					}
					if acc.Cmp(lo) < 0 || acc.Cmp(hi) > 0 {
						t.Fatalf("%v %v over %d ranks: %v overflows [%v, %v]", dt, op, ranks, acc, lo, hi)
					}
					v := bigOf(vals[0].Index(i))
					negative = negative || v.Sign() < 0
					wide = wide || new(big.Int).Lsh(v.Abs(v), 3).Cmp(hi) > 0
				}
				if signed(dt) && !negative {
					t.Errorf("%v %v: no negative value in %d", dt, op, n)
				}
				if (op == collective.Min || op == collective.Max) && !wide {
					t.Errorf("%v %v: no value beyond an eighth of the range in %d", dt, op, n)
				}
			}
		}
		// Small values: the exact and the complex128 references agree.
		for _, op := range []collective.ReduceOp{collective.Sum, collective.Prod, collective.Min, collective.Max} {
			size, n := 3, 4
			c := &collective.Call{Kind: collective.Scan, Op: op, Dtype: dt, Count: n}
			send, cs := make([]any, size), make([][]complex128, size)
			for r := range size {
				s := reflect.MakeSlice(reflect.SliceOf(dt.Type), n, n)
				for i := range n {
					x := int64(rng.IntN(7))
					if signed(dt) {
						x -= 3
						s.Index(i).SetInt(x)
					} else {
						s.Index(i).SetUint(uint64(x))
					}
					cs[r] = append(cs[r], complex(float64(x), 0))
				}
				send[r] = s.Interface()
			}
			got, want := ReferenceInts(c, size, send), Reference(c, size, cs)
			for r := range size {
				g := reflect.ValueOf(got[r])
				for i := range n {
					if x := bigOf(g.Index(i)); x.Cmp(big.NewInt(int64(real(want[r][i])))) != 0 {
						t.Fatalf("%v Scan(%v) rank %d element %d: %v, want %v", dt, op, r, i, x, want[r][i])
					}
				}
			}
		}
	}
}

func bigOf(v reflect.Value) *big.Int {
	if v.CanInt() {
		return big.NewInt(v.Int())
	}
	return new(big.Int).SetUint64(v.Uint())
}
