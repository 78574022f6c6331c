//go:build mglacuda

package mgla_test

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// collectiveCase builds one collective graph op on a mesh communicator.
type collectiveCase struct {
	name   string
	linear bool // has a gradient
	build  func(x *G.Node, c mgla.Comm) (*G.Node, error)
}

func collectiveCases(size int) []collectiveCase {
	ring := func(shift int) []int {
		out := make([]int, size)
		for r := range out {
			out[r] = (r + shift + size) % size
		}
		return out
	}
	root := size - 1
	return []collectiveCase{
		{"AllReduce(sum)", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.AllReduce(x, c, mgla.ReduceSum) }},
		{"AllReduce(max)", false, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.AllReduce(x, c, mgla.ReduceMax) }},
		{"AllGather", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.AllGather(x, c) }},
		{"ReduceScatter(sum)", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.ReduceScatter(x, c, mgla.ReduceSum) }},
		{"AllToAll", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.AllToAll(x, c) }},
		{"Bcast", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.Bcast(x, c, root) }},
		{"Reduce(sum)", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.Reduce(x, c, mgla.ReduceSum, root) }},
		{"Gather", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.Gather(x, c, root) }},
		{"Scatter", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.Scatter(x, c, root) }},
		{"Scan(sum)", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.Scan(x, c, mgla.ReduceSum) }},
		{"SendRecv(ring)", true, func(x *G.Node, c mgla.Comm) (*G.Node, error) {
			return mgla.SendRecv(x, c, ring(1), ring(-1), 0)
		}},
		{"Barrier", false, func(x *G.Node, c mgla.Comm) (*G.Node, error) { return mgla.Barrier(x, c) }},
	}
}

// runCollective runs op on x (placed in RowBlocks on comm's mesh) and, for
// linear float64 ops, the gradient of Σ w∘op(x); it returns the gathered
// output values and the gradient.
func runCollective(t *testing.T, m *sharding.Mesh, cc collectiveCase, dt tensor.Dtype, shape tensor.Shape, x, w []complex128) (out, grad []complex128, err error) {
	t.Helper()
	comm, err := mgla.NewMeshComm(m)
	require.NoError(t, err)
	g := G.NewGraph()
	xn := G.NewTensor(g, dt, len(shape), G.WithShape(shape...), G.WithName("x"), G.WithValue(denseFrom(dt, shape, x)))
	xs, err := ops.Shard(xn, m, sharding.RowBlocks())
	require.NoError(t, err)
	y, err := cc.build(xs, comm)
	if err != nil {
		return nil, nil, err
	}
	yh, err := ops.Gather(y)
	require.NoError(t, err)
	withGrad := cc.linear && dt == tensor.Float64
	if withGrad {
		wn := G.NewTensor(g, dt, yh.Dims(), G.WithShape(yh.Shape()...), G.WithName("w"), G.WithValue(denseFrom(dt, yh.Shape(), w[:yh.Shape().TotalSize()])))
		cost := G.Must(G.Sum(G.Must(G.HadamardProd(yh, wn))))
		_, err := G.Grad(cost, xn)
		require.NoError(t, err)
	}
	var yv G.Value
	G.Read(yh, &yv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, nil, mgla.Cause(err)
	}
	out = collectivetest.Values(yv.(*tensor.Dense))
	if withGrad {
		gv, err := xn.Grad()
		require.NoError(t, err)
		grad = collectivetest.Values(gv.(*tensor.Dense))
	}
	return out, grad, nil
}

func denseFrom(dt tensor.Dtype, shape tensor.Shape, v []complex128) *tensor.Dense {
	d := tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	for i := range shape.TotalSize() {
		switch s := d.Data().(type) {
		case []float32:
			s[i] = float32(real(v[i]))
		case []float64:
			s[i] = real(v[i])
		case []complex64:
			s[i] = complex64(v[i])
		case []complex128:
			s[i] = v[i]
		}
	}
	return d
}

