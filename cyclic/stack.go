package cyclic

// SplitRowsPlan is the plan that cuts a (ndev·rows)×cols matrix into its
// ndev row blocks of rows×cols: every "device" d reads the whole matrix
// (source layout Replicated: pass the same column-major buffer, leading
// dimension ndev·rows, for every device) and receives block d, column-major
// with leading dimension rows. Laid end to end, the blocks are the flat
// concatenation of row blocks that collective engines exchange.
func SplitRowsPlan(rows, cols, ndev int) (*Plan, error) {
	return NewPlan(ndev*rows, cols, ndev, Layout{Kind: Replicated}, Layout{Kind: RowBlocks})
}

// StackRowsPlan is the inverse of SplitRowsPlan: ndev column-major rows×cols
// blocks (source layout RowBlocks) stacked into one (ndev·rows)×cols
// column-major matrix on device 0. Only device 0's destination is written:
// pass the same buffer (or any large enough ones) for the others.
func StackRowsPlan(rows, cols, ndev int) (*Plan, error) {
	p, err := NewPlan(ndev*rows, cols, ndev, Layout{Kind: RowBlocks}, Layout{Kind: Replicated})
	if err != nil {
		return nil, err
	}
	moves := p.Moves[:0]
	for _, m := range p.Moves {
		if m.DstDev == 0 {
			moves = append(moves, m)
		}
	}
	p.Moves = moves
	return p, nil
}
