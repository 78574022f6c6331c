//go:build !mpi

package distops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/dist/distops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestWithoutTag checks that every builder given WithGrid(distops.On(…)),
// and every builder of grid values, fails at build time with collective.ErrUnavailable in a build without the
// mpi tag, and adds no node to the graph.
func TestWithoutTag(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("B"))
	grid := mgla.WithGrid(distops.On(nil))
	for _, c := range []struct {
		name  string
		build func() error
	}{
		{"Cholesky", func() error { _, err := mgla.Cholesky(a, grid); return err }},
		{"CholSolve", func() error { _, err := mgla.CholSolve(a, b, grid); return err }},
		{"Potrs", func() error { _, err := mgla.Potrs(a, b, grid); return err }},
		{"Potri", func() error { _, err := mgla.Potri(a, grid); return err }},
		{"LogDet", func() error { _, err := mgla.LogDet(a, grid); return err }},
		{"Syevd", func() error { _, _, err := mgla.Syevd(a, grid); return err }},
		{"Syevd values", func() error { _, _, err := mgla.Syevd(a, grid, mgla.EigenvaluesOnly()); return err }},
		{"FromRowBlocks", func() error { _, err := distops.On(nil).FromRowBlocks(b, 3, 0); return err }},
		{"Distribute", func() error { _, err := distops.On(nil).Distribute(a, 0); return err }},
		{"Gather", func() error { _, err := distops.On(nil).Gather(a, -1); return err }},
	} {
		n := len(g.AllNodes())
		if err := c.build(); !errors.Is(err, collective.ErrUnavailable) {
			t.Errorf("%s with WithGrid, no mpi tag: %v, want collective.ErrUnavailable", c.name, err)
		}
		if m := len(g.AllNodes()); m != n {
			t.Errorf("%s: the graph grew from %d to %d nodes", c.name, n, m)
		}
	}
}

// The grid value compiles in a build without the mpi tag too.
var _ G.Value = (*distops.Value)(nil)

// TestValueWithoutTag checks the grid value's stubs in a build without the
// mpi tag: Input adds no node and returns nil, and every method of Value that
// returns an error returns one wrapping collective.ErrUnavailable.
func TestValueWithoutTag(t *testing.T) {
	g := G.NewGraph()
	v := new(distops.Value)
	if n := distops.Input(g, v, "K"); n != nil {
		t.Errorf("Input without the mpi tag: %v, want nil", n)
	}
	if m := len(g.AllNodes()); m != 0 {
		t.Errorf("Input without the mpi tag added %d nodes to the graph", m)
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Value.Clone", func() error { _, err := v.Clone(); return err }},
		{"Value.CopyTo", func() error { return v.CopyTo(new(distops.Value)) }},
	} {
		err := c.call()
		if !errors.Is(err, collective.ErrUnavailable) || !strings.Contains(err.Error(), "-tags mpi") {
			t.Errorf("%s without the mpi tag: %v, want collective.ErrUnavailable naming the tag", c.name, err)
		}
	}
	if v.ZeroValue() != G.Value(v) || v.Size() != 0 || v.Shape() != nil || v.Data() != nil {
		t.Errorf("the stub Value is not empty: %v %v %v", v.Shape(), v.Size(), v.Data())
	}
}