// TestGPUCollectivesAgainstCPU runs every collective graph op on GPU meshes
// of 1 to 4 devices (NCCL) and on a CPU mesh of the same size (memory
// copies) with the same random data, every dtype (the integers NCCL moves
// too: 8, 32 and 64 bits, equal bit for bit), vectors and 3-column blocks,
// and compares the outputs and, for the linear ops in float64, the
// gradients from Grad + TapeMachine. Blocks of several columns that stack
// along rows are restacked on the devices (sharding.ExecutePlan on views).
func TestGPUCollectivesAgainstCPU(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, ids := range gpuMeshes(t) {
		size := len(ids)
		gpu, err := sharding.GPUMesh(ids...)
		require.NoError(t, err)
		cpu, err := sharding.CPUMesh(size)
		require.NoError(t, err)
		for _, cc := range collectiveCases(size) {
			for _, dt := range append(append([]tensor.Dtype(nil), sharding.Dtypes...), sharding.IntDtypes...) {
				complexDt := dt == tensor.Complex64 || dt == tensor.Complex128
				if complexDt && cc.name == "AllReduce(max)" || sharding.CheckGPUDtype(dt) != nil {
					continue // not defined for complex values; GPU meshes hold no 1- or 2-byte integers
				}
				for _, cols := range []int{0, 3} {
					rows := size * (1 + rng.IntN(3)) * 2 // per rank, divisible by size
					shape := tensor.Shape{size * rows}
					if cols > 0 {
						shape = tensor.Shape{size * rows, cols}
					}
					name := fmt.Sprintf("gpu%v/%s/%v/%v", ids, cc.name, dt, shape)
					if collectivetest.IsInteger(dt) { // bit for bit
						x := collectivetest.RandomInts(rng, dt, collective.Sum, shape.TotalSize(), size)
						got, err := runIntCollective(t, gpu, cc, shape, x)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						want, err := runIntCollective(t, cpu, cc, shape, x)
						require.NoError(t, err, name)
						require.Equal(t, want, got, name)
						continue
					}
					x := make([]complex128, shape.TotalSize())
					w := make([]complex128, 4*size*shape.TotalSize())
					for i := range x {
						x[i] = complex(rng.NormFloat64(), 0)
						if complexDt {
							x[i] += complex(0, rng.NormFloat64())
						}
					}
					for i := range w {
						w[i] = complex(rng.NormFloat64(), 0)
					}
					got, gotGrad, err := runCollective(t, gpu, cc, dt, shape, x, w)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					want, wantGrad, err := runCollective(t, cpu, cc, dt, shape, x, w)
					require.NoError(t, err, name)
					tol := 1e-12
					if dt == tensor.Float32 || dt == tensor.Complex64 {
						tol = 1e-5
					}
					require.Equal(t, len(want), len(got), name)
					for i := range want {
						if cmplx.Abs(got[i]-want[i]) > tol*(1+cmplx.Abs(want[i])) {
							t.Fatalf("%s: element %d = %v, CPU mesh %v", name, i, got[i], want[i])
						}
					}
					require.Equal(t, len(wantGrad), len(gotGrad), name)
					for i := range wantGrad {
						if math.Abs(real(gotGrad[i]-wantGrad[i])) > 1e-12*(1+math.Abs(real(wantGrad[i]))) {
							t.Fatalf("%s: gradient %d = %v, CPU mesh %v", name, i, gotGrad[i], wantGrad[i])
						}
					}
				}
			}
		}
	}
}

// runIntCollective runs op on the integer values x (a typed slice, placed in
// RowBlocks on m) and returns the gathered output's typed slice.
func runIntCollective(t *testing.T, m *sharding.Mesh, cc collectiveCase, shape tensor.Shape, x any) (any, error) {
	t.Helper()
	comm, err := mgla.NewMeshComm(m)
	require.NoError(t, err)
	g := G.NewGraph()
	v := reflect.ValueOf(x)
	backing := reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, v.Len()), v).Interface()
	dense := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
	xn := G.NewTensor(g, dense.Dtype(), len(shape), G.WithShape(shape...), G.WithName("x"), G.WithValue(dense))
	xs, err := ops.Shard(xn, m, sharding.RowBlocks())
	require.NoError(t, err)
	y, err := cc.build(xs, comm)
	if err != nil {
		return nil, err
	}
	yh, err := ops.Gather(y)
	require.NoError(t, err)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, mgla.Cause(err)
	}
	return yh.Value().Data(), nil
}
