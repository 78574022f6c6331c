#!/bin/bash
# Runs mgla's CPU benchmarks from the bundle that `make cpu-bundle` builds
# (scripts/cpu-bundle.sh) on a quiet multi-core Linux host without Go,
# Open MPI, ScaLAPACK, hypre or OpenBLAS packages:
#
#	mkdir -p /tmp/cb && tar xf .cpubundle/bundle.tar.xz -C /tmp/cb && /tmp/cb/run-cpu.sh [STEP...]
#
# Steps (all four when none is named):
#
#	openblas   the kernels' Potrs/Potri/Syevd against LAPACK called directly
#	           (Benchmark*VsLAPACK, or the -test.bench pattern OPENBLAS_BENCH),
#	           OPENBLAS_NUM_THREADS=16, 4 and 1 (OPENBLAS_THREADS), -count 1
#	           (COUNT), -benchtime 9x (BENCHTIME: the pairs of each median)
#	collbench  cmd/collbench (collective/mpi and the graph ops against raw MPI)
#	           with 2, 4, 8 and 16 processes
#	dist       dist BenchmarkPotrs at N = 4000 and 8000 with 1, 2, 4, 8 and 16
#	           processes; BenchmarkGather and BenchmarkScatter (N = 4000) with 1, 2, 4 and 8
#	sparse     cmd/sparsebench at 64³ and 96³ (one process), then
#	           examples/poisson at 64³ and 96³ on 1 and 4 processes
#
# and, only when named:
#
#	distreuse  dist BenchmarkRowMajor (the row-major ways in and out against
#	           converting to column-major first) and BenchmarkInverseFromFactor
#	           (A⁻¹ from the factor against Potri) at N = 4000 with 1, 4 and
#	           16 processes
#	distbands  dist BenchmarkRowBands (row bands that are not the block split
#	           through reband + p?gemr2d, against the block split and against
#	           the sum; time and peak memory) at N = 4000 (DISTBANDS_N) with 4,
#	           8 and 16 processes (DISTBANDS_NPS), -benchtime 3x; 150 s
#	distops    dist/distops BenchmarkPotrs, the graph ops against the dist
#	           calls they stand for (replicated values, and A from row blocks
#	           as a grid value against column-major and against the same
#	           row-major bands), N = 4000 and 8000 (DISTOPS_NS) with 16, 4 and
#	           1 processes (DISTOPS_NPS, fastest first), -benchtime 2x
#	           (DISTOPS_BENCHTIME); 300 s. DISTOPS_BENCH=^BenchmarkKernelGP$
#	           runs the GP's NLL with K made on the grid instead (against
#	           the dist calls, and its step against K from row bands)
#
# Each step's log is $OUT/STEP.log (OUT defaults to ./cpu-logs); a summary
# (per step: result, seconds, the ratio lines) is printed last and kept in
# $OUT/summary.txt. Every command runs under a timeout: the step's own
# (STEP_TIMEOUT_openblas=170, _collbench=140, _dist=130, _sparse=100,
# _distreuse=90, _distbands=150 seconds; collbench gives each process count
# an equal share) and what is left of TOTAL_TIMEOUT (540 s) for all the
# steps of the call.
#
# MPI: MGLA_CPU_MPI=host uses the host's Open MPI 4.x (mpirun on PATH,
# libmpi.so.40) and links into a private library folder only the bundled
# libraries the host lacks (`ldconfig -p`); MGLA_CPU_MPI=bundle uses the
# bundle's relocated Open MPI 4.1.4 and all its libraries; auto (the
# default) takes host when the host has an Open MPI 4 mpirun and every
# binary's libraries then resolve, else bundle. Ranks are bound to cores
# (to hardware threads when there are more ranks than cores; unbound and
# oversubscribed when there are more ranks than those); RANK_CORES=K binds
# each rank to K cores instead where the ranks' cores fit the host (Open
# MPI's --map-by slot:PE=K). OpenBLAS and OpenMP use one thread per MPI
# rank. TINY=1 runs every step at toy sizes (to check a bundle, not to
# measure).
set -u
B=$(cd "$(dirname "$0")" && pwd)
LOG=${OUT:-$PWD/cpu-logs}
mkdir -p "$LOG"
LOG=$(cd "$LOG" && pwd)
TINY=${TINY:-0}
TOTAL_TIMEOUT=${TOTAL_TIMEOUT:-540}
start_all=$SECONDS
export PATH=$PATH:/usr/sbin:/sbin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}

