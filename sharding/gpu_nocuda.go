//go:build !mglacuda

package sharding

import "fmt"

// GPUMesh returns a mesh over the given GPU ordinals (every visible GPU when
// none are given). This binary was built without the cuda tag, so it always
// fails with ErrNoGPU.
func GPUMesh(ids ...int) (*Mesh, error) {
	return nil, fmt.Errorf("%w: this binary was built without the cuda build tag", ErrNoGPU)
}
