//go:build !mpi

package distops_test

import (
	"errors"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/dist/distops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestWithoutTag(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("A"))
	if _, err := distops.Potrs(a, a, nil, 0); !errors.Is(err, collective.ErrUnavailable) {
		t.Fatalf("Potrs without the mpi tag: %v", err)
	}
	if _, err := distops.LogDet(a, nil, 0); !errors.Is(err, collective.ErrUnavailable) {
		t.Fatalf("LogDet without the mpi tag: %v", err)
	}
}
