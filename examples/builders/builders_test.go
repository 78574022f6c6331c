package builders

import (
	"errors"
	"os"
	"testing"

	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
)

func TestParseMesh(t *testing.T) {
	for spec, size := range map[string]int{"cpu": 1, "cpu:4": 4, "CPU:2": 2} {
		m, err := ParseMesh(spec)
		require.NoError(t, err, spec)
		require.Equal(t, size, m.Size(), spec)
		require.Equal(t, sharding.CPU, m.Kind(), spec)
	}
	def, err := ParseMesh("")
	require.NoError(t, err)
	same, err := ParseMesh("default")
	require.NoError(t, err)
	require.Same(t, def, same)
	for _, bad := range []string{"cpu:0", "cpu:x", "tpu", "gpu:a", "gpu:1,1", "default:2"} {
		_, err := ParseMesh(bad)
		require.Error(t, err, bad)
	}
}

func TestParseMeshGPUWithoutCUDA(t *testing.T) {
	if def, _ := sharding.DefaultMesh(); def.Kind() == sharding.GPU {
		t.Skip("GPUs present")
	}
	for _, spec := range []string{"gpu", "gpu:0,1"} {
		_, err := ParseMesh(spec)
		require.Error(t, err, spec)
		require.True(t, errors.Is(err, sharding.ErrNoGPU), "%s: %v", spec, err)
	}
}

// The picture in the README is TileMapSVG(10, 3, 3); regenerate it with
//
//	go run ./examples/sharded -n 10 -tile 3 -mesh cpu:3 -svg docs/tilemap.svg
func TestTileMapSVGUpToDate(t *testing.T) {
	got, err := os.ReadFile("../../docs/tilemap.svg")
	require.NoError(t, err)
	require.Equal(t, TileMapSVG(10, 3, 3), string(got), "docs/tilemap.svg is stale")
}

func TestTileMap(t *testing.T) {
	m := TileMap(10, 3, 3, []string{"cpu:0", "cpu:1", "cpu:2"})
	for _, want := range []string{
		"10 columns in 4 tiles of width 3 (the last one 1 wide, not padded)",
		"device  0 1 2 0",
		"columns 0001112220",
		"device 0 (cpu:0)       4 columns  tiles 0 3",
		"device 2 (cpu:2)       3 columns  tiles 2",
	} {
		require.Contains(t, m, want)
	}
	// A device without a tile, and many tiles.
	small := TileMap(5, 4, 3, nil)
	require.Contains(t, small, "1 column  tiles 1")
	require.Contains(t, small, "0 columns  no tile")
	many := TileMap(1000, 7, 2, nil)
	require.Contains(t, many, "72 tiles: 0 2 4 6 … 142")
	require.NotContains(t, many, "columns 0", "no strip when a character would span several tiles")
}
