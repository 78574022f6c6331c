# mgla — the two commands: `make demo` (the main example on the embedded CPU
# default) and `make test` (everything CI runs).
GO        ?= go
PKGS      := ./...
RACE_PKGS := ./cyclic/ ./sharding/ ./ops/ ./collective/
OPENBLAS_LDFLAGS := -llapacke -lopenblas
GPU_BIN   := gpu-bin
# Packages with mpi-tagged tests that make mpi-test runs under mpirun (append yours).
MPI_TEST_PKGS := ./collective/mpi/ ./collective/ ./collective/nccl/ ./examples/dataparallel/ ./examples/distributed/ ./sparse/ ./dist/ ./dist/distops/ ./collective/mpi/internal/finalizetest/
# ... and those also run with MPI's lower thread levels (MGLA_MPI_THREAD_LEVEL).
MPI_THREAD_TEST_PKGS := ./collective/mpi/
MPI_NP    := 1 2 3 4
MPI_BIN   := mpi-bin
MPIRUN    := timeout 300 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader

.PHONY: demo test fmt-check vet unit race openblas cuda-vet mpi-test mpi-race deps cuda-deps mpi-deps gpu-bin bench ptx cpu-bundle cpu-bundle-check

demo:
	$(GO) run ./examples/gp

test: fmt-check vet unit race openblas cuda-vet mpi-test mpi-race

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

# -short: the race step skips what only size tests (sharding's 72 MB round
# trip, 76 s under -race on the 2-vCPU VM), which the unit step runs.
race:
	$(GO) test -count=1 -race -short $(RACE_PKGS)
	$(GO) test -count=1 -race -run '^(TestConcurrentGraphs|TestConcurrentCalls)$$' . ./kernels/

# The kernels through OpenBLAS and LAPACK's column-major routines called directly (Debian libopenblas-dev, liblapacke-dev).
openblas:
	CGO_LDFLAGS='$(OPENBLAS_LDFLAGS)' $(GO) test -count=1 -tags openblas ./kernels/ ./kernels/lapack/ ./kernels/cpubackend/ ./ops/ .

# Compile and vet the mglacuda-tagged code (no GPU needed; headers from
# `make cuda-deps`), and run the shim's host-side checking helpers' test.
cuda-vet:
	$(GO) vet -tags mglacuda $(PKGS)
	$(GO) vet -tags 'mglacuda mpi' ./collective/nccl/
	$(GO) test -tags mglacuda -run '^(TestHostHelpers|TestXtArguments)$$' -count=1 ./kernels/cusolver/

