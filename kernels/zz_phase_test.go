package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
)

func TestScratchPhases(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1000, 2000} {
		a := make([]float64, n*n)
		for i := range a {
			a[i] = rnd.NormFloat64()
		}
		d := make([]float64, n)
		e := make([]float64, n-1)
		tau := make([]float64, n-1)
		st := time.Now()
		dsytrdLower(n, a, n, d, e, tau)
		t.Logf("n=%d dsytrd %.3fs", n, time.Since(st).Seconds())
		z := make([]float64, n*n)
		st = time.Now()
		tridiagEig(n, d, e, z, n)
		t.Logf("n=%d stedc %.3fs", n, time.Since(st).Seconds())
		work := make([]float64, 1)
		lapackImpl.Dormlq(blas.Right, blas.NoTrans, n, n-1, n-1, a[1:], n, tau, z[1:], n, work, -1)
		work = make([]float64, int(work[0]))
		st = time.Now()
		lapackImpl.Dormlq(blas.Right, blas.NoTrans, n, n-1, n-1, a[1:], n, tau, z[1:], n, work, len(work))
		t.Logf("n=%d dormlq %.3fs", n, time.Since(st).Seconds())
	}
}
