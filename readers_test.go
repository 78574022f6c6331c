package mgla_test

import (
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/ops"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestShardedNodeFeedsGorgoniaOp: a sharded node (a kernel matrix, a
// Cholesky factor, a Shard, a mesh collective's result) given to one of Gorgonia's own ops is a run's
// ErrBadInput that names ops.Gather, with both machines, gradients or not.
// Gorgonia's ops read host tensors only: Sum, Mean, Mul and Transpose
// panicked on the machine's goroutine, which ended the program, and Exp,
// Neg and Square returned no value and no error.
func TestShardedNodeFeedsGorgoniaOp(t *testing.T) {
	mesh, err := testMesh(t, 2)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		op   func(k, h *G.Node) (*G.Node, error)
	}{
		{"Sum", func(k, _ *G.Node) (*G.Node, error) { return G.Sum(k) }},
		{"Mean", func(k, _ *G.Node) (*G.Node, error) { return G.Mean(k) }},
		{"Mul(K, H)", func(k, h *G.Node) (*G.Node, error) { return G.Mul(k, h) }},
		{"Mul(H, K)", func(k, h *G.Node) (*G.Node, error) { return G.Mul(h, k) }},
		{"Transpose", func(k, _ *G.Node) (*G.Node, error) { return G.Transpose(k) }},
		{"Exp", func(k, _ *G.Node) (*G.Node, error) { return G.Exp(k) }},
		{"Neg", func(k, _ *G.Node) (*G.Node, error) { return G.Neg(k) }},
		{"Square", func(k, _ *G.Node) (*G.Node, error) { return G.Square(k) }},
		{"HadamardProd", func(k, h *G.Node) (*G.Node, error) { return G.HadamardProd(h, k) }},
		{"Add", func(k, h *G.Node) (*G.Node, error) { return G.Add(k, h) }},
	} {
		for _, src := range []string{"kernel matrix", "Cholesky", "Shard", "AllReduce"} {
			for _, grad := range []bool{false, true} {
				for _, lisp := range []bool{false, true} {
					t.Run(c.name+"/"+src+"/grad="+map[bool]string{false: "no", true: "yes"}[grad]+"/"+map[bool]string{false: "tape", true: "lisp"}[lisp], func(t *testing.T) {
						g := G.NewGraph()
						var x, ell, sig *G.Node
						if src == "kernel matrix" || src == "Cholesky" {
							x = G.NewVector(g, tensor.Float64, G.WithShape(4), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{0, 0.7, 1.4, 2.1}))))
							ell = G.NewScalar(g, tensor.Float64, G.WithName("ell"), G.WithValue(1.0))
							sig = G.NewScalar(g, tensor.Float64, G.WithName("sig"), G.WithValue(2.0))
						}
						h := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 4), G.WithName("h"), G.WithValue(tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(ones(16)))))
						var k *G.Node
						wrt := ell
						switch src {
						case "kernel matrix":
							k = must(mgla.SquaredExponential(x, ell, sig, nil, onMesh(mesh)))
						case "Cholesky":
							k = must(ops.Cholesky(must(mgla.SquaredExponential(x, ell, sig, nil, onMesh(mesh)))))
						case "Shard":
							k, wrt = must(ops.Shard(h, mesh, sharding.Cyclic(2))), h
						case "AllReduce": // a collective over the mesh's devices
							comm, err := collective.NewMesh(mesh)
							require.NoError(t, err)
							k, wrt = must(collective.AllReduceNode(must(ops.Shard(h, mesh, sharding.RowBlocks())), comm, collective.Sum)), h
						}
						require.True(t, ops.IsSharded(k))
						out, err := c.op(k, h)
						require.NoError(t, err)
						if !out.IsScalar() {
							out = G.Must(G.Sum(out))
						}
						cost := G.Must(G.Add(out, G.Must(G.Sum(h)))) // h a root of its own would upset the LispMachine
						if grad {
							if lisp {
								_ = cost // the LispMachine differentiates from the scalar root
							} else {
								_, err := G.Grad(cost, wrt)
								require.NoError(t, err)
							}
						}
						var m G.VM
						switch {
						case lisp && grad:
							m = G.NewLispMachine(g)
						case lisp:
							m = G.NewLispMachine(g, G.ExecuteFwdOnly())
						default:
							m = G.NewTapeMachine(g)
						}
						defer m.Close()
						err = m.RunAll()
						require.ErrorIs(t, mgla.Cause(err), mgla.ErrBadInput)
						require.ErrorContains(t, err, "ops.Gather")
					})
				}
			}
		}
	}
}
