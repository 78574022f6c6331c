//go:build !mpi

// Command distributed is the Gaussian-process training of examples/gp
// across MPI processes; it needs the mpi build tag (see main.go).
package main

import (
	"fmt"
	"os"

	"github.com/mgla/mgla/dist"
)

func main() {
	_, err := dist.NewGrid(nil, 0, 0)
	fmt.Fprintln(os.Stderr, "distributed:", err)
	os.Exit(1)
}
