// Package collectivetest holds what the tests of every collective engine
// share: the reference result of every Kind — in complex128 for the four
// float dtypes, exact for the integer ones — random inputs, host tensors and
// calls on host buffers. It is imported by tests only; it may import
// collective, sharding and gorgonia's tensor.
package collectivetest

import (
	"math"
	"math/rand/v2"
	"reflect"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// Reduce is op over vals in complex128 arithmetic (Min and Max on the real
// parts, for real dtypes, with Go's min and max: a NaN wins even against an
// infinity, where math.Min and math.Max let the infinity win).
func Reduce(op collective.ReduceOp, vals []complex128) complex128 {
	return fold(op, vals,
		func(a, b complex128) complex128 { return complex(min(real(a), real(b)), 0) },
		func(a, b complex128) complex128 { return complex(max(real(a), real(b)), 0) })
}

// fold is op over vals with the given Min and Max of two values.
func fold[T int64 | uint64 | complex128](op collective.ReduceOp, vals []T, minOf, maxOf func(a, b T) T) T {
	acc := vals[0]
	for _, v := range vals[1:] {
		switch op {
		case collective.Sum:
			acc += v
		case collective.Prod:
			acc *= v
		case collective.Min:
			acc = minOf(acc, v)
		case collective.Max:
			acc = maxOf(acc, v)
		}
	}
	return acc
}

// Reference returns every rank's receive buffer of c (RecvLen elements)
// on a communicator of size ranks whose send buffers are send (SendLen
// elements each), computed in complex128: zeros where the kind leaves a
// rank's buffer zero (Reduce and Gather off the root). Kinds without a
// receive buffer on every rank (Send, Recv, Barrier) give empty buffers.
func Reference(c *collective.Call, size int, send [][]complex128) [][]complex128 {
	return ReferenceOf(c, size, send, Reduce)
}

// ReferenceOf is Reference for values of any type T, reducing with reduce.
func ReferenceOf[T any](c *collective.Call, size int, send [][]T, reduce func(collective.ReduceOp, []T) T) [][]T {
	n := c.Count
	out := make([][]T, size)
	for r := range out {
		out[r] = make([]T, c.RecvLen(size))
	}
	if c.Kind == collective.Send || c.Kind == collective.Recv || c.Kind == collective.Barrier {
		return out
	}
	column := func(off, ranks int) []T {
		v := make([]T, ranks)
		for q := range v {
			v[q] = send[q][off]
		}
		return v
	}
	for r := range size {
		for i := range n {
			switch c.Kind {
			case collective.AllReduce:
				out[r][i] = reduce(c.Op, column(i, size))
			case collective.ReduceScatter:
				out[r][i] = reduce(c.Op, column(r*n+i, size))
			case collective.Scan:
				out[r][i] = reduce(c.Op, column(i, r+1))
			case collective.Reduce:
				if r == c.Root {
					out[r][i] = reduce(c.Op, column(i, size))
				}
			case collective.Bcast:
				out[r][i] = send[c.Root][i]
			case collective.Scatter:
				out[r][i] = send[c.Root][r*n+i]
			case collective.SendRecv:
				out[r][i] = send[c.Src[r]][i]
			case collective.AllGather, collective.AllToAll, collective.Gather:
				for q := range size {
					switch {
					case c.Kind == collective.AllGather:
						out[r][q*n+i] = send[q][i]
					case c.Kind == collective.AllToAll:
						out[r][q*n+i] = send[q][r*n+i]
					case r == c.Root:
						out[r][q*n+i] = send[q][i]
					}
				}
			}
		}
	}
	return out
}

// IsComplex reports whether dt is complex64 or complex128.
func IsComplex(dt tensor.Dtype) bool { return dt == tensor.Complex64 || dt == tensor.Complex128 }

// Random returns n values for dtype dt, already rounded to dt: near 1 for
// products (no overflow), in [-1, 1) otherwise; real dtypes have no
// imaginary part.
func Random(rng *rand.Rand, dt tensor.Dtype, op collective.ReduceOp, n int) []complex128 {
	out := make([]complex128, n)
	for i := range out {
		re, im := 2*rng.Float64()-1, 2*rng.Float64()-1
		if op == collective.Prod {
			re, im = 0.5+rng.Float64(), 0.2*im
		}
		if !IsComplex(dt) {
			im = 0
		}
		out[i] = RoundTo(dt, complex(re, im))
	}
	return out
}

// RoundTo rounds v to the precision of dt.
func RoundTo(dt tensor.Dtype, v complex128) complex128 {
	switch dt {
	case tensor.Float32:
		return complex(float64(float32(real(v))), 0)
	case tensor.Float64:
		return complex(real(v), 0)
	case tensor.Complex64:
		return complex128(complex64(v))
	}
	return v
}

// IsInteger reports whether dt is one of sharding.IntDtypes (a Go integer
// type).
func IsInteger(dt tensor.Dtype) bool {
	switch dt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// signed reports whether the integer dtype dt is signed.
func signed(dt tensor.Dtype) bool { return dt.Kind() >= reflect.Int && dt.Kind() <= reflect.Int64 }

// RandomInts returns n values of the integer dtype dt as a typed slice
// ([]int8, []uint64, …) in any, such that op over up to ranks of them cannot
// overflow: any value of the type for Min, Max and no reduction (pass Sum
// with ranks 1 for data that is only moved), magnitudes up to the type's
// range over ranks for Sum, up to its ranks-th root (at most 2²⁰) for Prod. Signed types
// get negative values.
func RandomInts(rng *rand.Rand, dt tensor.Dtype, op collective.ReduceOp, n, ranks int) any {
	bits := 8 * int(dt.Size())
	out := reflect.MakeSlice(reflect.SliceOf(dt.Type), n, n)
	if signed(dt) {
		hi := int64(uint64(1)<<(bits-1) - 1) // the type's largest value
		var m int64                          // Prod: values in [-m, m]
		if op == collective.Prod {
			m = min(1<<20, int64(math.Pow(float64(hi), 1/float64(ranks))*(1-1e-9)))
		}
		for i := range n {
			v := int64(rng.Uint64()) >> (64 - bits) // the whole range
			switch op {
			case collective.Sum:
				v /= int64(ranks)
			case collective.Prod:
				v = rng.Int64N(2*m+1) - m
			}
			out.Index(i).SetInt(v)
		}
		return out.Interface()
	}
	hi := uint64(math.MaxUint64) >> (64 - bits)
	var m uint64
	if op == collective.Prod {
		m = min(1<<20, uint64(math.Pow(float64(hi), 1/float64(ranks))*(1-1e-9)))
	}
	for i := range n {
		v := rng.Uint64() >> (64 - bits)
		switch op {
		case collective.Sum:
			v /= uint64(ranks)
		case collective.Prod:
			v = rng.Uint64N(m + 1)
		}
		out.Index(i).SetUint(v)
	}
	return out.Interface()
}

// ReferenceInts is Reference for an integer c.Dtype: send holds every
// rank's typed slice ([]int32, …), and so does the result, computed exactly
// (in int64 or uint64; inputs from RandomInts do not overflow).
func ReferenceInts(c *collective.Call, size int, send []any) []any {
	if signed(c.Dtype) {
		return referenceWide(c, size, send, reflect.Value.Int, reflect.Value.SetInt)
	}
	return referenceWide(c, size, send, reflect.Value.Uint, reflect.Value.SetUint)
}

// referenceWide computes the reference of integer slices widened to W.
func referenceWide[W int64 | uint64](c *collective.Call, size int, send []any, get func(reflect.Value) W, set func(reflect.Value, W)) []any {
	wide := make([][]W, len(send))
	for r, s := range send {
		v := reflect.ValueOf(s)
		wide[r] = make([]W, v.Len())
		for i := range wide[r] {
			wide[r][i] = get(v.Index(i))
		}
	}
	res := ReferenceOf(c, size, wide, reduceInts[W])
	out := make([]any, len(res))
	for r, w := range res {
		v := reflect.MakeSlice(reflect.SliceOf(c.Dtype.Type), len(w), len(w))
		for i, x := range w {
			set(v.Index(i), x)
		}
		out[r] = v.Interface()
	}
	return out
}

// reduceInts is op over vals in exact integer arithmetic.
func reduceInts[W int64 | uint64](op collective.ReduceOp, vals []W) W {
	return fold(op, vals, func(a, b W) W { return min(a, b) }, func(a, b W) W { return max(a, b) })
}

// Clone is a copy of a typed slice ([]int8, …).
func Clone(s any) any {
	v := reflect.ValueOf(s)
	return reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, v.Len()), v).Interface()
}

