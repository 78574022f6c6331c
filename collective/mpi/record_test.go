package mpi

import (
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, name := range []string{"", "grad", strings.Repeat("long name ", 10)} {
		c := &collective.Call{Kind: collective.Reduce, Op: collective.Max, Root: 3, Dtype: tensor.Complex64, Count: 1000, Name: name}
		r := callRecord(c, 41)
		w := make([]int64, recordWords)
		r.encode(w)
		got, ok := decodeRecord(w)
		if !ok || got != r {
			t.Fatalf("%q: decoded %+v (ok %v), want %+v", name, got, ok, r)
		}
		if len(got.name) > nameBytes || !strings.HasPrefix(name, got.name) {
			t.Errorf("name %q from %q", got.name, name)
		}
	}
	if _, ok := decodeRecord(make([]int64, recordWords)); ok {
		t.Error("zero words decoded as a record")
	}
}

// TestCallRecordIgnoresUnusedFields: fields a kind does not use do not make
// ranks disagree.
func TestCallRecordIgnoresUnusedFields(t *testing.T) {
	a := callRecord(&collective.Call{Kind: collective.AllGather, Root: 2, Op: collective.Prod, Dtype: tensor.Float64, Count: 3}, 0)
	b := callRecord(&collective.Call{Kind: collective.AllGather, Dtype: tensor.Float64, Count: 3}, 0)
	if msg := mismatch([]record{a, b}); msg != "" {
		t.Errorf("AllGather with different roots and ops: %q", msg)
	}
	x := callRecord(&collective.Call{Kind: collective.Barrier, Dtype: tensor.Float64, Count: 3}, 5)
	y := callRecord(&collective.Call{Kind: collective.Barrier}, 5)
	if msg := mismatch([]record{x, y}); msg != "" {
		t.Errorf("Barriers with different counts: %q", msg)
	}
}

func TestMismatchMessages(t *testing.T) {
	call := func(kind collective.Kind, dt tensor.Dtype, count int, name string) *collective.Call {
		return &collective.Call{Kind: kind, Dtype: dt, Count: count, Name: name}
	}
	cases := []struct {
		name  string
		calls []*collective.Call
		seqs  []int64 // nil: all 7
		want  string
	}{
		{"agree", []*collective.Call{call(collective.AllReduce, tensor.Float64, 6, "g"), call(collective.AllReduce, tensor.Float64, 6, "g")}, nil, ""},
		{"one count differs", []*collective.Call{
			call(collective.AllReduce, tensor.Float64, 6, ""), call(collective.AllReduce, tensor.Float64, 6, ""),
			call(collective.AllReduce, tensor.Float64, 5, ""), call(collective.AllReduce, tensor.Float64, 6, "")}, nil,
			"AllReduce #7: rank 2 has count 5, ranks 0,1,3 have count 6"},
		{"two fields, titled by the majority", []*collective.Call{
			call(collective.Bcast, tensor.Float32, 6, "b"), call(collective.AllGather, tensor.Float64, 6, "a"),
			call(collective.AllGather, tensor.Float64, 6, "a")}, nil,
			`AllGather "a" #7: rank 0 has kind Bcast, ranks 1,2 have kind AllGather; rank 0 has name "b", ranks 1,2 have name "a"; rank 0 has dtype float32, ranks 1,2 have dtype float64`},
		{"even split, ties by lowest rank", []*collective.Call{
			call(collective.Scan, tensor.Float64, 1, ""), call(collective.Scan, tensor.Float64, 2, "")}, nil,
			"Scan #7: rank 0 has count 1, rank 1 has count 2"},
		{"call numbers", []*collective.Call{call(collective.Barrier, tensor.Float64, 0, ""), call(collective.Barrier, tensor.Float64, 0, "")},
			[]int64{3, 4}, "Barrier #3: rank 0 has call number 3, rank 1 has call number 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := make([]record, len(tc.calls))
			for i, c := range tc.calls {
				seq := int64(7)
				if tc.seqs != nil {
					seq = tc.seqs[i]
				}
				recs[i] = callRecord(c, seq)
			}
			if got := mismatch(recs); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPairMismatch(t *testing.T) {
	send := callRecord(&collective.Call{Kind: collective.SendRecv, Dtype: tensor.Float64, Count: 6, Name: "x"}, 0)
	same := callRecord(&collective.Call{Kind: collective.Recv, Dtype: tensor.Float64, Count: 6, Name: "y"}, 0)
	if msg := pairMismatch(&send, &same, 0, 1, 5); msg != "" {
		t.Errorf("matching transfer: %q", msg)
	}
	other := callRecord(&collective.Call{Kind: collective.Recv, Dtype: tensor.Complex128, Count: 6}, 0)
	want := `SendRecv "x" rank 0 → rank 1 (tag 5): rank 0 sends 6 float64, rank 1 receives 6 complex128`
	if msg := pairMismatch(&send, &other, 0, 1, 5); msg != want {
		t.Errorf("got  %q\nwant %q", msg, want)
	}
}

// Every dtype a collective moves has its own record code, shown by its name;
// the codes of the float dtypes keep their version-1 values.
func TestDtypeCodes(t *testing.T) {
	seen := map[int64]tensor.Dtype{}
	for _, dt := range append(append([]tensor.Dtype(nil), sharding.Dtypes...), sharding.IntDtypes...) {
		code := dtypeCode(dt)
		if code < 0 {
			t.Fatalf("%v has no code", dt)
		}
		if other, ok := seen[code]; ok {
			t.Fatalf("%v and %v share code %d", dt, other, code)
		}
		seen[code] = dt
		if name := dtypeName(code); name != dt.String() {
			t.Errorf("code %d of %v is named %q", code, dt, name)
		}
	}
	for i, dt := range sharding.Dtypes {
		if dtypeCode(dt) != int64(i) {
			t.Errorf("%v has code %d, version 1 had %d", dt, dtypeCode(dt), i)
		}
	}
	if c := dtypeCode(tensor.Bool); c != -1 {
		t.Errorf("bool has code %d", c)
	}
}
