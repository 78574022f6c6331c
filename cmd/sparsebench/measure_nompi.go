//go:build !mpi

package main

import (
	"fmt"

	"github.com/mgla/mgla/collective"
)

func measure(int, int, bool) ([]result, error) {
	return nil, fmt.Errorf("%w: sparsebench compares hypre paths: build with -tags mpi", collective.ErrUnavailable)
}
