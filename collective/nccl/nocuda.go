//go:build !mglacuda

package nccl

import (
	"fmt"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
)

var errNoTag = fmt.Errorf("%w: collective/nccl needs the mglacuda build tag (go build -tags mglacuda) and libnccl.so.2 at run time",
	collective.ErrUnavailable)

// NewMesh needs the mglacuda build tag; without it, it returns
// collective.ErrUnavailable.
func NewMesh(m *sharding.Mesh, opts ...Option) (collective.Comm, error) { return nil, errNoTag }

// NewProcess needs the mglacuda build tag; without it, it returns
// collective.ErrUnavailable.
func NewProcess(rank, size, gpu int, boot Bootstrap, opts ...Option) (collective.Comm, error) {
	return nil, errNoTag
}

// ReleaseMesh needs the mglacuda build tag; without it there is nothing to
// release.
func ReleaseMesh(m *sharding.Mesh) error { return nil }
