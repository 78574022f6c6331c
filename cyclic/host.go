package cyclic

// Scatter copies a global rows×cols matrix into the shards of layout l over
// ndev devices. The global matrix is row-major with leading dimension ld when
// rowMajor, column-major otherwise; shards are column-major with leading
// dimension equal to their local row count.
func Scatter[T any](l Layout, rows, cols, ndev int, global []T, ld int, rowMajor bool, shards [][]T) {
	for _, p := range Pieces(l, rows, cols, ndev) {
		sld, _ := LocalShape(l, rows, cols, ndev, p.Dev)
		local := shards[p.Dev]
		for j := range p.Cols {
			dst := local[p.LocalRow+(p.LocalCol+j)*sld:]
			if !rowMajor {
				copy(dst[:p.Rows], global[p.Row+(p.Col+j)*ld:])
				continue
			}
			for i := range p.Rows {
				dst[i] = global[(p.Row+i)*ld+p.Col+j]
			}
		}
	}
}

// Gather is the inverse of Scatter: it copies the shards of layout l into a
// global matrix (row-major with leading dimension ld when rowMajor,
// column-major otherwise). For Replicated, device 0's copy is read.
func Gather[T any](l Layout, rows, cols, ndev int, shards [][]T, global []T, ld int, rowMajor bool) {
	for _, p := range Pieces(l, rows, cols, ndev) {
		if l.Kind == Replicated && p.Dev != 0 {
			continue
		}
		sld, _ := LocalShape(l, rows, cols, ndev, p.Dev)
		local := shards[p.Dev]
		for j := range p.Cols {
			src := local[p.LocalRow+(p.LocalCol+j)*sld:]
			if !rowMajor {
				copy(global[p.Row+(p.Col+j)*ld:][:p.Rows], src[:p.Rows])
				continue
			}
			for i := range p.Rows {
				global[(p.Row+i)*ld+p.Col+j] = src[i]
			}
		}
	}
}