# Open MPI's shared-memory transport maps its segments from /dev/shm, which
# containers often keep small (64 MiB by default under Docker): then from /tmp.
shm_kib=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
if [ "${shm_kib:-0}" -lt 2097152 ] && [ -z "${OMPI_MCA_btl_vader_backing_directory:-}" ]; then
	export OMPI_MCA_btl_vader_backing_directory=${TMPDIR:-/tmp}
fi

say() { echo "$*" | tee -a "$LOG/summary.txt"; }
: >"$LOG/summary.txt"

# ---- which Open MPI and which libraries ----
# use_bundle points everything at the bundle's relocated Open MPI: OPAL_*
# for Open MPI's install directories (Debian's sysconfdir /etc/openmpi is
# not under its prefix, so each is set), PMIX_* for PMIx's, HWLOC_PLUGINS_PATH
# so that hwloc loads no plugins from the host.
use_bundle() {
	MODE=bundle
	local o=$B/ompi
	export PATH=$o/bin:$PATH
	export OPAL_PREFIX=$o OPAL_EXEC_PREFIX=$o OPAL_BINDIR=$o/bin OPAL_LIBDIR=$B/lib \
		OPAL_PKGLIBDIR=$o/lib/openmpi OPAL_DATAROOTDIR=$o/share OPAL_DATADIR=$o/share \
		OPAL_PKGDATADIR=$o/share/openmpi OPAL_SYSCONFDIR=$o/etc
	export PMIX_PREFIX=$o PMIX_EXEC_PREFIX=$o PMIX_LIBDIR=$B/lib PMIX_PKGLIBDIR=$o/lib/pmix \
		PMIX_DATAROOTDIR=$o/share PMIX_DATADIR=$o/share PMIX_PKGDATADIR=$o/share/pmix \
		PMIX_SYSCONFDIR=$o/etc PMIX_MCA_mca_base_component_path=$o/lib/pmix
	export HWLOC_PLUGINS_PATH=$o/lib/hwloc
	LD=$B/lib
}
# use_host keeps the host's Open MPI and libraries and adds the bundle's
# libraries whose sonames the host's loader cache lacks; the host's
# pthread OpenBLAS folder (Debian/Ubuntu layout) comes first so that
# libblas.so.3 and liblapack.so.3 are OpenBLAS whatever the alternatives say.
use_host() {
	MODE=host
	local dir known f
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mgla-cpu-lib.XXXXXX")
	trap "rm -rf '$dir'" EXIT
	known=$(ldconfig -p 2>/dev/null | awk 'NR > 1 {print $1}')
	for f in "$B"/lib/*; do
		grep -qxF "$(basename "$f")" <<<"$known" || ln -s "$f" "$dir/"
	done
	LD=$dir
	for f in /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib64/openblas-pthread; do
		[ -e "$f/libblas.so.3" ] && LD=$f:$LD && break
	done
}
host_mpi_ok() {
	command -v mpirun >/dev/null && mpirun --version 2>/dev/null | grep -qE 'Open MPI\)? 4\.'
}
unresolved() { # lists each binary's libraries that do not resolve with LD
	local f
	for f in "$B"/bin/*; do
		env LD_LIBRARY_PATH="$LD" ldd "$f" 2>&1 | sed -n "s|^\s*\(.*not found\)|$(basename "$f"): \1|p"
	done
}
case ${MGLA_CPU_MPI:-auto} in
bundle) use_bundle ;;
host) use_host ;;
*)
	if host_mpi_ok; then
		use_host
		if [ -n "$(unresolved)" ]; then
			say "host libraries incomplete, using the bundle's Open MPI instead:"
			unresolved | tee -a "$LOG/summary.txt"
			use_bundle
		fi
	else
		use_bundle
	fi
	;;
esac
if [ -n "$(unresolved)" ]; then
	say "unresolved libraries ($MODE mode):"
	unresolved | tee -a "$LOG/summary.txt"
	exit 1
fi
# brun runs a command with the bundle's library path (only its commands get
# it: the host's own tools keep their libraries).
brun() { env LD_LIBRARY_PATH="$LD" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "$@"; }

# ---- the machine: cores and hardware threads this process may use ----
cpus=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status | tr ',' ' ')
nthreads=0
topology=1 # 0: a CPU's topology could not be read, so count hardware threads as cores
declare -A core_seen=()
for r in $cpus; do
	for ((c = ${r%-*}; c <= ${r#*-}; c++)); do
		nthreads=$((nthreads + 1))
		t=/sys/devices/system/cpu/cpu$c/topology
		if pkg=$(cat $t/physical_package_id 2>/dev/null) && core=$(cat $t/core_id 2>/dev/null) && [ -n "$pkg" ] && [ -n "$core" ]; then
			core_seen["$pkg/$core"]=1
		else
			topology=0
		fi
	done
done
ncores=${#core_seen[@]}
[ "$ncores" -gt 0 ] && [ $topology = 1 ] || ncores=$nthreads
# mpi NP CMD...: CMD on NP ranks, bound to cores when there are enough.
mpi() {
	local np=$1 bind
	shift
	local pe=${RANK_CORES:-1}
	if [ "$pe" -gt 1 ] && [ $((np * pe)) -gt "$ncores" ]; then
		echo "RANK_CORES=$pe: $np ranks of $pe cores do not fit $ncores cores; binding as without it"
		pe=1
	fi
	if [ "$pe" -gt 1 ]; then
		bind=(--map-by "slot:PE=$pe" --bind-to core)
	elif [ "$np" -le "$ncores" ]; then
		bind=(--map-by core --bind-to core)
	elif [ "$np" -le "$nthreads" ]; then
		bind=(--use-hwthread-cpus --map-by hwthread --bind-to hwthread)
	else
		bind=(--oversubscribe --bind-to none)
	fi
	local pass=(-x LD_LIBRARY_PATH -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS=1)
	[ -n "${MGLA_DIST_BENCH_N:-}" ] && pass+=(-x MGLA_DIST_BENCH_N)
	brun mpirun --allow-run-as-root "${bind[@]}" "${pass[@]}" -n "$np" "$@"
}

export -f brun mpi
export LD ncores nthreads

# ---- steps ----
# run STEP CMD...: CMD with its output appended to the step's log, under the
# smaller of the step's time left (divided by SHARE, the runs left in the
# step, when set) and the call's.
step_fail=0
run() {
	local name=$1 left
	shift
	left=$(((step_end - SECONDS) / ${SHARE:-1}))
	((TOTAL_TIMEOUT - (SECONDS - start_all) < left)) && left=$((TOTAL_TIMEOUT - (SECONDS - start_all)))
	if [ "$left" -lt 5 ]; then
		echo "== SKIPPED (out of time): $*" >>"$LOG/$name.log"
		step_fail=1
		return
	fi
	echo "== $(date -u +%T) (${left}s left) $*" >>"$LOG/$name.log"
	local t0=$SECONDS
	# (through bash: CMD may be one of the functions brun and mpi)
	timeout -k 10 "$left" bash -c '"$@"' _ "$@" >>"$LOG/$name.log" 2>&1
	local rc=$?
	echo "== rc=$rc in $((SECONDS - t0)) s" >>"$LOG/$name.log"
	[ $rc -eq 0 ] || step_fail=1
}

step_openblas() {
	# The fastest first, each with an equal share of the time left, so that
	# what they leave goes to the single-threaded run.
	local bench=${OPENBLAS_BENCH:-VsLAPACK} bt=${BENCHTIME:-9x} count=${COUNT:-1} threads=${OPENBLAS_THREADS:-16 4 1} t f left
	if [ "$TINY" = 1 ]; then bench='PotrsVsLAPACK/N=1000/nrhs=1$' bt=1x count=1 threads='2 1'; fi
	left=$(($(wc -w <<<"$threads") * $(ls "$B"/bin/openblas-*.test | wc -l)))
	for t in $threads; do
		for f in "$B"/bin/openblas-*.test; do
			SHARE=$left run openblas env OPENBLAS_NUM_THREADS="$t" LD_LIBRARY_PATH="$LD" "$f" \
				-test.run '^$' -test.bench "$bench" -test.benchtime "$bt" -test.count "$count"
			left=$((left - 1))
		done
	done
}
step_collbench() {
	local nps=${COLL_NP:-2 4 8 16} args=${COLLBENCH_ARGS:--budget 100ms} np
	if [ "$TINY" = 1 ]; then nps='2 3' args='-kinds allreduce,bcast -max 1Ki -budget 1ms'; fi
	local left
	left=$(wc -w <<<"$nps")
	for np in $nps; do
		# shellcheck disable=SC2086
		SHARE=$left run collbench mpi "$np" "$B"/bin/collbench $args
		left=$((left - 1))
	done
}
step_dist() {
	local ns='4000 8000' nps='1 2 4 8 16' gnps='1 2 4 8' bt=2x n np
	if [ "$TINY" = 1 ]; then ns=301 nps='1 3' gnps='1 2' bt=1x; fi
	for n in $ns; do
		for np in $nps; do
			MGLA_DIST_BENCH_N=$n run dist mpi "$np" "$B"/bin/dist.test \
				-test.run '^$' -test.bench '^BenchmarkPotrs$' -test.benchtime "$bt"
		done
	done
	n=${ns%% *}
	for np in $gnps; do
		MGLA_DIST_BENCH_N=$n run dist mpi "$np" "$B"/bin/dist.test \
			-test.run '^$' -test.bench '^Benchmark(Gather|Scatter)$' -test.benchtime 3x
	done
}
step_distreuse() {
	local n=4000 nps='1 4 16' bt=3x np
	if [ "$TINY" = 1 ]; then n=301 nps='1 3' bt=1x; fi
	for np in $nps; do
		MGLA_DIST_BENCH_N=$n run distreuse mpi "$np" "$B"/bin/dist.test \
			-test.run '^$' -test.bench '^Benchmark(RowMajor|InverseFromFactor)$' -test.benchtime "$bt"
	done
}
step_distbands() {
	local n=${DISTBANDS_N:-4000} nps=${DISTBANDS_NPS:-4 8 16} bt=3x np left
	if [ "$TINY" = 1 ]; then n=301 nps='1 3' bt=1x; fi
	left=$(wc -w <<<"$nps")
	for np in $nps; do
		MGLA_DIST_BENCH_N=$n SHARE=$left run distbands mpi "$np" "$B"/bin/dist.test \
			-test.run '^$' -test.bench '^BenchmarkRowBands$' -test.benchtime "$bt"
		left=$((left - 1))
	done
}
step_distops() {
	local ns=${DISTOPS_NS:-4000 8000} nps=${DISTOPS_NPS:-16 4 1} bt=${DISTOPS_BENCHTIME:-2x} n np left
	if [ "$TINY" = 1 ]; then ns=301 nps='1 3' bt=1x; fi
	left=$(($(wc -w <<<"$ns") * $(wc -w <<<"$nps")))
	for n in $ns; do
		for np in $nps; do
			MGLA_DIST_BENCH_N=$n SHARE=$left run distops mpi "$np" "$B"/bin/distops.test \
				-test.run '^$' -test.bench "${DISTOPS_BENCH:-^BenchmarkPotrs\$}" -test.benchtime "$bt"
			left=$((left - 1))
		done
	done
}
step_sparse() {
	local sizes=64,96 ns='64 96' nps='1 4' reps=3 steps=20 n np
	if [ "$TINY" = 1 ]; then sizes=12 ns=12 nps='1 2' reps=1 steps=2; fi
	run sparse mpi 1 "$B"/bin/sparsebench -sizes "$sizes" -reps "$reps" -csv "$LOG/sparse.csv"
	for n in $ns; do
		for np in $nps; do
			run sparse mpi "$np" "$B"/bin/poisson -quiet -n "$n" -steps "$steps"
		done
	done
}

# summary lines of each step's log
sum_openblas() {
	awk '/^== .*OPENBLAS_NUM_THREADS=/ {match($0, /OPENBLAS_NUM_THREADS=[0-9]+/); t = substr($0, RSTART, RLENGTH)}
		/x-vs-lapack/ {line = t " " $1; for (i = 2; i < NF; i++) if ($(i+1) ~ /^(x-vs-lapack|median-pair|fastest)$/) line = line " " $i " " $(i+1); print line}' "$LOG/openblas.log"
}
sum_collbench() { grep -E '^collbench:|^\| (allreduce|bcast) \| (8 B|1 MiB|16 MiB|64 MiB) ' "$LOG/collbench.log"; }
sum_dist() { grep '^distbench' "$LOG/dist.log"; }
sum_distreuse() { grep '^distbench' "$LOG/distreuse.log"; }
sum_distbands() { grep -E '^dist(bench|mem)' "$LOG/distbands.log"; }
sum_distops() { grep -E '^(Potrs|GP NLL)' "$LOG/distops.log"; }
sum_sparse() { grep -E '^\| [0-9]+³|^3-D Poisson|^AMG-PCG|^  setup' "$LOG/sparse.log"; }

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(openblas collbench dist sparse)
for s in "${steps[@]}"; do
	case $s in openblas | collbench | dist | sparse | distreuse | distbands | distops) ;; *)
		echo "run-cpu.sh: unknown step $s (openblas collbench dist sparse distreuse distbands distops)" >&2
		exit 2
		;;
	esac
done
{
	echo "mgla CPU bundle: $(head -1 "$B/MANIFEST")"
	echo "host: $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $ncores cores, $nthreads hardware threads allowed"
	echo "MPI: $MODE mode, $(brun mpirun --version 2>&1 | head -1); LD_LIBRARY_PATH=$LD"
	echo "libraries: $(brun ldd "$B"/bin/dist.test "$B"/bin/sparsebench "$B"/bin/openblas-*.test 2>/dev/null |
		awk '$1 ~ /^lib(mpi|openblas|blas|lapack|lapacke|scalapack-openmpi|HYPRE-[0-9.]*)\.so/ && $2 == "=>" {print $3}' |
		sort -u | xargs -r readlink -f | tr '\n' ' ')"
	echo "TINY=$TINY OMPI_MCA_btl=$OMPI_MCA_btl single_copy=$OMPI_MCA_btl_vader_single_copy_mechanism" \
		"/dev/shm free ${shm_kib:-?} KiB, vader backing directory ${OMPI_MCA_btl_vader_backing_directory:-/dev/shm}"
} >"$LOG/env.txt"
cat "$LOG/env.txt"
results=()
for s in "${steps[@]}"; do
	: >"$LOG/$s.log"
	var=STEP_TIMEOUT_$s
	case $s in openblas) d=170 ;; collbench) d=140 ;; dist) d=130 ;; sparse) d=100 ;; distreuse) d=90 ;; distbands) d=150 ;; distops) d=300 ;; esac
	step_end=$((SECONDS + ${!var:-$d}))
	step_fail=0
	t0=$SECONDS
	"step_$s"
	r=PASS
	[ $step_fail -eq 0 ] || r=FAIL
	results+=("$(printf '%-5s %-10s %4d s  (log %s)' "$r" "$s" $((SECONDS - t0)) "$LOG/$s.log")")
done
{
	echo
	echo "==== summary ($((SECONDS - start_all)) s) ===="
	cat "$LOG/env.txt"
	for s in "${steps[@]}"; do
		echo "-- $s"
		"sum_$s" 2>/dev/null
	done
	echo
	printf '%s\n' "${results[@]}"
} | tee -a "$LOG/summary.txt"
printf '%s\n' "${results[@]}" | grep -q '^FAIL' && exit 1
exit 0
