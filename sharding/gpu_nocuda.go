//go:build !mglacuda

package sharding

import "fmt"

// GPUMesh returns a mesh over the given GPU ordinals (every visible GPU when
// none are given). This binary was built without the mglacuda tag, so it always
// fails with ErrNoGPU.
func GPUMesh(ids ...int) (*Mesh, error) {
	return nil, fmt.Errorf("%w: this binary was built without the mglacuda build tag (go build -tags mglacuda)", ErrNoGPU)
}

// RegisterHost page-locks host memory for fast GPU copies in a mglacuda
// build; in this build there is no GPU and it does nothing.
func RegisterHost(data any) (unregister func() error, err error) {
	return func() error { return nil }, nil
}

// ReclaimDeviceMemory frees the device memory of unreachable buffers; without
// the mglacuda build there is none, and it reports false.
func ReclaimDeviceMemory() bool { return false }
