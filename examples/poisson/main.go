// Command poisson solves the 3-D Poisson equation −Δu = 1 on the unit cube
// (7-point finite differences, zero boundary values, n³ unknowns) with
// BoomerAMG-preconditioned conjugate gradients from package sparse, printing
// hypre's convergence history, the iterations, the setup and solve times and
// (on one process) the true residual recomputed from the solution; then it
// learns two PDE coefficients with Adam through the solve: the diffusion
// coefficients (D₁, D₂) of −∇·(D∇u) = 1, D₁ on the half x < ½ of the cube and
// D₂ on the other, on a small grid, from a solution observed at the true
// (D₁, D₂).
//
//	go run -tags mpi ./examples/poisson            # 64³, hypre BoomerAMG + PCG
//	go run -tags mpi ./examples/poisson -n 96
//	go run ./examples/poisson                      # without hypre: Go CG + Jacobi (same graphs)
//	go build -tags mpi -o poisson ./examples/poisson && mpirun -n 4 ./poisson   # row blocks over 4 processes
//
// Under mpirun the Poisson solve is distributed by rows; the small inverse
// problem runs whole on every process (rank 0 prints).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/sparse"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func main() {
	n := flag.Int("n", 64, "grid points per direction of the Poisson solve")
	tol := flag.Float64("tol", 1e-8, "relative residual to reach")
	quiet := flag.Bool("quiet", false, "do not print hypre's convergence history")
	inv := flag.Int("inverse-n", 12, "grid points per direction of the inverse problem")
	steps := flag.Int("steps", 100, "gradient steps of the inverse problem")
	flag.Parse()
	var err error
	if *steps < 0 { // every rank decides alike, before any solve
		err = fmt.Errorf("-steps %d: want 0 or more", *steps)
	} else {
		err = poisson(*n, *tol, *quiet)
	}
	if err == nil {
		err = inverse(*inv, *steps)
	}
	finish()
	if err != nil {
		fmt.Fprintln(os.Stderr, "poisson:", err)
		os.Exit(1)
	}
}

// poisson solves −Δu = 1 on an n³ grid; under mpirun (mpi build) each
// process holds a block of rows.
func poisson(n int, tol float64, quiet bool) error {
	rank, size, distribute, err := world()
	if err != nil {
		return err
	}
	say := printer(rank)
	start := time.Now()
	lo, rows := sparse.BlockRows(n*n*n, rank, size)
	a, err := sparse.Poisson3D(n, lo, rows)
	if err != nil {
		return err
	}
	h := 1 / float64(n+1)
	b := make([]float64, rows)
	for i := range b {
		b[i] = h * h
	}
	say("3-D Poisson, 7-point, %d³ = %d unknowns on %d process(es), rank 0 holds %d rows, %d nonzeros (built in %v)\n",
		n, n*n*n, size, rows, a.Pattern.NNZ(), time.Since(start).Round(time.Millisecond))
	opts := append([]sparse.Option{sparse.WithMethod(sparse.PCG), sparse.WithTolerance(tol),
		sparse.WithCoarsening(sparse.HMIS), sparse.WithInterpolation(sparse.ExtPlusIInterp),
		sparse.WithSmoother(sparse.L1GaussSeidel)}, distribute...)
	if !quiet {
		opts = append(opts, sparse.WithPrintLevel(2))
	}
	method, op := "AMG-PCG (hypre BoomerAMG)", (*sparse.Solver).Solve
	if !sparse.HypreAvailable() {
		say("hypre unavailable (build with -tags mpi): Go CG + Jacobi instead\n")
		method, op = "Go CG + Jacobi", (*sparse.Solver).CG
		opts = []sparse.Option{sparse.WithPrecond(sparse.Jacobi), sparse.WithTolerance(tol), sparse.WithMaxIterations(5000)}
	}
	s, err := sparse.NewSolver(a.Pattern, opts...)
	if err != nil {
		return err
	}
	defer s.Close()
	g := gorgonia.NewGraph()
	vals := a.ValuesNode(g, "A")
	bn := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(b)), gorgonia.WithName("b"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(b)), tensor.WithBacking(b))))
	x, err := op(s, vals, bn)
	if err != nil {
		return err
	}
	var xv gorgonia.Value
	gorgonia.Read(x, &xv)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return mgla.Cause(err)
	}
	info, st := s.Info(), s.Stats()
	say("%s: %v\n", method, info)
	say("  setup %v, solve %v (rank 0)\n", st.SetupTime.Round(time.Millisecond), st.SolveTime.Round(time.Millisecond))
	if size == 1 {
		u := xv.Data().([]float64)
		au, err := a.MulVec(u)
		if err != nil {
			return err
		}
		var rr, bb, umax float64
		for i := range b {
			rr += (b[i] - au[i]) * (b[i] - au[i])
			bb += b[i] * b[i]
			umax = math.Max(umax, u[i])
		}
		say("  true relative residual %.2e; max u = %.6f\n", math.Sqrt(rr/bb), umax)
	}
	return nil
}

