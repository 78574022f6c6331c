// Command benchreport turns the CSV results of cmd/mgbench into SVG plots
// and the Markdown tables of docs/bench/tables.md (BENCHMARKS.md links them).
//
// Usage:
//
//	go run ./cmd/benchreport [-out docs/bench] [-md FILE] [-drop FILTER]... results.csv [more.csv ...]
//
// Every input file starts with exactly this header line:
//
//	op,dtype,n,nrhs,ndev,tile,path,seconds,flops,tflops,bytes,gbps
//
// and has one row per measurement. A row is identified by
// (op, dtype, n, nrhs, ndev, tile, path); a later row with the same key, in
// the same file or in a later file on the command line, replaces the earlier
// one. Empty or "NaN" numeric cells are allowed (a run that did not fit in
// memory has seconds = NaN): such rows are left out of the plots and shown as
// "—" in the tables. Empty integer cells read as 0. Lines starting with '#'
// are comments. When tflops (gbps) is empty but flops (bytes) and seconds
// are known, it is computed as flops/seconds/1e12 (bytes/seconds/1e9).
// -drop op=potri,tile=1024 leaves out every row whose key has those values
// (superseded or known-wrong measurements).
//
// Output:
//
//   - In the -out directory, one SVG plot (seconds against N, both on log
//     axes) per solver op — potrf, potrs with 1 and with 256 right-hand
//     sides, potri, syevd-values, syevd-vectors — for float64 at the op's main
//     tile (the tile with the most mg/mgla/auto rows; ties go to the larger
//     tile), named <op>[-nrhs<k>]-float64.svg; upload-float64.svg with the
//     upload bandwidth of the mgla, registered and pinned paths; and tile-potrf-float64.svg
//     (seconds against tile width) when potrf was run at several tiles.
//     Plots without data are not written.
//   - On standard output, or in the -md file, a Markdown table per
//     (op, nrhs, dtype), then a crossover table comparing single-GPU cuSOLVER
//     (path dn) with cuSolverMg (path mg) on several GPUs.
//
// It imports cmd/internal/benchcsv (the input format) and gonum/plot, none
// of mgla's solver code, so it runs anywhere Go does.
package main

import (
	"cmp"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mgla/mgla/cmd/internal/benchcsv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

func main() {
	outDir := flag.String("out", "docs/bench", "directory for the SVG plots")
	mdFile := flag.String("md", "", "file for the Markdown tables (default: standard output)")
	var drops []rowFilter
	flag.Func("drop", "leave out the rows that match `FIELD=VALUE,...` (fields: op, dtype, n, nrhs, ndev, tile, path); repeatable", func(s string) error {
		f, err := parseFilter(s)
		drops = append(drops, f)
		return err
	})
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: benchreport [-out DIR] [-md FILE] [-drop FILTER]... results.csv...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Args(), *outDir, *mdFile, drops...); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// run reads the CSV files, leaves out the rows that match one of drops,
// writes the plots into outDir and the Markdown tables into mdFile ("" for
// standard output).
func run(files []string, outDir, mdFile string, drops ...rowFilter) error {
	rows, err := loadFiles(files)
	if err != nil {
		return err
	}
	rows = filter(rows, func(r result) bool {
		return !slices.ContainsFunc(drops, func(f rowFilter) bool { return f.matches(r.key) })
	})
	written, err := writePlots(rows, outDir)
	if err != nil {
		return err
	}
	for _, f := range written {
		fmt.Fprintln(os.Stderr, "wrote", f)
	}
	md := markdown(rows)
	if mdFile == "" {
		_, err = io.WriteString(os.Stdout, md)
		return err
	}
	return os.WriteFile(mdFile, []byte(md), 0o644)
}

// ---------------------------------------------------------------------------
// Input

// header is the exact first line of every input file.
const header = benchcsv.Header

var columns = benchcsv.Columns

// key identifies a measurement; a later row with the same key wins.
type key struct {
	Op, Dtype           string
	N, NRHS, NDev, Tile int
	Path                string
}

// rowFilter selects rows by the fields of their key that it names: a row
// matches when every named field has the given value.
type rowFilter map[string]string

// parseFilter reads FIELD=VALUE,... with fields named as in the header.
func parseFilter(s string) (rowFilter, error) {
	f := rowFilter{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(columns[:7], name) || value == "" {
			return nil, fmt.Errorf("filter %q: want FIELD=VALUE,... with fields %s", s, strings.Join(columns[:7], ", "))
		}
		f[name] = value
	}
	return f, nil
}

// matches reports whether k has every value that f names.
func (f rowFilter) matches(k key) bool {
	fields := map[string]string{"op": k.Op, "dtype": k.Dtype, "n": strconv.Itoa(k.N), "nrhs": strconv.Itoa(k.NRHS),
		"ndev": strconv.Itoa(k.NDev), "tile": strconv.Itoa(k.Tile), "path": k.Path}
	for name, value := range f {
		if fields[name] != value {
			return false
		}
	}
	return true
}

// result is one CSV row. Missing numbers are NaN.
type result struct {
	key
	Seconds, Flops, TFlops, Bytes, GBps float64
}

// ok reports whether the row holds a usable time.
func (r result) ok() bool { return positive(r.Seconds) }

// positive reports whether v is a finite number greater than zero.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// loadFiles reads the files in order and merges their rows.
func loadFiles(files []string) ([]result, error) {
	var batches [][]result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		rows, err := parseCSV(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		batches = append(batches, rows)
	}
	return merge(batches...), nil
}

// merge concatenates the batches, a later row replacing an earlier row with
// the same key in place (so the order of first appearance is kept).
func merge(batches ...[]result) []result {
	index := make(map[key]int)
	var out []result
	for _, batch := range batches {
		for _, r := range batch {
			if i, seen := index[r.key]; seen {
				out[i] = r
				continue
			}
			index[r.key] = len(out)
			out = append(out, r)
		}
	}
	return out
}

// parseCSV reads one file in the mgbench format; name is used in errors.
func parseCSV(r io.Reader, name string) ([]result, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1 // checked below, with a better message

	first, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(first) > 0 {
		first[0] = strings.TrimPrefix(first[0], "\ufeff")
	}
	if got := strings.Join(first, ","); got != header {
		return nil, fmt.Errorf("%s: header is %q, want %q", name, got, header)
	}

	var rows []result
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(columns) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", name, line, len(rec), len(columns))
		}
		row, err := parseRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		rows = append(rows, row)
	}
}

