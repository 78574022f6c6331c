// Package distops is the Gorgonia face of package dist: graph ops Potrs,
// LogDet, Potri and Cholesky (forward only) whose inputs are host nodes holding each rank's full copy of the
// matrices (the value model: every rank builds the same graph on the same
// replicated values, as a data-parallel program does; distributing is
// local, since each rank keeps its own blocks of its copy, and the outputs
// come back replicated), computed on a dist.Grid through ScaLAPACK, with
// gradients (SymDiff) computed on the grid by dist.PotrsGrad,
// dist.LogDetGrad and dist.PotriGrad. float64 only. Not yet: CholSolve and
// Syevd nodes (a Gorgonia op has one output; Syevd needs the two-node
// pattern of package ops).
//
// It owns the graph ops; it may import dist and gorgonia. The root
// package's builders are untouched: this is the closest idiom to
// mgla.Potrs(a, b, mgla.WithGrid(g)) that keeps the root package free of
// MPI.
package distops
