package mgla_test

import (
	"go/build"
	"path"
	"strings"
	"testing"
)

// layers is what each package of the module may import from the module,
// as its doc comment says: a name allows that package and the packages
// under it ("kernels" allows kernels/cusolver); "mgla" is the root package.
// Packages not listed (collective and the engines beside it) state their own
// rules.
var layers = map[string][]string{
	"kernels/cpubackend":    {},
	"kernels/ptx":           {},
	"kernels":               {"kernels/cpubackend"},
	"kernels/cusolver":      {"kernels"},
	"cyclic":                {},
	"sharding":              {"cyclic", "kernels"},
	"ops":                   {"cyclic", "sharding", "kernels"},
	".":                     {"cyclic", "sharding", "ops", "kernels"},
	"examples/builders":     {"mgla", "cyclic", "sharding", "ops"},
	"examples/gp":           {"mgla", "examples/builders", "sharding"},
	"examples/sharded":      {"mgla", "examples/builders", "sharding"},
	"examples/eigen":        {"mgla", "examples/builders", "sharding"},
	"cmd/internal/benchcsv": {},
	"cmd/benchreport":       {"cmd/internal/benchcsv"},
	"cmd/mgbench":           {"mgla", "ops", "sharding", "kernels/cusolver", "cmd/internal/benchcsv"},
}

const module = "github.com/mgla/mgla"

// TestPackageLayers checks the non-test imports of every listed package, in
// the default build and under each build tag, against layers: no package
// imports one above it.
func TestPackageLayers(t *testing.T) {
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
