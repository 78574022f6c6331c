package sparse

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Pattern is the fixed structure of a square sparse matrix in compressed
// sparse row form: the global order N, the block of rows this process holds
// (all N rows on one process), and for each of those rows its column indices,
// global, strictly increasing. A Pattern is immutable once built; the values
// that go with it are a separate float64 vector of length NNZ (a graph node),
// so a solver built for a pattern is reused while the values change.
type Pattern struct {
	n        int   // global order
	firstRow int   // global index of the first local row
	rowPtr   []int // len rows+1, rowPtr[0] == 0
	colInd   []int // global column indices, sorted within each row
	diag     []int // position of each local row's diagonal entry in colInd, or -1
}

// N is the global order of the matrix.
func (p *Pattern) N() int { return p.n }

// Rows is the number of rows this process holds.
func (p *Pattern) Rows() int { return len(p.rowPtr) - 1 }

// FirstRow is the global index of the first row this process holds.
func (p *Pattern) FirstRow() int { return p.firstRow }

// NNZ is the number of stored entries in this process's rows.
func (p *Pattern) NNZ() int { return len(p.colInd) }

// RowPtr and ColInd return copies of the CSR index arrays (local rows, global
// columns).
func (p *Pattern) RowPtr() []int { return slices.Clone(p.rowPtr) }

// ColInd returns a copy of the column indices, sorted within each row.
func (p *Pattern) ColInd() []int { return slices.Clone(p.colInd) }

// Index is the position of entry (row, col) (global indices) in the values
// of a matrix of this pattern, and false when the entry is not stored or
// the row is not this process's: the constructors sort each row's columns
// (and FromTriplets sums duplicates), so values[k] need not be the k-th
// entry given. Values that depend on parameters (A(θ) = Σ θᵢ·Aᵢ on one
// pattern, say) are placed with it.
func (p *Pattern) Index(row, col int) (int, bool) {
	i := row - p.firstRow
	if i < 0 || i >= p.Rows() {
		return 0, false
	}
	lo, hi := p.rowPtr[i], p.rowPtr[i+1]
	k, found := slices.BinarySearch(p.colInd[lo:hi], col)
	return lo + k, found
}

// CSR is a square sparse matrix: a Pattern and its float64 values. Build it
// with NewCSR (CSR arrays) or FromTriplets (coordinate triplets); float32
// values are accepted and converted to float64 (hypre computes in float64).
type CSR struct {
	Pattern *Pattern
	Values  []float64
}

// Real is the value types the constructors accept.
type Real interface{ ~float32 | ~float64 }

// NewCSR builds an N×N matrix from CSR arrays: rowPtr of length N+1 starting
// at 0 and non-decreasing, colInd and values of length rowPtr[N]. Columns
// within a row may come in any order (they are sorted, values following);
// a column repeated within a row is an error (FromTriplets sums duplicates).
// Indices out of range, NaN and Inf values are errors wrapping ErrBadMatrix.
// The inputs are never modified.
func NewCSR[T Real](n int, rowPtr, colInd []int, values []T) (*CSR, error) {
	if len(rowPtr) != n+1 {
		return nil, fmt.Errorf("%w: not square: %d rows (rowPtr has %d entries) for order %d", ErrBadMatrix, len(rowPtr)-1, len(rowPtr), n)
	}
	return NewRowBlock(n, 0, rowPtr, colInd, values)
}