// Slice is elements from … to-1 of a typed slice, sharing its memory.
func Slice(s any, from, to int) any { return reflect.ValueOf(s).Slice(from, to).Interface() }

// Dense is a host tensor of dtype dt and the given shape holding vals (the
// real parts for real dtypes, truncated for integer ones), row-major.
func Dense(dt tensor.Dtype, shape tensor.Shape, vals []complex128) *tensor.Dense {
	d := tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	for i, v := range vals {
		e := reflect.New(dt.Type).Elem()
		setValue(e, v)
		d.Set(i, e.Interface())
	}
	return d
}

// setValue stores v in e: whole for complex kinds, the real part for
// floats, truncated to an integer for integer kinds.
func setValue(e reflect.Value, v complex128) {
	switch {
	case e.CanComplex():
		e.SetComplex(v)
	case e.CanFloat():
		e.SetFloat(real(v))
	case e.CanInt():
		e.SetInt(int64(real(v)))
	default:
		e.SetUint(uint64(real(v)))
	}
}

// Values are the elements of a host slice (of floats, complex numbers or
// integers) or of a host tensor holding one, as complex128, row-major.
func Values(data any) []complex128 {
	if d, ok := data.(*tensor.Dense); ok {
		data = d.Data()
	}
	s := reflect.ValueOf(data)
	if s.Kind() != reflect.Slice {
		s = reflect.Append(reflect.MakeSlice(reflect.SliceOf(s.Type()), 0, 1), s)
	}
	out := make([]complex128, s.Len())
	for i := range out {
		switch e := s.Index(i); {
		case e.CanComplex():
			out[i] = e.Complex()
		case e.CanFloat():
			out[i] = complex(e.Float(), 0)
		case e.CanInt():
			out[i] = complex(float64(e.Int()), 0)
		default:
			out[i] = complex(float64(e.Uint()), 0)
		}
	}
	return out
}

