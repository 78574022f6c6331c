package kernels

import "github.com/mgla/mgla/kernels/cpubackend"

// Backend names the BLAS/LAPACK implementation behind the CPU kernels:
// "gonum" (pure Go) or, when built with -tags openblas, "openblas"
// (package kernels/cpubackend).
const Backend = cpubackend.Name
