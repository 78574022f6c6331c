package sharding

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/mgla/mgla/cyclic"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// call runs fn and turns a panic into a test failure that names the case,
// so that one bad case does not stop the others.
func call(t *testing.T, name string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panicked: %v", name, r)
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return fn()
}

func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

// A freed tensor is never handed back by Reuse: the graph that frees last
// run's output and runs again (Shard → Gather, RunAll, Free, Reset, RunAll)
// gets fresh shards.
func TestReuseAfterFree(t *testing.T) {
	mesh, err := CPUMesh(2)
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		free   bool
		reused bool
	}{{"live", false, true}, {"freed", true, false}} {
		prev, err := New(mesh, tensor.Shape{3, 3}, tensor.Float64, Cyclic(2))
		require.NoError(t, err)
		if c.free {
			prev.Free()
		}
		out, err := Reuse(prev, mesh, tensor.Shape{3, 3}, tensor.Float64, Cyclic(2))
		require.NoError(t, err, c.name)
		require.Equal(t, c.reused, out == prev, c.name)
		host := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(seq(9)))
		require.NoError(t, call(t, c.name, func() error { return out.Load(host) }), c.name)
		var back *tensor.Dense
		require.NoError(t, call(t, c.name, func() (err error) { back, err = out.Gather(); return err }), c.name)
		require.Equal(t, seq(9), back.Data(), c.name)
		_, err = HostShards[float64](out)
		require.NoError(t, err, c.name)
	}
}

// Every exported entry point that reads or writes the shards of a freed
// tensor returns ErrFreed (or, for the few that return no error, does
// nothing), and so do a nil and a zero *Tensor.
func TestFreedTensor(t *testing.T) {
	mesh, err := CPUMesh(2)
	require.NoError(t, err)
	host := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(seq(9)))
	x3 := []complex128{1, 2, 3}
	y, yAbs := make([]complex128, 3), make([]float64, 3)
	ops := []struct {
		name string
		fn   func(x, live *Tensor) error
	}{
		{"Gather", func(x, _ *Tensor) error { _, err := x.Gather(); return err }},
		{"GatherInto", func(x, _ *Tensor) error {
			return x.GatherInto(tensor.New(tensor.WithShape(3, 3), tensor.Of(tensor.Float64)))
		}},
		{"Load", func(x, _ *Tensor) error { return x.Load(host) }},
		{"Relayout", func(x, _ *Tensor) error { _, err := x.Relayout(RowBlocks()); return err }},
		{"RelayoutInto source", func(x, live *Tensor) error { return x.RelayoutInto(live) }},
		{"RelayoutInto destination", func(x, live *Tensor) error { return live.RelayoutInto(x) }},
		{"Clone", func(x, _ *Tensor) error { // a freed tensor's clone is freed
			c, err := x.Clone()
			if err != nil {
				return err
			}
			return c.(*Tensor).usable()
		}},
		{"AddScaled receiver", func(x, live *Tensor) error { return x.AddScaled(1, live) }},
		{"AddScaled argument", func(x, live *Tensor) error { return live.AddScaled(1, x) }},
		{"Diagonal", func(x, _ *Tensor) error { _, err := x.Diagonal(); return err }},
		{"CheckFinite", func(x, _ *Tensor) error { return x.CheckFinite(false) }},
		{"CheckDiagonal", func(x, _ *Tensor) error { return x.CheckDiagonal() }},
		{"MirrorLower", func(x, _ *Tensor) error { return x.MirrorLower() }},
		{"ZeroStrictUpper", func(x, _ *Tensor) error { return x.ZeroStrictUpper() }},
		{"SetIdentity", func(x, _ *Tensor) error { return x.SetIdentity() }},
		{"SetIdentityColumns", func(x, _ *Tensor) error { return x.SetIdentityColumns(1) }},
		{"MulLower", func(x, _ *Tensor) error { _, _, err := x.MulLower(x3, nil, false, false); return err }},
		{"MulLowerInto", func(x, _ *Tensor) error { return x.MulLowerInto(y, yAbs, x3, nil, true, true) }},
		{"MulHermitian", func(x, _ *Tensor) error { _, _, err := x.MulHermitian(x3, nil); return err }},
		{"MulHermitianInto", func(x, _ *Tensor) error { return x.MulHermitianInto(y, yAbs, x3, nil) }},
		{"MulCholesky", func(x, _ *Tensor) error { _, _, err := x.MulCholesky(x3, nil); return err }},
		{"MulCholeskyInto", func(x, _ *Tensor) error { return x.MulCholeskyInto(y, yAbs, x3, nil) }},
		{"HostShards", func(x, _ *Tensor) error { _, err := HostShards[float64](x); return err }},
	}
	bad := []struct {
		name string
		make func() *Tensor
		want error // nil: any error
	}{
		{"freed", func() *Tensor {
			x, err := Put(host, mesh, Cyclic(2))
			require.NoError(t, err)
			x.Free()
			return x
		}, ErrFreed},
		{"freed twice", func() *Tensor {
			x, err := Put(host, mesh, Cyclic(2))
			require.NoError(t, err)
			x.Free()
			x.Free()
			return x
		}, ErrFreed},
		{"nil", func() *Tensor { return nil }, nil},
		{"zero", func() *Tensor { return &Tensor{} }, nil},
	}
	for _, b := range bad {
		for _, op := range ops {
			name := b.name + " " + op.name
			live, err := Put(host, mesh, RowBlocks())
			require.NoError(t, err)
			err = call(t, name, func() error { return op.fn(b.make(), live) })
			if b.want != nil {
				assert.ErrorIs(t, err, b.want, name)
			} else {
				assert.Error(t, err, name)
			}
			// The live operand is untouched.
			back, err := live.Gather()
			require.NoError(t, err, name)
			assert.Equal(t, seq(9), back.Data(), name)
		}
	}
	// The entry points that return no error do nothing on a freed tensor.
	x, err := Put(host, mesh, Cyclic(2))
	require.NoError(t, err)
	x.Free()
	for _, c := range []struct {
		name string
		fn   func() error
	}{
		{"Zero", func() error { x.Zero(); return nil }},
		{"ZeroValue", func() error {
			if x.ZeroValue() != x {
				return fmt.Errorf("ZeroValue returned another value")
			}
			return nil
		}},
		{"Shard", func() error {
			if b := x.Shard(0); b != nil {
				return fmt.Errorf("Shard of a freed tensor: %v", b)
			}
			return nil
		}},
		{"Format", func() error { _ = fmt.Sprintf("%+v %#v %v", x, x, x); return nil }},
		{"Free", func() error { x.Free(); return nil }},
	} {
		assert.NoError(t, call(t, c.name, c.fn), c.name)
	}
}