// HostCall returns c with send and recv (typed host slices, or nil for
// none) as its one local rank's buffers: a call of a process communicator.
func HostCall(c collective.Call, send, recv any) *collective.Call {
	wrap := func(data any) []sharding.Buffer {
		if data == nil {
			return nil
		}
		b, err := sharding.NewHostBuffer(data)
		if err != nil {
			panic(err)
		}
		return []sharding.Buffer{b}
	}
	c.Send, c.Recv = wrap(send), wrap(recv)
	return &c
}

// Specials is rank r's n values, of a communicator of size ranks, for the
// check that Min and Max of floats follow Go's min and max on every engine
// (a NaN anywhere gives NaN, -0 is less than +0). Element i, across the
// ranks, is one of eight patterns in turn: a NaN on one rank (each rank in
// turn), finite values only, -0 and +0 alternating from either end, NaN on
// every rank, +Inf on one rank and -Inf on the next, a NaN beside a +Inf,
// and a NaN on the last rank. The finite values are small integers, exact
// in float32. Reference gives the answer; compare with SameFloat.
func Specials(r, size, n int) []complex128 {
	nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	out := make([]complex128, n)
	for i := range out {
		k := i / 8
		v := float64((r*7+i*3)%11) - 5
		switch i % 8 {
		case 0:
			if r == k%size {
				v = nan
			}
		case 2, 3:
			v = 0
			if (r+i)%2 == 0 {
				v = negZero
			}
		case 4:
			v = nan
		case 5:
			switch r {
			case k % size:
				v = inf
			case (k + 1) % size:
				v = -inf
			}
		case 6:
			switch r {
			case (k + 1) % size:
				v = nan
			case k % size:
				v = inf
			}
		case 7:
			if r == size-1 {
				v = nan
			}
		}
		out[i] = complex(v, 0)
	}
	return out
}

// SameFloat reports whether the real parts of got and want are the same
// float: both NaN, or equal with the same sign (so that -0 is not +0).
func SameFloat(got, want complex128) bool {
	g, w := real(got), real(want)
	if math.IsNaN(g) || math.IsNaN(w) {
		return math.IsNaN(g) && math.IsNaN(w)
	}
	return g == w && math.Signbit(g) == math.Signbit(w)
}
