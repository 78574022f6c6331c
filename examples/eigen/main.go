// Command eigen is spectral embedding with mgla.Syevd: the Laplacian of a
// random ring of cliques (groups of densely connected nodes, each joined to
// the next group around a ring by a few edges) is decomposed, the
// eigenvectors are checked for orthonormality (VᵀV is computed in the same
// Gorgonia graph), and the leading eigenvalues are printed: as many near
// zero as there are cliques, then a gap. The two eigenvectors after the
// constant one lay the cliques out around a circle in ring order.
//
//	go run ./examples/eigen
//	go run ./examples/eigen -cliques 12 -size 40 -mesh cpu:3 -tile 50
//
// Its graphs are built in examples/builders; it may import that, mgla and
// sharding (the meshes) only.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/examples/builders"
)

func main() {
	var (
		cliques = flag.Int("cliques", 8, "number of cliques around the ring")
		size    = flag.Int("size", 48, "nodes per clique")
		pin     = flag.Float64("p", 0.6, "probability of an edge inside a clique")
		bridges = flag.Int("bridges", 3, "edges from each clique to the next one")
		seed    = flag.Uint64("seed", 1, "random seed")
		mesh    = flag.String("mesh", "default", builders.MeshUsage)
		tile    = flag.Int("tile", 0, "tile width of the block-cyclic layout (0: mgla.DefaultTile)")
	)
	flag.Parse()
	if err := run(builders.RingOfCliques{Cliques: *cliques, Size: *size, PIn: *pin, Bridges: *bridges, Seed: *seed}, *mesh, *tile); err != nil {
		fmt.Fprintln(os.Stderr, "eigen:", err)
		os.Exit(1)
	}
}

func run(ring builders.RingOfCliques, meshSpec string, tile int) error {
	mesh, err := builders.ParseMesh(meshSpec)
	if err != nil {
		return err
	}
	opts := []mgla.Option{mgla.WithMesh(mesh)}
	if tile != 0 {
		opts = append(opts, mgla.WithTile(tile))
	}
	lap, group, err := ring.Laplacian()
	if err != nil {
		return err
	}
	n := lap.Shape()[0]
	fmt.Printf("ring of %d cliques × %d nodes (edge probability %.2f inside, %d bridges between neighbours): Laplacian %d×%d on %v\n",
		ring.Cliques, ring.Size, ring.PIn, ring.Bridges, n, n, mesh)
	t0 := time.Now()
	s, err := builders.SpectralDecomposition(lap, opts...)
	if err != nil {
		return err
	}
	fmt.Printf("Syevd and VᵀV in %.3fs\n", time.Since(t0).Seconds())
	fmt.Printf("orthonormality: max |VᵀV − I| = %.2e\n", builders.OffIdentity(s.Gram))
	w := s.Values.Data().([]float64)
	lead := min(n, ring.Cliques+3)
	var vals []string
	for _, x := range w[:lead] {
		vals = append(vals, fmt.Sprintf("%.4g", x))
	}
	fmt.Printf("smallest %d eigenvalues: %s\n", lead, strings.Join(vals, " "))
	// The largest gap among the leading eigenvalues counts the clusters;
	// a ratio below 2 there is no gap at all.
	k, ratio := builders.Eigengap(w, lead)
	switch {
	case k <= 1:
		fmt.Printf("spectral gap after λ0 (ratio %.2g): one cluster (the ring has %d cliques)\n", ratio, ring.Cliques)
	case ratio < 2:
		fmt.Printf("no spectral gap (the largest, after λ%d, has ratio %.2g): the graph does not split into clusters (the ring has %d cliques)\n", k-1, ratio, ring.Cliques)
	default:
		fmt.Printf("spectral gap: λ%d = %.4g, λ%d = %.4g (ratio %.1f): %d clusters (the ring has %d cliques)\n", k-1, w[k-1], k, w[k], ratio, k, ring.Cliques)
	}

	angles := builders.EmbeddingAngles(s, 1, 2, group)
	fmt.Println("embedding by eigenvectors 1 and 2 (clique: mean angle ± largest deviation):")
	for _, a := range angles {
		fmt.Printf("  clique %2d  %6.1f° ± %4.1f°\n", a.Group, a.Mean, a.Spread)
	}
	switch {
	case len(angles) <= 3:
		fmt.Println("with 3 cliques or fewer every order around the circle is the ring's: nothing to check")
	case builders.RingOrder(angles):
		fmt.Println("the cliques sit around the circle in ring order")
	default:
		fmt.Println("the cliques are NOT in ring order around the circle")
	}
	return nil
}
