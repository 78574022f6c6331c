// Command sparsebench measures package sparse on the 3-D Poisson problem
// (7-point, n³ unknowns, −Δu = 1, relative residual 1e-8) and writes the
// CSV, the Markdown table and the plots of BENCHMARKS.md's section
// "Sparse: hypre BoomerAMG". In one process, for each grid size:
//
//   - graph: the Solve op (PCG + BoomerAMG) in a Gorgonia TapeMachine: the
//     first run of a new solver (load values, AMG setup, solve) and the
//     cached runs (solve only, the hierarchy reused), best of -reps each;
//
//   - direct: the same hypre calls made from C (cgo) — IJ matrix, BoomerAMG
//     and PCG with the same settings, setup, solves — timed in C;
//
//   - cg-amg: the package's Go CG op preconditioned by the cached V-cycle;
//
//   - cg: the package's Go CG op without a preconditioner.
//
//     go run -tags mpi ./cmd/sparsebench -sizes 32,48,64,96 -csv docs/bench/sparse.csv -svg docs/bench -md /tmp/sparse.md
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// result is one path at one grid size.
type result struct {
	Path     string
	Grid     int     // n: n³ unknowns
	Build    float64 // seconds to make the hypre matrix (direct) or load the values (graph, part of Setup)
	Setup    float64 // seconds of AMG setup (graph: the first run minus its solve)
	Solve    float64 // seconds of the best solve with the hierarchy cached
	First    float64 // seconds of the first run, everything included
	Iters    int
	Residual float64
}

var header = []string{"path", "n", "unknowns", "build_s", "setup_s", "solve_s", "first_s", "iters", "residual"}

func main() {
	sizes := flag.String("sizes", "32,48,64,96", "grid sizes n (n³ unknowns)")
	reps := flag.Int("reps", 3, "runs from scratch per path, and cached solves per run (the best counts)")
	csvOut := flag.String("csv", "", "write the results as CSV here")
	svgDir := flag.String("svg", "", "write sparse-iterations.svg and sparse-time.svg here")
	mdOut := flag.String("md", "", "write the Markdown table here (default standard output)")
	cgMax := flag.Int("cg-max", 128, "largest n for unpreconditioned CG")
	flag.Parse()
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fail(fmt.Errorf("bad size %q", f))
		}
		ns = append(ns, n)
	}
	if *reps < 1 {
		fail(fmt.Errorf("-reps %d: want at least 1", *reps))
	}
	if err := prepareOutputs(*svgDir, *csvOut, *mdOut); err != nil {
		fail(err)
	}
	var all []result
	for _, n := range ns {
		rs, err := measure(n, *reps, n <= *cgMax)
		if err != nil {
			fail(err)
		}
		for _, r := range rs {
			fmt.Fprintf(os.Stderr, "n=%d %-7s first %.3fs setup %.3fs solve %.3fs, %d iterations, residual %.2e\n",
				n, r.Path, r.First, r.Setup, r.Solve, r.Iters, r.Residual)
		}
		all = append(all, rs...)
	}
	finish()
	if *csvOut != "" {
		if err := writeCSV(*csvOut, all); err != nil {
			fail(err)
		}
	}
	if *svgDir != "" {
		if err := writePlots(*svgDir, all); err != nil {
			fail(err)
		}
	}
	out := io.Writer(os.Stdout)
	if *mdOut != "" {
		f, err := os.Create(*mdOut)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		out = f
	}
	writeMarkdown(out, all)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sparsebench:", err)
	finish()
	os.Exit(1)
}

// prepareOutputs makes dir (when not "") and the folders of files (those
// not "") and checks that each file can be written, so that a bad path
// fails before the measurements rather than after them. A file that did not
// exist is not left behind.
func prepareOutputs(dir string, files ...string) error {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for _, file := range files {
		if file == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		_, statErr := os.Stat(file)
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		f.Close()
		if statErr != nil {
			os.Remove(file)
		}
	}
	return nil
}

