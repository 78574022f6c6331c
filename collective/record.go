package collective

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gorgonia.org/tensor"
)

// A Record is what one rank says about the call it is about to make: the
// payload of an engine's consistency check. Before a collective, the ranks
// of a process communicator exchange their Records (every engine over its
// own transport) and compare them with CompareRecords, so that calls that
// differ between ranks give the same ErrMismatch on every rank instead of a
// hang or garbage. A Record travels as RecordWords little-endian int64
// words (Encode, DecodeRecord).
type Record struct {
	Seq      int64  // collectives issued on the communicator before this one
	Kind     int64  // Kind, or the Kind of Split (SplitRecord)
	Op       int64  // ReduceOp for reductions, else 0
	Root     int64  // for rooted kinds, else 0
	Dtype    int64  // DtypeCode, or -1 without data
	Count    int64  // Call.Count
	NameHash int64  // FNV-1a of the whole Call.Name
	Extra    int64  // Split: hash of the color and key of every rank; calls: 1 when Differentiated
	Name     string // the first RecordNameBytes bytes of Call.Name
	// ShapeHash is the FNV-1a of Shape's whole text, Shape the first
	// RecordShapeBytes bytes of Call.Shape as text ("(2, 3)"; "" when the
	// call has no shape).
	ShapeHash int64
	Shape     string
}

const (
	recordMagic = 0x6d676c61_0003 // "mgla", version 3 (shapes)
	// RecordNameBytes is how much of Call.Name a Record carries, and
	// RecordShapeBytes how much of the text of Call.Shape.
	RecordNameBytes  = 48
	RecordShapeBytes = 32
	// RecordWords and RecordBytes are the size of an encoded Record.
	recordHeaderWords = 12
	RecordWords       = recordHeaderWords + RecordNameBytes/8 + RecordShapeBytes/8
	RecordBytes       = 8 * RecordWords
	kindSplit         = 100 // Comm.Split, checked like a collective
)

// recordDtypes are the element types a Record names, by DtypeCode. Engines
// may use the codes for their own type tables (the MPI engine does: the
// codes of mgla_dtype in collective/mpi/mgla_mpi.h). Append only.
var recordDtypes = []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128,
	tensor.Int, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
	tensor.Uint, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}

// DtypeCode is dt's code in a Record (its index in the engines' shared
// dtype table), or -1 for a type no engine moves.
func DtypeCode(dt tensor.Dtype) int64 {
	for i, d := range recordDtypes {
		if d == dt {
			return int64(i)
		}
	}
	return -1
}

// hashName is the 64-bit FNV-1a hash of s (hash/fnv's New64a, without its
// allocations: every checked call hashes its name).
func hashName(s string) int64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime64
	}
	return int64(h)
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// CallRecord is the Record of c as the seq-th collective of a communicator:
// the fields that do not apply to c's kind are zero, so that comparing whole
// records compares what matters. Point-to-point calls (Send, Recv, SendRecv)
// are compared pairwise with PairMismatch; their seq is not used.
func CallRecord(c *Call, seq int64) Record {
	r := Record{Seq: seq, Kind: int64(c.Kind), Dtype: -1, NameHash: hashName(c.Name), Name: truncate(c.Name, RecordNameBytes)}
	if c.Differentiated {
		r.Extra = 1
	}
	switch c.Kind {
	case Barrier:
		return r
	case AllReduce, ReduceScatter, Scan:
		r.Op = int64(c.Op)
	case Reduce:
		r.Op, r.Root = int64(c.Op), int64(c.Root)
	case Bcast, Gather, Scatter:
		r.Root = int64(c.Root)
	}
	r.Dtype, r.Count = DtypeCode(c.Dtype), int64(c.Count)
	if c.Shape != nil {
		text := fmt.Sprintf("%v", c.Shape)
		r.ShapeHash, r.Shape = hashName(text), truncate(text, RecordShapeBytes)
	}
	return r
}

// SplitRecord is the Record of Comm.Split(color, key) on a communicator of
// size ranks as its seq-th collective: it holds a hash of every rank's
// color and key as this rank computes them, so ranks whose functions
// disagree get ErrMismatch.
func SplitRecord(seq int64, size int, color, key func(rank int) int) Record {
	h := fnv.New64a()
	for r := range size {
		fmt.Fprintf(h, "%d:%d,", max(color(r), -1), key(r))
	}
	return Record{Seq: seq, Kind: kindSplit, Dtype: -1, Extra: int64(h.Sum64())}
}

// cutText is shown, the display of a Record's text, marked as cut when the
// text is the first max bytes of a longer one (whose hash is not the
// text's): "…" and the whole text's hash, so that two texts that differ
// after the bytes a Record carries do not read alike.
func cutText(shown, text string, whole int64, max int) string {
	if !isCut(text, whole, max) {
		return shown
	}
	return fmt.Sprintf("%s… (hash %08x)", shown, uint32(whole))
}