// parseRecord converts the fields of one data line, in header order.
func parseRecord(rec []string) (result, error) {
	var r result
	r.Op = strings.TrimSpace(rec[0])
	r.Dtype = strings.TrimSpace(rec[1])
	r.Path = strings.TrimSpace(rec[6])
	if r.Op == "" || r.Dtype == "" || r.Path == "" {
		return r, errors.New("op, dtype and path must not be empty")
	}

	ints := []*int{&r.N, &r.NRHS, &r.NDev, &r.Tile}
	for i, dst := range ints {
		v, err := parseInt(rec[2+i])
		if err != nil {
			return r, fmt.Errorf("column %s: %w", columns[2+i], err)
		}
		*dst = v
	}
	if r.N < 1 || r.NDev < 1 {
		return r, fmt.Errorf("n = %d and ndev = %d must be at least 1", r.N, r.NDev)
	}

	floats := []*float64{&r.Seconds, &r.Flops, &r.TFlops, &r.Bytes, &r.GBps}
	for i, dst := range floats {
		v, err := parseFloat(rec[7+i])
		if err != nil {
			return r, fmt.Errorf("column %s: %w", columns[7+i], err)
		}
		*dst = v
	}

	if math.IsNaN(r.TFlops) && positive(r.Flops) && r.ok() {
		r.TFlops = benchcsv.Rate(r.Flops, r.Seconds, 1e12)
	}
	if math.IsNaN(r.GBps) && positive(r.Bytes) && r.ok() {
		r.GBps = benchcsv.Rate(r.Bytes, r.Seconds, 1e9)
	}
	return r, nil
}

// parseInt reads an integer cell; an empty cell is 0.
func parseInt(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	return strconv.Atoi(s)
}

// parseFloat reads a number cell; an empty cell or "NaN" is NaN.
func parseFloat(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64) // accepts NaN and Inf in any case
}

// ---------------------------------------------------------------------------
// Ops, paths and groups

// opOrder is the order of ops in the report; unknown ops come after, by name.
var opOrder = []string{"potrf", "potrs", "potri", "syevd-values", "syevd-vectors", "upload", "load", "download", "register", "relayout", "hostcopy"}

// isTransfer reports whether op measures a data movement (GB/s) rather than
// a solver (TFLOP/s).
func isTransfer(op string) bool {
	return op == "upload" || op == "load" || op == "download" || op == "register" || op == "relayout" || op == "hostcopy"
}

// pathStyle is how a path is named and drawn.
type pathStyle struct {
	name  string // legend name
	color color.RGBA
}

