package collective

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// For the mpi-tagged tests of package collective_test (which import
// collective/mpi, so they cannot be in this package).

// OpCase is one graph op of the test table.
type OpCase = opCase

// OpCases is the table of graph ops; rng must be seeded alike on every rank.
func OpCases(rng *rand.Rand, size int) []OpCase { return opCases(rng, size) }

func (oc OpCase) Name() string                                { return oc.name }
func (oc OpCase) Linear() bool                                { return oc.linear }
func (oc OpCase) Build(x *G.Node, comm Comm) (*G.Node, error) { return oc.build(x, comm) }

// ExpectedBlocks is what every rank's output block holds (row-major).
func ExpectedBlocks(oc OpCase, size int, blocks [][]complex128) [][]complex128 {
	return expectedBlocks(oc, size, blocks)
}

// SetSeed makes the tests' random data the same on every rank.
func SetSeed(s uint64) { seed = s }

// RandomValues, DenseOf, DenseValues, Tolerance and ErrorsIsDeep are the
// helpers of the single-process tests.
func RandomValues(rng *rand.Rand, dt tensor.Dtype, n int) []complex128 {
	return randomValues(rng, dt, n)
}
func Tolerance(dt tensor.Dtype) float64 { return tolerance(dt) }

// ReversedOf is the cached reversed copy of c that Scan's gradient runs on.
func ReversedOf(c Comm) (Comm, bool) {
	r, ok := reversedComms.Load(c)
	if !ok {
		return nil, false
	}
	return r.(Comm), true
}