// isCut reports whether a Record's text of at most max bytes is the start
// of a longer one, whose hash is whole.
func isCut(text string, whole int64, max int) bool {
	return len(text) == max && hashName(text) != whole
}

// truncate is the first n bytes of s.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Encode writes r into the first RecordWords words of w.
func (r *Record) Encode(w []int64) {
	copy(w, []int64{recordMagic, r.Seq, r.Kind, r.Op, r.Root, r.Dtype, r.Count, r.NameHash, r.Extra,
		int64(len(r.Name)), r.ShapeHash, int64(len(r.Shape))})
	putText(w[recordHeaderWords:], r.Name, RecordNameBytes)
	putText(w[recordHeaderWords+RecordNameBytes/8:], r.Shape, RecordShapeBytes)
}

// DecodeRecord reads a Record that Encode wrote; ok is false for words that
// are not one (too few, or garbled).
func DecodeRecord(w []int64) (r Record, ok bool) {
	if len(w) < RecordWords || w[0] != recordMagic || w[9] < 0 || w[9] > RecordNameBytes || w[11] < 0 || w[11] > RecordShapeBytes {
		return r, false
	}
	r = Record{Seq: w[1], Kind: w[2], Op: w[3], Root: w[4], Dtype: w[5], Count: w[6], NameHash: w[7], Extra: w[8], ShapeHash: w[10]}
	r.Name = getText(w[recordHeaderWords:], int(w[9]))
	r.Shape = getText(w[recordHeaderWords+RecordNameBytes/8:], int(w[11]))
	return r, true
}

// putText writes the bytes of s, zero-padded to n, into the first n/8
// words of w, little-endian.
func putText(w []int64, s string, n int) {
	b := make([]byte, n)
	copy(b, s)
	for i := range n / 8 {
		var v int64
		for j := range 8 {
			v |= int64(b[8*i+j]) << (8 * j)
		}
		w[i] = v
	}
}

// getText reads the first n bytes that putText wrote into w.
func getText(w []int64, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(w[i/8] >> (8 * (i % 8)))
	}
	return string(b)
}

// RecordsAgree reports whether the first n encoded records of words (rank
// r's at r·RecordWords) are the same word for word. Equal encodings decode
// to equal records, which CompareRecords finds in agreement, so an engine
// checks this first and decodes and compares the records only when it is
// false (the text of a mismatch comes from CompareRecords alone).
func RecordsAgree(words []int64, n int) bool {
	first := words[:RecordWords]
	for r := 1; r < n; r++ {
		if !slices.Equal(words[r*RecordWords:(r+1)*RecordWords], first) {
			return false
		}
	}
	return true
}

func recordKindName(k int64) string {
	if k == kindSplit {
		return "Split"
	}
	return Kind(k).String()
}

func recordDtypeName(code int64) string {
	if code >= 0 && code < int64(len(recordDtypes)) {
		return recordDtypes[code].String()
	}
	return "none"
}

// Label names the call in messages: kind, name (when set) and number,
// `AllReduce "grad" #7`.
func (r *Record) Label() string {
	s := recordKindName(r.Kind)
	if r.Name != "" {
		s += " " + strconv.Quote(r.Name)
		if isCut(r.Name, r.NameHash, RecordNameBytes) {
			s += "…" // the first RecordNameBytes bytes of a longer name
		}
	}
	return fmt.Sprintf("%s #%d", s, r.Seq)
}

// recordFields are the fields CompareRecords compares, in the order its
// messages list them.
var recordFields = []struct {
	what  string
	value func(*Record) int64
	show  func(*Record) string
}{
	{"kind", func(r *Record) int64 { return r.Kind }, func(r *Record) string { return recordKindName(r.Kind) }},
	{"call number", func(r *Record) int64 { return r.Seq }, func(r *Record) string { return strconv.FormatInt(r.Seq, 10) }},
	{"name", func(r *Record) int64 { return r.NameHash }, func(r *Record) string {
		return cutText(strconv.Quote(r.Name), r.Name, r.NameHash, RecordNameBytes)
	}},
	{"dtype", func(r *Record) int64 { return r.Dtype }, func(r *Record) string { return recordDtypeName(r.Dtype) }},
	{"count", func(r *Record) int64 { return r.Count }, func(r *Record) string { return strconv.FormatInt(r.Count, 10) }},
	{"shape", func(r *Record) int64 { return r.ShapeHash }, func(r *Record) string {
		if r.Shape == "" {
			return "none"
		}
		return cutText(r.Shape, r.Shape, r.ShapeHash, RecordShapeBytes)
	}},
	{"op", func(r *Record) int64 { return r.Op }, func(r *Record) string { return ReduceOp(r.Op).String() }},
	{"root", func(r *Record) int64 { return r.Root }, func(r *Record) string { return strconv.FormatInt(r.Root, 10) }},
	{"colors and keys", func(r *Record) int64 { return splitExtra(r, true) }, func(r *Record) string { return fmt.Sprintf("%016x", uint64(r.Extra)) }},
	{"gradient", func(r *Record) int64 { return splitExtra(r, false) }, gradientText},
}

