package collective

import (
	"fmt"

	"github.com/mgla/mgla/sharding"
)

// element is the element type of a collective buffer.
type element interface {
	~float32 | ~float64 | ~complex64 | ~complex128
}

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

// combine sets acc[i] = acc[i] op x[i].
func combine[T element](op ReduceOp, acc, x []T) {
	switch op {
	case Sum:
		for i := range acc {
			acc[i] += x[i]
		}
	case Prod:
		for i := range acc {
			acc[i] *= x[i]
		}
	default:
		switch a := any(acc).(type) { // Check rejects min/max of complex values
		case []float32:
			minMax(op, a, any(x).([]float32))
		case []float64:
			minMax(op, a, any(x).([]float64))
		}
	}
}

func minMax[T float32 | float64](op ReduceOp, acc, x []T) {
	if op == Min {
		for i := range acc {
			acc[i] = min(acc[i], x[i])
		}
		return
	}
	for i := range acc {
		acc[i] = max(acc[i], x[i])
	}
}

// reduceBlocks returns op over blocks[j][off:off+n] for j in ranks.
func reduceBlocks[T element](op ReduceOp, blocks [][]T, ranks []int, off, n int) []T {
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
// (all local). Every result is computed before any receive buffer is
// written.
func doHost[T element](call *Call, size int) error {
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
		acc := reduceBlocks(call.Op, send, all, 0, n)
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
			res[r] = reduceBlocks(call.Op, send, all, r*n, n)
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
		res[call.Root] = reduceBlocks(call.Op, send, all, 0, n)
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
			res[r] = reduceBlocks(call.Op, send, all[:r+1], 0, n)
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
