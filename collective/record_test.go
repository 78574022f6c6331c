package collective

import (
	"errors"
	"fmt"
	"github.com/stretchr/testify/require"
	"hash/fnv"
	"slices"
	"strings"
	"testing"

	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

func TestRecordRoundTrip(t *testing.T) {
	for i, name := range []string{"", "grad", strings.Repeat("long name ", 10)} {
		shape := []tensor.Shape{nil, {10, 100}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}[i]
		c := &Call{Kind: Reduce, Op: Max, Root: 3, Dtype: tensor.Complex64, Count: 1000, Shape: shape, Name: name}
		r := CallRecord(c, 41)
		w := make([]int64, RecordWords)
		r.Encode(w)
		got, ok := DecodeRecord(w)
		if !ok || got != r {
			t.Fatalf("%q: decoded %+v (ok %v), want %+v", name, got, ok, r)
		}
		if len(got.Name) > RecordNameBytes || !strings.HasPrefix(name, got.Name) {
			t.Errorf("name %q from %q", got.Name, name)
		}
		if text := fmt.Sprintf("%v", shape); shape != nil && (len(got.Shape) > RecordShapeBytes || !strings.HasPrefix(text, got.Shape) || got.Shape == "") {
			t.Errorf("shape %q from %q", got.Shape, text)
		}
	}
	split := SplitRecord(9, 4, func(r int) int { return r % 2 }, func(r int) int { return -r })
	w := make([]int64, RecordWords)
	split.Encode(w)
	if got, ok := DecodeRecord(w); !ok || got != split {
		t.Errorf("Split record decoded %+v (ok %v), want %+v", got, ok, split)
	}
	bad := make([]int64, RecordWords)
	split.Encode(bad)
	bad[9] = RecordNameBytes + 1 // a name longer than a record holds
	badShape := make([]int64, RecordWords)
	split.Encode(badShape)
	badShape[11] = RecordShapeBytes + 1
	for what, w := range map[string][]int64{"zero words": make([]int64, RecordWords), "short": w[:RecordWords-1], "name length": bad, "shape length": badShape} {
		if _, ok := DecodeRecord(w); ok {
			t.Errorf("%s decoded as a record", what)
		}
	}
}

// TestCallRecordIgnoresUnusedFields: fields a kind does not use do not make
// ranks disagree.
func TestCallRecordIgnoresUnusedFields(t *testing.T) {
	a := CallRecord(&Call{Kind: AllGather, Root: 2, Op: Prod, Dtype: tensor.Float64, Count: 3}, 0)
	b := CallRecord(&Call{Kind: AllGather, Dtype: tensor.Float64, Count: 3}, 0)
	if err := CompareRecords([]Record{a, b}); err != nil {
		t.Errorf("AllGather with different roots and ops: %v", err)
	}
	x := CallRecord(&Call{Kind: Barrier, Dtype: tensor.Float64, Count: 3}, 5)
	y := CallRecord(&Call{Kind: Barrier}, 5)
	if err := CompareRecords([]Record{x, y}); err != nil {
		t.Errorf("Barriers with different counts: %v", err)
	}
}

// TestCompareRecords: every field of a record that differs between ranks is
// named in the error with the ranks that hold each value; records that
// agree give nil.
func TestCompareRecords(t *testing.T) {
	base := Call{Kind: AllReduce, Op: Sum, Dtype: tensor.Float64, Count: 6, Name: "g"}
	with := func(f func(c *Call)) Call {
		c := base
		f(&c)
		return c
	}
	const prefix = "collective: ranks disagree: "
	cases := []struct {
		name  string
		calls []Call
		seqs  []int64 // nil: all 7
		want  string  // "" when they agree
	}{
		{"agree", []Call{base, base, base}, nil, ""},
		{"one rank", []Call{base}, nil, ""},
		{"kind", []Call{base, with(func(c *Call) { c.Kind = ReduceScatter })},
			nil, `AllReduce "g" #7: rank 0 has kind AllReduce, rank 1 has kind ReduceScatter`},
		{"call number", []Call{base, base, base}, []int64{3, 4, 3},
			`AllReduce "g" #3: rank 1 has call number 4, ranks 0,2 have call number 3`},
		{"name", []Call{base, with(func(c *Call) { c.Name = "h" }), base},
			nil, `AllReduce "g" #7: rank 1 has name "h", ranks 0,2 have name "g"`},
		{"dtype", []Call{with(func(c *Call) { c.Dtype = tensor.Complex64 }), base, base, base},
			nil, `AllReduce "g" #7: rank 0 has dtype complex64, ranks 1,2,3 have dtype float64`},
		{"count", []Call{base, base, with(func(c *Call) { c.Count = 5 }), base},
			nil, `AllReduce "g" #7: rank 2 has count 5, ranks 0,1,3 have count 6`},
		{"shape", []Call{with(func(c *Call) { c.Shape = tensor.Shape{2, 3} }), with(func(c *Call) { c.Shape = tensor.Shape{3, 2} }), with(func(c *Call) { c.Shape = tensor.Shape{2, 3} })},
			nil, `AllReduce "g" #7: rank 1 has shape (3, 2), ranks 0,2 have shape (2, 3)`},
		{"same shape", []Call{with(func(c *Call) { c.Shape = tensor.Shape{6} }), with(func(c *Call) { c.Shape = tensor.Shape{6} })}, nil, ""},
		{"op", []Call{base, with(func(c *Call) { c.Op = Max }), with(func(c *Call) { c.Op = Max })},
			nil, `AllReduce "g" #7: rank 0 has op sum, ranks 1,2 have op max`},
		{"root", []Call{with(func(c *Call) { c.Kind, c.Root = Bcast, 1 }), with(func(c *Call) { c.Kind, c.Root = Bcast, 0 })},
			nil, `Bcast "g" #7: rank 0 has root 1, rank 1 has root 0`},
		{"two fields, titled by the majority", []Call{
			{Kind: Bcast, Dtype: tensor.Float32, Count: 6, Name: "b"}, {Kind: AllGather, Dtype: tensor.Float64, Count: 6, Name: "a"},
			{Kind: AllGather, Dtype: tensor.Float64, Count: 6, Name: "a"}}, nil,
			`AllGather "a" #7: rank 0 has kind Bcast, ranks 1,2 have kind AllGather; rank 0 has name "b", ranks 1,2 have name "a"; rank 0 has dtype float32, ranks 1,2 have dtype float64`},
		{"even split, ties by lowest rank", []Call{{Kind: Scan, Dtype: tensor.Float64, Count: 1}, {Kind: Scan, Dtype: tensor.Float64, Count: 2}},
			nil, "Scan #7: rank 0 has count 1, rank 1 has count 2"},
		{"three values", []Call{base, with(func(c *Call) { c.Count = 1 }), with(func(c *Call) { c.Count = 2 }), base, base},
			nil, `AllReduce "g" #7: rank 1 has count 1, rank 2 has count 2, ranks 0,3,4 have count 6`},
		{"gradient", []Call{with(func(c *Call) { c.Differentiated = true }), base, base},
			nil, `AllReduce "g" #7: rank 0 has gradient built by Grad, ranks 1,2 have gradient not built (the rank's cost does not depend on this call: make every rank's cost depend on it)`},
		{"gradient everywhere", []Call{with(func(c *Call) { c.Differentiated = true }), with(func(c *Call) { c.Differentiated = true })}, nil, ""},
		// Texts longer than a Record carries, which differ after it: marked
		// cut, with their whole hashes (they read alike before).
		{"long names", []Call{with(func(c *Call) { c.Name = longName + "A" }), with(func(c *Call) { c.Name = longName + "B" })},
			nil, fmt.Sprintf(`AllReduce %q… #7: rank 0 has name %q… (hash %08x), rank 1 has name %q… (hash %08x)`,
				longName[:RecordNameBytes], longName[:RecordNameBytes], uint32(hashName(longName+"A")), longName[:RecordNameBytes], uint32(hashName(longName+"B")))},
		{"a shape against none", []Call{with(func(c *Call) { c.Shape = tensor.Shape{6} }), base},
			nil, `AllReduce "g" #7: rank 0 has shape (6), rank 1 has shape none`},
		{"long shapes", []Call{with(func(c *Call) { c.Shape = longShape(2, 3) }), with(func(c *Call) { c.Shape = longShape(3, 2) })},
			nil, fmt.Sprintf(`AllReduce "g" #7: rank 0 has shape %s… (hash %08x), rank 1 has shape %s… (hash %08x)`,
				fmt.Sprint(longShape(2, 3))[:RecordShapeBytes], uint32(hashName(fmt.Sprint(longShape(2, 3)))),
				fmt.Sprint(longShape(3, 2))[:RecordShapeBytes], uint32(hashName(fmt.Sprint(longShape(3, 2)))))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := make([]Record, len(tc.calls))
			for i := range tc.calls {
				seq := int64(7)
				if tc.seqs != nil {
					seq = tc.seqs[i]
				}
				recs[i] = CallRecord(&tc.calls[i], seq)
			}
			err := CompareRecords(recs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("records that agree: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("%v, want ErrMismatch", err)
			}
			if got := err.Error(); got != prefix+tc.want {
				t.Errorf("got  %q\nwant %q", got, prefix+tc.want)
			}
		})
	}
}

// TestCompareSplitRecords: ranks whose Split colors or keys differ disagree
// on "colors and keys"; a Split where another rank makes a collective
// disagrees on the kind.
func TestCompareSplitRecords(t *testing.T) {
	even := func(r int) int { return r % 2 }
	id := func(r int) int { return r }
	a, b := SplitRecord(2, 3, even, id), SplitRecord(2, 3, even, id)
	if err := CompareRecords([]Record{a, b}); err != nil {
		t.Fatalf("equal Splits: %v", err)
	}
	c := SplitRecord(2, 3, func(int) int { return 0 }, id)
	err := CompareRecords([]Record{a, b, c})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "Split #2: rank 2 has colors and keys ") {
		t.Errorf("different colors: %v", err)
	}
	// A negative color leaves a rank out whatever its value.
	d := SplitRecord(2, 3, func(r int) int { return -1 - r }, id)
	e := SplitRecord(2, 3, func(int) int { return -1 }, id)
	if err := CompareRecords([]Record{d, e}); err != nil {
		t.Errorf("colors -1 and -3 both leave a rank out: %v", err)
	}
	coll := CallRecord(&Call{Kind: Barrier}, 2)
	err = CompareRecords([]Record{a, coll, b})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "Split #2: rank 1 has kind Barrier, ranks 0,2 have kind Split") {
		t.Errorf("Split against Barrier: %v", err)
	}
}

