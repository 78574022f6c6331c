//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mgla/mgla/dist"
	"github.com/mgla/mgla/sharding"
)

// TestKernelMatrix checks the kernel matrix on every grid against
// sharding.KernelBlock of the whole matrix, bit for bit, and its gradient
// against sharding's of the whole K̄ (float32 and float64).
func TestKernelMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed, 61))
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		for _, s := range []struct{ n, d, nb int }{{1, 1, 1}, {7, 2, 3}, {10, 3, 4}} {
			x := make([]float64, s.n*s.d)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			p := sharding.KernelParams{Family: sharding.Matern52, LengthScale: 0.8, SignalVar: 1.3, NoiseVar: 0.2}
			all := make([]int, s.n)
			for i := range all {
				all[i] = i
			}
			want, err := sharding.KernelBlock(x, s.n, s.d, all, all, p)
			if err != nil {
				t.Fatal(err)
			}
			kbar := real64(randomDense[float64](rng, s.n, s.n))
			wantX, wantP, err := sharding.KernelBlockGrad(kbar, x, s.n, s.d, all, all, p)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%dx%d n=%d d=%d nb=%d seed=%d", pq[0], pq[1], s.n, s.d, s.nb, seed)
			kernelMatrixCase[float64](t, name, g, s.n, s.d, s.nb, x, p, want, kbar, wantX, wantP)
			kernelMatrixCase[float32](t, name, g, s.n, s.d, s.nb, x, p, want, kbar, wantX, wantP)
		}
	}
}

func kernelMatrixCase[T dist.Real](t *testing.T, name string, g *dist.Grid, n, d, nb int, x []float64, p sharding.KernelParams, want, kbar, wantX []float64, wantP sharding.KernelParams) {
	t.Helper()
	k, err := dist.KernelMatrix[T](g, x, n, d, nb, p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	full, err := k.Gather(-1)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range full {
		if v != T(want[i]) {
			t.Fatalf("%s %T: K[%d] = %v, want %v", name, v, i, v, T(want[i]))
		}
	}
	kb := make([]T, len(kbar))
	for i, v := range kbar {
		kb[i] = T(v)
	}
	kbm, err := dist.FromReplicated(g, n, n, nb, kb)
	if err != nil {
		t.Fatal(err)
	}
	xbar, pbar, err := dist.KernelMatrixGrad(kbm, x, d, p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tol := 1e-12
	if _, f32 := any(T(0)).(float32); f32 {
		tol = 1e-5 // K̄ rounded to float32
	}
	got := append([]float64{pbar.LengthScale, pbar.SignalVar, pbar.NoiseVar}, xbar...)
	exp := append([]float64{wantP.LengthScale, wantP.SignalVar, wantP.NoiseVar}, wantX...)
	for i := range exp {
		if math.Abs(got[i]-exp[i]) > tol*(1+math.Abs(exp[i])) {
			t.Errorf("%s %T: gradient %d = %v, want %v", name, *new(T), i, got[i], exp[i])
		}
	}
}

// TestKernelMatrixErrors: a NaN in one rank's blocks of K̄, bad parameters
// and ranks that pass different dimensions are the same error on every
// rank.
func TestKernelMatrixErrors(t *testing.T) {
	const n, d, nb = 6, 2, 2
	x := make([]float64, n*d)
	for i := range x {
		x[i] = float64(i % 5)
	}
	p := sharding.KernelParams{Family: sharding.SquaredExp, LengthScale: 1, SignalVar: 1, NoiseVar: 0.1}
	for _, pq := range grids() {
		g := newGrid(t, pq[0], pq[1])
		name := fmt.Sprintf("%dx%d", pq[0], pq[1])
		kbar, err := dist.NewMatrix[float64](g, n, n, nb)
		if err != nil {
			t.Fatal(err)
		}
		// K̄'s last element lives on the last process of the grid only.
		if pr, pc := g.Coords(); pr == (n-1)/nb%pq[0] && pc == (n-1)/nb%pq[1] {
			kbar.Local[len(kbar.Local)-1] = math.NaN()
		}
		_, _, err = dist.KernelMatrixGrad(kbar, x, d, p)
		if !errors.Is(err, dist.ErrNonFinite) || !strings.Contains(err.Error(), "at (5, 5)") {
			t.Errorf("%s: a NaN in K̄: %v, want ErrNonFinite at (5, 5)", name, err)
		}
		errorsAgree(t, err)

		// A finite K̄ whose gradient share goes beyond float64 on the rank
		// holding K̄'s first blocks only (a review's finding: that rank
		// said so, the others blamed the input).
		whole := make([]float64, n*n)
		whole[0], whole[1+n] = 1e308, 1e308
		big1, err := dist.FromReplicated(g, n, n, nb, whole)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = dist.KernelMatrixGrad(big1, x, d, p)
		if !errors.Is(err, dist.ErrNonFinite) || !strings.Contains(err.Error(), "beyond float64") {
			t.Errorf("%s: a share beyond float64: %v, want ErrNonFinite beyond float64", name, err)
		}
		errorsAgree(t, err)

		bad := p
		bad.LengthScale = -1
		_, err = dist.KernelMatrix[float64](g, x, n, d, nb, bad)
		if !errors.Is(err, dist.ErrBadInput) || !errors.Is(err, sharding.ErrBadInput) {
			t.Errorf("%s: ℓ = −1: %v, want ErrBadInput", name, err)
		}
		errorsAgree(t, err)
		big := p
		big.SignalVar = 1e39
		_, err = dist.KernelMatrix[float32](g, x, n, d, nb, big)
		if !errors.Is(err, dist.ErrNonFinite) {
			t.Errorf("%s: σ² beyond float32: %v, want ErrNonFinite", name, err)
		}
		errorsAgree(t, err)

		if world.Size() > 1 {
			dr := d
			if world.Rank() == 1 {
				dr = 1
			}
			_, err = dist.KernelMatrix[float64](g, x, n*d/dr, dr, nb, p)
			if !errors.Is(err, dist.ErrMismatch) {
				t.Errorf("%s: dimensions by rank: %v, want ErrMismatch", name, err)
			}
		}
		// The grid still works.
		if _, err := dist.KernelMatrix[float64](g, x, n, d, nb, p); err != nil {
			t.Errorf("%s: the next good call: %v", name, err)
		}
	}
}