// inverse learns the diffusion coefficient of −∇·(D∇u) = 1 where D is D₁
// on the half x < ½ of the cube and D₂ on the other half, from u observed at
// the true (D₁, D₂). The matrix is D₁·L₁ + D₂·L₂ (L₁, L₂ the Laplacian's
// face terms split by half, a face across the middle shared equally), so its
// values are a graph node of the parameters; Adam runs on log D with the
// gradient of ½‖u − u_obs‖²/‖u_obs‖² through Solve (for this symmetric
// system the adjoint solve reuses the forward hierarchy).
func inverse(n, steps int) error {
	rank, _, _, err := world()
	if err != nil {
		return err
	}
	say := printer(rank)
	trueD := [2]float64{0.5, 2}
	a, err := sparse.Poisson3D(n, 0, n*n*n)
	if err != nil {
		return err
	}
	h := 1 / float64(n+1)
	halves := halfLaplacians(a, n)
	b := make([]float64, n*n*n)
	for i := range b {
		b[i] = h * h
	}
	opts := []sparse.Option{sparse.WithTolerance(1e-12), sparse.WithMaxIterations(5000)}
	op := (*sparse.Solver).Solve
	if !sparse.HypreAvailable() {
		opts, op = append(opts, sparse.WithPrecond(sparse.Jacobi)), (*sparse.Solver).CG
	}
	s, err := sparse.NewSolver(a.Pattern, opts...)
	if err != nil {
		return err
	}
	defer s.Close()
	truth := make([]float64, a.Pattern.NNZ())
	for k := range truth {
		truth[k] = trueD[0]*halves[0][k] + trueD[1]*halves[1][k]
	}
	uobs, err := observe(s, op, truth, b)
	if err != nil {
		return err
	}
	var uu float64
	for _, x := range uobs {
		uu += x * x
	}

	g := gorgonia.NewGraph()
	vec := func(name string, v []float64) *gorgonia.Node {
		return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(v)), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(v))))
	}
	logD := [2]*gorgonia.Node{
		gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("logD1"), gorgonia.WithValue(0.0)),
		gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("logD2"), gorgonia.WithValue(0.0)),
	}
	term := func(i int) *gorgonia.Node {
		return gorgonia.Must(gorgonia.Mul(gorgonia.Must(gorgonia.Exp(logD[i])), vec(fmt.Sprintf("L%d", i+1), halves[i])))
	}
	values := gorgonia.Must(gorgonia.Add(term(0), term(1)))
	u, err := op(s, values, vec("b", b))
	if err != nil {
		return err
	}
	diff := gorgonia.Must(gorgonia.Sub(u, vec("uobs", uobs)))
	loss := gorgonia.Must(gorgonia.Mul(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(diff)))), gorgonia.NewConstant(0.5/uu)))
	if _, err := gorgonia.Grad(loss, logD[0], logD[1]); err != nil {
		return err
	}
	var lossV gorgonia.Value
	gorgonia.Read(loss, &lossV)
	m := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(logD[0], logD[1]))
	defer m.Close()
	opt := gorgonia.NewAdamSolver(gorgonia.WithLearnRate(0.1))
	d := func(i int) float64 { return math.Exp(logD[i].Value().Data().(float64)) }
	say("inverse problem on %d³: learn D = (D₁, D₂) of −∇·(D∇u) = 1 from u at D = (%g, %g), starting at (1, 1)\n", n, trueD[0], trueD[1])
	start := time.Now()
	for step := 1; step <= steps; step++ {
		if err := m.RunAll(); err != nil {
			return mgla.Cause(err)
		}
		if step == 1 || step%20 == 0 || step == steps {
			say("  step %3d: loss %.3e, D = (%.4f, %.4f); forward %v\n", step, lossV.Data().(float64), d(0), d(1), s.Info())
		}
		if err := opt.Step(gorgonia.NodesToValueGrads(gorgonia.Nodes{logD[0], logD[1]})); err != nil {
			return err
		}
		m.Reset()
	}
	st := s.Stats()
	say("learned D = (%.4f, %.4f), true (%g, %g), in %v: %d AMG setups, %d solves (forward and adjoint)\n",
		d(0), d(1), trueD[0], trueD[1], time.Since(start).Round(time.Millisecond), st.Setups, st.Solves)
	return nil
}

// halfLaplacians splits the 7-point Laplacian's values into the face terms
// of the halves x < ½ and x ≥ ½ of the grid (L = L₁ + L₂).
func halfLaplacians(a *sparse.CSR, n int) [2][]float64 {
	rowPtr, colInd := a.Pattern.RowPtr(), a.Pattern.ColInd()
	var out [2][]float64
	for h := range out {
		out[h] = make([]float64, len(colInd))
	}
	left := func(i int) float64 {
		if i%n < n/2 {
			return 1
		}
		return 0
	}
	for i := range n * n * n {
		diag, faces := -1, 0
		w := [2]float64{}
		for k := rowPtr[i]; k < rowPtr[i+1]; k++ {
			j := colInd[k]
			if j == i {
				diag = k
				continue
			}
			faces++
			l := (left(i) + left(j)) / 2
			out[0][k], out[1][k] = -l, -(1 - l)
			w[0] += l
			w[1] += 1 - l
		}
		// Boundary faces carry the cell's own coefficient.
		out[0][diag] = w[0] + float64(6-faces)*left(i)
		out[1][diag] = w[1] + float64(6-faces)*(1-left(i))
	}
	return out
}

// observe is the solution at the given values, by the same op.
func observe(s *sparse.Solver, op func(*sparse.Solver, *gorgonia.Node, *gorgonia.Node) (*gorgonia.Node, error), vals, b []float64) ([]float64, error) {
	g := gorgonia.NewGraph()
	vn := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(vals)), gorgonia.WithName("A"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(vals)), tensor.WithBacking(vals))))
	bn := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(len(b)), gorgonia.WithName("b"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(b)), tensor.WithBacking(b))))
	x, err := op(s, vn, bn)
	if err != nil {
		return nil, err
	}
	var xv gorgonia.Value
	gorgonia.Read(x, &xv)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, mgla.Cause(err)
	}
	return append([]float64(nil), xv.Data().([]float64)...), nil
}

// printer prints on rank 0 only.
func printer(rank int) func(format string, args ...any) {
	return func(format string, args ...any) {
		if rank == 0 {
			fmt.Printf(format, args...)
		}
	}
}
