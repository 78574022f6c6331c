package collective

import (
	"fmt"
	"testing"

	"github.com/mgla/mgla/sharding"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkGraphOverhead: an AllReduce of 8 B and 1 MiB on the one-rank process
// communicator, through the graph op on a TapeMachine and as one Comm.Do:
// the ratio is the graph layer's cost (the engine's own time is a copy).
func BenchmarkGraphOverhead(b *testing.B) {
	for _, n := range []int{1, 1 << 17} {
		b.Run(fmt.Sprintf("%dB", 8*n), func(b *testing.B) { benchGraphOverhead(b, n) })
	}
}

func benchGraphOverhead(b *testing.B, n int) {
	comm := Self()
	data := make([]float64, n)
	b.Run("do", func(b *testing.B) {
		s, _ := sharding.NewHostBuffer(data)
		r, _ := sharding.NewHostBuffer(make([]float64, n))
		call := &Call{Kind: AllReduce, Dtype: tensor.Float64, Count: n, Send: []sharding.Buffer{s}, Recv: []sharding.Buffer{r}}
		b.SetBytes(int64(8 * n))
		for b.Loop() {
			if err := comm.Do(call); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("graph", func(b *testing.B) {
		g := G.NewGraph()
		x := G.NewVector(g, tensor.Float64, G.WithShape(n), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(data))))
		if _, err := AllReduceNode(x, comm, Sum); err != nil {
			b.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		b.SetBytes(int64(8 * n))
		for b.Loop() {
			if err := vm.RunAll(); err != nil {
				b.Fatal(err)
			}
			vm.Reset()
		}
	})
}