// Load reads views and lazily transposed host tensors as they appear;
// GatherInto refuses a destination that does not own contiguous memory
// and leaves it (and its parent) alone.
func TestLoadGatherIntoViews(t *testing.T) {
	mesh, err := CPUMesh(3)
	require.NoError(t, err)
	big := func() *tensor.Dense { return tensor.New(tensor.WithShape(4, 3), tensor.WithBacking(seq(12))) }
	loads := []struct {
		name string
		host func() *tensor.Dense
		want []float64 // row-major
	}{
		{"rows 1–2", func() *tensor.Dense {
			v, err := big().Slice(tensor.S(1, 3))
			require.NoError(t, err)
			return v.(*tensor.Dense)
		}, []float64{4, 5, 6, 7, 8, 9}},
		{"columns 1–2", func() *tensor.Dense {
			v, err := big().Slice(nil, tensor.S(1, 3))
			require.NoError(t, err)
			return v.(*tensor.Dense)
		}, []float64{2, 3, 5, 6, 8, 9, 11, 12}},
		{"lazy transpose", func() *tensor.Dense {
			d := big()
			require.NoError(t, d.T())
			return d
		}, []float64{1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12}},
		{"dense", big, seq(12)},
	}
	for _, c := range loads {
		for _, layout := range []Layout{Replicated(), RowBlocks(), ColBlocks(), Cyclic(1)} {
			h := c.host()
			st, err := New(mesh, h.Shape(), tensor.Float64, layout)
			require.NoError(t, err)
			assert.NoError(t, call(t, c.name, func() error { return st.Load(h) }), c.name)
			back, err := st.Gather()
			require.NoError(t, err)
			assert.Equal(t, c.want, back.Data(), "%s %v", c.name, layout)
		}
	}

	dests := []struct {
		name string
		dst  func(parent *tensor.Dense) *tensor.Dense
	}{
		{"row view", func(p *tensor.Dense) *tensor.Dense {
			v, err := p.Slice(tensor.S(1, 3))
			require.NoError(t, err)
			return v.(*tensor.Dense)
		}},
		{"column view", func(p *tensor.Dense) *tensor.Dense {
			v, err := p.Slice(nil, tensor.S(0, 2))
			require.NoError(t, err)
			return v.(*tensor.Dense)
		}},
		{"lazy transpose", func(p *tensor.Dense) *tensor.Dense {
			require.NoError(t, p.T())
			return p
		}},
	}
	for _, c := range dests {
		parent := big()
		dst := c.dst(parent)
		src, err := New(mesh, dst.Shape(), tensor.Float64, Cyclic(1)) // zeros
		require.NoError(t, err)
		err = call(t, c.name, func() error { return src.GatherInto(dst) })
		assert.ErrorContains(t, err, "Gather", c.name)
		assert.Equal(t, seq(12), parent.Data(), "%s: the parent was written", c.name)
	}
}

