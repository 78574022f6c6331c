package lapack

import (
	"math"
	"unsafe"
)

// Level-1 BLAS helpers of the reductions, on contiguous vectors.

func nrm2(x []float64) float64 {
	scale := 0.0
	for _, v := range x {
		scale = max(scale, math.Abs(v))
	}
	if scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
		return scale
	}
	var s float64
	inv := 1 / scale
	if math.IsInf(inv, 0) { // scale below 1/MaxFloat64 (subnormal): divide
		for _, v := range x {
			t := v / scale
			s += t * t
		}
		return scale * math.Sqrt(s)
	}
	for _, v := range x {
		t := v * inv
		s += t * t
	}
	return scale * math.Sqrt(s)
}

func dot(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpy(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func znrm2(x []complex128) float64 {
	// The real and imaginary parts of x, interleaved in memory.
	return nrm2(unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x)))
}

// zdotc returns Σ conj(x_k)·y_k.
func zdotc(x, y []complex128) complex128 {
	y = y[:len(x)]
	var sr, si float64
	for i, v := range x {
		w := y[i]
		sr += real(v)*real(w) + imag(v)*imag(w)
		si += real(v)*imag(w) - imag(v)*real(w)
	}
	return complex(sr, si)
}

func zaxpy(alpha complex128, x, y []complex128) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}
