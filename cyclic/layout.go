package cyclic

import (
	"fmt"
)

// Kind names a distribution of a matrix over the devices of a mesh.
type Kind int

const (
	// Replicated: every device holds the whole matrix.
	Replicated Kind = iota
	// RowBlocks: device d holds rows [BlockStart(n, ndev, d), BlockStart(n, ndev, d+1)).
	RowBlocks
	// ColBlocks: device d holds columns [BlockStart(n, ndev, d), BlockStart(n, ndev, d+1)).
	ColBlocks
	// ColCyclic: 1-D column block-cyclic with tile width Layout.Tile.
	ColCyclic
)

func (k Kind) String() string {
	switch k {
	case Replicated:
		return "replicated"
	case RowBlocks:
		return "row-blocks"
	case ColBlocks:
		return "col-blocks"
	case ColCyclic:
		return "col-cyclic"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Layout describes how a matrix is spread over a mesh. Tile is used by
// ColCyclic only.
type Layout struct {
	Kind Kind
	Tile int
}

// Cyclic returns the 1-D column block-cyclic layout with tile width t.
func Cyclic(t int) Layout { return Layout{Kind: ColCyclic, Tile: t} }

func (l Layout) String() string {
	if l.Kind == ColCyclic {
		return fmt.Sprintf("col-cyclic(T=%d)", l.Tile)
	}
	return l.Kind.String()
}

// Validate reports whether the layout is well formed.
func (l Layout) Validate() error {
	switch l.Kind {
	case Replicated, RowBlocks, ColBlocks:
		return nil
	case ColCyclic:
		if l.Tile < 1 {
			return fmt.Errorf("cyclic: tile width must be at least 1, got %d", l.Tile)
		}
		return nil
	}
	return fmt.Errorf("cyclic: unknown layout kind %d", int(l.Kind))
}

// BlockStart is the first index of block d when n indices are split into
// ndev contiguous blocks whose sizes differ by at most one (larger first).
// BlockStart(n, ndev, ndev) == n.
func BlockStart(n, ndev, d int) int {
	q, r := n/ndev, n%ndev
	return d*q + min(d, r)
}

// NumTiles is the number of column tiles of width t that cover n columns
// (any t ≥ 1, up to math.MaxInt).
func NumTiles(n, t int) int {
	if n <= 0 {
		return 0
	}
	return (n-1)/t + 1
}

// Owner is the device that holds column tile g.
func Owner(g, ndev int) int { return g % ndev }

// TileWidth is the width of column tile g of an n-column matrix.
func TileWidth(n, t, g int) int { return min(t, n-g*t) }

// LocalOffset is the first local column of tile g inside its owner's shard.
// Every tile before g on the same device is full, so the offset is (g/ndev)·t.
func LocalOffset(g, t, ndev int) int { return (g / ndev) * t }

// LocalWidth is the number of columns device d holds in the column
// block-cyclic layout of an n-column matrix (zero when it owns no tile).
func LocalWidth(n, t, ndev, d int) int {
	tiles := NumTiles(n, t)
	if d >= tiles {
		return 0
	}
	mine := (tiles-1-d)/ndev + 1 // tiles d, d+ndev, ...
	last := d + (mine-1)*ndev
	return (mine-1)*t + TileWidth(n, t, last)
}

// Tiles lists the global tiles device d holds, in local order.
func Tiles(n, t, ndev, d int) []int {
	var gs []int
	for g := d; g < NumTiles(n, t); g += ndev {
		gs = append(gs, g)
	}
	return gs
}

// LocalShape is the shape (rows, cols) of device d's shard of a rows×cols
// matrix in layout l over ndev devices.
func LocalShape(l Layout, rows, cols, ndev, d int) (int, int) {
	switch l.Kind {
	case RowBlocks:
		return BlockStart(rows, ndev, d+1) - BlockStart(rows, ndev, d), cols
	case ColBlocks:
		return rows, BlockStart(cols, ndev, d+1) - BlockStart(cols, ndev, d)
	case ColCyclic:
		return rows, LocalWidth(cols, l.Tile, ndev, d)
	}
	return rows, cols
}
