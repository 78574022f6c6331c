package builders

import (
	"fmt"
	"strings"

	"github.com/mgla/mgla/cyclic"
)

// TileMap describes, in text, where the column tiles of an N×N matrix live in
// the 1-D column block-cyclic layout of width t over ndev devices (tile g on
// device g mod ndev): a row of owners per tile, a strip of owners per
// column, and each device's tiles and local width. names, when not nil,
// names the devices.
func TileMap(n, t, ndev int, names []string) string {
	var b strings.Builder
	tiles := cyclic.NumTiles(n, t)
	last := cyclic.TileWidth(n, t, tiles-1)
	fmt.Fprintf(&b, "%d columns in %d tiles of width %d", n, tiles, t)
	if last != t {
		fmt.Fprintf(&b, " (the last one %d wide, not padded)", last)
	}
	fmt.Fprintf(&b, "; tile g lives on device g mod %d\n", ndev)

	const maxTiles = 24
	shown := min(tiles, maxTiles)
	w := len(fmt.Sprint(tiles - 1))
	b.WriteString("  tile   ")
	for g := range shown {
		fmt.Fprintf(&b, " %*d", w, g)
	}
	if shown < tiles {
		b.WriteString(" …")
	}
	b.WriteString("\n  device ")
	for g := range shown {
		fmt.Fprintf(&b, " %*d", w, cyclic.Owner(g, ndev))
	}
	if shown < tiles {
		b.WriteString(" …")
	}
	b.WriteString("\n")

	// One character per block of columns (the owner of its first column),
	// when a character covers no more than one tile.
	const width = 64
	if step := max(1, (n+width-1)/width); step <= t {
		b.WriteString("  columns ")
		for c := 0; c < n; c += step {
			b.WriteByte(ownerDigit(cyclic.Owner(c/t, ndev)))
		}
		fmt.Fprintf(&b, "  (one character = %d column%s)\n", step, plural(step))
	}

	for d := range ndev {
		name := fmt.Sprintf("device %d", d)
		if d < len(names) {
			name += " (" + names[d] + ")"
		}
		mine := cyclic.Tiles(n, t, ndev, d)
		lw := cyclic.LocalWidth(n, t, ndev, d)
		fmt.Fprintf(&b, "  %-18s %5d column%s", name, lw, plural(lw))
		switch {
		case len(mine) == 0:
			b.WriteString("  no tile\n")
			continue
		case len(mine) <= 8:
			fmt.Fprintf(&b, "  tiles %s\n", joinInts(mine))
		default:
			fmt.Fprintf(&b, "  %d tiles: %s … %d\n", len(mine), joinInts(mine[:4]), mine[len(mine)-1])
		}
	}
	return b.String()
}

