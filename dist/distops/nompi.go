//go:build !mpi

package distops

import (
	"github.com/mgla/mgla/dist"
	G "gorgonia.org/gorgonia"
)

// Potrs needs the mpi build tag: without it no dist.Grid exists, and it
// returns the error dist.NewGrid gives (wrapping collective.ErrUnavailable).
func Potrs(a, b *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	_, err := dist.NewGrid(nil, 0, 0)
	return nil, err
}

// LogDet needs the mpi build tag (see Potrs).
func LogDet(a *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	_, err := dist.NewGrid(nil, 0, 0)
	return nil, err
}

// Potri needs the mpi build tag (see Potrs).
func Potri(a *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	_, err := dist.NewGrid(nil, 0, 0)
	return nil, err
}

// Cholesky needs the mpi build tag (see Potrs).
func Cholesky(a *G.Node, g *dist.Grid, nb int) (*G.Node, error) {
	_, err := dist.NewGrid(nil, 0, 0)
	return nil, err
}
