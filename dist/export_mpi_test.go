//go:build mpi

package dist

// ScaLAPACKIndex exposes scalapackIndex to the tests.
var ScaLAPACKIndex = scalapackIndex
