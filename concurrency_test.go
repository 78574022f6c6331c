package mgla_test

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConcurrentGraphs backs the README's "Goroutines" paragraph: graphs
// built and run on several goroutines at once, on one shared mesh, one
// shared sharded input (ops.Input) and one shared in-process communicator,
// give what the same graph gives alone, bit for bit — forward values and
// gradients, on both machines, in float32 and float64. The make target
// race runs it under the race detector. Each graph has its own host
// tensors: Gorgonia's machines set the engine of every host input value
// they are made for, a write that races between graphs sharing one (the
// README says so).
func TestConcurrentGraphs(t *testing.T) {
	const n, goroutines, runs = 6, 4, 3
	mesh, err := testMesh(t, 3)
	require.NoError(t, err)
	comm, err := mgla.NewMeshComm(mesh)
	require.NoError(t, err)
	rng := newRNG(t, 41)
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			full, _ := hpd(rng, n, false)
			shared, err := sharding.Put(toDense(dt, full, n, n), mesh, sharding.Cyclic(4))
			require.NoError(t, err)
			defer shared.Free()
			bs := make([][]complex128, goroutines)
			for i := range bs {
				bs[i] = randomMatrix(rng, n, 1, false)
			}
			// run builds the graph for right-hand side bv and runs it once:
			// x = A⁻¹b, log det A, the AllReduce of b's row blocks, and the
			// gradient of sum(x) + log det A + sum(AllReduce(b)) for b.
			run := func(bv []complex128, lisp bool) ([]G.Value, error) {
				g := G.NewGraph()
				a := ops.Input(g, shared, "A")
				b := G.NewVector(g, dt, G.WithShape(n), G.WithName("b"), G.WithValue(toDense(dt, bv, n)))
				x, err := mgla.Potrs(a, b, onMesh(mesh), mgla.WithTile(4))
				if err != nil {
					return nil, err
				}
				ld, err := mgla.LogDet(a, onMesh(mesh))
				if err != nil {
					return nil, err
				}
				bShard, err := ops.Shard(b, mesh, sharding.RowBlocks())
				if err != nil {
					return nil, err
				}
				y, err := mgla.AllReduce(bShard, comm, mgla.ReduceSum)
				if err != nil {
					return nil, err
				}
				yHost, err := ops.Gather(y)
				if err != nil {
					return nil, err
				}
				cost := G.Must(G.Add(G.Must(G.Add(G.Must(G.Sum(x)), ld)), G.Must(G.Sum(yHost))))
				var vm G.VM
				if lisp {
					vm = G.NewLispMachine(g)
				} else {
					if _, err := G.Grad(cost, b); err != nil {
						return nil, err
					}
					vm = G.NewTapeMachine(g)
				}
				defer vm.Close()
				if err := vm.RunAll(); err != nil {
					return nil, mgla.Cause(err)
				}
				gb, err := b.Grad()
				if err != nil {
					return nil, err
				}
				return []G.Value{x.Value(), ld.Value(), yHost.Value(), gb}, nil
			}
			for _, lisp := range []bool{false, true} {
				t.Run(map[bool]string{false: "tape", true: "lisp"}[lisp], func(t *testing.T) {
					// Alone, one graph at a time (which also fills the
					// cached hashes of Gorgonia's shared constant nodes
					// before the goroutines start: the README's warm-up).
					alone := make([][]G.Value, goroutines)
					for i, bv := range bs {
						alone[i], err = run(bv, lisp)
						require.NoError(t, err)
					}
					var wg sync.WaitGroup
					errs := make([]error, goroutines)
					for i := range goroutines {
						wg.Go(func() {
							for r := range runs {
								got, err := run(bs[i], lisp)
								if err == nil {
									for k := range got {
										if fmt.Sprint(elementBits(t, got[k])) != fmt.Sprint(elementBits(t, alone[i][k])) {
											err = fmt.Errorf("run %d: output %d differs from the graph run alone", r, k)
											break
										}
									}
								}
								if err != nil {
									errs[i] = err
									return
								}
							}
						})
					}
					wg.Wait()
					for i, err := range errs {
						require.NoError(t, err, "goroutine %d (seed %d)", i, testSeed)
					}
				})
			}
			// What the graph gives alone is right: against float64 values
			// computed here, x = A⁻¹b, log det A, AllReduce's blocks
			// b₀+b₁+b₂ on each of the 3 ranks, and the gradient A⁻¹·1 + 3
			// (AllReduce-sum's adjoint sums the ranks' ones).
			got, err := run(bs[0], false)
			require.NoError(t, err)
			a := mat.NewSymDense(n, nil)
			for i := range n {
				for j := range n {
					a.SetSym(i, j, real(full[i*n+j]))
				}
			}
			var chol mat.Cholesky
			require.True(t, chol.Factorize(a))
			b := make([]float64, n)
			for i := range b {
				b[i] = real(bs[0][i])
			}
			var x, ainv1 mat.VecDense
			require.NoError(t, chol.SolveVecTo(&x, mat.NewVecDense(n, b)))
			ones := mat.NewVecDense(n, nil)
			for i := range n {
				ones.SetVec(i, 1)
			}
			require.NoError(t, chol.SolveVecTo(&ainv1, ones))
			var y, gb []float64
			for range 3 {
				for i := range n / 3 {
					y = append(y, b[i]+b[n/3+i]+b[2*n/3+i])
				}
			}
			for i := range n {
				gb = append(gb, ainv1.AtVec(i)+3)
			}
			tol := tolerance(dt)
			for k, want := range [][]float64{x.RawVector().Data, {chol.LogDet()}, y, gb} {
				have := grValue(t, got[k])
				require.Len(t, have, len(want))
				for i := range want {
					require.InDelta(t, want[i], have[i], tol*(1+math.Abs(want[i])), "output %d element %d (seed %d)", k, i, testSeed)
				}
			}
		})
	}
}
