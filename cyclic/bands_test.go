package cyclic

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// compositions calls f with every way of splitting total rows over ndev
// devices, zeros included.
func compositions(total, ndev int, f func([]int)) {
	counts := make([]int, ndev)
	var rec func(d, left int)
	rec = func(d, left int) {
		if d == ndev-1 {
			counts[d] = left
			f(counts)
			return
		}
		for c := 0; c <= left; c++ {
			counts[d] = c
			rec(d+1, left-c)
		}
	}
	rec(0, total)
}

// bandShards are the band shards of a rows×cols matrix whose element
// (r, c) is r*cols+c+1, device d holding counts[d] rows, column-major.
func bandShards(counts []int, cols int) [][]int {
	sh := make([][]int, len(counts))
	first := 0
	for d, n := range counts {
		sh[d] = make([]int, n*cols)
		for i := range n {
			for c := range cols {
				sh[d][i+c*n] = (first+i)*cols + c + 1
			}
		}
		first += n
	}
	return sh
}

// checkBandMoves runs BandMoves(from, to) on labelled shards and checks
// that every destination element is written once, with the right
// element, and the promises of the order: increasing global row, one move
// per pair of devices, sources and destinations nondecreasing, no empty
// move.
func checkBandMoves(from, to []int, cols int) error {
	moves, err := BandMoves(from, to, cols)
	if err != nil {
		return err
	}
	src, want := bandShards(from, cols), bandShards(to, cols)
	got := make([][]int, len(to))
	writes := make([][]int, len(to))
	for d, n := range to {
		got[d], writes[d] = make([]int, n*cols), make([]int, n*cols)
	}
	start := func(counts []int, d int) int {
		s := 0
		for _, c := range counts[:d] {
			s += c
		}
		return s
	}
	row, pairs := 0, map[[2]int]bool{}
	for i, m := range moves {
		if m.Rows < 1 || m.Cols != cols || m.SrcCol != 0 || m.DstCol != 0 {
			return fmt.Errorf("move %d is %+v", i, m)
		}
		if m.SrcDev < 0 || m.SrcDev >= len(from) || m.DstDev < 0 || m.DstDev >= len(to) ||
			m.SrcRow < 0 || m.SrcRow+m.Rows > from[m.SrcDev] || m.DstRow < 0 || m.DstRow+m.Rows > to[m.DstDev] {
			return fmt.Errorf("move %d (%+v) leaves its bands", i, m)
		}
		if g := start(from, m.SrcDev) + m.SrcRow; g != row || start(to, m.DstDev)+m.DstRow != row {
			return fmt.Errorf("move %d (%+v) starts at global row %d, want %d", i, m, g, row)
		}
		row += m.Rows
		if pairs[[2]int{m.SrcDev, m.DstDev}] {
			return fmt.Errorf("move %d (%+v): a second move between its devices", i, m)
		}
		pairs[[2]int{m.SrcDev, m.DstDev}] = true
		if i > 0 && (m.SrcDev < moves[i-1].SrcDev || m.DstDev < moves[i-1].DstDev) {
			return fmt.Errorf("move %d (%+v) after %+v", i, m, moves[i-1])
		}
		CopyRect(got[m.DstDev][m.DstRow:], to[m.DstDev], src[m.SrcDev][m.SrcRow:], from[m.SrcDev], m.Rows, m.Cols)
		for j := range m.Cols {
			for k := range m.Rows {
				writes[m.DstDev][m.DstRow+k+j*to[m.DstDev]]++
			}
		}
	}
	for d := range to {
		for i := range want[d] {
			if writes[d][i] != 1 || got[d][i] != want[d][i] {
				return fmt.Errorf("device %d element %d: %d written %d times, want %d", d, i, got[d][i], writes[d][i], want[d][i])
			}
		}
	}
	return nil
}

// TestBandMovesExhaustive checks BandMoves for every pair of splits of up
// to 7 rows over 1 to 4 devices, with devices that hold nothing on either
// side, at 1 and 3 columns.
func TestBandMovesExhaustive(t *testing.T) {
	for ndev := 1; ndev <= 4; ndev++ {
		for total := range 8 {
			compositions(total, ndev, func(from []int) {
				from = append([]int(nil), from...)
				compositions(total, ndev, func(to []int) {
					for _, cols := range []int{1, 3} {
						if err := checkBandMoves(from, to, cols); err != nil {
							t.Fatalf("from %v to %v, %d columns: %v", from, to, cols, err)
						}
					}
				})
			})
		}
	}
}

func TestBandMovesRandomLarge(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	split := func(total, ndev int) []int {
		counts := make([]int, ndev)
		for range total {
			counts[rng.IntN(ndev)]++
		}
		return counts
	}
	for range 200 {
		ndev, total, cols := 1+rng.IntN(12), rng.IntN(500), 1+rng.IntN(9)
		from, to := split(total, ndev), split(total, ndev)
		if err := checkBandMoves(from, to, cols); err != nil {
			t.Fatalf("seed %d: from %v to %v, %d columns: %v", seed, from, to, cols, err)
		}
	}
}

func TestBandMovesErrors(t *testing.T) {
	for _, c := range []struct {
		from, to []int
		cols     int
	}{
		{[]int{1, 2}, []int{3}, 1},
		{nil, nil, 1},
		{[]int{1, 2}, []int{2, 1}, 0},
		{[]int{3, -1}, []int{1, 1}, 1},
		{[]int{1, 1}, []int{3, -1}, 1},
		{[]int{1, 2}, []int{2, 2}, 1},
	} {
		if m, err := BandMoves(c.from, c.to, c.cols); err == nil {
			t.Errorf("BandMoves(%v, %v, %d) = %v, want an error", c.from, c.to, c.cols, m)
		}
	}
}