func ownerDigit(d int) byte {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if d < len(digits) {
		return digits[d]
	}
	return '+'
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

var svgColors = []struct{ fill, stroke string }{
	{"#cfe0f3", "#2f6db3"}, {"#fbdcc0", "#c8620d"}, {"#d3ecd0", "#3b8a34"},
	{"#f6cfd0", "#b8323a"}, {"#e3d6ee", "#6f4a94"}, {"#f1e4c4", "#8a6a12"},
}

// TileMapSVG draws the column block-cyclic layout of an n×n matrix with tile
// width t over ndev devices: the global matrix with its tiles coloured by
// owner, and each device's local shard, the tiles it owns side by side in
// increasing tile order. It is the picture in docs/tilemap.svg
// (TileMapSVG(10, 3, 3)).
func TileMapSVG(n, t, ndev int) string {
	const (
		cell   = 22
		left   = 30
		top    = 92
		gap    = 46
		groupX = 90
	)
	tiles := cyclic.NumTiles(n, t)
	mat := n * cell
	shardX := left + mat + groupX
	width := shardX
	for d := range ndev {
		width += max(cyclic.LocalWidth(n, t, ndev, d), 1)*cell + gap
	}
	height := top + mat + 76

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">1-D column block-cyclic layout: N = %d, T = %d, %d devices</text>`+"\n", left, n, t, ndev)
	fmt.Fprintf(&b, `<text x="%d" y="44" fill="#444">tile g (columns gT … gT+T−1) lives on device g mod %d; the last tile is %d wide, and nothing is padded</text>`+"\n", left, ndev, cyclic.TileWidth(n, t, tiles-1))

	// The global matrix.
	for g := range tiles {
		c := svgColors[cyclic.Owner(g, ndev)%len(svgColors)]
		x := left + g*t*cell
		w := cyclic.TileWidth(n, t, g) * cell
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="2"/>`+"\n", x, top, w, mat, c.fill, c.stroke)
		fmt.Fprintf(&b, `<text %s y="%d" font-weight="bold" fill="%s">%s</text>`+"\n", labelX(x, w, t*cell), top-22, c.stroke, tileLabel("tile ", g, t*cell))
		fmt.Fprintf(&b, `<text %s y="%d" fill="%s">%s</text>`+"\n", labelX(x, w, t*cell), top+mat+18, c.stroke, tileLabel("dev ", cyclic.Owner(g, ndev), t*cell))
	}
	for j := range n {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="10" fill="#555">%d</text>`+"\n", left+j*cell+cell/2, top-6, j)
	}
	gridLines(&b, left, top, n, n, cell)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">global %d×%d matrix (column index above)</text>`+"\n", left+mat/2, top+mat+44, n, n)

	// Arrow from the matrix to the shards.
	ay := top + mat/2
	fmt.Fprintf(&b, `<path d="M %d %d h %d" stroke="#555" stroke-width="2" fill="none"/><path d="M %d %d l -8 -5 v 10 z" fill="#555"/>`+"\n", left+mat+18, ay, groupX-36, shardX-18, ay)

	// The local shards.
	x := shardX
	for d := range ndev {
		c := svgColors[d%len(svgColors)]
		lw := cyclic.LocalWidth(n, t, ndev, d)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold" fill="%s">device %d</text>`+"\n", x, top-22, c.stroke, d)
		if lw == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">no tile</text>`+"\n", x, top+14)
			x += cell + gap
			continue
		}
		for _, g := range cyclic.Tiles(n, t, ndev, d) {
			lx := x + cyclic.LocalOffset(g, t, ndev)*cell
			w := cyclic.TileWidth(n, t, g) * cell
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="2"/>`+"\n", lx, top, w, mat, c.fill, c.stroke)
			fmt.Fprintf(&b, `<text %s y="%d" fill="%s">%s</text>`+"\n", labelX(lx, w, t*cell), top+mat+18, c.stroke, tileLabel("tile ", g, t*cell))
			for j := range cyclic.TileWidth(n, t, g) {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="10" fill="#555">%d</text>`+"\n", lx+j*cell+cell/2, top-6, g*t+j)
			}
		}
		gridLines(&b, x, top, n, lw, cell)
		x += lw*cell + gap
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">local shards: column-major, leading dimension N,</text>`+"\n", shardX, top+mat+44)
	fmt.Fprintf(&b, `<text x="%d" y="%d">each device's tiles stored one after the other</text>`+"\n", shardX, top+mat+60)
	b.WriteString("</svg>\n")
	return b.String()
}

// labelX centres a label over a tile of w pixels at x, or starts it at x
// when the tile is narrower than a full one (only the last tile can be).
func labelX(x, w, full int) string {
	if w < full && w < 48 {
		return fmt.Sprintf(`x="%d" text-anchor="start"`, x+2)
	}
	return fmt.Sprintf(`x="%d" text-anchor="middle"`, x+w/2)
}

// tileLabel is "tile 3", or just "3" when full tiles are too narrow for
// words.
func tileLabel(word string, i, full int) string {
	if full < 48 {
		return fmt.Sprint(i)
	}
	return fmt.Sprintf("%s%d", word, i)
}

// gridLines draws thin cell lines over a rows×cols block.
func gridLines(b *strings.Builder, x, y, rows, cols, cell int) {
	fmt.Fprintf(b, `<path d="`)
	for i := 1; i < rows; i++ {
		fmt.Fprintf(b, "M %d %d h %d ", x, y+i*cell, cols*cell)
	}
	for j := 1; j < cols; j++ {
		fmt.Fprintf(b, "M %d %d v %d ", x+j*cell, y, rows*cell)
	}
	fmt.Fprintf(b, `" stroke="#000" stroke-opacity="0.12" fill="none"/>`+"\n")
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#222" stroke-width="1.5"/>`+"\n", x, y, cols*cell, rows*cell)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