// Nil and degenerate arguments get errors, not panics.
func TestBadArguments(t *testing.T) {
	mesh, err := CPUMesh(2)
	require.NoError(t, err)
	host := tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(seq(9)))
	x, err := Put(host, mesh, RowBlocks())
	require.NoError(t, err)
	hb := &HostBuffer{data: make([]float64, 4)}
	plan, err := cyclic.NewPlan(2, 2, 1, cyclic.Layout{Kind: cyclic.Replicated}, cyclic.Layout{Kind: cyclic.Replicated})
	require.NoError(t, err)
	cases := []struct {
		name string
		fn   func() error
	}{
		{"RelayoutInto(nil)", func() error { return x.RelayoutInto(nil) }},
		{"Load(nil)", func() error { return x.Load(nil) }},
		{"GatherInto(nil)", func() error { return x.GatherInto(nil) }},
		{"AddScaled(1, nil)", func() error { return x.AddScaled(1, nil) }},
		{"View(nil, 0, 0)", func() error { _, err := View(nil, 0, 0); return err }},
		{"View(typed nil, 0, 0)", func() error { _, err := View((*HostBuffer)(nil), 0, 0); return err }},
		{"View(b, 1, MaxInt)", func() error { _, err := View(hb, 1, math.MaxInt); return err }},
		{"View(b, MaxInt, 1)", func() error { _, err := View(hb, math.MaxInt, 1); return err }},
		{"View(b, 5, 0)", func() error { _, err := View(hb, 5, 0); return err }},
		{"ExecutePlan(nil plan)", func() error {
			return ExecutePlan(nil, tensor.Float64, []Buffer{hb}, []Buffer{hb})
		}},
		{"ExecutePlan(zero plan)", func() error { return ExecutePlan(&cyclic.Plan{}, tensor.Float64, nil, nil) }},
		{"ExecutePlan(nil src)", func() error {
			return ExecutePlan(plan, tensor.Float64, []Buffer{nil}, []Buffer{hb})
		}},
		{"ExecutePlan(nil dst)", func() error {
			return ExecutePlan(plan, tensor.Float64, []Buffer{hb}, []Buffer{nil})
		}},
		{"ExecutePlan(typed nil src)", func() error {
			return ExecutePlan(plan, tensor.Float64, []Buffer{(*HostBuffer)(nil)}, []Buffer{hb})
		}},
		{"Put(zero mesh)", func() error { _, err := Put(host, &Mesh{}, RowBlocks()); return err }},
		{"Put(nil mesh)", func() error { _, err := Put(host, nil, RowBlocks()); return err }},
		{"Put(nil host)", func() error { _, err := Put(nil, mesh, RowBlocks()); return err }},
		{"Put(nil *Dense)", func() error { _, err := Put((*tensor.Dense)(nil), mesh, RowBlocks()); return err }},
		{"New(zero mesh)", func() error { _, err := New(&Mesh{}, tensor.Shape{2, 2}, tensor.Float64, RowBlocks()); return err }},
		// Shapes whose element count overflows, or that no allocator serves
		// (the latter used to panic in the allocating goroutine).
		{"New(2³²×2³²)", func() error {
			_, err := New(mesh, tensor.Shape{1 << 32, 1 << 32}, tensor.Float64, RowBlocks())
			return err
		}},
		{"New(3×2⁶²)", func() error { _, err := New(mesh, tensor.Shape{3, 1 << 62}, tensor.Float64, RowBlocks()); return err }},
		{"New(2²⁴×2²⁴)", func() error {
			_, err := New(mesh, tensor.Shape{1 << 24, 1 << 24}, tensor.Float64, RowBlocks())
			return err
		}},
		// Plans that would copy out of their buffers, before any copy.
		{"ExecutePlan(short src)", func() error {
			return ExecutePlan(plan, tensor.Float64, []Buffer{&HostBuffer{data: make([]float64, 3)}}, []Buffer{hb})
		}},
		{"ExecutePlan(short dst view)", func() error {
			v, err := View(hb, 0, 3)
			require.NoError(t, err)
			return ExecutePlan(plan, tensor.Float64, []Buffer{hb}, []Buffer{v})
		}},
		{"ExecutePlan(move out of range)", func() error {
			bad := *plan
			bad.Moves = []cyclic.Move{{Rows: 2, Cols: 1}, {SrcCol: 1, DstCol: 1, Rows: 2, Cols: 2}}
			return ExecutePlan(&bad, tensor.Float64, []Buffer{hb}, []Buffer{hb})
		}},
		{"ExecutePlan(device out of range)", func() error {
			bad := *plan
			bad.Moves = []cyclic.Move{{SrcDev: 3, Rows: 2, Cols: 2}}
			return ExecutePlan(&bad, tensor.Float64, []Buffer{hb}, []Buffer{hb})
		}},
		{"ExecutePlan(zero tile)", func() error {
			bad := *plan
			bad.From = cyclic.Cyclic(0)
			return ExecutePlan(&bad, tensor.Float64, []Buffer{hb}, []Buffer{hb})
		}},
	}
	for _, c := range cases {
		assert.Error(t, call(t, c.name, c.fn), c.name)
	}
	// The valid edge cases still work.
	for _, c := range []struct {
		name    string
		b       Buffer
		off, n  int
		wantLen int
	}{{"empty at the end", hb, 4, 0, 0}, {"whole", hb, 0, 4, 4}, {"zero HostBuffer", &HostBuffer{}, 0, 0, 0}} {
		var v Buffer
		if assert.NoError(t, call(t, c.name, func() (err error) { v, err = View(c.b, c.off, c.n); return err }), c.name) {
			assert.Equal(t, c.wantLen, v.Len(), c.name)
		}
	}
	require.NoError(t, ExecutePlan(plan, tensor.Float64, []Buffer{hb}, []Buffer{&HostBuffer{data: make([]float64, 4)}}))
	assert.Equal(t, []float64{0, 0, 0, 0}, hb.data, "a refused plan copied into its buffer")

	// Small answers on nil, zero and freed values.
	var none *Tensor
	assert.True(t, none.Same(nil))
	assert.False(t, x.Same(nil))
	assert.Equal(t, CPU, (&Mesh{}).Kind())
	assert.Error(t, (&Mesh{}).Validate())
	assert.Error(t, (*Mesh)(nil).Validate())
	assert.NoError(t, mesh.Validate())
	for _, d := range []int{-1, 2, 5} {
		r, c := x.LocalShape(d)
		assert.Equal(t, [2]int{0, 0}, [2]int{r, c}, "LocalShape(%d)", d)
	}
	assert.NotNil(t, x.Data())
	x.Free()
	assert.Nil(t, x.Data(), "Data of a freed tensor")
}

