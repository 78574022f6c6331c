package mgla_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// recorder is a Distributor that records the calls it gets and answers
// each with a node of its own, or with err when that is set (the ops
// across processes are tested under mpirun in package dist/distops).
type recorder struct {
	calls []string
	node  *G.Node
	err   error
}

func (r *recorder) note(format string, args ...any) (*G.Node, error) {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	if r.err != nil {
		return nil, r.err
	}
	return r.node, nil
}

func (r *recorder) Cholesky(a *G.Node, block int) (*G.Node, error) {
	return r.note("Cholesky %s %d", a.Name(), block)
}
func (r *recorder) CholSolve(l, b *G.Node, block int) (*G.Node, error) {
	return r.note("CholSolve %s %s %d", l.Name(), b.Name(), block)
}
func (r *recorder) Potrs(a, b *G.Node, block int) (*G.Node, error) {
	return r.note("Potrs %s %s %d", a.Name(), b.Name(), block)
}
func (r *recorder) Potri(a *G.Node, block int) (*G.Node, error) {
	return r.note("Potri %s %d", a.Name(), block)
}
func (r *recorder) LogDet(a *G.Node, block int) (*G.Node, error) {
	return r.note("LogDet %s %d", a.Name(), block)
}
func (r *recorder) Syevd(a *G.Node, block int, vectors bool) (w, v *G.Node, err error) {
	n, err := r.note("Syevd %s %d %v", a.Name(), block, vectors)
	return n, n, err
}
func (r *recorder) Gather(x *G.Node, root int) (*G.Node, error) {
	return r.note("Gather %s %d", x.Name(), root)
}
func (r *recorder) KernelMatrix(f sharding.KernelFamily, x, ell, sig, noise *G.Node, block int) (*G.Node, error) {
	names := []string{}
	for _, n := range []*G.Node{x, ell, sig, noise} {
		if n != nil {
			names = append(names, n.Name())
		}
	}
	return r.note("KernelMatrix %v %v %d", f, names, block)
}

// TestWithGrid checks that every builder hands its inputs and block size
// (WithTile, 0 without) to WithGrid's distributor and returns its node.
func TestWithGrid(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float32, G.WithShape(5, 5), G.WithName("A"))
	b := G.NewVector(g, tensor.Float32, G.WithShape(5), G.WithName("b"))
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(5, 2), G.WithName("x"))
	ell := G.NewScalar(g, tensor.Float32, G.WithName("ell"))
	sig := G.NewScalar(g, tensor.Float32, G.WithName("sig"))
	noise := G.NewScalar(g, tensor.Float32, G.WithName("noise"))
	d := &recorder{node: G.NewScalar(g, tensor.Float32, G.WithName("answer"))}
	grid := mgla.WithGrid(d)
	cases := []struct {
		build func() (*G.Node, error)
		want  string
	}{
		{func() (*G.Node, error) { return mgla.Cholesky(a, grid) }, "Cholesky A 0"},
		{func() (*G.Node, error) { return mgla.CholSolve(a, b, grid, mgla.WithTile(3)) }, "CholSolve A b 3"},
		{func() (*G.Node, error) { return mgla.Potrs(a, b, mgla.WithTile(7), grid) }, "Potrs A b 7"},
		{func() (*G.Node, error) { return mgla.Potri(a, grid) }, "Potri A 0"},
		{func() (*G.Node, error) { return mgla.LogDet(a, mgla.Options(grid, mgla.WithTile(1))) }, "LogDet A 1"},
		// Nil options are skipped, alone or inside Options.
		{func() (*G.Node, error) { var o mgla.Option; return mgla.Potrs(a, b, o, grid, nil) }, "Potrs A b 0"},
		{func() (*G.Node, error) {
			return mgla.Cholesky(a, mgla.Options(nil), grid, mgla.Options(nil, mgla.WithTile(4)))
		}, "Cholesky A 4"},
		{func() (*G.Node, error) { w, _, err := mgla.Syevd(a, grid); return w, err }, "Syevd A 0 true"},
		{func() (*G.Node, error) {
			w, v, err := mgla.Syevd(a, grid, mgla.EigenvaluesOnly(), mgla.WithTile(2))
			require.Equal(t, d.node, v)
			return w, err
		}, "Syevd A 2 false"},
		{func() (*G.Node, error) { return mgla.SquaredExponential(x, ell, sig, noise, grid) }, "KernelMatrix squared-exponential [x ell sig noise] 0"},
		{func() (*G.Node, error) { return mgla.Matern32(x, ell, sig, nil, grid, mgla.WithTile(16)) }, "KernelMatrix Matérn 3/2 [x ell sig] 16"},
		{func() (*G.Node, error) { return mgla.Matern52(x, ell, sig, noise, grid) }, "KernelMatrix Matérn 5/2 [x ell sig noise] 0"},
	}
	for _, c := range cases {
		d.calls = nil
		n, err := c.build()
		require.NoError(t, err, c.want)
		require.Equal(t, []string{c.want}, d.calls)
		require.Equal(t, d.node, n, c.want)
	}
}

