//go:build !mpi

package mpi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/mpi"
)

func TestWorldWithoutTag(t *testing.T) {
	c, err := mpi.World()
	if c != nil || !errors.Is(err, collective.ErrUnavailable) || !strings.Contains(err.Error(), "-tags mpi") {
		t.Fatalf("got %v, %v; want ErrUnavailable naming the tag", c, err)
	}
	if err := mpi.Finalize(); err != nil {
		t.Fatal(err)
	}
}
