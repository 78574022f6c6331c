package mgla_test

import (
	"go/build"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// layers is what each package of the module may import from the module,
// as its doc comment says: a name allows that package and the packages
// under it ("kernels" allows kernels/cusolver); "mgla" is the root package.
// Packages not listed (the engines under collective) state their own rules.
var layers = map[string][]string{
	"kernels/cpubackend":    {},
	"kernels/ptx":           {},
	"kernels/lapack":        {"kernels/cpubackend"},
	"kernels":               {"kernels/cpubackend", "kernels/lapack"},
	"kernels/cusolver":      {"kernels", "internal/libpath", "internal/cudaguard"},
	"cyclic":                {},
	"sharding":              {"cyclic", "kernels", "internal/cudaguard"},
	"ops":                   {"cyclic", "sharding", "kernels", "internal/failedruns"},
	"collective":            {"cyclic", "sharding", "ops", "internal/failedruns"},
	".":                     {"collective", "cyclic", "sharding", "ops", "kernels"},
	"examples/builders":     {"mgla", "cyclic", "sharding", "ops"},
	"examples/gp":           {"mgla", "examples/builders", "sharding"},
	"examples/sharded":      {"mgla", "examples/builders", "sharding"},
	"examples/eigen":        {"mgla", "examples/builders", "sharding"},
	"examples/dataparallel": {"collective", "cyclic"},
	"examples/distributed":  {"mgla", "examples/builders", "dist", "collective"},
	"dist":                  {"cyclic", "collective", "sharding", "kernels"},
	"dist/distops":          {"dist", "kernels", "sharding", "ops", "internal/failedruns"},
	"sparse":                {"collective", "sharding", "internal/failedruns"},
	"examples/poisson":      {"mgla", "sparse", "collective"},
	"cmd/sparsebench":       {"mgla", "sparse", "collective"},
	"cmd/collbench":         {"collective", "sharding"},
	"cmd/internal/benchcsv": {},
	"internal/benchpair":    {},
	"internal/cudaguard":    {},
	"internal/failedruns":   {},
	"cmd/benchreport":       {"cmd/internal/benchcsv"},
	"cmd/mgbench":           {"mgla", "ops", "sharding", "kernels/cusolver", "cmd/internal/benchcsv"},
}

const module = "github.com/mgla/mgla"

// readmeOrder is the README's list of the packages from the bottom up
// ("Architecture"): each may import only those before it.
var readmeOrder = []string{"internal", "cyclic", "kernels", "sharding", "ops", "collective", "mgla", "dist", "sparse"}

// TestReadmeOrder: the layers of the packages the README lists allow only
// imports of packages listed before them (a root package listed below
// collective, which it imports, passed TestPackageLayers unnoticed).
func TestReadmeOrder(t *testing.T) {
	for i, pkg := range readmeOrder {
		dir := pkg
		if pkg == "mgla" {
			dir = "."
		}
		for _, imp := range layers[dir] {
			top, _, _ := strings.Cut(imp, "/")
			if top == pkg {
				continue // kernels/lapack under kernels
			}
			if j := slices.Index(readmeOrder, top); j < 0 || j > i {
				t.Errorf("%s may import %s, which the README lists after it (or not at all)", pkg, imp)
			}
		}
	}
}

// TestPackageLayers checks the non-test imports of every listed package, in
// the default build and under each build tag, against layers: no package
// imports one above it.
func TestPackageLayers(t *testing.T) {
	if _, err := os.Stat("layers_test.go"); err != nil {
		// A test binary run away from its source tree (gpu-bin on a GPU
		// machine) has no sources to read; CI runs it in the tree.
		t.Skip("no module sources beside the test binary")
	}
	for _, tags := range [][]string{nil, {"mglacuda"}, {"openblas"}, {"mpi"}} {
		ctx := build.Default
		ctx.BuildTags = tags
		ctx.CgoEnabled = true
		for dir, allowed := range layers {
			pkg, err := ctx.ImportDir(dir, 0)
			if err != nil {
				t.Errorf("tags %v: %s: %v", tags, dir, err)
				continue
			}
			for _, imp := range pkg.Imports {
				rel, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				rel = strings.TrimPrefix(rel, "/")
				if rel == "" {
					rel = "mgla"
				}
				if !allows(allowed, rel) {
					t.Errorf("tags %v: package %s imports %s; it may import only %v", tags, path.Clean(dir), rel, allowed)
				}
			}
		}
	}
}

func allows(allowed []string, rel string) bool {
	for _, a := range allowed {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return true
		}
	}
	return false
}