// pathOrder is the column and legend order of the known paths.
var pathOrder = []string{"mg", "mgla", "auto", "single", "dn", "graph", "registered", "pinned", "pageable", "memcpy"}

// pathStyles uses the Okabe–Ito palette, which stays distinct for readers
// with colour-vision deficiencies.
var pathStyles = map[string]pathStyle{
	"mg":         {"cuSolverMg", color.RGBA{0, 114, 178, 255}},
	"mgla":       {"mgla", color.RGBA{213, 94, 0, 255}},
	"auto":       {"mgla auto", color.RGBA{0, 158, 115, 255}},
	"single":     {"mgla single GPU", color.RGBA{86, 86, 86, 255}},
	"dn":         {"cuSOLVER", color.RGBA{0, 0, 0, 255}},
	"graph":      {"Gorgonia graph", color.RGBA{204, 121, 167, 255}},
	"registered": {"mgla, registered host", color.RGBA{240, 228, 66, 255}},
	"pinned":     {"pinned memcpy", color.RGBA{86, 180, 233, 255}},
	"pageable":   {"pageable memcpy", color.RGBA{230, 159, 0, 255}},
	"memcpy":     {"host memcpy (all CPUs)", color.RGBA{0, 0, 0, 255}},
}

// styleOf returns the style of path, a grey for unknown paths.
func styleOf(path string) pathStyle {
	if s, ok := pathStyles[path]; ok {
		return s
	}
	return pathStyle{path, color.RGBA{120, 120, 120, 255}}
}

// rank returns the position of s in order, or len(order) if absent.
func rank(order []string, s string) int {
	if i := slices.Index(order, s); i >= 0 {
		return i
	}
	return len(order)
}

