package cyclic

import (
	"fmt"
	"math"
)

// Piece is a rectangle of the global matrix held by one device: global rows
// [Row, Row+Rows) and columns [Col, Col+Cols), stored in that device's shard
// from local row LocalRow and local column LocalCol on.
type Piece struct {
	Dev                int
	Row, Col           int
	Rows, Cols         int
	LocalRow, LocalCol int
}

// Pieces lists the rectangles that make up the shards of a rows×cols matrix
// in layout l over ndev devices. For Replicated it lists one whole-matrix
// piece per device.
func Pieces(l Layout, rows, cols, ndev int) []Piece {
	var ps []Piece
	switch l.Kind {
	case Replicated:
		for d := range ndev {
			ps = append(ps, Piece{Dev: d, Rows: rows, Cols: cols})
		}
	case RowBlocks:
		for d := range ndev {
			r0, r1 := BlockStart(rows, ndev, d), BlockStart(rows, ndev, d+1)
			if r1 > r0 {
				ps = append(ps, Piece{Dev: d, Row: r0, Rows: r1 - r0, Cols: cols})
			}
		}
	case ColBlocks:
		for d := range ndev {
			c0, c1 := BlockStart(cols, ndev, d), BlockStart(cols, ndev, d+1)
			if c1 > c0 {
				ps = append(ps, Piece{Dev: d, Col: c0, Rows: rows, Cols: c1 - c0})
			}
		}
	case ColCyclic:
		for g := range NumTiles(cols, l.Tile) {
			ps = append(ps, Piece{
				Dev: Owner(g, ndev), Col: g * l.Tile, Rows: rows, Cols: TileWidth(cols, l.Tile, g),
				LocalCol: LocalOffset(g, l.Tile, ndev),
			})
		}
	}
	return ps
}

// Move copies a Rows×Cols rectangle from local position (SrcRow, SrcCol) of
// device SrcDev's shard to local position (DstRow, DstCol) of device DstDev's
// shard.
type Move struct {
	SrcDev, SrcRow, SrcCol int
	DstDev, DstRow, DstCol int
	Rows, Cols             int
}

// Plan is the list of moves that turns one layout of a matrix into another.
// In a plan of NewPlan every element of every destination shard is written
// by exactly one move; StackRowsPlan's writes device 0's only. Plans may be
// built or edited by hand: the executors check them first (Check).
type Plan struct {
	Rows, Cols, NDev int
	From, To         Layout
	Moves            []Move
}

// NewPlan computes the moves that redistribute a rows×cols matrix over ndev
// devices from layout from to layout to.
func NewPlan(rows, cols, ndev int, from, to Layout) (*Plan, error) {
	p := &Plan{Rows: rows, Cols: cols, NDev: ndev, From: from, To: to}
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	src := Pieces(from, rows, cols, ndev)
	for _, dp := range Pieces(to, rows, cols, ndev) {
		for _, sp := range src {
			if from.Kind == Replicated && sp.Dev != dp.Dev {
				continue // every device reads its own replica
			}
			r0, r1 := max(sp.Row, dp.Row), min(sp.Row+sp.Rows, dp.Row+dp.Rows)
			c0, c1 := max(sp.Col, dp.Col), min(sp.Col+sp.Cols, dp.Col+dp.Cols)
			if r0 >= r1 || c0 >= c1 {
				continue
			}
			p.Moves = append(p.Moves, Move{
				SrcDev: sp.Dev, SrcRow: sp.LocalRow + r0 - sp.Row, SrcCol: sp.LocalCol + c0 - sp.Col,
				DstDev: dp.Dev, DstRow: dp.LocalRow + r0 - dp.Row, DstCol: dp.LocalCol + c0 - dp.Col,
				Rows: r1 - r0, Cols: c1 - c0,
			})
		}
	}
	p.Moves = mergeColumns(p.Moves)
	return p, nil
}

