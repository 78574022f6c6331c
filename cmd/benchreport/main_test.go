package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The numbers below are synthetic and exist only for these tests.

// writeCSV writes header plus lines into a file in a fresh temporary
// directory and returns its path.
func writeCSV(t *testing.T, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	body := header + "\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// synthetic returns CSV lines covering every plot: potrf at two tiles, potrs
// with 1 and 256 right-hand sides, dn, a NaN row and uploads.
func synthetic() []string {
	var lines []string
	add := func(op string, n, nrhs, ndev, tile int, path string, sec float64) {
		flops := float64(n) * float64(n) * float64(n) / 3
		lines = append(lines, fmt.Sprintf("%s,float64,%d,%d,%d,%d,%s,%g,%g,,0,0", op, n, nrhs, ndev, tile, path, sec, flops))
	}
	for _, n := range []int{4096, 8192, 16384} {
		base := math.Pow(float64(n)/4096, 3) * 0.01
		add("potrf", n, 0, 1, 0, "dn", base)
		for _, ndev := range []int{2, 4} {
			for _, tile := range []int{256, 512} {
				add("potrf", n, 0, ndev, tile, "mg", base*4/float64(ndev))
				add("potrf", n, 0, ndev, tile, "mgla", base*5/float64(ndev))
			}
			add("potrs", n, 1, ndev, 512, "mg", base)
			add("potrs", n, 256, ndev, 512, "mgla", base*2)
		}
		bytes := float64(n) * float64(n) * 8
		lines = append(lines,
			fmt.Sprintf("upload,float64,%d,0,2,512,mgla,%g,0,0,%g,", n, bytes/20e9, bytes),
			fmt.Sprintf("upload,float64,%d,0,2,0,pinned,%g,0,0,%g,", n, bytes/25e9, bytes))
	}
	return append(lines, "potrf,float64,32768,0,1,0,dn,NaN,0,NaN,0,0")
}

func TestParseCSV(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr string
		check   func(t *testing.T, rows []result)
	}{
		{
			name: "values, NaN and derived TFLOP/s",
			body: header + "\n" +
				"potrf,float64,4096,0,2,256,mg,0.5,1e12,,0,0\n" +
				"potrf,float64,65536,0,1,0,dn,NaN,,NaN,,\n",
			check: func(t *testing.T, rows []result) {
				want := key{"potrf", "float64", 4096, 0, 2, 256, "mg"}
				if len(rows) != 2 || rows[0].key != want {
					t.Fatalf("rows = %+v, want 2 rows starting with %+v", rows, want)
				}
				if rows[0].Seconds != 0.5 || rows[0].TFlops != 2 {
					t.Errorf("seconds, tflops = %g, %g; want 0.5, 2", rows[0].Seconds, rows[0].TFlops)
				}
				if !math.IsNaN(rows[1].Seconds) || !math.IsNaN(rows[1].Flops) || rows[1].ok() {
					t.Errorf("NaN row parsed as %+v", rows[1])
				}
			},
		},
		{
			name: "byte-order mark, comments and derived GB/s",
			body: "\ufeff" + header + "\n# a comment\nupload,float64,1024,0,4,0,pinned,0.25,0,0,5e9,\n",
			check: func(t *testing.T, rows []result) {
				if len(rows) != 1 || rows[0].GBps != 20 {
					t.Fatalf("rows = %+v, want one with 20 GB/s", rows)
				}
			},
		},
		{name: "empty file", body: "", wantErr: "empty file"},
		{name: "wrong header", body: "op,dtype,n\n", wantErr: "header is"},
		{name: "too few fields", body: header + "\npotrf,float64,4096\n", wantErr: "x.csv:2: 3 fields"},
		{name: "bad integer", body: header + "\npotrf,float64,4k,0,1,0,dn,1,0,0,0,0\n", wantErr: "column n"},
		{name: "bad number", body: header + "\npotrf,float64,4096,0,1,0,dn,fast,0,0,0,0\n", wantErr: "column seconds"},
		{name: "no path", body: header + "\npotrf,float64,4096,0,1,0,,1,0,0,0,0\n", wantErr: "must not be empty"},
		{name: "no GPUs", body: header + "\npotrf,float64,4096,0,0,0,dn,1,0,0,0,0\n", wantErr: "at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := parseCSV(strings.NewReader(tt.body), "x.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, rows)
		})
	}
}

