package main

// The flags' checks, without the mglacuda build tag so that their tests run
// without a GPU.

import (
	"fmt"
	"slices"
	"strings"
)

// opNames are the names -ops takes: transfer and the names of the kernels
// that solvers measures.
var opNames = []string{"transfer", "potrf", "potrs1", "potrs256", "potri", "syevd-values", "syevd-vectors"}

// pathNames are the names -paths takes.
var pathNames = []string{"mg", "mgla", "auto", "single", "dn", "graph"}

// checkFlags reports the first bad value among -reps (at least 1), -ops and
// -paths (comma-separated names of opNames and pathNames; empty entries are
// ignored).
func checkFlags(reps int, ops, paths string) error {
	if reps < 1 {
		return fmt.Errorf("-reps %d: want at least 1", reps)
	}
	if err := checkNames("-ops", ops, opNames); err != nil {
		return err
	}
	return checkNames("-paths", paths, pathNames)
}

// checkNames reports an error naming the known names when list has a name
// outside known.
func checkNames(flagName, list string, known []string) error {
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(known, n) {
			return fmt.Errorf("%s: unknown name %q (known: %s)", flagName, n, strings.Join(known, ","))
		}
	}
	return nil
}

// splitGPUCounts returns the GPU counts of counts that ngpu visible GPUs
// allow and those larger, which are skipped.
func splitGPUCounts(counts []int, ngpu int) (run, skipped []int) {
	for _, k := range counts {
		if k > ngpu {
			skipped = append(skipped, k)
		} else {
			run = append(run, k)
		}
	}
	return run, skipped
}
