//go:build mpi

package dist

// ScaLAPACKIndex exposes scalapackIndex to the tests.
var ScaLAPACKIndex = scalapackIndex

// DirectPotrs is the baseline of BenchmarkPotrs: p?potrf then p?potrs
// called straight on preallocated copies l and x of a and b, no checks.
func DirectPotrs[T Scalar](a, b, l, x *Matrix[T]) int {
	copy(l.Local, a.Local)
	copy(x.Local, b.Local)
	if info := potrf(l); info != 0 {
		return info
	}
	return potrs(l, x)
}

// GatherGemr2d exposes gatherGemr2d to BenchmarkGather and its test.
func GatherGemr2d[T Scalar](m *Matrix[T]) []T { return gatherGemr2d(m) }
