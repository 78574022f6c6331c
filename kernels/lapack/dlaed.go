package lapack

import (
	"math"
	"runtime"
	"sync"

	gonumlapack "gonum.org/v1/gonum/lapack"
)

// The divide and conquer recursion of Dstedc (LAPACK dlaed0–dlaed3): the
// matrix is cut in two by a rank-one tear, both halves are solved recursively
// and the halves are merged by solving the secular equation of a
// diagonal-plus-rank-one matrix (dlaed4.go). Deflation removes negligible
// components and (nearly) equal poles; the eigenvectors of the rank-one
// problem use the Gu–Eisenstat recomputed vector ẑ (Löwner's formula), which
// makes them numerically orthogonal even for clustered eigenvalues. The
// back-multiplication by the eigenvectors of the halves is a matrix product
// that exploits the block structure (top-only, mixed and bottom-only columns),
// and is where almost all of the time goes.

// dcWork holds the workspace of the divide and conquer recursion.
type dcWork struct {
	steqrZ, steqrW []float64
	qg             []float64 // the nonzero blocks of the old eigenvectors the product reads
	delta          []float64 // k×k secular differences, then U (rows in group order)
}

// dcWorkPool keeps the workspaces of earlier calls (each up to about four
// n×n matrices at the top merge) for the next ones, which would otherwise
// allocate them again; a sync.Pool drops what two garbage collections find
// unused.
var dcWorkPool = sync.Pool{New: func() any { return new(dcWork) }}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// solve computes the eigen-decomposition of the m×m unreduced tridiagonal
// (d, e) into the (zeroed) block q with leading dimension ldq. It reports
// false when an iteration did not converge.
func (w *dcWork) solve(m int, d, e []float64, q []float64, ldq int) bool {
	if m <= dcLeaf {
		zz := grow(w.steqrZ, m*m)
		w.steqrZ = zz
		wk := grow(w.steqrW, max(1, 2*(m-1)))
		w.steqrW = wk
		if !Dsteqr(gonumlapack.EVTridiag, m, d, e, zz, m, wk) {
			return false
		}
		// zz is row-major with eigenvectors in columns.
		for j := 0; j < m; j++ {
			col := q[j*ldq : j*ldq+m]
			for i := range col {
				col[i] = zz[i*m+j]
			}
		}
		return true
	}
	m1 := m / 2
	beta := e[m1-1]
	d[m1-1] -= math.Abs(beta)
	d[m1] -= math.Abs(beta)
	if m >= dcParallel && runtime.GOMAXPROCS(0) > 1 {
		// The halves are independent: solve the second one concurrently
		// with its own workspace.
		var ok2 bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			w2 := dcWorkPool.Get().(*dcWork)
			defer dcWorkPool.Put(w2)
			ok2 = w2.solve(m-m1, d[m1:], e[m1:], q[m1+m1*ldq:], ldq)
		}()
		ok1 := w.solve(m1, d[:m1], e[:m1-1], q, ldq)
		<-done
		if !ok1 || !ok2 {
			return false
		}
	} else {
		if !w.solve(m1, d[:m1], e[:m1-1], q, ldq) {
			return false
		}
		if !w.solve(m-m1, d[m1:], e[m1:], q[m1+m1*ldq:], ldq) {
			return false
		}
	}
	return w.merge(m, m1, d, beta, q, ldq)
}

