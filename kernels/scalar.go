package kernels

import (
	"fmt"
	"math"
	"math/cmplx"
	"reflect"
	"unsafe"
)

// Scalar is the set of element types the kernels accept: the four dense
// dtypes float32, float64, complex64 and complex128 (and types defined on them).
type Scalar interface {
	~float32 | ~float64 | ~complex64 | ~complex128
}

// Float is the set of real types: the eigenvalue type of Syevd. It is float32
// for float32 and complex64 matrices and float64 for float64 and complex128.
type Float interface {
	~float32 | ~float64
}

// dtype identifies the underlying type of a Scalar.
type dtype int

const (
	dtFloat32 dtype = iota
	dtFloat64
	dtComplex64
	dtComplex128
)

func (d dtype) String() string {
	switch d {
	case dtFloat32:
		return "float32"
	case dtFloat64:
		return "float64"
	case dtComplex64:
		return "complex64"
	default:
		return "complex128"
	}
}

// dtypeOf returns the dtype of T. Defined types (type F float64) are resolved
// through their kind.
func dtypeOf[T Scalar]() dtype {
	var z T
	switch any(z).(type) {
	case float32:
		return dtFloat32
	case float64:
		return dtFloat64
	case complex64:
		return dtComplex64
	case complex128:
		return dtComplex128
	}
	switch reflect.TypeOf(z).Kind() {
	case reflect.Float32:
		return dtFloat32
	case reflect.Float64:
		return dtFloat64
	case reflect.Complex64:
		return dtComplex64
	default:
		return dtComplex128
	}
}

// realDtypeOf returns the dtype of a real type R.
func realDtypeOf[R Float]() dtype {
	var z R
	if reflect.TypeOf(z).Kind() == reflect.Float32 {
		return dtFloat32
	}
	return dtFloat64
}

// cast reinterprets a slice of a Scalar type as a slice of the same-sized
// underlying type U. Callers guarantee that T's underlying type is U.
func cast[U, T any](s []T) []U {
	if s == nil {
		return nil
	}
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// parts reinterprets a complex slice as the interleaved slice of its real
// and imaginary parts (twice as long).
func parts[F, C any](s []C) []F {
	if s == nil {
		return nil
	}
	return unsafe.Slice((*F)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

// castScalar reinterprets a scalar value of T as U (same underlying type).
func castScalar[U, T any](v T) U {
	return *(*U)(unsafe.Pointer(&v))
}

// isFinite128 reports whether both parts of z are finite.
func isFinite128(z complex128) bool {
	return !math.IsNaN(real(z)) && !math.IsInf(real(z), 0) && !math.IsNaN(imag(z)) && !math.IsInf(imag(z), 0)
}

func isFinite64(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// abs1 is |re|+|im|, the cheap complex magnitude used for scaling decisions.
func abs1(z complex128) float64 { return math.Abs(real(z)) + math.Abs(imag(z)) }

func cabs(z complex128) float64 { return cmplx.Abs(z) }

func conj(z complex128) complex128 { return complex(real(z), -imag(z)) }

// checkMatrix panics (like BLAS/LAPACK argument checks) when the slice cannot
// hold a rows×cols column-major matrix with leading dimension ld.
func checkMatrix(name string, rows, cols int, ld int, n int) {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("kernels: negative dimension for %s (%d×%d)", name, rows, cols))
	}
	if ld < max(1, rows) {
		panic(fmt.Sprintf("kernels: leading dimension of %s is %d, need at least %d", name, ld, max(1, rows)))
	}
	if rows > 0 && cols > 0 && n < (cols-1)*ld+rows {
		panic(fmt.Sprintf("kernels: %s has %d elements, a %d×%d matrix with leading dimension %d needs %d", name, n, rows, cols, ld, (cols-1)*ld+rows))
	}
}

// Conversions between the single-precision dtypes and the double precision
// work arrays, for column-major blocks with leading dimensions.

func widenF32(rows, cols int, src []float32, lds int, dst []float64, ldd int) {
	for j := 0; j < cols; j++ {
		s := src[j*lds : j*lds+rows]
		d := dst[j*ldd : j*ldd+rows]
		for i, v := range s {
			d[i] = float64(v)
		}
	}
}

// narrowF64 rounds src into dst; a value that the rounding takes to ±Inf
// (finite in float64, beyond float32's range) is an error.
func narrowF64(rows, cols int, src []float64, lds int, dst []float32, ldd int) error {
	for j := 0; j < cols; j++ {
		s := src[j*lds : j*lds+rows]
		d := dst[j*ldd : j*ldd+rows]
		for i, v := range s {
			d[i] = float32(v)
			if math.IsInf(float64(d[i]), 0) {
				return errOverflow32
			}
		}
	}
	return nil
}

func widenC64(rows, cols int, src []complex64, lds int, dst []complex128, ldd int) {
	for j := 0; j < cols; j++ {
		s := src[j*lds : j*lds+rows]
		d := dst[j*ldd : j*ldd+rows]
		for i, v := range s {
			d[i] = complex128(v)
		}
	}
}

// narrowC128 is narrowF64 for complex values.
func narrowC128(rows, cols int, src []complex128, lds int, dst []complex64, ldd int) error {
	for j := 0; j < cols; j++ {
		s := src[j*lds : j*lds+rows]
		d := dst[j*ldd : j*ldd+rows]
		for i, v := range s {
			d[i] = complex64(v)
			if math.IsInf(float64(real(d[i])), 0) || math.IsInf(float64(imag(d[i])), 0) {
				return errOverflow32
			}
		}
	}
	return nil
}

// widenLowerF32 copies the lower triangle (diagonal included) only.
func widenLowerF32(n int, src []float32, lds int, dst []float64, ldd int) {
	for j := 0; j < n; j++ {
		s := src[j*lds+j : j*lds+n]
		d := dst[j*ldd+j : j*ldd+n]
		for i, v := range s {
			d[i] = float64(v)
		}
	}
}

func widenLowerC64(n int, src []complex64, lds int, dst []complex128, ldd int) {
	for j := 0; j < n; j++ {
		s := src[j*lds+j : j*lds+n]
		d := dst[j*ldd+j : j*ldd+n]
		for i, v := range s {
			d[i] = complex128(v)
		}
	}
}
