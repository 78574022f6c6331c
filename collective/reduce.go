package collective

import (
	"fmt"

	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// Element types of collective buffers: the reals (integers and floats),
// which every reduction applies to, and the complex types (Sum and Prod).
type (
	integer interface {
		~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
	}
	realElement interface{ integer | ~float32 | ~float64 }
	element     interface {
		realElement | ~complex64 | ~complex128
	}
)

// hostSlices returns the typed slices of host buffers; a buffer of another
// dtype or in device memory is an ErrBadCall.
func hostSlices[T element](call *Call, bufs []sharding.Buffer) ([][]T, error) {
	out := make([][]T, len(bufs))
	for i, b := range bufs {
		hb, ok := b.(*sharding.HostBuffer)
		if !ok {
			return nil, fmt.Errorf("%w: %v: buffer %d is %T, not host memory", ErrBadCall, call, i, b)
		}
		if out[i], ok = hb.Data().([]T); !ok {
			return nil, fmt.Errorf("%w: %v: buffer %d holds %T, the call says %v", ErrBadCall, call, i, hb.Data(), call.Dtype)
		}
	}
	return out, nil
}

// combiner sets acc[i] = acc[i] op x[i].
type combiner[T element] func(op ReduceOp, acc, x []T)

// combineReal is the combiner of the real types: every ReduceOp.
func combineReal[T realElement](op ReduceOp, acc, x []T) {
	switch op {
	case Min:
		for i := range acc {
			acc[i] = min(acc[i], x[i])
		}
	case Max:
		for i := range acc {
			acc[i] = max(acc[i], x[i])
		}
	default:
		sumProd(op, acc, x)
	}
}

// combineComplex is the combiner of the complex types (Check rejects Min
// and Max of complex values).
func combineComplex[T ~complex64 | ~complex128](op ReduceOp, acc, x []T) { sumProd(op, acc, x) }

func sumProd[T element](op ReduceOp, acc, x []T) {
	if op == Prod {
		for i := range acc {
			acc[i] *= x[i]
		}
		return
	}
	for i := range acc {
		acc[i] += x[i]
	}
}

// hostRunners run a checked call on the host buffers of a mesh, by dtype:
// every dtype of sharding.Dtypes and sharding.IntDtypes.
var hostRunners = map[tensor.Dtype]func(call *Call, size int) error{
	tensor.Float32:    runner(combineReal[float32]),
	tensor.Float64:    runner(combineReal[float64]),
	tensor.Complex64:  runner(combineComplex[complex64]),
	tensor.Complex128: runner(combineComplex[complex128]),
	tensor.Int:        runner(combineReal[int]),
	tensor.Int8:       runner(combineReal[int8]),
	tensor.Int16:      runner(combineReal[int16]),
	tensor.Int32:      runner(combineReal[int32]),
	tensor.Int64:      runner(combineReal[int64]),
	tensor.Uint:       runner(combineReal[uint]),
	tensor.Uint8:      runner(combineReal[uint8]),
	tensor.Uint16:     runner(combineReal[uint16]),
	tensor.Uint32:     runner(combineReal[uint32]),
	tensor.Uint64:     runner(combineReal[uint64]),
}

func runner[T element](combine combiner[T]) func(*Call, int) error {
	return func(call *Call, size int) error { return doHost(call, size, combine) }
}

// reduceBlocks returns op over blocks[j][off:off+n] for j in ranks.
func reduceBlocks[T element](combine combiner[T], op ReduceOp, blocks [][]T, ranks []int, off, n int) []T {
	acc := append([]T(nil), blocks[ranks[0]][off:off+n]...)
	for _, j := range ranks[1:] {
		combine(op, acc, blocks[j][off:off+n])
	}
	return acc
}

func upTo(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// doHost runs a checked call on the host buffers of a mesh of size ranks
// (all local), reducing with combine. Every result is computed before any
// receive buffer is written.
func doHost[T element](call *Call, size int, combine combiner[T]) error {
	send, err := hostSlices[T](call, call.Send)
	if err != nil {
		return err
	}
	recv, err := hostSlices[T](call, call.Recv)
	if err != nil {
		return err
	}
	n := call.Count
	res := make([][]T, size) // res[r] is what rank r receives
	all := upTo(size)
	switch call.Kind {
	case AllReduce:
		acc := reduceBlocks(combine, call.Op, send, all, 0, n)
		for r := range res {
			res[r] = acc
		}
	case AllGather:
		cat := make([]T, 0, size*n)
		for j := range size {
			cat = append(cat, send[j][:n]...)
		}
		for r := range res {
			res[r] = cat
		}
	case ReduceScatter:
		for r := range res {
			res[r] = reduceBlocks(combine, call.Op, send, all, r*n, n)
		}
	case AllToAll:
		for r := range res {
			res[r] = make([]T, 0, size*n)
			for j := range size {
				res[r] = append(res[r], send[j][r*n:(r+1)*n]...)
			}
		}
	case Bcast:
		b := append([]T(nil), send[call.Root][:n]...)
		for r := range res {
			res[r] = b
		}
	case Reduce:
		for r := range res {
			res[r] = make([]T, n)
		}
		res[call.Root] = reduceBlocks(combine, call.Op, send, all, 0, n)
	case Gather:
		for r := range res {
			res[r] = make([]T, size*n)
		}
		for j := range size {
			copy(res[call.Root][j*n:], send[j][:n])
		}
	case Scatter:
		for r := range res {
			res[r] = append([]T(nil), send[call.Root][r*n:(r+1)*n]...)
		}
	case Scan:
		for r := range res {
			res[r] = reduceBlocks(combine, call.Op, send, all[:r+1], 0, n)
		}
	case SendRecv:
		for r := range res {
			res[r] = append([]T(nil), send[call.Src[r]][:n]...)
		}
	default:
		return fmt.Errorf("%w: %v: kind %v on a host mesh", ErrBadCall, call, call.Kind)
	}
	for r := range res {
		copy(recv[r], res[r])
	}
	return nil
}
