package builders

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/mgla/mgla"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RingOfCliques is a random graph of Cliques groups of Size nodes: two nodes
// of one group are joined with probability PIn, and each group is joined to
// the next one around the ring (the last to the first) by Bridges random
// edges.
type RingOfCliques struct {
	Cliques, Size int
	PIn           float64
	Bridges       int
	Seed          uint64
}

// Laplacian is the graph Laplacian L = D − W (W the 0/1 adjacency matrix,
// D its row sums) as an N×N host matrix, N = Cliques·Size, and the group of
// every node. Node i belongs to group i / Size.
func (r RingOfCliques) Laplacian() (*tensor.Dense, []int, error) {
	if r.Cliques < 3 || r.Size < 2 || !(r.PIn > 0 && r.PIn <= 1) || r.Bridges < 1 {
		return nil, nil, fmt.Errorf("ring of cliques: need ≥ 3 cliques of ≥ 2 nodes, 0 < PIn ≤ 1 and ≥ 1 bridge, got %+v", r)
	}
	rng := rand.New(rand.NewPCG(r.Seed, 0x72696e67))
	n := r.Cliques * r.Size
	w := make([]float64, n*n)
	join := func(i, j int) { w[i*n+j], w[j*n+i] = 1, 1 }
	group := make([]int, n)
	for c := range r.Cliques {
		base := c * r.Size
		for i := range r.Size {
			group[base+i] = c
			for j := range i {
				if rng.Float64() < r.PIn {
					join(base+i, base+j)
				}
			}
		}
		next := (c + 1) % r.Cliques * r.Size
		for range r.Bridges {
			join(base+rng.IntN(r.Size), next+rng.IntN(r.Size))
		}
	}
	l := make([]float64, n*n)
	for i := range n {
		var deg float64
		for j := range n {
			deg += w[i*n+j]
			l[i*n+j] = -w[i*n+j]
		}
		l[i*n+i] = deg
	}
	return dense(l, n, n), group, nil
}

// Spectrum is the eigen-decomposition of a symmetric matrix from
// SpectralDecomposition.
type Spectrum struct {
	Values  *tensor.Dense // ascending eigenvalues
	Vectors *tensor.Dense // orthonormal eigenvectors, in the columns
	Gram    *tensor.Dense // Vᵀ·V, computed in the same graph (≈ I)
}

// SpectralDecomposition runs mgla.Syevd on the symmetric host matrix l and,
// in the same graph, the Gram matrix VᵀV of its eigenvectors with ordinary
// Gorgonia ops.
func SpectralDecomposition(l *tensor.Dense, opts ...mgla.Option) (s *Spectrum, err error) {
	defer catch(&err)
	g := G.NewGraph()
	ln := G.NodeFromAny(g, l, G.WithName("L"))
	w, v, err := mgla.Syevd(ln, opts...)
	if err != nil {
		return nil, err
	}
	gram := G.Must(G.Mul(G.Must(G.Transpose(v)), v))
	// Read copies each value out as it is computed (a TapeMachine may reuse
	// the memory of values that nothing reads any more).
	var wv, vv, gv G.Value
	G.Read(w, &wv)
	G.Read(v, &vv)
	G.Read(gram, &gv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, mgla.Cause(err)
	}
	return &Spectrum{Values: wv.(*tensor.Dense), Vectors: vv.(*tensor.Dense), Gram: gv.(*tensor.Dense)}, nil
}

// OffIdentity is max |G_ij − δ_ij| of a square host matrix.
func OffIdentity(gram *tensor.Dense) float64 {
	n := gram.Shape()[0]
	var worst float64
	for i, x := range gram.Data().([]float64) {
		if i/n == i%n {
			x--
		}
		worst = max(worst, math.Abs(x))
	}
	return worst
}

// GroupAngle is where one group of nodes lands in a 2-D spectral embedding:
// the circular mean of its nodes' angles and their largest deviation from
// it, in degrees.
type GroupAngle struct {
	Group        int
	Mean, Spread float64
	Nodes        int
}

// EmbeddingAngles embeds node i at (v_i,a, v_i,b) for eigenvector columns a
// and b of the spectrum and summarises the angle of every group, sorted by
// mean angle. For a ring of cliques the two eigenvectors after the constant
// one (a = 1, b = 2) lay the cliques out around a circle in ring order.
func EmbeddingAngles(s *Spectrum, a, b int, group []int) []GroupAngle {
	n := s.Vectors.Shape()[0]
	v := s.Vectors.Data().([]float64)
	ng := 0
	for _, c := range group {
		ng = max(ng, c+1)
	}
	sx, sy := make([]float64, ng), make([]float64, ng)
	count := make([]int, ng)
	angle := make([]float64, n)
	for i := range n {
		angle[i] = math.Atan2(v[i*n+b], v[i*n+a])
		sx[group[i]] += math.Cos(angle[i])
		sy[group[i]] += math.Sin(angle[i])
		count[group[i]]++
	}
	out := make([]GroupAngle, ng)
	for c := range out {
		out[c] = GroupAngle{Group: c, Mean: math.Atan2(sy[c], sx[c]), Nodes: count[c]}
	}
	for i := range n {
		ga := &out[group[i]]
		d := math.Abs(math.Remainder(angle[i]-ga.Mean, 2*math.Pi))
		ga.Spread = max(ga.Spread, d)
	}
	for c := range out {
		out[c].Mean = math.Mod(out[c].Mean*180/math.Pi+360, 360)
		out[c].Spread *= 180 / math.Pi
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mean < out[j].Mean })
	return out
}

// Eigengap is the number of clusters the ascending eigenvalues w of a
// graph's Laplacian show: the k ≥ 1 among the first max whose gap
// w[k] − w[k−1] is the largest, and the ratio w[k]/w[k−1] there (+Inf
// after a zero). A ratio near 1 means that there is no gap: the graph does
// not split into clusters.
func Eigengap(w []float64, max int) (k int, ratio float64) {
	best := -1.0
	for i := 1; i < min(max, len(w)); i++ {
		if gap := w[i] - w[i-1]; gap > best {
			best, k = gap, i
		}
	}
	if k == 0 {
		return 0, math.NaN()
	}
	return k, w[k] / w[k-1]
}

// RingOrder reports whether groups sorted by angle follow the ring, in
// either direction: consecutive entries are neighbouring groups (mod the
// number of groups).
func RingOrder(angles []GroupAngle) bool {
	k := len(angles)
	dir := 0
	for i := range angles {
		d := (angles[(i+1)%k].Group - angles[i].Group + k) % k
		switch {
		case d == 1 && dir >= 0:
			dir = 1
		case d == k-1 && dir <= 0:
			dir = -1
		default:
			return false
		}
	}
	return true
}