// NewRowBlock builds this process's block of rows of an N×N matrix that is
// distributed by rows over MPI processes (see the package doc, "MPI"): the
// block starts at global row firstRow and has len(rowPtr)−1 rows; column
// indices are global. On one process it is NewCSR. Same rules as NewCSR.
func NewRowBlock[T Real](n, firstRow int, rowPtr, colInd []int, values []T) (*CSR, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: order %d", ErrBadMatrix, n)
	}
	if len(rowPtr) == 0 {
		return nil, fmt.Errorf("%w: rowPtr is empty (want rows+1 entries)", ErrBadMatrix)
	}
	rows := len(rowPtr) - 1
	if firstRow < 0 || firstRow+rows > n {
		return nil, fmt.Errorf("%w: rows [%d, %d) outside [0, %d)", ErrBadMatrix, firstRow, firstRow+rows, n)
	}
	if rowPtr[0] != 0 {
		return nil, fmt.Errorf("%w: rowPtr[0] = %d, want 0", ErrBadMatrix, rowPtr[0])
	}
	for i := range rows {
		if rowPtr[i+1] < rowPtr[i] {
			return nil, fmt.Errorf("%w: rowPtr decreases at row %d (%d after %d)", ErrBadMatrix, i, rowPtr[i+1], rowPtr[i])
		}
	}
	nnz := rowPtr[rows]
	if len(colInd) != nnz || len(values) != nnz {
		return nil, fmt.Errorf("%w: rowPtr ends at %d but %d column indices and %d values", ErrBadMatrix, nnz, len(colInd), len(values))
	}
	p := &Pattern{n: n, firstRow: firstRow, rowPtr: slices.Clone(rowPtr), colInd: make([]int, nnz), diag: make([]int, rows)}
	vals := make([]float64, nnz)
	perm := make([]int, 0, 16)
	for i := range rows {
		lo, hi := rowPtr[i], rowPtr[i+1]
		perm = perm[:0]
		for k := lo; k < hi; k++ {
			if c := colInd[k]; c < 0 || c >= n {
				return nil, fmt.Errorf("%w: row %d: column %d outside [0, %d)", ErrBadMatrix, firstRow+i, c, n)
			}
			v := float64(values[k])
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: %w: row %d column %d is %v", ErrBadMatrix, ErrNonFinite, firstRow+i, colInd[k], v)
			}
			perm = append(perm, k)
		}
		sort.SliceStable(perm, func(a, b int) bool { return colInd[perm[a]] < colInd[perm[b]] })
		p.diag[i] = -1
		for j, k := range perm {
			c := colInd[k]
			if j > 0 && c == p.colInd[lo+j-1] {
				return nil, fmt.Errorf("%w: row %d: column %d appears twice (use FromTriplets to sum duplicates)", ErrBadMatrix, firstRow+i, c)
			}
			p.colInd[lo+j] = c
			vals[lo+j] = float64(values[k])
			if c == firstRow+i {
				p.diag[i] = lo + j
			}
		}
	}
	return &CSR{Pattern: p, Values: vals}, nil
}

// FromTriplets builds an N×N matrix from coordinate triplets (rows[k],
// cols[k], values[k]) in any order; entries at the same position are summed.
// Every row gets its own (possibly empty) row. Same errors as NewCSR; the
// inputs are never modified.
func FromTriplets[T Real](n int, rows, cols []int, values []T) (*CSR, error) {
	return rowBlockFromTriplets(n, 0, n, rows, cols, values)
}

// RowBlockFromTriplets builds this process's rows [firstRow, firstRow+count)
// of an N×N matrix from triplets whose rows all lie in that block;
// duplicates are summed.
func RowBlockFromTriplets[T Real](n, firstRow, count int, rows, cols []int, values []T) (*CSR, error) {
	return rowBlockFromTriplets(n, firstRow, count, rows, cols, values)
}