// A column-major host tensor (tensor.AsFortran) and a view go in and come out
// in their logical order (RowMajorDense; Put used to refuse column-major).
func TestColumnMajorHostTensors(t *testing.T) {
	// [[0 1 2 3] [4 5 6 7] [8 9 10 11]] stored column-major.
	colMajor := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}), tensor.AsFortran(nil))
	want := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	rm, err := RowMajorDense(colMajor)
	require.NoError(t, err)
	require.Equal(t, want, rm.Data())
	require.False(t, rm.DataOrder().IsColMajor())
	// Three axes: element (i, j, k) of a 2×3×2 tensor holds 6i+2j+k.
	backing := make([]float64, 12)
	for i := range 2 {
		for j := range 3 {
			for k := range 2 {
				backing[i+2*j+6*k] = float64(6*i + 2*j + k)
			}
		}
	}
	rm3, err := RowMajorDense(tensor.New(tensor.WithShape(2, 3, 2), tensor.WithBacking(backing), tensor.AsFortran(nil)))
	require.NoError(t, err)
	require.Equal(t, want, rm3.Data())
	// A row-major tensor is returned as it is.
	plain := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4}))
	same, err := RowMajorDense(plain)
	require.NoError(t, err)
	require.Same(t, plain, same)
	for _, ndev := range []int{1, 3} {
		mesh, err := CPUMesh(ndev)
		require.NoError(t, err)
		for _, l := range []Layout{RowBlocks(), ColBlocks(), Cyclic(3), Replicated()} {
			x, err := Put(colMajor, mesh, l)
			require.NoError(t, err, "%v", l)
			got, err := x.Gather()
			require.NoError(t, err)
			require.Equal(t, want, got.Data(), "%d devices %v", ndev, l)
		}
	}
	// Views, and strided tensors that are not views: a Clone of a view keeps
	// its strides over the whole backing span (the LispMachine's gradient
	// accumulator of a view input is one), which was read as contiguous.
	full := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(slices.Clone(want)))
	mesh, err := CPUMesh(2)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		in   *tensor.Dense
		want []float64
	}{
		{"view", sliced(t, full, false, nil, tensor.S(1, 3)), []float64{1, 2, 5, 6, 9, 10}},
		{"clone of a view", sliced(t, full, true, nil, tensor.S(1, 3)), []float64{1, 2, 5, 6, 9, 10}},
		{"clone of a column", sliced(t, full, true, nil, tensor.S(1)), []float64{1, 5, 9}},
		{"clone of a column-major view", sliced(t, colMajor, true, tensor.S(0, 2), tensor.S(1, 3)), []float64{1, 2, 5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.in.Data().([]float64))
			rm, err := RowMajorDense(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, rm.Data())
			x, err := Put(tc.in, mesh, RowBlocks())
			require.NoError(t, err)
			got, err := x.Gather()
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Data())
			require.Equal(t, before, tc.in.Data(), "the input changed")
		})
	}
}