// merge combines the eigen-decompositions of the two halves (eigenvalues in
// d[:m1] and d[m1:], both ascending; eigenvectors in the diagonal blocks of
// q) of T = diag(T1, T2) + |β|·v·vᵀ into that of T (dlaed1–dlaed3). It
// reports false when a secular equation did not converge.
func (w *dcWork) merge(m, m1 int, d []float64, beta float64, q []float64, ldq int) bool {
	n1 := m1
	// z = diag(Q1,Q2)ᵀ·v: last row of Q1 and sign(β)·first row of Q2.
	z := make([]float64, m)
	for j := 0; j < n1; j++ {
		z[j] = q[n1-1+j*ldq]
	}
	for j := n1; j < m; j++ {
		z[j] = q[n1+j*ldq]
	}
	rho := beta
	if rho < 0 {
		for j := n1; j < m; j++ {
			z[j] = -z[j]
		}
		rho = -rho
	}
	// ‖z‖² = 2: normalize.
	for j := range z {
		z[j] *= 1 / math.Sqrt2
	}
	rho *= 2

	// Merge the two ascending lists (dlamrg).
	perm := make([]int, m)
	{
		i, j := 0, n1
		for p := 0; p < m; p++ {
			if j >= m || (i < n1 && d[i] <= d[j]) {
				perm[p] = i
				i++
			} else {
				perm[p] = j
				j++
			}
		}
	}
	dl := make([]float64, m)
	zl := make([]float64, m)
	typ := make([]uint8, m) // 1: top rows only, 3: bottom rows only, 2: both
	zmax, dmax := 0.0, 0.0
	for p, src := range perm {
		dl[p] = d[src]
		zl[p] = z[src]
		if src < n1 {
			typ[p] = 1
		} else {
			typ[p] = 3
		}
		zmax = max(zmax, math.Abs(zl[p]))
		dmax = max(dmax, math.Abs(dl[p]))
	}
	tol := 8 * dlamchE * max(dmax, zmax)

	nondef := make([]int, 0, m) // positions (into dl) kept for the secular equation
	deflated := make([]int, 0, m)
	if rho*zmax <= tol {
		for p := 0; p < m; p++ {
			deflated = append(deflated, p)
		}
	} else {
		pj := -1
		for j := 0; j < m; j++ {
			if rho*math.Abs(zl[j]) <= tol {
				deflated = append(deflated, j)
				continue
			}
			if pj < 0 {
				pj = j
				continue
			}
			s := zl[pj]
			c := zl[j]
			tau := math.Hypot(c, s)
			t := dl[j] - dl[pj]
			c /= tau
			s = -s / tau
			if math.Abs(t*c*s) <= tol {
				// Rotate the two poles together; pj deflates.
				zl[j] = tau
				zl[pj] = 0
				cp := q[perm[pj]*ldq : perm[pj]*ldq+m]
				cj := q[perm[j]*ldq : perm[j]*ldq+m]
				for r := range cp {
					x, y := cp[r], cj[r]
					cp[r] = c*x + s*y
					cj[r] = c*y - s*x
				}
				if typ[pj] != typ[j] {
					typ[pj], typ[j] = 2, 2
				}
				t2 := dl[pj]*c*c + dl[j]*s*s
				dl[j] = dl[pj]*s*s + dl[j]*c*c
				dl[pj] = t2
				deflated = append(deflated, pj)
				pj = j
			} else {
				nondef = append(nondef, pj)
				pj = j
			}
		}
		if pj >= 0 {
			nondef = append(nondef, pj)
		}
	}
	k := len(nondef)

	lam := make([]float64, m) // eigenvalues: the k roots, then the deflated ones
	for c, p := range deflated {
		lam[k+c] = dl[p]
	}
	var order []int // the nondeflated coordinates grouped by type
	var k1, k2 int  // how many of type 1, of type 2
	if k > 0 {
		dlam := make([]float64, k)
		wv := make([]float64, k)
		for i, p := range nondef {
			dlam[i] = dl[p]
			wv[i] = zl[p]
		}
		delta := grow(w.delta, k*k)
		w.delta = delta
		var ok = true
		for i := 0; i < k; i++ {
			var conv bool
			lam[i], conv = secularRoot(i, dlam, wv, rho, delta[i*k:(i+1)*k])
			ok = ok && conv
		}
		if !ok {
			return false
		}
		// Gu–Eisenstat: recompute ẑ from the computed eigenvalues so that
		// the eigenvectors below are those of a nearby problem exactly.
		what := make([]float64, k)
		for j := 0; j < k; j++ {
			prod := delta[j+j*k]
			for i := 0; i < k; i++ {
				if i != j {
					prod *= delta[j+i*k] / (dlam[j] - dlam[i])
				}
			}
			what[j] = math.Copysign(math.Sqrt(math.Max(-prod, 0)), wv[j])
		}
		// U[:, i] = ẑ ./ (dlam - λ_i), normalized (in place over delta).
		for i := 0; i < k; i++ {
			col := delta[i*k : (i+1)*k]
			if k == 1 {
				col[0] = 1
				break
			}
			var nrm float64
			for j := range col {
				col[j] = what[j] / col[j]
			}
			nrm = 0
			scale := 0.0
			for _, v := range col {
				scale = max(scale, math.Abs(v))
			}
			for _, v := range col {
				t := v / scale
				nrm += t * t
			}
			nrm = scale * math.Sqrt(nrm)
			for j := range col {
				col[j] /= nrm
			}
		}
		// Group the nondeflated coordinates by type (1, 2, 3) so that the
		// product with the old eigenvectors skips the zero blocks: U's rows
		// in that order (in place, a column at a time).
		order = make([]int, 0, k)
		for _, want := range []uint8{1, 2, 3} {
			for i, p := range nondef {
				if typ[p] == want {
					order = append(order, i)
				}
			}
			switch want {
			case 1:
				k1 = len(order)
			case 2:
				k2 = len(order) - k1
			}
		}
		row := make([]float64, k)
		for col := 0; col < k; col++ {
			u := delta[col*k : (col+1)*k]
			for c, i := range order {
				row[c] = u[i]
			}
			copy(u, row)
		}
	}
	// The old eigenvectors that the product reads, only their nonzero rows:
	// qTop holds the top n1 rows of the columns of types 1 and 2, qBot the
	// bottom n2 rows of types 2 and 3, in the grouped order.
	n2 := m - n1
	qg := grow(w.qg, n1*(k1+k2)+n2*(k-k1))
	w.qg = qg
	qTop, qBot := qg[:n1*(k1+k2)], qg[n1*(k1+k2):]
	for c, i := range order {
		src := q[perm[nondef[i]]*ldq:]
		if c < k1+k2 {
			copy(qTop[c*n1:(c+1)*n1], src[:n1])
		}
		if c >= k1 {
			copy(qBot[(c-k1)*n2:(c-k1+1)*n2], src[n1:m])
		}
	}
	// Their columns of q are free now: the deflated vectors move to
	// columns k..m-1 (column k+c ← old column perm[deflated[c]]; the
	// nondeflated columns take the sources left over), and the product
	// writes the new vectors into columns 0..k-1.
	from := make([]int, m)
	taken := make([]bool, m)
	for c, p := range deflated {
		from[k+c] = perm[p]
		taken[perm[p]] = true
	}
	free := 0
	for c := 0; c < k; c++ {
		for taken[free] {
			free++
		}
		from[c] = free
		free++
	}
	permuteColumns(m, m, nil, q, ldq, from)
	if k > 0 {
		u := w.delta[:k*k]
		// Top rows: columns of type 1 and 2. Bottom rows: types 2 and 3.
		if k1+k2 > 0 {
			Dgemm(false, false, n1, k, k1+k2, 1, qTop, max(1, n1), u, k, 0, q, ldq)
		} else {
			for c := 0; c < k; c++ {
				clear(q[c*ldq : c*ldq+n1])
			}
		}
		if k-k1 > 0 {
			Dgemm(false, false, n2, k, k-k1, 1, qBot, max(1, n2), u[k1:], k, 0, q[n1:], ldq)
		} else {
			for c := 0; c < k; c++ {
				clear(q[c*ldq+n1 : c*ldq+m])
			}
		}
	}
	// Sort the merged eigenvalues, their vectors with them.
	copy(d[:m], lam)
	sortEigen(m, d, q, ldq)
	return true
}
