package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/mgla/mgla/cmd/internal/benchcsv"
)

// TestReadsWhatMgbenchWrites writes rows with benchcsv.Writer, as mgbench
// does (two opens of one file: the header once), and reads them back.
func TestReadsWhatMgbenchWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.csv")
	in := []benchcsv.Row{
		{Op: "potrf", Dtype: "float64", Path: "mg", N: 4096, NDev: 2, Tile: 1024, Seconds: 0.25, Flops: 1e12},
		{Op: "upload", Dtype: "float32", Path: "pinned", N: 8192, NDev: 4, Seconds: 0.5, Bytes: 2e9},
		{Op: "potrs", Dtype: "float64", Path: "capacity", N: 196608, NRHS: 1, NDev: 4, Tile: 2048, Seconds: math.NaN()},
	}
	for _, r := range in {
		w, err := benchcsv.Append(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := loadFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(in) {
		t.Fatalf("%d rows, want %d", len(rows), len(in))
	}
	for i, r := range in {
		got := rows[i]
		want := key{r.Op, r.Dtype, r.N, r.NRHS, r.NDev, r.Tile, r.Path}
		if got.key != want {
			t.Errorf("row %d: key %+v, want %+v", i, got.key, want)
		}
		tf, gb := r.Rates()
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"seconds", got.Seconds, r.Seconds}, {"tflops", got.TFlops, tf}, {"gbps", got.GBps, gb}} {
			if c.got != c.want && !(math.IsNaN(c.got) && math.IsNaN(c.want)) {
				t.Errorf("row %d: %s = %g, want %g", i, c.name, c.got, c.want)
			}
		}
	}
	if rows[2].ok() {
		t.Errorf("the failed run reads as a usable time: %+v", rows[2])
	}
}
