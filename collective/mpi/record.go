package mpi

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/mgla/mgla/collective"
	"gorgonia.org/tensor"
)

// A record is what one rank says about the call it is about to make: the
// payload of the metadata messages of the consistency checks (package
// documentation). It travels as recordWords little int64 words.
type record struct {
	seq      int64 // collectives issued on the communicator before this one
	kind     int64 // collective.Kind, or kindSplit
	op       int64 // collective.ReduceOp for reductions, else 0
	root     int64 // for rooted kinds, else 0
	dtype    int64 // dtypeCode, or -1 without data
	count    int64
	nameHash int64  // FNV-1a of the whole Call.Name
	extra    int64  // Split: hash of the color and key of every rank
	name     string // the first nameBytes bytes of Call.Name
}

const (
	recordMagic = 0x6d676c61_0002 // "mgla", version 2 (integer dtype codes)
	nameBytes   = 48
	recordWords = 10 + nameBytes/8
	recordBytes = 8 * recordWords
	kindSplit   = 100 // Comm.Split, checked like a collective
)

// dtypes are the element types the engine moves, by dtypeCode (the codes
// of mgla_dtype in mgla_mpi.h; append only).
var dtypes = [...]tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128,
	tensor.Int, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
	tensor.Uint, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}

// dtypeCode is dt's index in dtypes, or -1.
func dtypeCode(dt tensor.Dtype) int64 {
	for i, d := range dtypes {
		if d == dt {
			return int64(i)
		}
	}
	return -1
}

func hashName(s string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return int64(h.Sum64())
}

// callRecord is the record of c as the seq-th collective of a communicator:
// the fields that do not apply to c's kind are zero, so that comparing whole
// records compares what matters.
func callRecord(c *collective.Call, seq int64) record {
	r := record{seq: seq, kind: int64(c.Kind), dtype: -1, nameHash: hashName(c.Name), name: truncateName(c.Name)}
	switch c.Kind {
	case collective.Barrier:
		return r
	case collective.AllReduce, collective.ReduceScatter, collective.Scan:
		r.op = int64(c.Op)
	case collective.Reduce:
		r.op, r.root = int64(c.Op), int64(c.Root)
	case collective.Bcast, collective.Gather, collective.Scatter:
		r.root = int64(c.Root)
	}
	r.dtype, r.count = dtypeCode(c.Dtype), int64(c.Count)
	return r
}

func truncateName(s string) string {
	if len(s) > nameBytes {
		return s[:nameBytes]
	}
	return s
}

func (r *record) encode(w []int64) {
	copy(w, []int64{recordMagic, r.seq, r.kind, r.op, r.root, r.dtype, r.count, r.nameHash, r.extra, int64(len(r.name))})
	var b [nameBytes]byte
	copy(b[:], r.name)
	for i := range nameBytes / 8 {
		var v int64
		for j := range 8 {
			v |= int64(b[8*i+j]) << (8 * j)
		}
		w[10+i] = v
	}
}

// decodeRecord reads a record; ok is false for words that are not one.
func decodeRecord(w []int64) (r record, ok bool) {
	if len(w) < recordWords || w[0] != recordMagic || w[9] < 0 || w[9] > nameBytes {
		return r, false
	}
	r = record{seq: w[1], kind: w[2], op: w[3], root: w[4], dtype: w[5], count: w[6], nameHash: w[7], extra: w[8]}
	var b [nameBytes]byte
	for i := range nameBytes / 8 {
		for j := range 8 {
			b[8*i+j] = byte(w[10+i] >> (8 * j))
		}
	}
	r.name = string(b[:w[9]])
	return r, true
}

func kindName(k int64) string {
	if k == kindSplit {
		return "Split"
	}
	return collective.Kind(k).String()
}

func dtypeName(code int64) string {
	if code >= 0 && code < int64(len(dtypes)) {
		return dtypes[code].String()
	}
	return "none"
}

// label names a call in messages: kind, name (when set) and number.
func (r *record) label() string {
	s := kindName(r.kind)
	if r.name != "" {
		s += " " + strconv.Quote(r.name)
	}
	return fmt.Sprintf("%s #%d", s, r.seq)
}

// recordFields are the fields the collective check compares, in the order
// its messages list them.
var recordFields = []struct {
	what  string
	value func(*record) int64
	show  func(*record) string
}{
	{"kind", func(r *record) int64 { return r.kind }, func(r *record) string { return kindName(r.kind) }},
	{"call number", func(r *record) int64 { return r.seq }, func(r *record) string { return strconv.FormatInt(r.seq, 10) }},
	{"name", func(r *record) int64 { return r.nameHash }, func(r *record) string { return strconv.Quote(r.name) }},
	{"dtype", func(r *record) int64 { return r.dtype }, func(r *record) string { return dtypeName(r.dtype) }},
	{"count", func(r *record) int64 { return r.count }, func(r *record) string { return strconv.FormatInt(r.count, 10) }},
	{"op", func(r *record) int64 { return r.op }, func(r *record) string { return collective.ReduceOp(r.op).String() }},
	{"root", func(r *record) int64 { return r.root }, func(r *record) string { return strconv.FormatInt(r.root, 10) }},
	{"colors and keys", func(r *record) int64 { return r.extra }, func(r *record) string { return fmt.Sprintf("%016x", uint64(r.extra)) }},
}

// mismatch describes how the records of ranks 0, 1, … disagree, or returns
// "" when they agree. The text depends only on recs, so every rank that
// holds the same records writes the same message.
func mismatch(recs []record) string {
	agree := true
	for i := 1; i < len(recs) && agree; i++ {
		agree = recs[i] == recs[0]
	}
	if agree {
		return ""
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
			g = append(g, fmt.Sprintf("%s %s %s %s", rankList(ranks), has, f.what, f.show(&recs[ranks[0]])))
		}
		parts = append(parts, strings.Join(g, ", "))
	}
	if parts == nil {
		return ""
	}
	// Title the message with the call most ranks issued.
	common := groupRanks(recs, func(r *record) int64 { return r.nameHash*31 + r.kind*7 + r.seq })
	most := common[0]
	for _, g := range common[1:] {
		if len(g) > len(most) || len(g) == len(most) && g[0] < most[0] {
			most = g
		}
	}
	title := recs[most[0]].label()
	return title + ": " + strings.Join(parts, "; ")
}

// groupRanks groups the ranks by value, smallest groups first (ties: lowest
// rank first), each group in increasing rank.
func groupRanks(recs []record, value func(*record) int64) [][]int {
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

// rankList writes "rank 2" or "ranks 0,1,3".
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	return "ranks " + strings.Join(s, ",")
}

// pairMismatch describes a point-to-point transfer whose sender and
// receiver disagree on dtype or count, or returns "". Both ends hold both
// records and write the same message.
func pairMismatch(send, recv *record, from, to, tag int) string {
	if send.dtype == recv.dtype && send.count == recv.count {
		return ""
	}
	s := kindName(send.kind)
	if send.name != "" {
		s += " " + strconv.Quote(send.name)
	}
	return fmt.Sprintf("%s rank %d → rank %d (tag %d): rank %d sends %d %s, rank %d receives %d %s",
		s, from, to, tag, from, send.count, dtypeName(send.dtype), to, recv.count, dtypeName(recv.dtype))
}
