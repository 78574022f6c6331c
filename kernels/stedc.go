package kernels

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"sort"

	gonumlapack "gonum.org/v1/gonum/lapack"

	"github.com/mgla/mgla/kernels/cpubackend"
	"github.com/mgla/mgla/kernels/lapack"
)

// Tridiagonal divide and conquer (Cuppen's method as in LAPACK's dstedc /
// dlaed0–dlaed4): the matrix is cut in two by a rank-one tear, both halves are
// solved recursively and the halves are merged by solving the secular
// equation of a diagonal-plus-rank-one matrix. Deflation removes negligible
// components and (nearly) equal poles; the eigenvectors of the rank-one
// problem use the Gu–Eisenstat recomputed vector ẑ (Löwner's formula), which
// makes them numerically orthogonal even for clustered eigenvalues. The
// back-multiplication by the eigenvectors of the halves is a matrix product
// that exploits the block structure (top-only, mixed and bottom-only columns),
// and is where almost all of the time goes.

const (
	dcLeaf     = 25  // subproblems up to this size are solved with QR iterations (dsteqr)
	dcParallel = 400 // subproblems from this size solve their halves concurrently

	dlamchE = 1.0 / (1 << 53) // relative machine precision (LAPACK dlamch('E'))
)

// tridiagEig computes all eigenvalues (ascending, returned in d) and the
// orthonormal eigenvectors (columns of the n×n column-major z) of the
// symmetric tridiagonal matrix with diagonal d and off-diagonal e (length
// n-1, destroyed).
func tridiagEig(n int, d, e []float64, z []float64, ldz int) error {
	for j := 0; j < n; j++ {
		clear(z[j*ldz : j*ldz+n])
	}
	if n == 0 {
		return nil
	}
	ws := &dcWork{}
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
			if err := ws.solve(m, d[start:end+1], e[start:end], q, ldz); err != nil {
				return err
			}
			for i := start; i <= end; i++ {
				d[i] *= orgnrm
			}
		}
		start = end + 1
	}
	sortEigen(n, d, z, ldz)
	return nil
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

// permuteColumns reorders d and the columns of the rows×n matrix z so that new
// position p holds old position idx[p]. idx is destroyed.
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
		dp := d[p]
		cur := p
		for {
			src := idx[cur]
			done[cur] = true
			if src == p {
				copy(z[cur*ldz:cur*ldz+rows], tmp)
				d[cur] = dp
				break
			}
			copy(z[cur*ldz:cur*ldz+rows], z[src*ldz:src*ldz+rows])
			d[cur] = d[src]
			cur = src
		}
	}
}

