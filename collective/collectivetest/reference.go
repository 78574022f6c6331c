// Package collectivetest holds what the tests of every collective engine
// share: the float64 (complex128) reference result of every Kind, random
// inputs for the four dtypes, host tensors and calls on host buffers. It is
// imported by tests only; it may import collective, sharding and gorgonia's
// tensor.
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
// parts, for real dtypes).
func Reduce(op collective.ReduceOp, vals []complex128) complex128 {
	acc := vals[0]
	for _, v := range vals[1:] {
		switch op {
		case collective.Sum:
			acc += v
		case collective.Prod:
			acc *= v
		case collective.Min:
			acc = complex(math.Min(real(acc), real(v)), 0)
		case collective.Max:
			acc = complex(math.Max(real(acc), real(v)), 0)
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
	n := c.Count
	out := make([][]complex128, size)
	for r := range out {
		out[r] = make([]complex128, c.RecvLen(size))
	}
	if c.Kind == collective.Send || c.Kind == collective.Recv || c.Kind == collective.Barrier {
		return out
	}
	column := func(off, ranks int) []complex128 {
		v := make([]complex128, ranks)
		for q := range v {
			v[q] = send[q][off]
		}
		return v
	}
	for r := range size {
		for i := range n {
			switch c.Kind {
			case collective.AllReduce:
				out[r][i] = Reduce(c.Op, column(i, size))
			case collective.ReduceScatter:
				out[r][i] = Reduce(c.Op, column(r*n+i, size))
			case collective.Scan:
				out[r][i] = Reduce(c.Op, column(i, r+1))
			case collective.Reduce:
				if r == c.Root {
					out[r][i] = Reduce(c.Op, column(i, size))
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