func TestPairMismatch(t *testing.T) {
	send := CallRecord(&Call{Kind: SendRecv, Dtype: tensor.Float64, Count: 6, Name: "x"}, 0)
	same := CallRecord(&Call{Kind: Recv, Dtype: tensor.Float64, Count: 6, Name: "y"}, 0)
	if msg := PairMismatch(&send, &same, 0, 1, 5); msg != "" {
		t.Errorf("matching transfer: %q", msg)
	}
	cases := []struct {
		name string
		recv Call
		tag  int
		want string
	}{
		{"dtype", Call{Kind: Recv, Dtype: tensor.Complex128, Count: 6}, 5,
			`SendRecv "x" rank 0 → rank 1 (tag 5): rank 0 sends 6 float64, rank 1 receives 6 complex128`},
		{"count", Call{Kind: Recv, Dtype: tensor.Float64, Count: 5}, 5,
			`SendRecv "x" rank 0 → rank 1 (tag 5): rank 0 sends 6 float64, rank 1 receives 5 float64`},
		{"no tag", Call{Kind: Recv, Dtype: tensor.Float64, Count: 5}, -1,
			`SendRecv "x" rank 0 → rank 1: rank 0 sends 6 float64, rank 1 receives 5 float64`},
		{"shape", Call{Kind: Recv, Dtype: tensor.Float64, Count: 6, Shape: tensor.Shape{3, 2}}, 5,
			`SendRecv "x" rank 0 → rank 1 (tag 5): rank 0 sends 6 float64 (2, 3), rank 1 receives 6 float64 (3, 2)`},
		{"gradient", Call{Kind: SendRecv, Dtype: tensor.Float64, Count: 6, Differentiated: true}, 5,
			`SendRecv "x" rank 0 → rank 1 (tag 5): rank 0's gradient is not built (the rank's cost does not depend on this call: make every rank's cost depend on it), rank 1's is built by Grad`},
	}
	shaped := CallRecord(&Call{Kind: SendRecv, Dtype: tensor.Float64, Count: 6, Shape: tensor.Shape{2, 3}, Name: "x"}, 0)
	for _, tc := range cases {
		other, from := CallRecord(&tc.recv, 0), &send
		if tc.recv.Shape != nil {
			from = &shaped
		}
		if msg := PairMismatch(from, &other, 0, 1, tc.tag); msg != tc.want {
			t.Errorf("%s: got  %q\nwant %q", tc.name, msg, tc.want)
		}
	}
}