// splitExtra is r.Extra where it means what split asks (the colors and keys
// of a Split, or Differentiated of a call), else 0.
func splitExtra(r *Record, split bool) int64 {
	if (r.Kind == kindSplit) == split {
		return r.Extra
	}
	return 0
}

// gradientText says whether a call's gradient is built, for messages.
func gradientText(r *Record) string {
	if r.Extra != 0 {
		return "built by Grad"
	}
	return "not built (the rank's cost does not depend on this call: make every rank's cost depend on it)"
}

// CompareRecords returns nil when the records of ranks 0, 1, … agree, and
// otherwise an error wrapping ErrMismatch that names the call (the one most
// ranks made) and, for each field that differs, the ranks and their values:
// `AllReduce "grad" #7: rank 2 has count 5, ranks 0,1,3 have count 6`. The
// text depends only on recs, so every rank that holds the same records
// returns the same message.
func CompareRecords(recs []Record) error {
	agree := true
	for i := 1; i < len(recs) && agree; i++ {
		agree = recs[i] == recs[0]
	}
	if agree {
		return nil
	}
	var parts []string
	for _, f := range recordFields {
		groups := groupRanks(recs, f.value)
		if len(groups) < 2 {
			continue
		}
		var g []string
		for _, ranks := range groups {
			has := "has"
			if len(ranks) > 1 {
				has = "have"
			}
			g = append(g, fmt.Sprintf("%s %s %s %s", RankList(ranks), has, f.what, f.show(&recs[ranks[0]])))
		}
		parts = append(parts, strings.Join(g, ", "))
	}
	if parts == nil {
		return nil // unreachable: every field but Name and Shape is listed, and their hashes are
	}
	// Title the message with the call most ranks issued.
	common := groupRanks(recs, func(r *Record) int64 { return r.NameHash*31 + r.Kind*7 + r.Seq })
	most := common[0]
	for _, g := range common[1:] {
		if len(g) > len(most) || len(g) == len(most) && g[0] < most[0] {
			most = g
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrMismatch, recs[most[0]].Label(), strings.Join(parts, "; "))
}

// groupRanks groups the ranks by value, smallest groups first (ties: lowest
// rank first), each group in increasing rank.
func groupRanks(recs []Record, value func(*Record) int64) [][]int {
	index := map[int64]int{}
	var groups [][]int
	for r := range recs {
		v := value(&recs[r])
		i, ok := index[v]
		if !ok {
			i = len(groups)
			index[v] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i]) < len(groups[j]) })
	return groups
}

// RankList writes "rank 2" or "ranks 0,1,3".
func RankList(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	return "ranks " + strings.Join(s, ",")
}

// PairMismatch describes a point-to-point transfer from rank from to rank
// to whose sender and receiver disagree on dtype, count or shape, or on
// whether their gradient is built (Call.Differentiated), or returns "". Both ends hold both records and write the same text, which an
// engine returns wrapped in ErrMismatch (joined with "; " when one call has
// two transfers that disagree): `Send "x" rank 0 → rank 1 (tag 5): rank 0
// sends 6 float64, rank 1 receives 5 float64`, with the shapes when the
// calls give them. tag < 0 leaves the tag out (engines without tags).
func PairMismatch(send, recv *Record, from, to, tag int) string {
	sameData := send.Dtype == recv.Dtype && send.Count == recv.Count && send.ShapeHash == recv.ShapeHash
	if sameData && send.Extra == recv.Extra {
		return ""
	}
	s := recordKindName(send.Kind)
	if send.Name != "" {
		s += " " + strconv.Quote(send.Name)
	}
	t := ""
	if tag >= 0 {
		t = fmt.Sprintf(" (tag %d)", tag)
	}
	if sameData {
		return fmt.Sprintf("%s rank %d → rank %d%s: rank %d's gradient is %s, rank %d's is %s",
			s, from, to, t, from, gradientText(send), to, gradientText(recv))
	}
	side := func(r *Record) string {
		text := fmt.Sprintf("%d %s", r.Count, recordDtypeName(r.Dtype))
		if r.Shape != "" {
			text += " " + cutText(r.Shape, r.Shape, r.ShapeHash, RecordShapeBytes)
		}
		return text
	}
	return fmt.Sprintf("%s rank %d → rank %d%s: rank %d sends %s, rank %d receives %s",
		s, from, to, t, from, side(send), to, side(recv))
}