func writeCSV(file string, rs []result) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(header)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rs {
		w.Write([]string{r.Path, strconv.Itoa(r.Grid), strconv.Itoa(r.Grid * r.Grid * r.Grid), g(r.Build), g(r.Setup),
			g(r.Solve), g(r.First), strconv.Itoa(r.Iters), g(r.Residual)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func find(rs []result, path string, n int) (result, bool) {
	for _, r := range rs {
		if r.Path == path && r.Grid == n {
			return r, true
		}
	}
	return result{}, false
}

// writeMarkdown is one row per grid size: the graph op against the direct C
// calls (first run and cached solve) and against the Go CG ops.
func writeMarkdown(w io.Writer, rs []result) {
	fmt.Fprintln(w, "| n³ | unknowns | graph first run s | direct C build+setup+solve s | ratio | graph solve s (cached) | direct C solve s | ratio | AMG-PCG iters | Go CG+AMG iters / s | CG iters / s | CG / AMG-PCG iters | CG / graph solve time |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	seen := map[int]bool{}
	for _, r := range rs {
		n := r.Grid
		if seen[n] {
			continue
		}
		seen[n] = true
		gr, ok1 := find(rs, "graph", n)
		dr, ok2 := find(rs, "direct", n)
		if !ok1 || !ok2 {
			continue
		}
		directFirst := dr.First // the best of the reps' first runs, as the graph's
		cgCell, ratioIt, ratioT := "—", "—", "—"
		if c, ok := find(rs, "cg", n); ok {
			cgCell = fmt.Sprintf("%d / %.3f", c.Iters, c.Solve)
			ratioIt = fmt.Sprintf("%.1f×", float64(c.Iters)/float64(gr.Iters))
			ratioT = fmt.Sprintf("%.1f×", c.Solve/gr.Solve)
		}
		amgCell := "—"
		if c, ok := find(rs, "cg-amg", n); ok {
			amgCell = fmt.Sprintf("%d / %.3f", c.Iters, c.Solve)
		}
		fmt.Fprintf(w, "| %d³ | %d | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f | %d | %s | %s | %s | %s |\n",
			n, n*n*n, gr.First, directFirst, gr.First/directFirst, gr.Solve, dr.Solve, gr.Solve/dr.Solve,
			gr.Iters, amgCell, cgCell, ratioIt, ratioT)
	}
}

func writePlots(dir string, rs []result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	line := func(path string, y func(result) float64) plotter.XYs {
		var xys plotter.XYs
		for _, r := range rs {
			if r.Path == path {
				xys = append(xys, plotter.XY{X: float64(r.Grid * r.Grid * r.Grid), Y: y(r)})
			}
		}
		return xys
	}
	iters := func(r result) float64 { return float64(r.Iters) }
	p := logPlot("3-D Poisson, iterations to 1e-8", "iterations")
	if err := plotutil.AddLinePoints(p, "hypre PCG+AMG (graph op)", line("graph", iters),
		"Go CG + AMG V-cycle", line("cg-amg", iters), "Go CG, no preconditioner", line("cg", iters)); err != nil {
		return err
	}
	if err := p.Save(5*vg.Inch, 3.5*vg.Inch, filepath.Join(dir, "sparse-iterations.svg")); err != nil {
		return err
	}
	solve := func(r result) float64 { return r.Solve }
	first := func(r result) float64 { return r.First } // one real run each, as in the table
	q := logPlot("3-D Poisson, seconds to 1e-8 (one process)", "seconds")
	if err := plotutil.AddLinePoints(q, "graph op, first run (setup+solve)", line("graph", first),
		"direct C, build+setup+solve", line("direct", first),
		"graph op, cached solve", line("graph", solve), "direct C, solve", line("direct", solve),
		"Go CG, no preconditioner", line("cg", solve)); err != nil {
		return err
	}
	return q.Save(5*vg.Inch, 3.5*vg.Inch, filepath.Join(dir, "sparse-time.svg"))
}

// logPlot is an empty plot against the number of unknowns, both axes
// logarithmic, with a grid and the legend top left.
func logPlot(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "unknowns (n³)"
	p.Y.Label.Text = yLabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}