// dcWork holds the workspace of the divide and conquer recursion.
type dcWork struct {
	steqrZ, steqrW []float64
	out            []float64 // m×m: new eigenvectors, then deflated columns
	qg             []float64 // m×k gathered old eigenvector columns
	delta          []float64 // k×k secular differences, then U
	ug             []float64 // k×k rows of U in group order
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// solve computes the eigen-decomposition of the m×m unreduced tridiagonal
// (d, e) into the (zeroed) block q with leading dimension ldq.
func (w *dcWork) solve(m int, d, e []float64, q []float64, ldq int) error {
	if m <= dcLeaf {
		zz := grow(w.steqrZ, m*m)
		w.steqrZ = zz
		wk := grow(w.steqrW, max(1, 2*(m-1)))
		w.steqrW = wk
		if !cpubackend.LAPACK.Dsteqr(gonumlapack.EVTridiag, m, d, e, zz, m, wk) {
			return ErrNoConvergence
		}
		// zz is row-major with eigenvectors in columns.
		for j := 0; j < m; j++ {
			col := q[j*ldq : j*ldq+m]
			for i := range col {
				col[i] = zz[i*m+j]
			}
		}
		return nil
	}
	m1 := m / 2
	beta := e[m1-1]
	d[m1-1] -= math.Abs(beta)
	d[m1] -= math.Abs(beta)
	if m >= dcParallel && runtime.GOMAXPROCS(0) > 1 {
		// The halves are independent: solve the second one concurrently
		// with its own workspace.
		var err2 error
		done := make(chan struct{})
		go func() {
			defer close(done)
			w2 := &dcWork{}
			err2 = w2.solve(m-m1, d[m1:], e[m1:], q[m1+m1*ldq:], ldq)
		}()
		err1 := w.solve(m1, d[:m1], e[:m1-1], q, ldq)
		<-done
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
	} else {
		if err := w.solve(m1, d[:m1], e[:m1-1], q, ldq); err != nil {
			return err
		}
		if err := w.solve(m-m1, d[m1:], e[m1:], q[m1+m1*ldq:], ldq); err != nil {
			return err
		}
	}
	return w.merge(m, m1, d, beta, q, ldq)
}

// merge combines the eigen-decompositions of the two halves (eigenvalues in
// d[:m1] and d[m1:], both ascending; eigenvectors in the diagonal blocks of
// q) of T = diag(T1, T2) + |β|·v·vᵀ into that of T (dlaed1–dlaed3).
func (w *dcWork) merge(m, m1 int, d []float64, beta float64, q []float64, ldq int) error {
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

	out := grow(w.out, m*m)
	w.out = out
	lam := make([]float64, m) // eigenvalues matching the columns of out
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
			return ErrNoConvergence
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
		// product with the old eigenvectors skips the zero blocks.
		order := make([]int, 0, k)
		var k1, k2 int
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
		qg := grow(w.qg, m*k)
		w.qg = qg
		ug := grow(w.ug, k*k)
		w.ug = ug
		for c, i := range order {
			copy(qg[c*m:(c+1)*m], q[perm[nondef[i]]*ldq:perm[nondef[i]]*ldq+m])
			for col := 0; col < k; col++ {
				ug[c+col*k] = delta[i+col*k]
			}
		}
		n2 := m - n1
		// Top rows: columns of type 1 and 2. Bottom rows: types 2 and 3.
		if k1+k2 > 0 {
			lapack.Dgemm(false, false, n1, k, k1+k2, 1, qg, m, ug, k, 0, out, m)
		} else {
			for c := 0; c < k; c++ {
				clear(out[c*m : c*m+n1])
			}
		}
		if k-k1 > 0 {
			lapack.Dgemm(false, false, n2, k, k-k1, 1, qg[n1+k1*m:], m, ug[k1:], k, 0, out[n1:], m)
		} else {
			for c := 0; c < k; c++ {
				clear(out[c*m+n1 : (c+1)*m])
			}
		}
	}
	for c, p := range deflated {
		copy(out[(k+c)*m:(k+c+1)*m], q[perm[p]*ldq:perm[p]*ldq+m])
		lam[k+c] = dl[p]
	}
	// Sort the merged eigenvalues and write them back with their vectors.
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	if !slices.IsSorted(lam) {
		sort.SliceStable(idx, func(a, b int) bool { return lam[idx[a]] < lam[idx[b]] })
	}
	for p, src := range idx {
		d[p] = lam[src]
		copy(q[p*ldq:p*ldq+m], out[src*m:(src+1)*m])
	}
	return nil
}

