#!/bin/bash
# Runs package dist's benchmarks (the test binary of `go test -c -tags mpi
# ./dist/`) under mpirun for each matrix order N and process count P, and
# prints the rows they write ("distbench op=… N=… P=… …", see
# dist/bench_mpi_test.go) as a table at the end. Each run's output goes to
# $OUT (default ./dist-bench-logs)/<bench>-N<N>-P<P>.log.
#
#   dist-bench.sh [potrs] [moves] [reuse] [bands]
#
# potrs: BenchmarkPotrs (dist.Potrs against p?potrf + p?potrs called
#        directly; and the op's extra work alone) for N in $NS, P in $PS.
# moves: BenchmarkGather and BenchmarkScatter (FromRoot, FromRowBlocks and
#        Gather through the MPI sum or broadcast against p?gemr2d) for N in
#        $MOVES_NS, P in $MOVES_PS.
# reuse: BenchmarkRowMajor (the row-major ways in and out against
#        converting to column-major first) and BenchmarkInverseFromFactor
#        (A⁻¹ from the factor against Potri) for N in $MOVES_NS, P in
#        $MOVES_PS.
# bands: BenchmarkRowBands (FromRowBlocksRowMajor and RowBlock of bands that
#        are not the block split, through reband + p?gemr2d, against the
#        block split and against the sum; also "distmem" rows: peak memory
#        per path) for N in $MOVES_NS, P in $MOVES_PS.
#
# Environment: DIST_TEST (the binary; default ./dist.test next to this
# script, else ../dist.test), NS (default "4000 8000"), PS ("1 2 4 8 16"),
# MOVES_NS ("4000"), MOVES_PS ("1 2 4 8 16"), ITERS (iterations of each
# side, default 3), MPIRUN (default: mpirun --allow-run-as-root
# --oversubscribe --bind-to core --mca btl self,vader), STEP_TIMEOUT
# (seconds per run, default 300). OpenBLAS runs one thread per process.
#
# The table holds this call's runs only; the exit status is 1 when any run
# failed, 2 for an unknown step.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${DIST_TEST:-}
if [ -z "$bin" ]; then
	for b in "$here/dist.test" "$here/../dist.test"; do [ -x "$b" ] && bin=$b && break; done
fi
[ -x "${bin:-}" ] || { echo "dist-bench.sh: no dist test binary (set DIST_TEST)" >&2; exit 2; }
log=${OUT:-./dist-bench-logs}
mkdir -p "$log"
mpirun=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe --bind-to core --mca btl self,vader}
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(potrs moves)
for step in "${steps[@]}"; do
	case $step in
	potrs | moves | reuse | bands) ;;
	*)
		echo "dist-bench.sh: unknown step $step (potrs, moves, reuse, bands)" >&2
		exit 2
		;;
	esac
done
# This call's logs (for the table) and whether a run failed.
logs=()
failed=0
# run NAME REGEX N P: one mpirun of the benchmarks matching REGEX.
run() {
	local name=$1 regex=$2 n=$3 p=$4 f="$log/$1-N$3-P$4.log" start=$SECONDS
	logs+=("$f")
	MGLA_DIST_BENCH_N=$n timeout "${STEP_TIMEOUT:-300}" $mpirun -x OPENBLAS_NUM_THREADS -x MGLA_DIST_BENCH_N -n "$p" \
		"$bin" -test.run '^$' -test.bench "$regex" -test.benchtime "${ITERS:-3}x" >"$f" 2>&1
	local rc=$?
	echo "# $name N=$n P=$p rc=$rc $((SECONDS - start)) s"
	[ $rc -eq 0 ] || { failed=1; grep -E '^(--- FAIL|FAIL|panic)' "$f" | head -5; }
}
# sweep NAME REGEX: run the benchmarks REGEX as step NAME for every N of
# MOVES_NS and process count of MOVES_PS.
sweep() {
	local n p
	for n in ${MOVES_NS:-4000}; do
		for p in ${MOVES_PS:-1 2 4 8 16}; do run "$1" "$2" "$n" "$p"; done
	done
}
for step in "${steps[@]}"; do
	case $step in
	potrs)
		for n in ${NS:-4000 8000}; do
			for p in ${PS:-1 2 4 8 16}; do run potrs '^BenchmarkPotrs$' "$n" "$p"; done
		done
		;;
	moves) sweep moves '^Benchmark(Gather|Scatter)$' ;;
	reuse) sweep reuse '^Benchmark(RowMajor|InverseFromFactor)$' ;;
	bands) sweep bands '^BenchmarkRowBands$' ;;
	esac
done
echo "# the rows (a_ms, b_ms: medians; a/b: median of the per-iteration ratios)"
[ ${#logs[@]} -gt 0 ] || logs=(/dev/null)
rows=$(cat "${logs[@]}" | grep '^distbench' | sed 's/^distbench //')
if command -v column >/dev/null; then echo "$rows" | column -t; else echo "$rows"; fi
mem=$(cat "${logs[@]}" | grep '^distmem' | sed 's/^distmem //')
if [ -n "$mem" ]; then
	echo "# peak memory per path (MB, the largest over the ranks)"
	if command -v column >/dev/null; then echo "$mem" | column -t; else echo "$mem"; fi
fi
exit $failed