func rowBlockFromTriplets[T Real](n, firstRow, count int, rows, cols []int, values []T) (*CSR, error) {
	if len(rows) != len(cols) || len(rows) != len(values) {
		return nil, fmt.Errorf("%w: %d rows, %d columns and %d values in the triplets", ErrBadMatrix, len(rows), len(cols), len(values))
	}
	if count < 0 {
		return nil, fmt.Errorf("%w: %d rows", ErrBadMatrix, count)
	}
	for k, r := range rows {
		if r < firstRow || r >= firstRow+count || r >= n {
			return nil, fmt.Errorf("%w: triplet %d: row %d outside [%d, %d)", ErrBadMatrix, k, r, firstRow, min(firstRow+count, n))
		}
		if c := cols[k]; c < 0 || c >= n {
			return nil, fmt.Errorf("%w: triplet %d: column %d outside [0, %d)", ErrBadMatrix, k, c, n)
		}
	}
	order := make([]int, len(rows))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool {
		ka, kb := order[a], order[b]
		if rows[ka] != rows[kb] {
			return rows[ka] < rows[kb]
		}
		return cols[ka] < cols[kb]
	})
	rowPtr := make([]int, count+1)
	colInd := make([]int, 0, len(rows))
	vals := make([]float64, 0, len(rows))
	for j, k := range order {
		if j > 0 && rows[k] == rows[order[j-1]] && cols[k] == cols[order[j-1]] {
			vals[len(vals)-1] += float64(values[k])
			continue
		}
		rowPtr[rows[k]-firstRow+1]++
		colInd = append(colInd, cols[k])
		vals = append(vals, float64(values[k]))
	}
	for i := range count {
		rowPtr[i+1] += rowPtr[i]
	}
	return NewRowBlock(n, firstRow, rowPtr, colInd, vals)
}

// ValuesNode makes an input node of g holding a copy of the matrix values (a
// float64 vector of length NNZ): the node to pass to the solver's ops, and
// the node gradients flow to when it is a parameter. Rebind it with
// gorgonia.Let to new values on the same pattern.
func (a *CSR) ValuesNode(g *gorgonia.ExprGraph, name string) *gorgonia.Node {
	return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(a.Values)), gorgonia.WithName(name),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(a.Values)), tensor.WithBacking(slices.Clone(a.Values)))))
}

// MulVec returns A·x for a matrix held whole by this process (x of length N).
func (a *CSR) MulVec(x []float64) ([]float64, error) {
	p := a.Pattern
	if p.Rows() != p.n || len(x) != p.n {
		return nil, fmt.Errorf("%w: MulVec needs the whole matrix and a vector of length %d (have %d rows, vector %d)", ErrBadMatrix, p.n, p.Rows(), len(x))
	}
	y := make([]float64, p.n)
	p.mulVec(a.Values, x, y)
	return y, nil
}

// mulVec is y = A·x over the local rows, x global.
func (p *Pattern) mulVec(vals, x, y []float64) {
	for i := range p.Rows() {
		var s float64
		for k := p.rowPtr[i]; k < p.rowPtr[i+1]; k++ {
			s += vals[k] * x[p.colInd[k]]
		}
		y[i] = s
	}
}

// mulVecT is y = Aᵀ·x for a pattern holding every row.
func (p *Pattern) mulVecT(vals, x, y []float64) {
	clear(y)
	for i := range p.Rows() {
		xi := x[i]
		for k := p.rowPtr[i]; k < p.rowPtr[i+1]; k++ {
			y[p.colInd[k]] += vals[k] * xi
		}
	}
}

// zeroDiagonal returns the first local row whose diagonal is absent or zero,
// or −1.
func (p *Pattern) zeroDiagonal(vals []float64) int {
	for i, k := range p.diag {
		if k < 0 || vals[k] == 0 {
			return i
		}
	}
	return -1
}

// patternOuter writes out[k] = −u[row k]·v[col k] over the stored entries:
// the gradient −u·vᵀ restricted to the pattern; u is local, v global.
func (p *Pattern) patternOuter(u, v, out []float64) {
	for i := range p.Rows() {
		ui := u[i]
		for k := p.rowPtr[i]; k < p.rowPtr[i+1]; k++ {
			out[k] = -ui * v[p.colInd[k]]
		}
	}
}

func (p *Pattern) String() string {
	if p.Rows() == p.n {
		return fmt.Sprintf("%d×%d CSR, %d entries", p.n, p.n, p.NNZ())
	}
	return fmt.Sprintf("rows [%d, %d) of a %d×%d CSR, %d entries", p.firstRow, p.firstRow+p.Rows(), p.n, p.n, p.NNZ())
}

func checkFinite(what string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: %s[%d] is %v", ErrNonFinite, what, i, x)
		}
	}
	return nil
}