// secularRoot finds the i-th smallest root λ of the secular equation
//
//	f(λ) = 1 + ρ·Σ_j w_j²/(dlam_j − λ) = 0,
//
// dlam strictly increasing, ρ > 0, all w_j ≠ 0 (dlaed4). The root lies in
// (dlam_i, dlam_{i+1}), or (dlam_{k-1}, dlam_{k-1}+ρ‖w‖²] for the last one. It
// is computed as λ = origin + τ with origin the closer pole, so that the
// differences delta_j = dlam_j − λ = (dlam_j − origin) − τ, returned in delta,
// are accurate. The iteration fits a two-pole rational model at each step
// (quadratically convergent) and is safeguarded by a bracket with bisection.
func secularRoot(i int, dlam, w []float64, rho float64, delta []float64) (float64, bool) {
	k := len(dlam)
	if k == 1 {
		t := rho * w[0] * w[0]
		delta[0] = -t
		return dlam[0] + t, true
	}
	var origin, lo, hi, tau float64
	if i < k-1 {
		gap := dlam[i+1] - dlam[i]
		mid := gap / 2
		g := 1 / rho
		for j := 0; j < k; j++ {
			g += w[j] * w[j] / ((dlam[j] - dlam[i]) - mid)
		}
		if g > 0 {
			origin, lo, hi, tau = dlam[i], 0, mid, mid
		} else {
			origin, lo, hi, tau = dlam[i+1], -mid, 0, -mid
		}
	} else {
		var s float64
		for _, v := range w {
			s += v * v
		}
		origin, lo, hi, tau = dlam[k-1], 0, rho*s, rho*s
	}
	rhoinv := 1 / rho
	const maxIter = 2000
	for iter := 0; iter < maxIter; iter++ {
		for j := 0; j < k; j++ {
			delta[j] = (dlam[j] - origin) - tau
		}
		// ψ: poles left of the root (j ≤ i), φ: poles right of it.
		var psi, dpsi, phi, dphi, erretm float64
		last := i
		for j := 0; j <= last; j++ {
			if delta[j] == 0 {
				return origin + tau, true
			}
			t := w[j] / delta[j]
			psi += w[j] * t
			dpsi += t * t
			erretm += psi
		}
		erretm = math.Abs(erretm)
		for j := k - 1; j > last; j-- {
			if delta[j] == 0 {
				return origin + tau, true
			}
			t := w[j] / delta[j]
			phi += w[j] * t
			dphi += t * t
			erretm += phi
		}
		g := rhoinv + psi + phi
		erretm = 8*(phi-psi) + erretm + 2*rhoinv + 3*math.Abs(tau)*(dpsi+dphi)
		if math.Abs(g) <= dlamchE*erretm {
			return origin + tau, true
		}
		if g < 0 {
			lo = tau
		} else {
			hi = tau
		}
		if hi-lo <= 2*dlamchE*math.Max(math.Abs(lo), math.Abs(hi)) {
			return origin + tau, true
		}
		// Two-pole rational model: C + B1/(p1−s) + B2/(p2−s) with p1, p2 the
		// differences to the two poles nearest the root, s the step in τ.
		var p1, p2, b1, b2, c float64
		if i < k-1 {
			p1, p2 = delta[i], delta[i+1]
			b1 = dpsi * p1 * p1
			b2 = dphi * p2 * p2
			c = rhoinv + (psi - dpsi*p1) + (phi - dphi*p2)
		} else {
			// Last root: the pole k-1 exactly, the rest modeled at pole k-2.
			p1, p2 = delta[k-1], delta[k-2]
			t := w[k-1] / p1
			b1 = w[k-1] * w[k-1]
			rpsi := psi - w[k-1]*t
			rdpsi := dpsi - t*t
			b2 = rdpsi * p2 * p2
			c = rhoinv + (rpsi - rdpsi*p2)
		}
		a := c*(p1+p2) + b1 + b2
		b := p1 * p2 * g
		next := math.NaN()
		inside := func(s float64) bool {
			t := tau + s
			return t > lo && t < hi
		}
		if c == 0 {
			if a != 0 && inside(b/a) {
				next = tau + b/a
			}
		} else {
			disc := a*a - 4*b*c
			if disc < 0 {
				disc = 0
			}
			qq := 0.5 * (a + math.Copysign(math.Sqrt(disc), a))
			r1 := qq / c
			r2 := math.NaN()
			if qq != 0 {
				r2 = b / qq
			}
			in1 := !math.IsNaN(r1) && inside(r1)
			in2 := !math.IsNaN(r2) && inside(r2)
			switch {
			case in1 && in2:
				if math.Abs(r1) < math.Abs(r2) {
					next = tau + r1
				} else {
					next = tau + r2
				}
			case in1:
				next = tau + r1
			case in2:
				next = tau + r2
			}
		}
		if math.IsNaN(next) {
			next = lo + (hi-lo)/2
		}
		if next == tau {
			return origin + tau, true
		}
		tau = next
	}
	for j := 0; j < k; j++ {
		delta[j] = (dlam[j] - origin) - tau
	}
	return origin + tau, false
}