// TestInNodeShape: a host value that Gorgonia's Let bound to a node of an
// equivalent shape (Shape.Eq) comes out in the node's shape, in logical
// order, with the input untouched; other values come out as they are.
func TestInNodeShape(t *testing.T) {
	backing := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8}
	matrix := func() *tensor.Dense {
		return tensor.New(tensor.WithShape(3, 3), tensor.WithBacking(slices.Clone(backing)))
	}
	vec := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking([]float64{1, 2, 3}))
	}
	column := func(clone bool) *tensor.Dense { return sliced(t, matrix(), clone, nil, tensor.S(1)) } // (3), strided
	for _, tc := range []struct {
		name      string
		in        *tensor.Dense
		node      tensor.Shape
		want      tensor.Shape
		wantData  []float64
		sameValue bool // the input itself comes back
	}{
		{"(3) for (1, 3)", vec(3), tensor.Shape{1, 3}, tensor.Shape{1, 3}, []float64{1, 2, 3}, false},
		{"(3) for (3, 1)", vec(3), tensor.Shape{3, 1}, tensor.Shape{3, 1}, []float64{1, 2, 3}, false},
		{"(1, 3) for (3)", vec(1, 3), tensor.Shape{3}, tensor.Shape{3}, []float64{1, 2, 3}, false},
		{"(3, 1) for (3)", vec(3, 1), tensor.Shape{3}, tensor.Shape{3}, []float64{1, 2, 3}, false},
		{"strided column for (1, 3)", column(false), tensor.Shape{1, 3}, tensor.Shape{1, 3}, []float64{1, 4, 7}, false},
		{"clone of a strided column for (3, 1)", column(true), tensor.Shape{3, 1}, tensor.Shape{3, 1}, []float64{1, 4, 7}, false},
		{"column-major (1, 3) for (3)", tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float64{1, 2, 3}), tensor.AsFortran(nil)), tensor.Shape{3}, tensor.Shape{3}, []float64{1, 2, 3}, false},
		{"already the node's shape", vec(1, 3), tensor.Shape{1, 3}, tensor.Shape{1, 3}, []float64{1, 2, 3}, true},
		{"a shape Let refuses", vec(3), tensor.Shape{1, 2}, tensor.Shape{3}, []float64{1, 2, 3}, true},
		{"a scalar node", vec(3), tensor.Shape{}, tensor.Shape{3}, []float64{1, 2, 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shapeBefore := tc.in.Shape().Clone()
			dataBefore := slices.Clone(tc.in.Data().([]float64))
			got, err := InNodeShape(tc.in, tc.node)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Shape())
			rm, err := RowMajorDense(got)
			require.NoError(t, err)
			require.Equal(t, tc.wantData, rm.Data())
			require.Equal(t, tc.sameValue, got == tc.in)
			require.Equal(t, shapeBefore, tc.in.Shape(), "the input's shape changed")
			require.Equal(t, dataBefore, tc.in.Data(), "the input changed")
		})
	}
}

