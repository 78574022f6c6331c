//go:build !mpi

package distops

import (
	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
)

// The methods below stand in for the mpi build's; their documentation is
// in ops_mpi.go, moves_mpi.go and kernel_mpi.go.

// unavailable is the error of every op in a build without the mpi tag:
// no dist.Grid exists, and dist.NewGrid's error (wrapping
// collective.ErrUnavailable) says why.
func unavailable() error {
	_, err := dist.NewGrid(nil, 0, 0)
	return err
}

// Cholesky needs the mpi build tag.
func (o *Ops) Cholesky(a *G.Node, block int) (*G.Node, error) { return nil, unavailable() }

// CholSolve needs the mpi build tag.
func (o *Ops) CholSolve(l, b *G.Node, block int) (*G.Node, error) { return nil, unavailable() }

// Potrs needs the mpi build tag.
func (o *Ops) Potrs(a, b *G.Node, block int) (*G.Node, error) { return nil, unavailable() }

// Potri needs the mpi build tag.
func (o *Ops) Potri(a *G.Node, block int) (*G.Node, error) { return nil, unavailable() }

// LogDet needs the mpi build tag.
func (o *Ops) LogDet(a *G.Node, block int) (*G.Node, error) { return nil, unavailable() }

// Syevd needs the mpi build tag.
func (o *Ops) Syevd(a *G.Node, block int, vectors bool) (w, v *G.Node, err error) {
	return nil, nil, unavailable()
}

// FromRowBlocks needs the mpi build tag.
func (o *Ops) FromRowBlocks(band *G.Node, n, block int) (*G.Node, error) { return nil, unavailable() }

// Distribute needs the mpi build tag.
func (o *Ops) Distribute(full *G.Node, block int) (*G.Node, error) { return nil, unavailable() }

// Gather needs the mpi build tag.
func (o *Ops) Gather(x *G.Node, root int) (*G.Node, error) { return nil, unavailable() }

// KernelMatrix needs the mpi build tag.
func (o *Ops) KernelMatrix(f sharding.KernelFamily, x, lengthScale, signalVar, noiseVar *G.Node, block int) (*G.Node, error) {
	return nil, unavailable()
}
