//go:build mglacuda

package sharding

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

// On a GPU machine every mesh-parameterized test of this package also runs
// on GPU meshes of 1, 2, 3 and 4 devices (as many as are visible), one of
// them in reverse device order.
func init() {
	gpuTestMeshes = func(t *testing.T) []*Mesh {
		n, err := cu.NumDevices()
		require.NoError(t, err)
		var out []*Mesh
		for _, ids := range [][]int{{0}, {1, 0}, {0, 1, 2}, {0, 1, 2, 3}} {
			if len(ids) > n {
				break
			}
			m, err := GPUMesh(ids...)
			require.NoError(t, err)
			out = append(out, m)
		}
		return out
	}
}
