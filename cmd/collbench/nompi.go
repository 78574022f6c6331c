//go:build !mpi

// Command collbench times collective.Comm calls over MPI against raw MPI; it
// needs the mpi build tag (see main.go and BENCHMARKS.md).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "collbench: build with -tags mpi (needs Open MPI: make mpi-deps) and run under mpirun")
	os.Exit(2)
}
