// Package lapack holds the pure-Go LAPACK-style routines that gonum lacks,
// which the CPU kernels of package kernels run on column-major storage.
package lapack
