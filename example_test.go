package mgla_test

import (
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/mgla/mgla"
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

// TestReadmeUsage keeps the README's usage snippet identical to Example.
func TestReadmeUsage(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	code := string(src)
	start := strings.Index(code, "func Example() {")
	end := strings.Index(code[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("no func Example in example_test.go")
	}
	if example := code[start : start+end+3]; !strings.Contains(string(readme), example) {
		t.Errorf("README.md does not contain example_test.go's Example verbatim:\n%s", example)
	}
}