// sliced is d sliced by s: a view, or with clone a Clone of the view (a
// strided tensor that is not a view).
func sliced(t *testing.T, d *tensor.Dense, clone bool, s ...tensor.Slice) *tensor.Dense {
	t.Helper()
	v, err := d.Slice(s...)
	require.NoError(t, err)
	if clone {
		return v.(*tensor.Dense).Clone().(*tensor.Dense)
	}
	return v.(*tensor.Dense)
}

// TestRowAgainstColumnVector: a (1, n) and an (n) tensor (tensor.Shape.Eq
// takes one for the other) are a row and a column to the shards, so
// AddScaled, RelayoutInto and CopyTo refuse the pair with a shape error
// before writing anything (AddScaled indexed past the source's shard and
// panicked after writing device 0's part), and Reuse makes a new tensor.
func TestRowAgainstColumnVector(t *testing.T) {
	for ndev := 1; ndev <= 3; ndev++ {
		mesh, err := CPUMesh(ndev)
		require.NoError(t, err)
		for _, layout := range []Layout{ColBlocks(), RowBlocks(), Cyclic(2), Replicated()} {
			name := fmt.Sprintf("%d devices, %v", ndev, layout)
			dst, err := New(mesh, tensor.Shape{6}, tensor.Float64, layout)
			require.NoError(t, err, name)
			row, err := Put(tensor.New(tensor.WithShape(1, 6), tensor.WithBacking(seq(6))), mesh, layout)
			require.NoError(t, err, name)
			for _, c := range []struct {
				op string
				fn func() error
			}{
				{"AddScaled", func() error { return dst.AddScaled(1, row) }},
				{"RelayoutInto", func() error { return row.RelayoutInto(dst) }},
				{"CopyTo", func() error { return row.CopyTo(dst) }},
			} {
				var err error
				require.NotPanics(t, func() { err = c.fn() }, "%s: %s", name, c.op)
				require.ErrorContains(t, err, "(1, 6)", "%s: %s", name, c.op)
				back, err := dst.Gather()
				require.NoError(t, err, name)
				require.Equal(t, make([]float64, 6), back.Data(), "%s: %s wrote into its destination", name, c.op)
			}
			reused, err := Reuse(row, mesh, tensor.Shape{6}, tensor.Float64, layout)
			require.NoError(t, err, name)
			require.NotSame(t, row, reused, "%s: Reuse of a row for a column", name)
			require.Nil(t, row.Shard(ndev), "%s: a device not in the mesh", name)
			require.Nil(t, row.Shard(-1), "%s: a device not in the mesh", name)
		}
	}
}
