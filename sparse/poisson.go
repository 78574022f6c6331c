package sparse

import "fmt"

// Poisson3D is rows [firstRow, firstRow+rows) of the 7-point finite
// difference Laplacian on an n×n×n grid with zero Dirichlet boundaries,
// scaled by h²: 6 on the diagonal, −1 for each neighbour (symmetric positive
// definite, order n³, the unknowns numbered x fastest). Pass firstRow 0 and
// rows n³ for the whole matrix.
func Poisson3D(n, firstRow, rows int) (*CSR, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: grid size %d", ErrBadInput, n)
	}
	order := n * n * n
	if firstRow < 0 || rows < 0 || firstRow+rows > order {
		return nil, fmt.Errorf("%w: rows [%d, %d) of %d", ErrBadInput, firstRow, firstRow+rows, order)
	}
	rowPtr := make([]int, 1, rows+1)
	colInd := make([]int, 0, 7*rows)
	vals := make([]float64, 0, 7*rows)
	for i := firstRow; i < firstRow+rows; i++ {
		x, y, z := i%n, (i/n)%n, i/(n*n)
		add := func(ok bool, j int, v float64) {
			if ok {
				colInd = append(colInd, j)
				vals = append(vals, v)
			}
		}
		add(z > 0, i-n*n, -1)
		add(y > 0, i-n, -1)
		add(x > 0, i-1, -1)
		add(true, i, 6)
		add(x < n-1, i+1, -1)
		add(y < n-1, i+n, -1)
		add(z < n-1, i+n*n, -1)
		rowPtr = append(rowPtr, len(colInd))
	}
	return NewRowBlock(order, firstRow, rowPtr, colInd, vals)
}

// BlockRows is the row block of rank r of size ranks for n rows: the first
// n mod size ranks get one row more. With more ranks than rows some blocks
// are empty: solves run, but a gradient graph on such a rank panics in
// Gorgonia, which cannot allocate a length-0 node's gradient (its own ops
// alike): take gradients with at most n ranks.
func BlockRows(n, rank, size int) (first, rows int) {
	q, m := n/size, n%size
	first = rank*q + min(rank, m)
	rows = q
	if rank < m {
		rows++
	}
	return first, rows
}
