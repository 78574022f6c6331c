package nccl

import (
	"math"
	"reflect"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// The identities that Scan's reductions of ranks after the root send (in
// every build, so that the tests check them without a GPU).

// identityBytes is n elements of the identity of op (Prod, Min or Max of a
// real dtype) as bytes: one, the type's largest value (or +Inf) for Min, its
// smallest (or -Inf) for Max.
func identityBytes(dt tensor.Dtype, op collective.ReduceOp, n int) []byte {
	one := reflect.New(dt.Type).Elem()
	switch k := dt.Kind(); {
	case op == collective.Prod:
		one.Set(reflect.ValueOf(1).Convert(dt.Type))
	case k == reflect.Float32 || k == reflect.Float64:
		one.SetFloat(map[collective.ReduceOp]float64{collective.Min: math.Inf(1), collective.Max: math.Inf(-1)}[op])
	case one.CanInt():
		bits := 8 * dt.Size()
		if op == collective.Min {
			one.SetInt(int64(uint64(1)<<(bits-1) - 1))
		} else {
			one.SetInt(-1 << (bits - 1))
		}
	case op == collective.Min: // unsigned
		one.SetUint(math.MaxUint64 >> (64 - 8*dt.Size()))
	}
	s := reflect.MakeSlice(reflect.SliceOf(dt.Type), n, n)
	for i := range n {
		s.Index(i).Set(one)
	}
	b, _ := sharding.NewHostBuffer(s.Interface()) // a dtype Check admitted
	return b.Bytes()
}
