// Package benchcsv is the CSV format of the GPU benchmark results: what
// cmd/mgbench writes and cmd/benchreport reads, one header line and one row
// per measurement. It owns the header, the row and the derived rates, and
// imports only the standard library.
package benchcsv

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Header is the exact first line of every results file.
const Header = "op,dtype,n,nrhs,ndev,tile,path,seconds,flops,tflops,bytes,gbps"

// Columns are Header's names, in order; the first seven identify a
// measurement (a later row with the same values replaces an earlier one).
var Columns = strings.Split(Header, ",")

// Row is one measurement: op on an n×n matrix (nrhs right-hand sides) of
// dtype over ndev GPUs with tile width tile, by path, in seconds (NaN: it
// failed), computing flops and moving bytes (0: not counted).
type Row struct {
	Op, Dtype, Path     string
	N, NRHS, NDev, Tile int
	Seconds             float64
	Flops, Bytes        float64
}

// Rates returns the row's TFLOP/s and GB/s, 0 where it counts no flops or
// bytes.
func (r Row) Rates() (tflops, gbps float64) {
	return Rate(r.Flops, r.Seconds, 1e12), Rate(r.Bytes, r.Seconds, 1e9)
}

// Rate is amount/seconds/unit, 0 when amount is not positive.
func Rate(amount, seconds, unit float64) float64 {
	if !(amount > 0) {
		return 0
	}
	return amount / seconds / unit
}

// Record returns the row's fields in Header's order.
func (r Row) Record() []string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	tf, gb := r.Rates()
	return []string{r.Op, r.Dtype, strconv.Itoa(r.N), strconv.Itoa(r.NRHS), strconv.Itoa(r.NDev), strconv.Itoa(r.Tile),
		r.Path, g(r.Seconds), g(r.Flops), g(tf), g(r.Bytes), g(gb)}
}

// Writer appends rows to a results file; it is safe for concurrent use and
// flushes every row, so a run that dies keeps what it measured.
type Writer struct {
	mu sync.Mutex
	f  *os.File
	w  *csv.Writer
}

// Append opens path for appending, writing Header first when the file is
// new or empty.
func Append(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &Writer{f: f, w: csv.NewWriter(f)}
	if st.Size() == 0 {
		if err := w.write(Columns); err != nil {
			f.Close()
			return nil, err
		}
	}
	return w, nil
}

// Write appends r.
func (w *Writer) Write(r Row) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write(r.Record())
}

func (w *Writer) write(rec []string) error {
	if err := w.w.Write(rec); err != nil {
		return err
	}
	w.w.Flush()
	if err := w.w.Error(); err != nil {
		return fmt.Errorf("benchcsv: %w", err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }
