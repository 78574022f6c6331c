package lapack

import (
	"math"
	"sort"
)

const (
	dcLeaf     = 25  // subproblems up to this size are solved with QR iterations (dsteqr)
	dcParallel = 400 // subproblems from this size solve their halves concurrently

	dlamchE = 1.0 / (1 << 53) // relative machine precision (LAPACK dlamch('E'))
)

// Dstedc computes all eigenvalues and eigenvectors of the n×n symmetric
// tridiagonal matrix T with diagonal d (length n) and off-diagonal e (length
// n−1) by divide and conquer (LAPACK dstedc with compz = 'I'). On return d
// holds the eigenvalues in ascending order and the columns of the n×n block of
// z (column-major, leading dimension ldz ≥ max(1, n)) the orthonormal
// eigenvectors, column j belonging to d[j]; e is destroyed and rows n..ldz-1
// of z are not touched. Dstedc takes its workspace from a pool that later
// calls reuse.
//
// T is split where an off-diagonal entry is negligible (|e_i| ≤
// ε·√|d_i|·√|d_i+1|); each unreduced block is scaled to unit max-norm and
// solved by Cuppen's method as in dlaed0–dlaed4 (see dlaed.go and dlaed4.go):
// a rank-one tear cuts it in two, the halves are solved recursively
// (concurrently from order 400 on; blocks up to order 25 by QR iterations,
// dsteqr) and merged by solving the secular equation of a diagonal-plus-rank-one
// matrix, with deflation of negligible components and close poles and the
// Gu–Eisenstat recomputed vector, which keeps the eigenvectors orthogonal for
// clustered eigenvalues.
//
// Dstedc reports false (LAPACK's info > 0) when an iteration did not
// converge; d and z are then unspecified.
func Dstedc(n int, d, e []float64, z []float64, ldz int) bool {
	checkVector("Dstedc", "d", len(d), n)
	checkVector("Dstedc", "e", len(e), n-1)
	checkMatrix("Dstedc", "z", n, n, ldz, len(z))
	for j := 0; j < n; j++ {
		clear(z[j*ldz : j*ldz+n])
	}
	if n == 0 {
		return true
	}
	ws := dcWorkPool.Get().(*dcWork)
	defer dcWorkPool.Put(ws)
	start := 0
	for start < n {
		// Find the end of the unreduced block starting at start.
		end := start
		for end < n-1 {
			tiny := dlamchE * math.Sqrt(math.Abs(d[end])) * math.Sqrt(math.Abs(d[end+1]))
			if math.Abs(e[end]) <= tiny {
				e[end] = 0
				break
			}
			end++
		}
		m := end - start + 1
		q := z[start+start*ldz:]
		switch {
		case m == 1:
			q[0] = 1
		default:
			// Scale the block to unit max-norm (dlanst('M') / dlascl).
			orgnrm := 0.0
			for i := start; i <= end; i++ {
				orgnrm = max(orgnrm, math.Abs(d[i]))
				if i < end {
					orgnrm = max(orgnrm, math.Abs(e[i]))
				}
			}
			if orgnrm == 0 {
				for i := 0; i < m; i++ {
					q[i+i*ldz] = 1
				}
				break
			}
			for i := start; i <= end; i++ {
				d[i] /= orgnrm
				if i < end {
					e[i] /= orgnrm
				}
			}
			if !ws.solve(m, d[start:end+1], e[start:end], q, ldz) {
				return false
			}
			for i := start; i <= end; i++ {
				d[i] *= orgnrm
			}
		}
		start = end + 1
	}
	sortEigen(n, d, z, ldz)
	return true
}

// sortEigen sorts the eigenvalues ascending and permutes the columns of z
// along (a no-op when already sorted, the usual case within one block).
func sortEigen(n int, d []float64, z []float64, ldz int) {
	if sort.Float64sAreSorted(d[:n]) {
		return
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return d[idx[a]] < d[idx[b]] })
	permuteColumns(n, n, d, z, ldz, idx)
}

// permuteColumns reorders d (unless nil) and the columns of the rows×n
// matrix z so that new position p holds old position idx[p] (idx a
// permutation).
func permuteColumns(rows, n int, d []float64, z []float64, ldz int, idx []int) {
	tmp := make([]float64, rows)
	done := make([]bool, n)
	for p := 0; p < n; p++ {
		if done[p] || idx[p] == p {
			done[p] = true
			continue
		}
		// Follow the cycle starting at p.
		copy(tmp, z[p*ldz:p*ldz+rows])
		var dp float64
		if d != nil {
			dp = d[p]
		}
		cur := p
		for {
			src := idx[cur]
			done[cur] = true
			if src == p {
				copy(z[cur*ldz:cur*ldz+rows], tmp)
				if d != nil {
					d[cur] = dp
				}
				break
			}
			copy(z[cur*ldz:cur*ldz+rows], z[src*ldz:src*ldz+rows])
			if d != nil {
				d[cur] = d[src]
			}
			cur = src
		}
	}
}