// TestWithGridErrors checks the build-time errors of WithGrid: it excludes
// WithMesh and sharded inputs, takes blocks of at least 1, and the
// builders' own checks come first; the distributor is not called and the
// graph does not change.
func TestWithGridErrors(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("B"))
	b5 := G.NewMatrix(g, tensor.Float64, G.WithShape(5, 2), G.WithName("B5"))
	rect := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 3), G.WithName("rect"))
	empty := G.NewMatrix(g, tensor.Float64, G.WithShape(0, 0), G.WithName("empty"))
	m2, err := sharding.CPUMesh(2)
	require.NoError(t, err)
	sa, err := ops.Shard(a, m2, sharding.Cyclic(2))
	require.NoError(t, err)
	sb, err := ops.Shard(b, m2, sharding.Cyclic(2))
	require.NoError(t, err)
	x := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("x"))
	ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"))
	sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"))
	d := &recorder{}
	grid := mgla.WithGrid(d)
	cases := []struct {
		name  string
		build func() error
	}{
		{"with mesh", func() error { _, err := mgla.Potrs(a, b, grid, mgla.WithMesh(m2)); return err }},
		{"Syevd with mesh", func() error { _, _, err := mgla.Syevd(a, mgla.WithMesh(m2), grid); return err }},
		{"sharded a", func() error { _, err := mgla.LogDet(sa, grid); return err }},
		{"sharded b", func() error { _, err := mgla.Potrs(a, sb, grid); return err }},
		{"CholSolve sharded b", func() error { _, err := mgla.CholSolve(a, sb, grid); return err }},
		{"block 0", func() error { _, err := mgla.Cholesky(a, grid, mgla.WithTile(0)); return err }},
		{"block -3", func() error { _, err := mgla.Potri(a, grid, mgla.WithTile(-3)); return err }},
		{"rows", func() error { _, err := mgla.Potrs(a, b5, grid); return err }},
		{"not square", func() error { _, _, err := mgla.Syevd(rect, grid); return err }},
		{"0×0", func() error { _, err := mgla.LogDet(empty, grid); return err }},
		// A nil distributor (a code path that forgot its grid) ran on this
		// process's mesh, silently.
		{"nil distributor", func() error { _, err := mgla.LogDet(a, mgla.WithGrid(nil)); return err }},
		{"nil distributor, Potrs", func() error { _, err := mgla.Potrs(a, b, mgla.WithGrid(nil), mgla.WithTile(2)); return err }},
		{"nil distributor, kernel matrix", func() error {
			_, err := mgla.SquaredExponential(x, ell, sig, nil, mgla.WithGrid(nil))
			return err
		}},
		{"kernel matrix with mesh", func() error { _, err := mgla.Matern32(x, ell, sig, nil, grid, mgla.WithMesh(m2)); return err }},
		{"kernel matrix block 0", func() error { _, err := mgla.Matern52(x, ell, sig, nil, grid, mgla.WithTile(0)); return err }},
		{"kernel matrix nil points", func() error { _, err := mgla.SquaredExponential(nil, ell, sig, nil, grid); return err }},
		{"kernel matrix sharded points", func() error { _, err := mgla.SquaredExponential(sa, ell, sig, nil, grid); return err }},
	}
	for _, c := range cases {
		before := graphState(g)
		err := c.build()
		require.ErrorIs(t, err, mgla.ErrBadInput, c.name)
		require.Empty(t, d.calls, c.name)
		require.Equal(t, before, graphState(g), "%s: the graph changed", c.name)
	}
}

// TestWithGridDistributorErrors checks that the builders return the
// distributor's build-time errors so that they match ErrBadInput as well
// as the distributor's own sentinel, except ErrUnavailable (the engine is
// not built in), which is not bad input.
func TestWithGridDistributorErrors(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("A"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 2), G.WithName("B"))
	errDist := errors.New("dist: bad input")
	x := G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("x"))
	ell := G.NewScalar(g, tensor.Float64, G.WithName("ell"))
	sig := G.NewScalar(g, tensor.Float64, G.WithName("sig"))
	d := &recorder{}
	grid := mgla.WithGrid(d)
	builders := []struct {
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
		{"SquaredExponential", func() error { _, err := mgla.SquaredExponential(x, ell, sig, nil, grid); return err }},
	}
	for _, c := range builders {
		d.calls, d.err = nil, fmt.Errorf("%w: distops: no grid", errDist)
		err := c.build()
		require.Len(t, d.calls, 1, c.name)
		require.ErrorIs(t, err, mgla.ErrBadInput, c.name)
		require.ErrorIs(t, err, errDist, c.name)
		require.ErrorContains(t, err, "no grid", c.name)

		d.calls, d.err = nil, fmt.Errorf("%w: no mpi tag", mgla.ErrUnavailable)
		err = c.build()
		require.ErrorIs(t, err, mgla.ErrUnavailable, c.name)
		require.NotErrorIs(t, err, mgla.ErrBadInput, c.name)
	}
}