// compareNamed orders a and b by their rank in order, then by name.
func compareNamed(order []string, a, b string) int {
	if c := rank(order, a) - rank(order, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// group is what gets one table: an op with its nrhs and dtype.
type group struct {
	Op    string
	NRHS  int
	Dtype string
}

func (g group) String() string {
	switch {
	case g.NRHS == 1:
		return fmt.Sprintf("%s, 1 right-hand side, %s", g.Op, g.Dtype)
	case g.NRHS > 1:
		return fmt.Sprintf("%s, %d right-hand sides, %s", g.Op, g.NRHS, g.Dtype)
	}
	return fmt.Sprintf("%s, %s", g.Op, g.Dtype)
}

// fileName is the plot file name, e.g. potrs-nrhs1-float64.svg.
func (g group) fileName() string {
	if g.NRHS > 0 {
		return fmt.Sprintf("%s-nrhs%d-%s.svg", g.Op, g.NRHS, g.Dtype)
	}
	return fmt.Sprintf("%s-%s.svg", g.Op, g.Dtype)
}

func groupOf(r result) group { return group{r.Op, r.NRHS, r.Dtype} }

// groups returns the groups present in rows, in report order.
func groups(rows []result) []group {
	var gs []group
	for _, r := range rows {
		if g := groupOf(r); !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	slices.SortFunc(gs, func(a, b group) int {
		if c := compareNamed(opOrder, a.Op, b.Op); c != 0 {
			return c
		}
		if c := a.NRHS - b.NRHS; c != 0 {
			return c
		}
		return compareNamed([]string{"float64", "float32"}, a.Dtype, b.Dtype)
	})
	return gs
}

// filter returns the rows for which keep is true.
func filter(rows []result, keep func(result) bool) []result {
	var out []result
	for _, r := range rows {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// inGroup returns the rows of g.
func inGroup(rows []result, g group) []result {
	return filter(rows, func(r result) bool { return groupOf(r) == g })
}

// paths returns the paths present in rows, in column order.
func paths(rows []result) []string {
	var ps []string
	for _, r := range rows {
		if !slices.Contains(ps, r.Path) {
			ps = append(ps, r.Path)
		}
	}
	slices.SortFunc(ps, func(a, b string) int { return compareNamed(pathOrder, a, b) })
	return ps
}

// mainTile returns the tile with the most usable rows among the given paths;
// ties go to the larger tile. Untiled rows (tile 0) do not count; it is 0
// when there are no tiled rows.
func mainTile(rows []result, onPaths ...string) int {
	count := make(map[int]int)
	for _, r := range rows {
		if r.ok() && r.Tile != 0 && slices.Contains(onPaths, r.Path) {
			count[r.Tile]++
		}
	}
	best, bestCount := 0, 0
	for tile, c := range count {
		if c > bestCount || c == bestCount && tile > best {
			best, bestCount = tile, c
		}
	}
	return best
}

// solverTile is the main tile of a solver group.
func solverTile(rows []result) int { return mainTile(rows, "mg", "mgla", "auto") }

// ---------------------------------------------------------------------------
// Plots

const (
	plotDtype  = "float64"
	plotWidth  = 6 * vg.Inch
	plotHeight = 4 * vg.Inch
)

// solverPlots are the groups that get a seconds-against-N plot.
var solverPlots = []group{
	{"potrf", 0, plotDtype},
	{"potrs", 1, plotDtype},
	{"potrs", 256, plotDtype},
	{"potri", 0, plotDtype},
	{"syevd-values", 0, plotDtype},
	{"syevd-vectors", 0, plotDtype},
}

// writePlots writes every plot that has data into dir and returns the
// paths of the files written.
func writePlots(rows []result, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	type named struct {
		file string
		p    *plot.Plot
	}
	var plots []named
	for _, g := range solverPlots {
		if p := solverPlot(inGroup(rows, g), g); p != nil {
			plots = append(plots, named{g.fileName(), p})
		}
	}
	upload := group{"upload", 0, plotDtype}
	if p := uploadPlot(inGroup(rows, upload)); p != nil {
		plots = append(plots, named{upload.fileName(), p})
	}
	if p := tilePlot(inGroup(rows, group{"potrf", 0, plotDtype})); p != nil {
		plots = append(plots, named{"tile-potrf-" + plotDtype + ".svg", p})
	}

	var written []string
	for _, np := range plots {
		file := filepath.Join(dir, np.file)
		if err := np.p.Save(plotWidth, plotHeight, file); err != nil {
			return written, err
		}
		written = append(written, file)
	}
	return written, nil
}

// line is one (path, ndev) curve of a plot.
type line struct {
	Path string
	NDev int
}

func (l line) label() string {
	gpus := "GPUs"
	if l.NDev == 1 {
		gpus = "GPU"
	}
	return fmt.Sprintf("%s %d %s", styleOf(l.Path).name, l.NDev, gpus)
}

// curves groups rows into lines with x(r), y(r) points, sorted by x. Rows
// whose y is not a positive number are left out. When two rows of a line
// share an x, the one with tile == preferTile wins.
func curves(rows []result, x, y func(result) float64, preferTile int) map[line]plotter.XYs {
	type point struct {
		xy   plotter.XY
		tile int
	}
	pts := make(map[line]map[float64]point)
	for _, r := range rows {
		if !r.ok() || !positive(y(r)) {
			continue
		}
		l := line{r.Path, r.NDev}
		if pts[l] == nil {
			pts[l] = make(map[float64]point)
		}
		xv := x(r)
		if old, dup := pts[l][xv]; dup && old.tile == preferTile {
			continue
		}
		pts[l][xv] = point{plotter.XY{X: xv, Y: y(r)}, r.Tile}
	}
	out := make(map[line]plotter.XYs)
	for l, m := range pts {
		var xys plotter.XYs
		for _, p := range m {
			xys = append(xys, p.xy)
		}
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		out[l] = xys
	}
	return out
}

// atTile keeps the rows measured at tile, and those of untiled paths (tile 0).
func atTile(rows []result, tile int) []result {
	return filter(rows, func(r result) bool { return r.Tile == tile || r.Tile == 0 })
}

func byN(r result) float64       { return float64(r.N) }
func byTile(r result) float64    { return float64(r.Tile) }
func bySeconds(r result) float64 { return r.Seconds }
func byGBps(r result) float64    { return r.GBps }

// solverPlot draws seconds against N for the group at its main tile, or
// returns nil if there is nothing to draw.
func solverPlot(rows []result, g group) *plot.Plot {
	tile := solverTile(rows)
	lines := curves(atTile(rows, tile), byN, bySeconds, tile)
	if len(lines) == 0 {
		return nil
	}
	title := g.String()
	if tile > 0 {
		title += fmt.Sprintf(", tile %d", tile)
	}
	p := newPlot(title, "N (matrix order)", "seconds (median)")
	addLines(p, lines)
	logAxis(&p.X, xValues(lines), 1.15)
	logAxis(&p.Y, nil, 1.3)
	makeRoomForLegend(p, lines)
	return p
}

// uploadPlot draws the upload bandwidth of the mgla, registered and pinned paths
// against N, or returns nil if there is nothing to draw.
func uploadPlot(rows []result) *plot.Plot {
	rows = filter(rows, func(r result) bool {
		return r.Path == "mgla" || r.Path == "registered" || r.Path == "pinned"
	})
	tile := mainTile(rows, "mgla")
	lines := curves(atTile(rows, tile), byN, byGBps, tile)
	if len(lines) == 0 {
		return nil
	}
	p := newPlot("upload, host → GPUs, "+plotDtype, "N (matrix order)", "GB/s")
	addLines(p, lines)
	logAxis(&p.X, xValues(lines), 1.15)
	p.Y.Min = 0
	p.Y.Max *= 1.1
	makeRoomForLegend(p, lines)
	return p
}

// tilePlot draws potrf seconds against the tile width at the largest N that
// was run at two tiles or more, or returns nil if there is no such N.
func tilePlot(rows []result) *plot.Plot {
	rows = filter(rows, func(r result) bool { return r.ok() && (r.Path == "mg" || r.Path == "mgla") })
	tiles := make(map[int][]int) // n → tiles
	for _, r := range rows {
		if !slices.Contains(tiles[r.N], r.Tile) {
			tiles[r.N] = append(tiles[r.N], r.Tile)
		}
	}
	bestN := 0
	for n, ts := range tiles {
		if len(ts) >= 2 && n > bestN {
			bestN = n
		}
	}
	if bestN == 0 {
		return nil
	}
	rows = filter(rows, func(r result) bool { return r.N == bestN && r.Tile > 0 })
	lines := curves(rows, byTile, bySeconds, 0)
	p := newPlot(fmt.Sprintf("potrf, %s, N = %d", plotDtype, bestN), "tile width T", "seconds (median)")
	addLines(p, lines)
	logAxis(&p.X, xValues(lines), 1.15)
	logAxis(&p.Y, nil, 1.3)
	makeRoomForLegend(p, lines)
	return p
}

// newPlot returns an empty plot with a grid and the legend top left.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Title.TextStyle.Font.Size = vg.Points(12)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(9)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.Padding = vg.Points(1.5)
	p.Legend.XOffs = legendGap
	p.Legend.YOffs = -legendGap
	p.Add(plotter.NewGrid())
	return p
}

// legendGap separates the legend from the axes and from the data.
const legendGap vg.Length = 6 // points

// makeRoomForLegend raises the top of the y axis, if needed, so that no
// line passes behind the legend in the top left corner. The axes must be
// final otherwise.
func makeRoomForLegend(p *plot.Plot, lines map[line]plotter.XYs) {
	data := p.DataCanvas(draw.New(vgsvg.New(plotWidth, plotHeight)))
	size := data.Size()
	legend := p.Legend.Rectangle(data).Size()
	// The legend hangs from the top of the area under the title (see
	// plot.Plot.Draw and plot.Legend.Draw), slightly above the data area.
	under := plotHeight - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y - p.Title.Padding
	legendBottom := under + p.Legend.YOffs - p.Legend.TextStyle.FontExtents().Descent - legend.Y
	right := float64((legend.X + p.Legend.XOffs + legendGap) / size.X)
	bottom := float64((legendBottom - legendGap - data.Min.Y) / size.Y)
	if bottom < 0.3 {
		return // too large a legend to keep clear of
	}
	top := 0.0 // the highest the lines get left of right
	for _, xys := range lines {
		for i, pt := range xys {
			u, v := p.X.Norm(pt.X), p.Y.Norm(pt.Y)
			if u <= right {
				top = max(top, v)
			} else if i > 0 {
				pu, pv := p.X.Norm(xys[i-1].X), p.Y.Norm(xys[i-1].Y)
				if pu < right {
					top = max(top, pv+(v-pv)*(right-pu)/(u-pu))
				}
			}
		}
	}
	if top <= bottom {
		return
	}
	// Stretch the axis so that what is at height top comes down to bottom.
	if _, isLog := p.Y.Scale.(plot.LogScale); isLog {
		low := math.Log(p.Y.Min)
		p.Y.Max = math.Exp(low + (math.Log(p.Y.Max)-low)*top/bottom)
		return
	}
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)*top/bottom
}

// addLines adds the lines in legend order: by path, then by GPU count.
// Each path has its colour, each GPU count its dash pattern and marker.
func addLines(p *plot.Plot, lines map[line]plotter.XYs) {
	keys := make([]line, 0, len(lines))
	for l := range lines {
		keys = append(keys, l)
	}
	slices.SortFunc(keys, func(a, b line) int {
		if c := compareNamed(pathOrder, a.Path, b.Path); c != 0 {
			return c
		}
		return a.NDev - b.NDev
	})
	for _, l := range keys {
		ln, pts, err := plotter.NewLinePoints(lines[l])
		if err != nil {
			panic(err) // curves only yields finite points
		}
		c := styleOf(l.Path).color
		ln.Color = c
		ln.Width = vg.Points(1.5)
		ln.Dashes = dashes(l.NDev)
		pts.Color = c
		pts.Radius = vg.Points(2.5)
		pts.Shape = marker(l.NDev)
		p.Add(ln, pts)
		p.Legend.Add(l.label(), ln, pts)
	}
}

// dashes is the dash pattern for a GPU count: solid for 1, then longer dashes,
// dots and dash-dots.
func dashes(ndev int) []vg.Length {
	pt := vg.Points
	switch {
	case ndev <= 1:
		return nil
	case ndev == 2:
		return []vg.Length{pt(6), pt(3)}
	case ndev <= 4:
		return []vg.Length{pt(1.5), pt(2)}
	case ndev <= 8:
		return []vg.Length{pt(6), pt(2), pt(1.5), pt(2)}
	}
	return []vg.Length{pt(10), pt(3)}
}

// marker is the point shape for a GPU count.
func marker(ndev int) draw.GlyphDrawer {
	switch {
	case ndev <= 1:
		return draw.CircleGlyph{}
	case ndev == 2:
		return draw.TriangleGlyph{}
	case ndev <= 4:
		return draw.BoxGlyph{}
	}
	return draw.PyramidGlyph{}
}

// xValues returns the distinct x values of the lines, sorted.
func xValues(lines map[line]plotter.XYs) []float64 {
	var xs []float64
	for _, xys := range lines {
		for _, p := range xys {
			if !slices.Contains(xs, p.X) {
				xs = append(xs, p.X)
			}
		}
	}
	slices.Sort(xs)
	return xs
}

// logAxis puts a on a log scale widened by pad on both sides. With ticks,
// those values are the labelled ticks (N or tile values); without, the ticks
// are 1-2-5 times powers of ten.
func logAxis(a *plot.Axis, ticks []float64, pad float64) {
	a.Scale = plot.LogScale{}
	a.Min /= pad
	a.Max *= pad
	if ticks == nil {
		a.Tick.Marker = decadeTicks{}
		return
	}
	var ts plot.ConstantTicks
	for _, v := range ticks {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	a.Tick.Marker = ts
}

// decadeTicks marks 1…9 times each power of ten and labels 1, 2 and 5 (all
// of them when that would leave fewer than two labels, and the ends of the
// axis when no such value lies on it).
type decadeTicks struct{}

func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	labelled := 0
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for d := 1; d <= 9; d++ {
			v := float64(d) * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || d == 2 || d == 5 {
				t.Label = decadeLabel(d, e)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if len(ticks) == 0 {
		return []plot.Tick{{Value: min, Label: sig3(min)}, {Value: max, Label: sig3(max)}}
	}
	if labelled < 2 {
		for i := range ticks {
			e := math.Floor(math.Log10(ticks[i].Value) + 1e-9)
			ticks[i].Label = decadeLabel(int(math.Round(ticks[i].Value/math.Pow(10, e))), e)
		}
	}
	return ticks
}

// decadeLabel formats d×10^e without rounding noise, e.g. "0.05" or "200".
func decadeLabel(d int, e float64) string {
	if e >= 0 {
		return strconv.FormatFloat(float64(d)*math.Pow(10, e), 'f', 0, 64)
	}
	return strconv.FormatFloat(float64(d)*math.Pow(10, e), 'f', int(-e), 64)
}

// ---------------------------------------------------------------------------
// Markdown

// markdown returns all tables: one per group, then the crossover table.
func markdown(rows []result) string {
	var b strings.Builder
	b.WriteString("Times are medians. \"—\": the run did not complete (e.g. it did not fit in memory); empty: not measured.\n")
	b.WriteString("Paths: mg = raw cuSolverMg on laid-out device buffers; mgla = the same op through mgla on the multi-GPU solver; " +
		"auto = mgla with its default dispatch; dn = single-GPU cuSOLVER; graph = Gorgonia graph, host in → host out; " +
		"registered = mgla from a host matrix registered with sharding.RegisterHost; " +
		"pinned / pageable = plain cudaMemcpyAsync from pinned / ordinary host memory; " +
		"upload = Put (allocates the shards), load = Load into allocated shards.\n")
	for _, g := range groups(rows) {
		fmt.Fprintf(&b, "\n### %s\n\n", g)
		gr := inGroup(rows, g)
		if g.Op == "load" {
			// Loads into allocated shards compare with the same pinned
			// copies as uploads, at the orders and GPU counts measured.
			loads := gr
			gr = append(gr, filter(inGroup(rows, group{"upload", g.NRHS, g.Dtype}), func(r result) bool {
				return r.Path == "pinned" && slices.ContainsFunc(loads, func(l result) bool { return l.N == r.N && l.NDev == r.NDev })
			})...)
		}
		if isTransfer(g.Op) {
			writeTable(&b, transferTable(gr))
		} else {
			writeTable(&b, solverTable(gr))
		}
	}
	if t := crossoverTable(rows); len(t) > 1 {
		b.WriteString("\n### Crossover: cuSOLVER on 1 GPU against cuSolverMg\n\n")
		writeTable(&b, t)
	}
	return b.String()
}

// writeTable writes t (header row first) as a right-aligned Markdown table.
func writeTable(b *strings.Builder, t [][]string) {
	for i, row := range t {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---:", len(row)) + "|\n")
		}
	}
}

// cell is one table row: the rows of all paths at (n, ndev, tile).
type cell struct{ N, NDev, Tile int }

// cells indexes rows by cell and path and returns the cells sorted by
// (n, ndev, tile). A row of an untiled path (tile 0, such as dn or pinned)
// goes into the cell at joinTile with the same n and ndev, where it can be
// compared with the tiled paths, and gets a cell of its own only when there
// is no such cell.
func cells(rows []result, joinTile int) ([]cell, map[cell]map[string]result) {
	at := make(map[cell]map[string]result)
	var cs []cell
	put := func(c cell, r result) {
		if at[c] == nil {
			at[c] = make(map[string]result)
			cs = append(cs, c)
		}
		at[c][r.Path] = r
	}
	for _, r := range rows {
		if r.Tile != 0 {
			put(cell{r.N, r.NDev, r.Tile}, r)
		}
	}
	for _, r := range rows {
		if r.Tile != 0 {
			continue
		}
		c := cell{r.N, r.NDev, joinTile}
		if _, taken := at[c][r.Path]; at[c] == nil || taken {
			c.Tile = 0
		}
		put(c, r)
	}
	slices.SortFunc(cs, func(a, b cell) int {
		if a.N != b.N {
			return a.N - b.N
		}
		if a.NDev != b.NDev {
			return a.NDev - b.NDev
		}
		return a.Tile - b.Tile
	})
	return cs, at
}

// solverTable has N | GPUs | T, time and TFLOP/s per path, and mgla / mg.
// Untiled rows (dn) are shown with the main tile's rows.
func solverTable(rows []result) [][]string {
	ps := paths(rows)
	ratio := slices.Contains(ps, "mgla") && slices.Contains(ps, "mg")
	head := []string{"N", "GPUs", "T"}
	for _, p := range ps {
		head = append(head, p+" time", p+" TFLOP/s")
	}
	if ratio {
		head = append(head, "mgla / mg")
	}
	t := [][]string{head}
	cs, at := cells(rows, solverTile(rows))
	for _, c := range cs {
		row := []string{strconv.Itoa(c.N), strconv.Itoa(c.NDev), tileText(c.Tile)}
		for _, p := range ps {
			r, have := at[c][p]
			row = append(row, timeText(r, have), rateText(r.TFlops, have))
		}
		if ratio {
			row = append(row, ratioText(at[c]["mgla"].Seconds, at[c]["mg"].Seconds))
		}
		t = append(t, row)
	}
	return t
}

// transferTable has N | GPUs | [T |] GB, time and GB/s per path, and the
// mgla / pinned and registered / pinned bandwidth ratios. T is shown only
// when some row has a tile.
func transferTable(rows []result) [][]string {
	ps := paths(rows)
	var ratios []string // paths compared with pinned
	if slices.Contains(ps, "pinned") {
		ratios = slices.DeleteFunc([]string{"mgla", "registered"}, func(p string) bool { return !slices.Contains(ps, p) })
	}
	tiled := slices.ContainsFunc(rows, func(r result) bool { return r.Tile != 0 })
	head := []string{"N", "GPUs"}
	if tiled {
		head = append(head, "T")
	}
	head = append(head, "GB")
	for _, p := range ps {
		head = append(head, p+" time", p+" GB/s")
	}
	for _, p := range ratios {
		head = append(head, p+" / pinned")
	}
	t := [][]string{head}
	cs, at := cells(rows, mainTile(rows, ps...))
	for _, c := range cs {
		row := []string{strconv.Itoa(c.N), strconv.Itoa(c.NDev)}
		if tiled {
			row = append(row, tileText(c.Tile))
		}
		row = append(row, bytesText(at[c], ps))
		for _, p := range ps {
			r, have := at[c][p]
			row = append(row, timeText(r, have), rateText(r.GBps, have))
		}
		for _, p := range ratios {
			row = append(row, ratioText(at[c][p].GBps, at[c]["pinned"].GBps))
		}
		t = append(t, row)
	}
	return t
}

// crossoverTable compares, for every solver group and ndev > 1, the
// single-GPU dn path with mg on ndev GPUs at the group's main tile.
func crossoverTable(rows []result) [][]string {
	t := [][]string{{"op", "N", "GPUs", "T", "cuSOLVER (1 GPU)", "cuSolverMg", "faster", "by"}}
	for _, g := range groups(rows) {
		if isTransfer(g.Op) {
			continue
		}
		gr := inGroup(rows, g)
		tile := solverTile(gr)
		mg := filter(gr, func(r result) bool { return r.Path == "mg" && r.NDev > 1 && r.Tile == tile })
		slices.SortFunc(mg, func(a, b result) int {
			if a.N != b.N {
				return a.N - b.N
			}
			return a.NDev - b.NDev
		})
		for _, m := range mg {
			dn, have := singleGPU(gr, m.N)
			if !have {
				continue
			}
			faster, by := compareTimes(dn, m)
			t = append(t, []string{g.String(), strconv.Itoa(m.N), strconv.Itoa(m.NDev), tileText(tile),
				timeText(dn, true), timeText(m, true), faster, by})
		}
	}
	return t
}

// singleGPU returns the dn row at order n, preferring tile 0.
func singleGPU(rows []result, n int) (result, bool) {
	var found result
	have := false
	for _, r := range rows {
		if r.Path == "dn" && r.N == n && r.NDev == 1 && (!have || r.Tile == 0) {
			found, have = r, true
		}
	}
	return found, have
}

// compareTimes names the faster of dn and mg and by what factor.
func compareTimes(dn, mg result) (faster, by string) {
	switch {
	case dn.ok() && mg.ok() && dn.Seconds <= mg.Seconds:
		return "cuSOLVER", fmt.Sprintf("%.2f×", mg.Seconds/dn.Seconds)
	case dn.ok() && mg.ok():
		return "cuSolverMg", fmt.Sprintf("%.2f×", dn.Seconds/mg.Seconds)
	case dn.ok():
		return "cuSOLVER", "only run"
	case mg.ok():
		return "cuSolverMg", "only run"
	}
	return "—", "—"
}

// ---------------------------------------------------------------------------
// Number formatting

func tileText(tile int) string {
	if tile == 0 {
		return "—"
	}
	return strconv.Itoa(tile)
}

// timeText formats r's time: "" when not measured, "—" when it did not run.
func timeText(r result, have bool) string {
	if !have {
		return ""
	}
	if !r.ok() {
		return "—"
	}
	return formatSeconds(r.Seconds)
}

// formatSeconds writes s to 3 significant digits, in ms below one second:
// "37.2 ms", "1.20 s".
func formatSeconds(s float64) string {
	if ms := round3(s * 1e3); ms < 1000 {
		return sig3(ms) + " ms"
	}
	return sig3(s) + " s"
}

// rateText formats a TFLOP/s or GB/s value: "" when not measured, "—"
// when there is none.
func rateText(v float64, have bool) string {
	if !have {
		return ""
	}
	if !positive(v) {
		return "—"
	}
	return sig3(v)
}

// ratioText formats a / b to three decimals, or "—" if either is missing.
func ratioText(a, b float64) string {
	if !positive(a) || !positive(b) {
		return "—"
	}
	return strconv.FormatFloat(a/b, 'f', 3, 64)
}

// bytesText is the transfer size in GB, taken from the mgla row if it has
// one, else from the first path that has one.
func bytesText(at map[string]result, ps []string) string {
	order := append([]string{"mgla"}, ps...)
	for _, p := range order {
		if r, have := at[p]; have && positive(r.Bytes) {
			return sig3(r.Bytes / 1e9)
		}
	}
	return "—"
}

// round3 rounds v to 3 significant digits.
func round3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// sig3 formats v with 3 significant digits, keeping trailing zeros
// ("1.20", "37.2", "512", "1230").
func sig3(v float64) string {
	v = round3(v)
	if v == 0 {
		return "0"
	}
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
