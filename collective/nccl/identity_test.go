package nccl

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// seeded returns a generator seeded fresh for this run, the seed logged.
func seeded(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 7))
}

// identityBytes holds op's identity for every real dtype: x op identity = x
// for random values and the type's extremes (Scan on NCCL sends it).
func TestIdentityBytes(t *testing.T) {
	rng := seeded(t)
	for _, dt := range append([]tensor.Dtype{tensor.Float32, tensor.Float64}, sharding.IntDtypes...) {
		xs := reflect.ValueOf([]float64{-1e300, -2.5, 0, 3, 1e300}) // floats
		if collectivetest.IsInteger(dt) {
			xs = reflect.ValueOf(collectivetest.RandomInts(rng, dt, collective.Min, 8, 1))
			lo, hi := reflect.New(dt.Type).Elem(), reflect.New(dt.Type).Elem()
			if bits := 8 * dt.Size(); lo.CanInt() {
				lo.SetInt(-1 << (bits - 1))
				hi.SetInt(1<<(bits-1) - 1)
			} else {
				hi.SetUint(math.MaxUint64 >> (64 - bits))
			}
			xs = reflect.Append(xs, lo, hi)
		}
		for _, op := range []collective.ReduceOp{collective.Prod, collective.Min, collective.Max} {
			const n = 3
			b := identityBytes(dt, op, n)
			if len(b) != n*int(dt.Size()) {
				t.Fatalf("%v %v: %d bytes, want %d", dt, op, len(b), n*int(dt.Size()))
			}
			ident := reflect.NewAt(reflect.ArrayOf(n, dt.Type), reflect.ValueOf(&b[0]).UnsafePointer()).Elem()
			for i := range n {
				for j := range xs.Len() {
					x, id := xs.Index(j).Convert(dt.Type), ident.Index(i)
					if ok := applies(op, x, id); !ok {
						t.Fatalf("%v %v: %v op identity %v is not %v", dt, op, x, id, x)
					}
				}
			}
		}
	}
}

// applies reports whether x op id == x, computed exactly (integers by the
// reference, floats in float64).
func applies(op collective.ReduceOp, x, id reflect.Value) bool {
	dt := tensor.Dtype{Type: x.Type()}
	if !collectivetest.IsInteger(dt) {
		xf, idf := x.Float(), id.Float()
		return map[collective.ReduceOp]float64{collective.Prod: xf * idf, collective.Min: math.Min(xf, idf), collective.Max: math.Max(xf, idf)}[op] == xf
	}
	one := func(v reflect.Value) any {
		return reflect.Append(reflect.MakeSlice(reflect.SliceOf(dt.Type), 0, 1), v).Interface()
	}
	call := &collective.Call{Kind: collective.AllReduce, Op: op, Dtype: dt, Count: 1}
	return reflect.DeepEqual(collectivetest.ReferenceInts(call, 2, []any{one(x), one(id)})[0], one(x))
}
