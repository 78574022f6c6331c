//go:build mglacuda

package sharding

import (
	"unsafe"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/kernels/ptx"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// mvCols is the number of local columns one block row of the lower_mv
// kernels sums (MV_COLS in mgla.cu).
const mvCols = 256

// typeLetter is LAPACK's letter for a float dtype, which names its kernels.
func typeLetter(dt tensor.Dtype) byte {
	return map[tensor.Dtype]byte{tensor.Float32: 's', tensor.Float64: 'd', tensor.Complex64: 'c', tensor.Complex128: 'z'}[dt]
}

// mulLower runs one kernel per device on its columns of a column
// block-cyclic matrix (other layouts go through the host) and sums the
// devices' shares on the host.
func (gpuBackend) mulLower(t *Tensor, x []complex128, xAbs []float64, adjoint, strict bool) ([]complex128, []float64, error) {
	if t.layout.Kind != cyclic.ColCyclic {
		return mulLowerHost(t, x, xAbs, adjoint, strict)
	}
	n, ndev := t.Rows(), t.mesh.Size()
	name := ptx.LowerMv[typeLetter(t.dtype)]
	if adjoint {
		name = ptx.LowerMhv[typeLetter(t.dtype)]
	}
	xb := encodeComplex(t.dtype, x)
	xAbsB := encodeReal(t.dtype, xAbs)
	ys := make([][]complex128, ndev)
	abss := make([][]float64, ndev)
	err := perDevice(ndev, func(d int) error {
		db := t.shards[d].(*DeviceBuffer)
		_, lcols := t.LocalShape(d)
		if lcols == 0 {
			return nil
		}
		return onDevice(db.dev, func() error {
			g, err := deviceState(db.dev.ID)
			if err != nil {
				return err
			}
			elem, realSize := len(xb)/n, int(t.dtype.Size())
			if t.dtype == tensor.Complex64 || t.dtype == tensor.Complex128 {
				realSize /= 2
			}
			// x, y, yAbs and xAbs in one allocation, each aligned for
			// its type; y and yAbs together.
			buf, err := cu.MemAlloc(int64(2 * n * (elem + realSize)))
			if err != nil {
				return err
			}
			defer cu.MemFree(buf)
			dx, dy := buf, buf+cu.DevicePtr(n*elem)
			dabs := dy + cu.DevicePtr(n*elem)
			dxAbs := dabs + cu.DevicePtr(n*realSize)
			if err := cu.MemcpyHtoD(dx, unsafe.Pointer(&xb[0]), int64(len(xb))); err != nil {
				return err
			}
			if err := cu.MemcpyHtoD(dxAbs, unsafe.Pointer(&xAbsB[0]), int64(len(xAbsB))); err != nil {
				return err
			}
			if err := cu.MemsetD32(dy, 0, int64(n*(elem+realSize)/4)); err != nil {
				return err
			}
			s := uint64(0)
			if strict {
				s = 1
			}
			if adjoint {
				err = g.launch(name, lcols, 1, 256, 1, uint64(db.ptr), uint64(n), uint64(t.layout.Tile),
					uint64(ndev), uint64(d), uint64(dx), uint64(dxAbs), uint64(dy), uint64(dabs), s)
			} else {
				err = g.launch(name, ceilDiv(n, 256), ceilDiv(lcols, mvCols), 256, 1, uint64(db.ptr), uint64(n), uint64(t.layout.Tile),
					uint64(ndev), uint64(d), uint64(lcols), uint64(dx), uint64(dxAbs), uint64(dy), uint64(dabs), s)
			}
			if err != nil {
				return err
			}
			out := make([]byte, n*(elem+realSize))
			if err := cu.MemcpyDtoH(unsafe.Pointer(&out[0]), dy, int64(len(out))); err != nil {
				return err
			}
			ys[d] = decodeComplex(t.dtype, out[:n*elem])
			abss[d] = decodeReal(realSize, out[n*elem:])
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	y, yAbs := make([]complex128, n), make([]float64, n)
	for d := range ndev {
		for i := range ys[d] {
			y[i] += ys[d][i]
			yAbs[i] += abss[d][i]
		}
	}
	return y, yAbs, nil
}

// encodeComplex rounds x to dtype dt and returns its bytes.
func encodeComplex(dt tensor.Dtype, x []complex128) []byte {
	switch dt {
	case tensor.Float32:
		v := make([]float32, len(x))
		for i, c := range x {
			v[i] = float32(real(c))
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	case tensor.Float64:
		v := make([]float64, len(x))
		for i, c := range x {
			v[i] = real(c)
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
	case tensor.Complex64:
		v := make([]complex64, len(x))
		for i, c := range x {
			v[i] = complex64(c)
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
	}
	v := append([]complex128(nil), x...)
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 16*len(v))
}

// encodeReal rounds x to the real type of dtype dt and returns its bytes.
func encodeReal(dt tensor.Dtype, x []float64) []byte {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		v := make([]float32, len(x))
		for i, f := range x {
			v[i] = float32(f)
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	}
	v := append([]float64(nil), x...)
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
}

// decodeComplex reads elements of dtype dt from b.
func decodeComplex(dt tensor.Dtype, b []byte) []complex128 {
	p := unsafe.Pointer(&b[0])
	switch dt {
	case tensor.Float32, tensor.Float64:
		r := decodeReal(int(dt.Size()), b)
		out := make([]complex128, len(r))
		for i, v := range r {
			out[i] = complex(v, 0)
		}
		return out
	case tensor.Complex64:
		v := unsafe.Slice((*complex64)(p), len(b)/8)
		out := make([]complex128, len(v))
		for i, c := range v {
			out[i] = complex128(c)
		}
		return out
	}
	return append([]complex128(nil), unsafe.Slice((*complex128)(p), len(b)/16)...)
}

// decodeReal reads reals of size bytes (4 or 8) from b.
func decodeReal(size int, b []byte) []float64 {
	p := unsafe.Pointer(&b[0])
	if size == 4 {
		v := unsafe.Slice((*float32)(p), len(b)/4)
		out := make([]float64, len(v))
		for i, f := range v {
			out[i] = float64(f)
		}
		return out
	}
	return append([]float64(nil), unsafe.Slice((*float64)(p), len(b)/8)...)
}
