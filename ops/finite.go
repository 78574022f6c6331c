package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CheckFinite is x, a host value of a real dtype (a scalar, a vector or a
// matrix), as a new value, or ErrNonFinite naming what x is when x holds a
// NaN or an Inf: the check that mgla's ops make of their results, for a
// result that Gorgonia's own ops compute (the grid's GaussianLogDensity, a
// gradient Gorgonia multiplies). Its gradient is the identity.
func CheckFinite(x *gorgonia.Node, what string) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("%w: ops: CheckFinite of a nil node", sharding.ErrBadInput)
	}
	if dt := x.Dtype(); dt != tensor.Float64 && dt != tensor.Float32 {
		return nil, fmt.Errorf("%w: ops: CheckFinite of %v: want float32 or float64, got %v", sharding.ErrBadInput, x.Name(), dt)
	}
	if IsSharded(x) {
		return nil, fmt.Errorf("%w: ops: CheckFinite of %v: want a host node", sharding.ErrBadInput, x.Name())
	}
	return gorgonia.ApplyOp(&finiteOp{base: base{name: "CheckFinite"}, what: what}, x)
}

// finiteOp is CheckFinite's op.
type finiteOp struct {
	base
	what string
}

func (o *finiteOp) Arity() int { return 1 }
func (o *finiteOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (o *finiteOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (o *finiteOp) WriteHash(h hash.Hash)                                    { fmt.Fprintf(h, "finite|%s", o.what) }
func (o *finiteOp) Hashcode() uint32                                         { return hashOf(o) }

func (o *finiteOp) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	bad := func(i int, v float64) error {
		return fmt.Errorf("%w: %s: %v at element %d", kernels.ErrNonFinite, o.what, v, i)
	}
	switch x := vals[0].(type) {
	case *gorgonia.F64:
		if v := float64(*x); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, bad(0, v)
		}
		return gorgonia.NewF64(float64(*x)), nil
	case *gorgonia.F32:
		if v := float64(*x); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, bad(0, v)
		}
		return gorgonia.NewF32(float32(*x)), nil
	case tensor.Tensor:
		d, err := toHost(x)
		if err != nil {
			return nil, err
		}
		switch s := d.Data().(type) {
		case []float64:
			for i, v := range s {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, bad(i, v)
				}
			}
		case []float32:
			for i, v := range s {
				if w := float64(v); math.IsNaN(w) || math.IsInf(w, 0) {
					return nil, bad(i, w)
				}
			}
		default:
			return nil, fmt.Errorf("ops: %s: unsupported data %T", o, d.Data())
		}
		if d == x {
			d = d.Clone().(*tensor.Dense) // a new value, as every op returns
		}
		return d, nil
	}
	return nil, fmt.Errorf("ops: %s: unsupported value %T", o, vals[0])
}

func (o *finiteOp) DiffWRT(int) []bool { return []bool{true} }

func (o *finiteOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{grad}, nil
}

func (o *finiteOp) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, out *gorgonia.Node) error {
	return passGradient(in[0], out)
}