// mergeColumns joins moves that continue each other column-wise (adjacent
// tiles of the same pair of devices), so that a run of tiles that is
// contiguous on both sides becomes one copy.
func mergeColumns(ms []Move) []Move {
	var out []Move
	for _, m := range ms {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.SrcDev == m.SrcDev && last.DstDev == m.DstDev && last.Rows == m.Rows &&
				last.SrcRow == m.SrcRow && last.DstRow == m.DstRow &&
				last.SrcCol+last.Cols == m.SrcCol && last.DstCol+last.Cols == m.DstCol {
				last.Cols += m.Cols
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// checkShape checks the plan's matrix, device count and layouts.
func (p *Plan) checkShape() error {
	if p.Rows < 1 || p.Cols < 1 {
		return fmt.Errorf("cyclic: matrix shape %d×%d must be at least 1×1", p.Rows, p.Cols)
	}
	if p.Rows > math.MaxInt/p.Cols {
		return fmt.Errorf("cyclic: a %d×%d matrix has more elements than an int counts", p.Rows, p.Cols)
	}
	if p.NDev < 1 {
		return fmt.Errorf("cyclic: need at least one device, got %d", p.NDev)
	}
	if err := p.From.Validate(); err != nil {
		return err
	}
	return p.To.Validate()
}

// Check reports a plan its executors cannot run: a nil plan, a bad shape,
// device count or layout, or a move that leaves its source or destination
// shard (devices out of range, empty or negative extents, rectangles past
// the local shapes). It does not check that the moves make a relayout.
func (p *Plan) Check() error {
	if p == nil {
		return fmt.Errorf("cyclic: nil plan")
	}
	if err := p.checkShape(); err != nil {
		return err
	}
	inside := func(dev, row, col, rows, cols int, to bool) bool {
		if dev < 0 || dev >= p.NDev || row < 0 || col < 0 {
			return false
		}
		lr, lc := p.LocalShape(dev, to)
		return rows <= lr-row && cols <= lc-col
	}
	for i, m := range p.Moves {
		if m.Rows < 1 || m.Cols < 1 ||
			!inside(m.SrcDev, m.SrcRow, m.SrcCol, m.Rows, m.Cols, false) ||
			!inside(m.DstDev, m.DstRow, m.DstCol, m.Rows, m.Cols, true) {
			return fmt.Errorf("cyclic: move %d of the plan (%+v) is empty or leaves its shards (%d×%d, %v to %v over %d devices)",
				i, m, p.Rows, p.Cols, p.From, p.To, p.NDev)
		}
	}
	return nil
}

// LocalShape is the shape of device d's shard in the plan's source (to=false)
// or destination (to=true) layout.
func (p *Plan) LocalShape(d int, to bool) (int, int) {
	l := p.From
	if to {
		l = p.To
	}
	return LocalShape(l, p.Rows, p.Cols, p.NDev, d)
}

// ExecuteHost runs the plan on host memory: src[d] and dst[d] are device d's
// shards, column-major with leading dimension equal to their local row count.
// Each move is one copy when it is contiguous on both sides (whole local
// columns), one copy per column otherwise. A plan that fails Check, or
// shards shorter than its local shapes, are an error before any copy.
func ExecuteHost[T any](p *Plan, src, dst [][]T) error {
	if err := p.Check(); err != nil {
		return err
	}
	if len(src) != p.NDev || len(dst) != p.NDev {
		return fmt.Errorf("cyclic: plan for %d devices got %d source and %d destination shards", p.NDev, len(src), len(dst))
	}
	srcLD, dstLD := make([]int, p.NDev), make([]int, p.NDev)
	for d := range p.NDev {
		sr, sc := p.LocalShape(d, false)
		dr, dc := p.LocalShape(d, true)
		if len(src[d]) < sr*sc || len(dst[d]) < dr*dc {
			return fmt.Errorf("cyclic: shard %d too small: have %d and %d elements, need %d and %d", d, len(src[d]), len(dst[d]), sr*sc, dr*dc)
		}
		srcLD[d], dstLD[d] = sr, dr
	}
	for _, m := range p.Moves {
		sld, dld := srcLD[m.SrcDev], dstLD[m.DstDev]
		CopyRect(dst[m.DstDev][m.DstRow+m.DstCol*dld:], dld, src[m.SrcDev][m.SrcRow+m.SrcCol*sld:], sld, m.Rows, m.Cols)
	}
	return nil
}
