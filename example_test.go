package mgla_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mgla/mgla"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Example builds the negative log-likelihood of an observation y of a
// Gaussian with covariance A(s) = A₀ + s·I and its derivative with respect
// to s, and runs both. Potrs and LogDet get the same A, so they share one
// Cholesky factorisation, on the default mesh (one CPU device without the
// mglacuda build tag).
func Example() {
	g := G.NewGraph()
	a0 := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("A0"),
		G.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{
			4, 2, 0,
			2, 5, 1,
			0, 1, 3,
		}))))
	eye := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 3), G.WithName("I"),
		G.WithValue(tensor.New(tensor.WithShape(3, 3), tensor.WithBacking([]float64{
			1, 0, 0,
			0, 1, 0,
			0, 0, 1,
		}))))
	y := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3}))))
	s := G.NewScalar(g, tensor.Float64, G.WithName("s"), G.WithValue(0.5))

	a := G.Must(G.Add(a0, G.Must(G.Mul(s, eye)))) // A = A₀ + s·I
	x, err := mgla.Potrs(a, y)                    // x = A⁻¹y, on the default mesh
	if err != nil {
		log.Fatal(err)
	}
	logdet, err := mgla.LogDet(a) // log det A, from the same factor
	if err != nil {
		log.Fatal(err)
	}
	// nll = ½·(yᵀx + log det A), up to a constant
	nll := G.Must(G.Mul(G.NewConstant(0.5), G.Must(G.Add(G.Must(G.Mul(y, x)), logdet))))
	grads, err := G.Grad(nll, s)
	if err != nil {
		log.Fatal(err)
	}
	// The machine reuses the memory of values it no longer needs (here x,
	// during the backward pass); Read copies a value out as it is computed.
	var xv, logdetv G.Value
	G.Read(x, &xv)
	G.Read(logdet, &logdetv)

	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		log.Fatal(mgla.Cause(err)) // e.g. errors.Is(…, mgla.ErrNotPositiveDefinite)
	}
	fmt.Printf("x         = %.4f\n", xv.Data())
	fmt.Printf("log det A = %.4f\n", logdetv.Data())
	fmt.Printf("nll       = %.4f\n", nll.Value().Data())
	fmt.Printf("dnll/ds   = %.4f\n", grads[0].Value().Data())
	// Output:
	// x         = [0.1505 0.1615 0.8110]
	// log det A = 4.2213
	// nll       = 3.5639
	// dnll/ds   = 0.0486
}

// TestReadmeUsage keeps the README's usage program in step with Example: the
// first ```go block of README.md must be a gofmt-formatted package main whose
// func main has exactly Example's body, and it must compile (go vet), so its
// imports are complete and used.
func TestReadmeUsage(t *testing.T) { checkReadmeProgram(t, "", "example_test.go", "Example") }

// checkReadmeProgram checks the first ```go block of README.md after the
// text after ("": the first of the file) against the body of the function
// fn of the Go file exampleFile, and compiles it.
func checkReadmeProgram(t *testing.T, after, exampleFile, fn string) {
	src, err := os.ReadFile(exampleFile)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("not run from the source tree (a test binary copied elsewhere)")
	}
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	const open, end = "```go\n", "\n```\n"
	k := bytes.Index(readme, []byte(after))
	require.GreaterOrEqual(t, k, 0, "README.md has no %q", after)
	readme = readme[k:]
	i := bytes.Index(readme, []byte(open))
	require.GreaterOrEqual(t, i, 0, "README.md has no ```go block")
	rest := readme[i+len(open):]
	j := bytes.Index(rest, []byte(end))
	require.GreaterOrEqual(t, j, 0, "README.md's ```go block is not closed")
	snippet := rest[:j+1]

	formatted, err := format.Source(snippet)
	require.NoError(t, err, "README.md's usage program does not parse")
	require.Equal(t, string(formatted), string(snippet), "README.md's usage program is not gofmt-formatted")

	fset := token.NewFileSet()
	body := func(name string, src []byte, fn string) string {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		require.NoError(t, err, name)
		if fn == "main" {
			require.Equal(t, "main", f.Name.Name, "%s: want package main", name)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == fn {
				return string(src[fset.Position(fd.Body.Lbrace).Offset : fset.Position(fd.Body.Rbrace).Offset+1])
			}
		}
		t.Fatalf("%s: no func %s", name, fn)
		return ""
	}
	require.Equal(t, body(exampleFile, src, fn), body("README.md", snippet, "main"),
		"README.md's func main must have the body of %s's %s", exampleFile, fn)

	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command: README.md's usage program not compiled")
	}
	file := filepath.Join(t.TempDir(), "main.go")
	require.NoError(t, os.WriteFile(file, snippet, 0o644))
	out, err := exec.Command(goCmd, "vet", file).CombinedOutput() // resolves imports in this module
	require.NoError(t, err, "go vet of README.md's usage program:\n%s", out)
}
