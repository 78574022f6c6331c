package sharding

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// DevicesKey names the devices in order: two meshes over the same devices
// share it (and are Same) though their Keys differ; another order or
// another device gives another.
func TestDevicesKey(t *testing.T) {
	a, err := CPUMesh(3)
	require.NoError(t, err)
	b, err := CPUMesh(3)
	require.NoError(t, err)
	require.NotEqual(t, a.Key(), b.Key())
	require.Equal(t, a.DevicesKey(), b.DevicesKey())
	require.True(t, a.Same(b))
	reversed := newMesh([]Device{{Kind: CPU, ID: 2}, {Kind: CPU, ID: 1}, {Kind: CPU, ID: 0}}, a.mem)
	gpus := newMesh([]Device{{Kind: GPU, ID: 0}, {Kind: GPU, ID: 1}, {Kind: GPU, ID: 2}}, a.mem)
	for _, other := range []*Mesh{reversed, gpus} {
		require.NotEqual(t, a.DevicesKey(), other.DevicesKey(), "%v and %v", a, other)
		require.False(t, a.Same(other))
	}
	require.Equal(t, "mesh["+a.DevicesKey()+"]", a.String())
}
