package ops_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkCPUMeshPotrs times Potrs (factorization and solve, float64,
// N = 1000, one right-hand side) on CPU meshes of 2 and 3 devices against a
// one-device mesh, run in turns in the same process: over-1dev is the
// time on the mesh over the one-device time. The host kernels are the same;
// the difference is the gathers and scatters between the shards and the
// global matrix the kernels work on (on one device the shard is that
// matrix).
func BenchmarkCPUMeshPotrs(b *testing.B) {
	const n = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	a := diagonallyDominant(rng, n)
	y := make([]float64, n)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	machine := func(b *testing.B, devices int) G.VM {
		mesh, err := sharding.CPUMesh(devices)
		if err != nil {
			b.Fatal(err)
		}
		g := G.NewGraph()
		an := G.NewMatrix(g, tensor.Float64, G.WithShape(n, n), G.WithName("A"),
			G.WithValue(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))))
		yn := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("y"),
			G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(y))))
		if _, err := mgla.Potrs(an, yn, mgla.WithMesh(mesh)); err != nil {
			b.Fatal(err)
		}
		return G.NewTapeMachine(g)
	}
	run := func(b *testing.B, m G.VM) time.Duration {
		start := time.Now()
		m.Reset()
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for _, devices := range []int{2, 3} {
		b.Run(fmt.Sprintf("devices=%d", devices), func(b *testing.B) {
			single, mesh := machine(b, 1), machine(b, devices)
			defer single.Close()
			defer mesh.Close()
			run(b, single)
			run(b, mesh)
			var one, many time.Duration
			for b.Loop() {
				one += run(b, single)
				many += run(b, mesh)
			}
			b.ReportMetric(float64(many)/float64(one), "over-1dev")
		})
	}
}