# The mpi-tagged code (Open MPI: make mpi-deps): vet, the tests as a one-rank
# world under go test, then each package's test binary under mpirun with 1, 2,
# 3 and 4 processes (and 2 at the lower thread levels); prints the runs that
# fail and fails if any does. OMPI_MCA_btl_vader_single_copy_mechanism=none
# keeps Open MPI's shared-memory transport working in containers.
mpi-test: export OMPI_MCA_btl_vader_single_copy_mechanism = none
mpi-test:
	$(GO) vet -tags mpi $(PKGS)
	$(GO) test -count=1 -tags mpi $(MPI_TEST_PKGS)
	@mkdir -p $(MPI_BIN); failed=""; \
	for p in $(MPI_TEST_PKGS); do \
	  bin=$$(pwd)/$(MPI_BIN)/$$(echo $$p | tr -c 'a-zA-Z0-9\n' _).test; \
	  $(GO) test -c -tags mpi -o $$bin $$p || exit 1; \
	  runs="$(foreach n,$(MPI_NP),$(n):multiple)"; \
	  case " $(MPI_THREAD_TEST_PKGS) " in *" $$p "*) runs="$$runs 2:serialized 2:funneled";; esac; \
	  for run in $$runs; do n=$${run%%:*}; level=$${run#*:}; \
	    echo "== $$p: mpirun -n $$n (MGLA_MPI_THREAD_LEVEL=$$level)"; \
	    if ! (cd $$p && MGLA_MPI_THREAD_LEVEL=$$level $(MPIRUN) -x MGLA_MPI_THREAD_LEVEL -n $$n $$bin -test.count=1); then \
	      echo "FAILED: $$p under mpirun -n $$n (MGLA_MPI_THREAD_LEVEL=$$level)"; failed="$$failed $$p:n=$$n:$$level"; fi; \
	  done; \
	done; \
	if [ -n "$$failed" ]; then echo "mpi-test failures:$$failed"; exit 1; fi

# The mpi-tagged tests built with -race, under mpirun: the engine's (its
# calls, the local work beside the transfer, the blocking calls on
# goroutines, the timeouts) with 2 processes, the graph ops' with 3, and
# nccl's bootstrap, dist, distops, sparse and the data-parallel example with
# 2 (package:count).
MPI_RACE_RUNS := ./collective/mpi/:2 ./collective/:3 ./collective/nccl/:2 ./dist/:2 ./dist/distops/:2 ./sparse/:2 ./examples/dataparallel/:2
mpi-race: export OMPI_MCA_btl_vader_single_copy_mechanism = none
mpi-race:
	@mkdir -p $(MPI_BIN); failed=""; \
	for run in $(MPI_RACE_RUNS); do p=$${run%:*}; n=$${run##*:}; \
	  bin=$$(pwd)/$(MPI_BIN)/race$$(echo $$p | tr -c 'a-zA-Z0-9\n' _).test; \
	  $(GO) test -c -race -tags mpi -o $$bin $$p || exit 1; \
	  echo "== $$p: mpirun -n $$n, -race"; \
	  if ! (cd $$p && $(MPIRUN) -n $$n $$bin -test.count=1); then \
	    echo "FAILED: $$p under mpirun -n $$n with -race"; failed="$$failed $$p:n=$$n"; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "mpi-race failures:$$failed"; exit 1; fi

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

# Open MPI, ScaLAPACK and hypre from Debian for the mpi tag.
mpi-deps:
	./scripts/install-deps.sh mpi

# mglacuda-tagged test and benchmark binaries, for a GPU machine without Go
# (run them there with gpu-bin/run-gpu.sh).
gpu-bin:
	mkdir -p $(GPU_BIN)
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/cusolver.test ./kernels/cusolver/
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/sharding.test ./sharding/
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/ops.test ./ops/
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/mgla.test .
	$(GO) test -c -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/nccl.test ./collective/nccl/
	$(GO) build -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/mgbench ./cmd/mgbench/
	$(GO) build -tags mglacuda -ldflags=-s\ -w -o $(GPU_BIN)/ ./examples/gp ./examples/sharded ./examples/eigen
	cp scripts/run-gpu.sh $(GPU_BIN)/

# The CPU benchmarks (OpenBLAS against LAPACK, collectives, ScaLAPACK, hypre)
# with their libraries and a relocatable Open MPI, for a quiet multi-core host
# without Go or those packages: .cpubundle/bundle.tar.xz, run there with
# `mkdir -p /tmp/cb && tar xf bundle.tar.xz -C /tmp/cb && /tmp/cb/run-cpu.sh [openblas collbench dist sparse]`.
# VSLAPACK_PKGS (default: the packages with a Benchmark...VsLAPACK) picks the
# openblas test binaries.
cpu-bundle:
	VSLAPACK_PKGS='$(VSLAPACK_PKGS)' GO='$(GO)' ./scripts/cpu-bundle.sh .cpubundle

# Runs every step of the bundle at toy sizes in an emptied environment under
# strace, with its own Open MPI and as on the GPU hosts, and fails if it
# opens a library of this machine that those hosts lack.
cpu-bundle-check:
	./scripts/cpu-bundle-check.sh .cpubundle/bundle.tar.xz

# Regenerate the PTX of mgla's own CUDA kernels (needs nvcc; the committed PTX was made by Debian's
# nvidia-cuda-toolkit, nvcc 11.8).
ptx:
	nvcc -ptx -arch=compute_70 -O3 -o kernels/ptx/mgla.ptx kernels/ptx/mgla.cu

# ---- sparse (hypre BoomerAMG, build tag mpi; its tests are in mpi-test) ----
.PHONY: sparse-bench sparse-example

# 3-D Poisson, 64³: AMG-PCG to 1e-8, then the inverse problem through Solve;
# then the Poisson solve by row blocks on 4 MPI processes.
sparse-example: export OMPI_MCA_btl_vader_single_copy_mechanism = none
sparse-example:
	$(GO) run -tags mpi ./examples/poisson -quiet
	$(GO) build -tags mpi -o poisson-mpi ./examples/poisson
	$(MPIRUN) -n 4 ./poisson-mpi -quiet -steps 20; rc=$$?; rm -f poisson-mpi; exit $$rc

# BENCHMARKS.md, "Sparse: hypre BoomerAMG": CSV, log (the command and its
# output), table and plots, into SPARSE_BENCH_OUT.
SPARSE_BENCH_ARGS ?= -sizes 32,48,64,96,128 -reps 4
SPARSE_BENCH_OUT  ?= docs/bench
sparse-bench:
	@mkdir -p $(SPARSE_BENCH_OUT)
	@cmd='$(GO) run -tags mpi ./cmd/sparsebench $(SPARSE_BENCH_ARGS) -csv $(SPARSE_BENCH_OUT)/sparse.csv -svg $(SPARSE_BENCH_OUT) -md $(SPARSE_BENCH_OUT)/sparse.md'; \
	echo "$$cmd" | tee $(SPARSE_BENCH_OUT)/sparse.log; \
	bash -o pipefail -c "$$cmd 2>&1 | tee -a $(SPARSE_BENCH_OUT)/sparse.log"
