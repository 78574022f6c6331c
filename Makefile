# mgla — the two commands: `make demo` (the main example on the embedded CPU
# default) and `make test` (everything CI runs).
GO        ?= go
PKGS      := ./...
RACE_PKGS := ./cyclic/ ./sharding/ ./ops/
OPENBLAS_LDFLAGS := -llapacke -lopenblas
GPU_BIN   := gpu-bin

.PHONY: demo test fmt-check vet unit race openblas cuda-vet deps cuda-deps gpu-bin bench ptx

demo:
	$(GO) run ./examples/gp

test: fmt-check vet unit race openblas cuda-vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -count=1 -race $(RACE_PKGS)

# The kernels through OpenBLAS and LAPACK's column-major routines called directly (Debian libopenblas-dev, liblapacke-dev).
openblas:
	CGO_LDFLAGS='$(OPENBLAS_LDFLAGS)' $(GO) test -count=1 -tags openblas ./kernels/ ./kernels/cpubackend/ ./ops/ .

# Compile and vet the mglacuda-tagged code (no GPU needed; headers from
# `make cuda-deps`), and run the shim's host-side checking helpers' test.
cuda-vet:
	$(GO) vet -tags mglacuda $(PKGS)
	$(GO) test -tags mglacuda -run '^TestHostHelpers$$' -count=1 ./kernels/cusolver/

# Benchmarks against gonum, pure Go then openblas (kernels/doc.go, "Benchmarks").
# BenchmarkSyevd/N=2000 has its own step in each build: its gonum baseline alone
# takes about a minute, so the `-bench .` steps leave it out explicitly with -skip.
bench:
	$(GO) test -run '^$$' -bench . -skip 'BenchmarkSyevd/N=2000' -benchtime 3x ./kernels/ ./ops/ .
	@echo '== BenchmarkSyevd/N=2000, pure Go (slow: its gonum baseline takes about a minute)'
	$(GO) test -run '^$$' -bench 'BenchmarkSyevd/N=2000' -benchtime 3x -timeout 30m ./kernels/
	@echo '== openblas build (make deps)'
	CGO_LDFLAGS='$(OPENBLAS_LDFLAGS)' $(GO) test -tags openblas -run '^$$' -bench . -skip 'BenchmarkSyevd/N=2000' -benchtime 3x ./kernels/ ./ops/ .
	@echo '== BenchmarkSyevd/N=2000, openblas (slow: its gonum baseline takes about a minute)'
	CGO_LDFLAGS='$(OPENBLAS_LDFLAGS)' $(GO) test -tags openblas -run '^$$' -bench 'BenchmarkSyevd/N=2000' -benchtime 3x -timeout 30m ./kernels/

# Debian packages for the openblas tag.
deps:
	./scripts/install-deps.sh openblas

# CUDA 11.8 headers from Debian (contrib non-free) for compiling the cuda tag;
# the binaries then run against CUDA 12/13 runtimes because nothing links cuSolverMg.
cuda-deps:
	./scripts/install-deps.sh cuda

# mglacuda-tagged test and benchmark binaries, for a GPU machine without Go
# (run them there with gpu-bin/run-gpu.sh).
gpu-bin:
	mkdir -p $(GPU_BIN)
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/cusolver.test ./kernels/cusolver/
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/sharding.test ./sharding/
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/mgla.test .
	$(GO) build -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/mgbench ./cmd/mgbench/
	$(GO) build -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/ ./examples/gp ./examples/sharded ./examples/eigen
	cp scripts/run-gpu.sh $(GPU_BIN)/

# Regenerate the PTX of mgla's own CUDA kernels (needs nvcc; the PTX is committed).
ptx:
	nvcc -ptx -arch=compute_70 -O3 -o kernels/ptx/mgla.ptx kernels/ptx/mgla.cu
