// Command sharded puts one symmetric positive definite matrix on a mesh once,
// in the column block-cyclic layout, and runs several ops from that one
// sharded node: Potrs for several right-hand sides (sharing one Cholesky
// factor), Potri and Syevd. It prints the tile map (which device owns which
// column tiles), the time of each stage and the accuracy of the results.
//
//	go run ./examples/sharded                          # 4 virtual CPU devices
//	go run ./examples/sharded -n 1000 -tile 96 -mesh cpu:3
//	go run -tags mglacuda ./examples/sharded -mesh gpu:0,1 -n 16384 -tile 1024
//	go run ./examples/sharded -n 10 -tile 3 -mesh cpu:3 -svg docs/tilemap.svg
//
// Its graphs are built in examples/builders; it may import that, mgla and
// sharding (the meshes) only.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/examples/builders"
	"gorgonia.org/tensor"
)

func main() {
	var (
		n    = flag.Int("n", 1000, "matrix order N")
		rhs  = flag.String("rhs", "0,8,64", "columns of each right-hand side (0: a length-N vector)")
		mesh = flag.String("mesh", "cpu:4", builders.MeshUsage)
		tile = flag.Int("tile", 96, "tile width T of the block-cyclic layout (0: mgla.DefaultTile); any T ≥ 1 works for any N")
		seed = flag.Uint64("seed", 1, "random seed")
		svg  = flag.String("svg", "", "also write the tile map as an SVG picture to this file")
	)
	flag.Parse()
	if err := run(*n, *rhs, *mesh, *tile, *seed, *svg); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

func run(n int, rhsSpec, meshSpec string, tile int, seed uint64, svg string) error {
	mesh, err := builders.ParseMesh(meshSpec)
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("-n must be at least 1")
	}
	if tile == 0 {
		tile = mgla.DefaultTile(mesh, n)
	}
	if tile < 1 {
		return fmt.Errorf("-tile must be at least 1")
	}
	names := make([]string, mesh.Size())
	for i, d := range mesh.Devices() {
		names[i] = d.String()
	}
	fmt.Printf("A: %d×%d float64 SPD matrix on %v, column block-cyclic with T = %d\n", n, n, mesh, tile)
	fmt.Print(builders.TileMap(n, tile, mesh.Size(), names))
	if svg != "" {
		if err := os.WriteFile(svg, []byte(builders.TileMapSVG(n, tile, mesh.Size())), 0o644); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", svg)
	}

	a := builders.ExpKernelSPD(n, seed)
	var bs []*tensor.Dense
	for i, f := range strings.Split(rhsSpec, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 0 {
			return fmt.Errorf("-rhs %q: want a comma-separated list of column counts ≥ 0", rhsSpec)
		}
		bs = append(bs, builders.RandomMatrix(n, k, seed, uint64(i+1)))
	}

	p, err := builders.NewShardedPipeline(a, bs, mesh, tile)
	if err != nil {
		return err
	}
	stages, err := p.TimeStages()
	if err != nil {
		return err
	}
	fmt.Println("\nstage                              ms")
	var total time.Duration
	for _, s := range stages {
		fmt.Printf("  %-26s %10.2f\n", s.Name, ms(s.Time))
		total += s.Time
	}
	fmt.Printf("  %-26s %10.2f\n", "all", ms(total))
	fmt.Println("  (stage k: fastest run of a machine over stages 0…k less that over 0…k−1)")

	fmt.Println("\nchecks")
	inv := p.Inverse.Value().(*tensor.Dense)
	for i, x := range p.X {
		xv, b := x.Value().(*tensor.Dense), p.B[i].Value().(*tensor.Dense)
		fmt.Printf("  B %-10s Potrs ‖A·X − B‖/‖B‖ = %.1e   Potri ‖A⁻¹·B − X‖/‖X‖ = %.1e\n",
			shape(b), builders.SolveResidual(a, xv, b), builders.RelDiff(builders.MatMul(inv, b), xv))
	}
	w, v := p.Values.Value().(*tensor.Dense), p.Vectors.Value().(*tensor.Dense)
	wv := w.Data().([]float64)
	ends := uniq(n, []int{0, 1, 2, n - 3, n - 2, n - 1})
	fmt.Printf("  Syevd      eigenvalues %.4g … %.4g; for the 3 smallest and 3 largest:\n", wv[0], wv[n-1])
	fmt.Printf("             ‖A·v − λ·v‖/|λ|max = %.1e, max |VᵀV − I| = %.1e\n", builders.EigenResidual(a, w, v, ends), builders.Orthogonality(v, ends))
	return nil
}

// uniq is xs without repeats and without indices outside [0, n).
func uniq(n int, xs []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range xs {
		if x >= 0 && x < n && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func shape(t *tensor.Dense) string {
	if t.Dims() == 1 {
		return fmt.Sprintf("%d", t.Shape()[0])
	}
	return fmt.Sprintf("%d×%d", t.Shape()[0], t.Shape()[1])
}