func TestLoadFilesOverridesDuplicateKeys(t *testing.T) {
	first := writeCSV(t, "a.csv",
		"potrf,float64,4096,0,2,256,mg,1,0,0,0,0",
		"potrf,float64,4096,0,2,256,mgla,2,0,0,0,0",
		"potrf,float64,4096,0,2,256,mg,3,0,0,0,0", // overrides line 1 in the same file
	)
	second := writeCSV(t, "b.csv",
		"potrf,float64,4096,0,2,256,mgla,4,0,0,0,0", // overrides a.csv
		"potrf,float64,4096,0,2,512,mgla,5,0,0,0,0", // another tile: a new key
	)
	rows, err := loadFiles([]string{first, second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s/%d=%g", r.Path, r.Tile, r.Seconds))
	}
	want := []string{"mg/256=3", "mgla/256=4", "mgla/512=5"}
	if !slices.Equal(got, want) {
		t.Errorf("merged rows = %v, want %v", got, want)
	}
}

func TestRatioColumn(t *testing.T) {
	tests := []struct {
		name      string
		lines     []string
		wantRatio string // "" when the table must have no ratio column
	}{
		{"both measured", []string{
			"potrf,float64,4096,0,2,256,mg,0.1,0,0,0,0",
			"potrf,float64,4096,0,2,256,mgla,0.125,0,0,0,0"}, "1.250"},
		{"mgla did not fit", []string{
			"potrf,float64,4096,0,2,256,mg,0.1,0,0,0,0",
			"potrf,float64,4096,0,2,256,mgla,NaN,0,0,0,0"}, "—"},
		{"mg at another tile", []string{
			"potrf,float64,4096,0,2,512,mg,0.1,0,0,0,0",
			"potrf,float64,4096,0,2,256,mgla,0.125,0,0,0,0"}, "—"},
		{"no mg", []string{
			"potrf,float64,4096,0,2,256,mgla,0.125,0,0,0,0"}, ""},
		{"transfers: bandwidth ratio", []string{
			"upload,float64,4096,0,2,0,pinned,0.1,0,0,1e9,",
			"upload,float64,4096,0,2,0,mgla,0.2,0,0,1e9,"}, "0.500"},
		{"transfers: registered after mgla", []string{
			"upload,float64,4096,0,2,0,pinned,0.1,0,0,1e9,",
			"upload,float64,4096,0,2,0,mgla,0.2,0,0,1e9,",
			"upload,float64,4096,0,2,0,registered,0.125,0,0,1e9,"}, "0.800"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := loadFiles([]string{writeCSV(t, "r.csv", tt.lines...)})
			if err != nil {
				t.Fatal(err)
			}
			var table [][]string
			if isTransfer(rows[0].Op) {
				table = transferTable(rows)
			} else {
				table = solverTable(rows)
			}
			head := table[0][len(table[0])-1]
			hasRatio := strings.Contains(head, " / ")
			if hasRatio != (tt.wantRatio != "") {
				t.Fatalf("header %v: ratio column present = %v", table[0], hasRatio)
			}
			if !hasRatio {
				return
			}
			var got []string
			for _, row := range table[1:] {
				got = append(got, row[len(row)-1])
			}
			if !slices.Contains(got, tt.wantRatio) {
				t.Errorf("ratio cells = %q, want one %q", got, tt.wantRatio)
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{formatSeconds(0.0372), "37.2 ms"},
		{formatSeconds(0.0005123), "0.512 ms"},
		{formatSeconds(0.12345), "123 ms"},
		{formatSeconds(0.99996), "1.00 s"},
		{formatSeconds(1.2), "1.20 s"},
		{formatSeconds(1234), "1230 s"},
		{sig3(12.345), "12.3"},
		{sig3(0.0123456), "0.0123"},
		{ratioText(1.25, 1), "1.250"},
		{ratioText(math.NaN(), 1), "—"},
		{timeText(result{Seconds: math.NaN()}, true), "—"},
		{timeText(result{}, false), ""},
		{rateText(0, true), "—"},
		{tileText(0), "—"},
		{group{"potrs", 256, "float32"}.String(), "potrs, 256 right-hand sides, float32"},
		{group{"potrs", 1, "float64"}.fileName(), "potrs-nrhs1-float64.svg"},
		{group{"syevd-values", 0, "float64"}.fileName(), "syevd-values-float64.svg"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

func TestMainTile(t *testing.T) {
	r := func(path string, tile int, sec float64) result {
		return result{key: key{Path: path, Tile: tile}, Seconds: sec}
	}
	tests := []struct {
		name string
		rows []result
		want int
	}{
		{"most rows", []result{r("mg", 256, 1), r("mgla", 256, 1), r("mg", 512, 1)}, 256},
		{"tie goes to the larger tile", []result{r("mg", 256, 1), r("mg", 512, 1)}, 512},
		{"dn and NaN rows do not count", []result{r("mg", 256, 1), r("dn", 0, 1), r("dn", 0, 1), r("mg", 512, math.NaN())}, 256},
		{"none", []result{r("dn", 0, 1)}, 0},
	}
	for _, tt := range tests {
		if got := solverTile(tt.rows); got != tt.want {
			t.Errorf("%s: main tile = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestRunWritesPlotsAndTables(t *testing.T) {
	in := writeCSV(t, "bench.csv", synthetic()...)
	out := filepath.Join(t.TempDir(), "plots")
	md := filepath.Join(t.TempDir(), "tables.md")
	if err := run([]string{in}, out, md); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{
		"potrf-float64.svg",
		"potrs-nrhs1-float64.svg",
		"potrs-nrhs256-float64.svg",
		"upload-float64.svg",
		"tile-potrf-float64.svg",
	} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(b) == 0 || !strings.Contains(string(b), "<svg") {
			t.Errorf("%s: not an SVG file (%d bytes)", name, len(b))
		}
	}
	if _, err := os.Stat(filepath.Join(out, "potri-float64.svg")); !os.IsNotExist(err) {
		t.Errorf("potri has no data, but its plot exists (err = %v)", err)
	}

	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		"### potrf, float64\n",
		"### potrs, 1 right-hand side, float64\n",
		"### potrs, 256 right-hand sides, float64\n",
		"### upload, float64\n",
		"| N | GPUs | T | mg time | mg TFLOP/s | mgla time | mgla TFLOP/s | dn time | dn TFLOP/s | mgla / mg |",
		"| 32768 | 1 | — |  |  |  |  | — | — | — |", // the NaN dn row
		"| 4096 | 2 | 512 | 20.0 ms | ",
		"| 4096 | 2 | 512 | 0.134 | 6.71 ms | 20.0 | 5.37 ms | 25.0 | 0.800 |", // upload: untiled pinned joins mgla at T = 512
		"### Crossover",
		"| potrf, float64 | 16384 | 4 | 512 | 640 ms | 640 ms | cuSOLVER | 1.00× |",
		"| potrf, float64 | 4096 | 2 | 512 | 10.0 ms | 20.0 ms | cuSOLVER | 2.00× |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Markdown lacks %q; got:\n%s", want, text)
		}
	}
}

func TestDropFilters(t *testing.T) {
	in := writeCSV(t, "bench.csv", synthetic()...)
	md := filepath.Join(t.TempDir(), "tables.md")
	var drops []rowFilter
	for _, s := range []string{"op=potrf,tile=256", "op=potrs,nrhs=256,ndev=4"} {
		f, err := parseFilter(s)
		if err != nil {
			t.Fatal(err)
		}
		drops = append(drops, f)
	}
	if err := run([]string{in}, t.TempDir(), md, drops...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, gone := range []string{"| 4096 | 2 | 256 |", "| 16384 | 4 | 256 |"} {
		if strings.Contains(text, gone) {
			t.Errorf("dropped potrf T=256 row %q is in the tables", gone)
		}
	}
	for _, kept := range []string{"| 4096 | 2 | 512 | 20.0 ms | ", "### potrs, 256 right-hand sides, float64\n"} {
		if !strings.Contains(text, kept) {
			t.Errorf("tables lack %q", kept)
		}
	}
	nrhs256 := text[strings.Index(text, "### potrs, 256"):]
	nrhs256 = nrhs256[:strings.Index(nrhs256[3:], "###")+3]
	if strings.Contains(nrhs256, "| 4 | 512 |") || !strings.Contains(nrhs256, "| 2 | 512 |") {
		t.Errorf("potrs K=256: want the 2-GPU rows only, got:\n%s", nrhs256)
	}
	for _, bad := range []string{"op", "op=potrf,colour=red", "n=", "op=potrf,,n=4"} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("parseFilter(%q): no error", bad)
		}
	}
}

// The load table (transfers into allocated shards) compares with the
// pinned copies of the upload group at the orders it has; other groups do
// not borrow rows.
func TestLoadTableComparesWithPinned(t *testing.T) {
	rows, err := loadFiles([]string{writeCSV(t, "r.csv",
		"upload,float64,4096,0,2,0,pinned,0.1,0,0,1e9,",
		"upload,float64,8192,0,2,0,pinned,0.4,0,0,4e9,",
		"upload,float64,4096,0,2,2048,registered,0.2,0,0,1e9,",
		"load,float64,4096,0,2,2048,registered,0.11,0,0,1e9,",
		"download,float64,4096,0,2,2048,registered,0.1,0,0,1e9,")})
	if err != nil {
		t.Fatal(err)
	}
	md := markdown(rows)
	section := func(title string) string {
		_, rest, ok := strings.Cut(md, "### "+title+"\n")
		if !ok {
			t.Fatalf("no section %q in\n%s", title, md)
		}
		before, _, _ := strings.Cut(rest, "### ")
		return before
	}
	if load := section("load, float64"); !strings.Contains(load, "registered / pinned") || !strings.Contains(load, "| 0.909 |") {
		t.Errorf("load table without the ratio to the pinned upload:\n%s", load)
	} else if strings.Contains(load, "| 8192 |") {
		t.Errorf("load table borrowed a pinned copy at an order with no load:\n%s", load)
	}
	if up := section("upload, float64"); !strings.Contains(up, "| 0.500 |") {
		t.Errorf("upload table:\n%s", up)
	}
	if down := section("download, float64"); strings.Contains(down, "pinned") {
		t.Errorf("download table borrowed the pinned uploads:\n%s", down)
	}
}
