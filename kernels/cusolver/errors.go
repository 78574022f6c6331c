//go:build mglacuda

package cusolver

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"gorgonia.org/tensor"
)

// CUDAError is a failed CUDA runtime call.
type CUDAError struct {
	Func string // e.g. "cudaMalloc"
	Code int    // cudaError_t
	Name string // e.g. "cudaErrorMemoryAllocation"
	Msg  string // cudaGetErrorString
}

func (e *CUDAError) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Func, e.Msg, e.Name)
	}
	return fmt.Sprintf("%s: %s (cudaError %d)", e.Func, e.Msg, e.Code)
}

// Status is a cusolverStatus_t.
type Status int

var statusNames = map[Status]string{
	0:  "CUSOLVER_STATUS_SUCCESS",
	1:  "CUSOLVER_STATUS_NOT_INITIALIZED",
	2:  "CUSOLVER_STATUS_ALLOC_FAILED",
	3:  "CUSOLVER_STATUS_INVALID_VALUE",
	4:  "CUSOLVER_STATUS_ARCH_MISMATCH",
	5:  "CUSOLVER_STATUS_MAPPING_ERROR",
	6:  "CUSOLVER_STATUS_EXECUTION_FAILED",
	7:  "CUSOLVER_STATUS_INTERNAL_ERROR",
	8:  "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
	9:  "CUSOLVER_STATUS_NOT_SUPPORTED",
	10: "CUSOLVER_STATUS_ZERO_PIVOT",
	11: "CUSOLVER_STATUS_INVALID_LICENSE",
	12: "CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED",
	13: "CUSOLVER_STATUS_IRS_PARAMS_INVALID",
	14: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC",
	15: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE",
	16: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER",
	20: "CUSOLVER_STATUS_IRS_INTERNAL_ERROR",
	21: "CUSOLVER_STATUS_IRS_NOT_SUPPORTED",
	22: "CUSOLVER_STATUS_IRS_OUT_OF_RANGE",
	23: "CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES",
	25: "CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED",
	26: "CUSOLVER_STATUS_IRS_INFOS_NOT_DESTROYED",
	30: "CUSOLVER_STATUS_IRS_MATRIX_SINGULAR",
	31: "CUSOLVER_STATUS_INVALID_WORKSPACE",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("CUSOLVER_STATUS_%d", int(s))
}

// SolverError is a cuSOLVER / cuSolverMg call that returned a status other
// than CUSOLVER_STATUS_SUCCESS.
type SolverError struct {
	Func   string // e.g. "cusolverMgPotrf"
	Status Status
}

func (e *SolverError) Error() string { return e.Func + ": " + e.Status.String() }

// InfoError reports a negative info (an argument cuSOLVER rejected) or a
// positive info that has no dedicated error type (e.g. syevd not converging).
type InfoError struct {
	Func string
	Info int
	Msg  string
}

func (e *InfoError) Error() string { return fmt.Sprintf("%s: info = %d: %s", e.Func, e.Info, e.Msg) }

func errNoSym(fn string) error {
	return fmt.Errorf("cusolver: %s is not exported by the loaded libraries %v", fn, LoadedLibraries())
}

// cudaErr turns a cudaError_t into an error (nil for cudaSuccess).
func cudaErr(fn string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc == C.MGLA_NOSYM {
		return errNoSym(fn)
	}
	C.mgla_cudaGetLastError() // clear a non-sticky error so that it is not reported again
	e := &CUDAError{Func: fn, Code: int(rc)}
	if s := C.mgla_cudaGetErrorString(rc); s != nil {
		e.Msg = C.GoString(s)
	} else {
		e.Msg = "unknown CUDA error"
	}
	if s := C.mgla_cudaGetErrorName(rc); s != nil {
		e.Name = C.GoString(s)
	}
	return e
}

// solverErr turns a cusolverStatus_t into an error (nil for success).
func solverErr(fn string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc == C.MGLA_NOSYM {
		return errNoSym(fn)
	}
	return &SolverError{Func: fn, Status: Status(rc)}
}

// cudaDataType values (library_types.h).
const (
	cudaR32F = 0
	cudaR64F = 1
	cudaC32F = 4
	cudaC64F = 5
)

// Enum values of cublasFillMode_t, cusolverEigMode_t, cusolverMgGridMapping_t.
const (
	fillLower      = 0
	eigNoVector    = 0
	eigVector      = 1
	gridMappingCol = 0
	peerAlreadyOn  = 704 // cudaErrorPeerAccessAlreadyEnabled
	cudaNoDevice   = 100 // cudaErrorNoDevice
	maxSyevdTile   = 1024
	maxMgDevices   = 16
	minAllocBytes  = 256
)

// dtypeInfo gives the CUDA data type of dt, the element size, the CUDA type
// of its real part (for eigenvalues) and the cuSOLVER typed-API letter index
// (0 S, 1 D, 2 C, 3 Z).
func dtypeInfo(dt tensor.Dtype) (ctype C.int, size int, rtype C.int, rsize int, kind C.int, err error) {
	switch dt {
	case tensor.Float32:
		return cudaR32F, 4, cudaR32F, 4, 0, nil
	case tensor.Float64:
		return cudaR64F, 8, cudaR64F, 8, 1, nil
	case tensor.Complex64:
		return cudaC32F, 8, cudaR32F, 4, 2, nil
	case tensor.Complex128:
		return cudaC64F, 16, cudaR64F, 8, 3, nil
	}
	return 0, 0, 0, 0, 0, fmt.Errorf("cusolver: unsupported dtype %v (want Float32, Float64, Complex64 or Complex128)", dt)
}

// ElemSize returns the size in bytes of one element of dt, or 0 when dt is
// not one of Float32, Float64, Complex64, Complex128.
func ElemSize(dt tensor.Dtype) int {
	_, s, _, _, _, err := dtypeInfo(dt)
	if err != nil {
		return 0
	}
	return s
}