// Every dtype a collective moves has its own record code, shown by its name;
// the codes of the float dtypes keep their version-1 values.
func TestDtypeCode(t *testing.T) {
	seen := map[int64]tensor.Dtype{}
	for _, dt := range append(append([]tensor.Dtype(nil), sharding.Dtypes...), sharding.IntDtypes...) {
		code := DtypeCode(dt)
		if code < 0 {
			t.Fatalf("%v has no code", dt)
		}
		if other, ok := seen[code]; ok {
			t.Fatalf("%v and %v share code %d", dt, other, code)
		}
		seen[code] = dt
		if name := recordDtypeName(code); name != dt.String() {
			t.Errorf("code %d of %v is named %q", code, dt, name)
		}
	}
	for i, dt := range sharding.Dtypes {
		if DtypeCode(dt) != int64(i) {
			t.Errorf("%v has code %d, version 1 had %d", dt, DtypeCode(dt), i)
		}
	}
	if got := DtypeCode(tensor.Bool); got != -1 {
		t.Errorf("DtypeCode(bool) = %d, want -1", got)
	}
}

// TestRecordsAgree: the engines' shortcut (comparing the encoded records
// word for word) agrees with CompareRecords on the decoded records, for
// records that differ in each field, in a name past the bytes a record
// holds, or not at all; and hashName is hash/fnv's FNV-1a.
func TestRecordsAgree(t *testing.T) {
	long := strings.Repeat("n", RecordNameBytes)
	base := &Call{Kind: Reduce, Op: Sum, Root: 1, Dtype: tensor.Float64, Count: 7, Shape: append(slices.Repeat(tensor.Shape{1}, RecordShapeBytes), 8), Name: long + "a"}
	variants := map[string]func(c *Call, seq *int64){
		"same":      func(*Call, *int64) {},
		"kind":      func(c *Call, _ *int64) { c.Kind = AllReduce },
		"op":        func(c *Call, _ *int64) { c.Op = Max },
		"root":      func(c *Call, _ *int64) { c.Root = 0 },
		"dtype":     func(c *Call, _ *int64) { c.Dtype = tensor.Float32 },
		"count":     func(c *Call, _ *int64) { c.Count = 8 },
		"seq":       func(_ *Call, seq *int64) { *seq = 4 },
		"name":      func(c *Call, _ *int64) { c.Name = "x" },
		"name tail": func(c *Call, _ *int64) { c.Name = long + "b" }, // same stored bytes, other hash
		"shape":     func(c *Call, _ *int64) { c.Shape = tensor.Shape{7, 1} },
		"shape tail": func(c *Call, _ *int64) { // same stored bytes, other hash
			c.Shape = append(slices.Repeat(tensor.Shape{1}, RecordShapeBytes), 7)
		},
	}
	for what, change := range variants {
		for _, size := range []int{1, 2, 3, 5} {
			for odd := range size {
				words := make([]int64, size*RecordWords)
				recs := make([]Record, size)
				for r := range size {
					c, seq := *base, int64(3)
					if r == odd {
						change(&c, &seq)
					}
					recs[r] = CallRecord(&c, seq)
					recs[r].Encode(words[r*RecordWords:])
				}
				agree, err := RecordsAgree(words, size), CompareRecords(recs)
				if agree != (err == nil) || agree != (what == "same" || size == 1) {
					t.Errorf("%s, %d ranks, rank %d differs: RecordsAgree %v, CompareRecords %v", what, size, odd, agree, err)
				}
			}
		}
	}
	for _, s := range []string{"", "a", long + "a", "grad AllReduce(sum)"} {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got, want := hashName(s), int64(h.Sum64()); got != want {
			t.Errorf("hashName(%q) = %x, want %x", s, got, want)
		}
	}
}

