//go:build !mglacuda

// Command mgbench measures mgla on GPUs; it needs the mglacuda build tag
// (see the README's GPU section and BENCHMARKS.md).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "mgbench: build with -tags mglacuda (make gpu-bin) and run on a GPU machine")
	os.Exit(2)
}
