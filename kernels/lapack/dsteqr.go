package lapack

import (
	"math"
	"sort"

	gonumlapack "gonum.org/v1/gonum/lapack"
	gonumimpl "gonum.org/v1/gonum/lapack/gonum"
)

// Dsteqr is LAPACK's dsteqr (gonum's pure-Go one, in every build) for the
// eigenvalues of the symmetric tridiagonal matrix of diagonal d and
// off-diagonal e (destroyed),
// ascending in d, and with compz gonumlapack.EVTridiag its eigenvectors in
// the columns of the row-major n×n z: run on one unreduced block at a time,
// split by dsteqr's own test, then sorted. Gonum's dsteqr (v0.17.0) keeps
// the scale flag of a block it scaled (norm below √safmin/ε² ≈ 1e-122) for
// the blocks after it, where LAPACK resets it per block: a tiny block before
// one of normal size gave the second's eigenvalues times about 1e122,
// silently. One block at a time, each call scales at most its own. compz is
// EVCompNone or EVTridiag; work holds max(1, 2n−2) elements.
func Dsteqr(compz gonumlapack.EVComp, n int, d, e, z []float64, ldz int, work []float64) bool {
	vectors := compz == gonumlapack.EVTridiag
	if !vectors && compz != gonumlapack.EVCompNone {
		panic("lapack: Dsteqr takes EVCompNone or EVTridiag")
	}
	if vectors {
		for i := range n {
			clear(z[i*ldz : i*ldz+n])
		}
	}
	for lo := 0; lo < n; {
		hi := lo // the block's last row
		for ; hi < n-1; hi++ {
			tst := math.Abs(e[hi])
			if tst == 0 || tst <= math.Sqrt(math.Abs(d[hi]))*math.Sqrt(math.Abs(d[hi+1]))*dlamchE {
				e[hi] = 0
				break
			}
		}
		switch k := hi - lo + 1; {
		case k > 1:
			zb := []float64{0} // not referenced without vectors
			if vectors {
				zb = z[lo*ldz+lo:]
			}
			if !(gonumimpl.Implementation{}).Dsteqr(compz, k, d[lo:hi+1], e[lo:hi], zb, ldz, work[:2*k-2]) {
				return false
			}
		case vectors:
			z[lo*ldz+lo] = 1
		}
		lo = hi + 1
	}
	// Each block's eigenvalues come back ascending; the whole must be (as
	// in LAPACK, a sort of the values alone, or a selection sort moving the
	// vectors with their values).
	if !vectors {
		sort.Float64s(d[:n])
		return true
	}
	for i := range n - 1 {
		k := i
		for j := i + 1; j < n; j++ {
			if d[j] < d[k] {
				k = j
			}
		}
		if k == i {
			continue
		}
		d[i], d[k] = d[k], d[i]
		for r := range n {
			z[r*ldz+i], z[r*ldz+k] = z[r*ldz+k], z[r*ldz+i]
		}
	}
	return true
}