// BenchmarkRecordCheck: the host side of an engine's check of one call
// (record, encode, compare) at 2, 4 and 16 ranks, comparing the encoded
// records word for word (agree, what the MPI engine does) against decoding
// and comparing them (decode, what it does only when they differ).
func BenchmarkRecordCheck(b *testing.B) {
	for _, size := range []int{2, 4, 16} {
		c := &Call{Kind: AllReduce, Dtype: tensor.Float64, Count: 100, Name: "collbench"}
		words := make([]int64, size*RecordWords)
		for r := range size {
			rec := CallRecord(c, 5)
			rec.Encode(words[r*RecordWords:])
		}
		b.Run(fmt.Sprintf("ranks=%d/agree", size), func(b *testing.B) {
			for b.Loop() {
				rec := CallRecord(c, 5)
				rec.Encode(words)
				if !RecordsAgree(words, size) {
					b.Fatal("records differ")
				}
			}
		})
		b.Run(fmt.Sprintf("ranks=%d/decode", size), func(b *testing.B) {
			for b.Loop() {
				rec := CallRecord(c, 5)
				rec.Encode(words)
				recs := make([]Record, size)
				for r := range recs {
					recs[r], _ = DecodeRecord(words[r*RecordWords:])
				}
				if err := CompareRecords(recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// longName is a collective's name longer than a Record carries.
const longName = "gradient-of-the-first-layer-weights-of-the-encoder-block-"

// longShape is a shape whose text is longer than a Record carries, ending
// in a and b.
func longShape(a, b int) tensor.Shape {
	return tensor.Shape{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, a, b}
}

// TestRecordTextsNotCut: a Split (no name) or a call without a shape shows
// no cut mark; Send/Recv shapes longer than a Record carries show theirs.
func TestRecordTextsNotCut(t *testing.T) {
	e := CallRecord(&Call{Kind: AllReduce, Dtype: tensor.Float64, Count: 6}, 7)
	sp := SplitRecord(7, 2, func(int) int { return 0 }, func(r int) int { return r })
	err := CompareRecords([]Record{sp, e})
	require.ErrorIs(t, err, ErrMismatch)
	require.NotContains(t, err.Error(), "…")
	snd := CallRecord(&Call{Kind: Send, Dtype: tensor.Float64, Count: 6, Name: "x", Shape: longShape(2, 3)}, 0)
	rcv := CallRecord(&Call{Kind: Recv, Dtype: tensor.Float64, Count: 6, Name: "x", Shape: longShape(3, 2)}, 0)
	msg := PairMismatch(&snd, &rcv, 0, 1, 5)
	require.Contains(t, msg, fmt.Sprintf("… (hash %08x)", uint32(hashName(fmt.Sprint(longShape(2, 3))))))
	require.Contains(t, msg, fmt.Sprintf("… (hash %08x)", uint32(hashName(fmt.Sprint(longShape(3, 2))))))
}
