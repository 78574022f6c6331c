package sharding

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMeshString: a mesh names its devices, but a mesh of many virtual
// devices names the first few, the last and the count (cpu:1000000 used
// to print them all into every message).
func TestMeshString(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{1, "mesh[cpu:0]"},
		{3, "mesh[cpu:0,cpu:1,cpu:2]"},
		{16, "mesh[cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7,cpu:8,cpu:9,cpu:10,cpu:11,cpu:12,cpu:13,cpu:14,cpu:15]"},
		{17, "mesh[cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7,…,cpu:16 (17 devices)]"},
		{100000, "mesh[cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7,…,cpu:99999 (100000 devices)]"},
	} {
		m, err := CPUMesh(c.n)
		require.NoError(t, err)
		require.Equal(t, c.want, m.String())
		require.Equal(t, c.n, strings.Count(m.DevicesKey(), "cpu:"), "DevicesKey still names every device")
	}
}
