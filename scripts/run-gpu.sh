#!/bin/bash
# Runs mgla's mglacuda binaries (built by `make gpu-bin` on a machine with Go)
# on a GPU machine that has the NVIDIA driver and the CUDA runtime libraries
# but no Go toolchain. Full logs go to $OUT (or ./gpu-logs); a pass/fail
# summary with timings is printed last. STEP_TIMEOUT (seconds, default 600)
# bounds each step (a step that reaches it prints its goroutines' stacks);
# PARALLEL=1 runs the steps of one call at the same time,
# except two that run after the others, alone: graph-flat, which reads the
# devices' free memory (cudaMemGetInfo counts every process on a GPU), and
# sharding-oom (TestDroppedTensorsFreeDeviceMemory, part of the sharding
# step), which fills every GPU's memory on purpose.
#
#   run-gpu.sh tests [STEP...]  the GPU test suite (or only the steps named:
#                               shim shim-large sharding ops graph-gpu shared-mesh shared-auto
#                               shared-1gpu shared-2gpu shared-3gpu nccl nccl-procs
#                               graph-flat; shared-1gpu/2gpu/3gpu run on the first
#                               1/2/3 GPUs of CUDA_VISIBLE_DEVICES, else on 0, 0,1 and
#                               0,1,2; shared-2gpu and shared-3gpu, a mesh of an odd
#                               number of GPUs, are skipped where fewer are visible;
#                               shim-large is the shim's two longest tests, split off
#                               so that with PARALLEL=1 the 4-GPU suite fits in 600 s)
#   run-gpu.sh bench ARGS...    mgbench with ARGS (CSV into the log folder)
#   run-gpu.sh nccl-bench       the NCCL engine against raw NCCL calls, 1 MiB to 1 GiB, and
#                               a process communicator with its checks against without
#
# The summary lists the steps of this call only; the exit status is 1 when
# any of them failed, 2 for an unknown mode or step.
set -u
BIN=$(cd "$(dirname "$0")" && pwd)
LOG=${OUT:-./gpu-logs}
mkdir -p "$LOG"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# step NAME CMD...: runs CMD under STEP_TIMEOUT, its output in $LOG/NAME.log
# and its result line in $LOG/NAME.result; with PARALLEL=1 in the background
# (the test steps only check correctness, and each has its own process).
# ran lists the steps of this call, for the summary.
ran=()
step() {
	ran+=("$1")
	rm -f "$LOG/$1.result"
	if [ "${PARALLEL:-0}" = 1 ]; then
		run_step "$@" &
	else
		run_step "$@"
	fi
}
run_step() {
	local name=$1
	shift
	local start=$SECONDS
	# At the timeout a step gets SIGQUIT, on which a Go test binary prints
	# the stacks of all its goroutines (GOTRACEBACK=system: the runtime's
	# too, among them the one that runs cleanups) before it exits.
	if GOTRACEBACK=system timeout -s QUIT -k 20 "${STEP_TIMEOUT:-600}" "$@" >"$LOG/$name.log" 2>&1; then r=PASS; else r="FAIL(rc=$?)"; fi
	printf '%-10s %-28s %4d s\n' "$r" "$name" $((SECONDS - start)) >"$LOG/$name.result"
	grep -E '^(--- FAIL|FAIL|panic|capacity:)' "$LOG/$name.log" | head -20
}
# alone NAME CMD...: step NAME in the foreground, whatever PARALLEL says.
alone() { PARALLEL=0 step "$@"; }
# skip NAME WHY: step NAME's result is SKIP (WHY).
skip() {
	ran+=("$1")
	printf '%-10s %-28s %4d s\n' "SKIP" "$1 ($2)" 0 >"$LOG/$1.result"
}
# gpus K: the first K GPUs visible to the caller (CUDA_VISIBLE_DEVICES when
# set, else 0 to K-1), as a CUDA_VISIBLE_DEVICES list.
gpus() {
	if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
		echo "$CUDA_VISIBLE_DEVICES" | cut -d, -f"1-$1"
	else
		seq -s, 0 $(($1 - 1))
	fi
}
# wanted reports whether step $1 was asked for (all steps when none were).
wanted() {
	[ ${#only[@]} -eq 0 ] && return 0
	local w
	for w in "${only[@]}"; do [ "$w" = "$1" ] && return 0; done
	return 1
}
case ${1:-tests} in
tests)
	# run-gpu.sh tests [STEP...]: all steps, or only those named.
	shift
	only=("$@")
	for w in "${only[@]}"; do
		case $w in
		shim | shim-large | sharding | ops | graph-gpu | shared-mesh | shared-auto | shared-1gpu | shared-2gpu | shared-3gpu | nccl | nccl-procs | graph-flat) ;;
		*)
			echo "run-gpu.sh: unknown step $w (shim shim-large sharding ops graph-gpu shared-mesh shared-auto shared-1gpu shared-2gpu shared-3gpu nccl nccl-procs graph-flat)" >&2
			exit 2
			;;
		esac
	done
	flat='^TestGPUManyPotrsFlat$'
	oom='^TestDroppedTensorsFreeDeviceMemory$'
	nvidia-smi -L >"$LOG/gpus.log" 2>&1
	ngpu=$(grep -c '^GPU' "$LOG/gpus.log")
	# nvidia-smi lists every GPU; the tests see only CUDA_VISIBLE_DEVICES.
	if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
		ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
	fi
	[ "$ngpu" -ge 1 ] || ngpu=1
	# The shim's two longest tests (about 200 and 40 s on 4 GPUs) are a step
	# of their own, beside the rest of it (about 250 s).
	large='^(TestMgInverseLarge|TestMgPotrfPotrsRepeat)$'
	wanted shim && step shim "$BIN/cusolver.test" -test.v -test.count=1 -test.skip "$large"
	wanted shim-large && step shim-large "$BIN/cusolver.test" -test.v -test.count=1 -test.run "$large"
	wanted sharding && step sharding "$BIN/sharding.test" -test.v -test.count=1 -test.skip "$oom"
	wanted ops && step ops "$BIN/ops.test" -test.v -test.count=1
	wanted graph-gpu && step graph-gpu "$BIN/mgla.test" -test.v -test.count=1 -test.run 'GPU' -test.skip "$flat"
	wanted shared-mesh && step shared-mesh "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=mesh -test.skip GPU
	wanted shared-auto && step shared-auto "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=auto -test.skip GPU
	for k in 1 2 3; do
		wanted shared-${k}gpu || continue
		if [ "$ngpu" -ge $k ]; then
			step shared-${k}gpu env CUDA_VISIBLE_DEVICES="$(gpus $k)" "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=mesh -test.skip GPU
		else
			skip shared-${k}gpu "$ngpu GPUs"
		fi
	done
	# The NCCL engine (collective/nccl): every collective on the GPU meshes
	# and a one-rank process communicator; NCCL_NVLS_ENABLE=0 keeps NVLink
	# multicast off on shared hosts.
	wanted nccl && step nccl env NCCL_NVLS_ENABLE=0 "$BIN/nccl.test" -test.v -test.count=1
	# NCCL across processes (collective/nccl TestProcesses): the test binary
	# starts one copy of itself per GPU (CUDA_VISIBLE_DEVICES, file
	# bootstrap), each one rank of a process communicator running every
	# call, the graph ops and their gradients, and the cross-rank mismatch
	# checks. On one GPU: one process of one rank (the mismatches between
	# ranks need several GPUs, issue 20's machines).
	if wanted nccl-procs; then
		step nccl-procs env NCCL_NVLS_ENABLE=0 MGLA_NCCL_PROCS="$ngpu" "$BIN/nccl.test" -test.v -test.count=1 -test.run '^TestProcesses$'
	fi
	# The whole stack's leak check (sharding's shards, the shim, cuSOLVER's
	# own allocations) can only read free device memory, and the reclaim of
	# dropped tensors runs the GPUs out of memory: no other step may run
	# beside either. (The shim's own flat-memory tests count its allocations
	# and run in parallel.)
	wait
	wanted sharding && alone sharding-oom "$BIN/sharding.test" -test.v -test.count=1 -test.run "$oom"
	wanted graph-flat && alone graph-flat "$BIN/mgla.test" -test.v -test.count=1 -test.run "$flat"
	;;
nccl-bench)
	step nccl-bench env NCCL_NVLS_ENABLE=0 "$BIN/nccl.test" -test.run '^$' -test.bench 'Collectives|CollectivePaths|ProcessChecks' -test.benchtime 0.5s
	wait
	cat "$LOG"/nccl-bench.log
	;;
bench)
	shift
	name=bench-$(date +%s)
	step "$name" "$BIN/mgbench" -csv "$LOG/mgbench.csv" "$@"
	wait
	tail -n 200 "$LOG/$name.log"
	;;
*)
	echo "run-gpu.sh: unknown mode $1 (tests, bench, nccl-bench)" >&2
	exit 2
	;;
esac
wait
echo "== summary =="
failed=0
for name in "${ran[@]}"; do
	if [ -f "$LOG/$name.result" ]; then
		cat "$LOG/$name.result"
	else
		printf '%-10s %-28s %4s s\n' "FAIL(none)" "$name" "?"
	fi
	grep -q '^SKIP\|^PASS' "$LOG/$name.result" 2>/dev/null || failed=1
done
exit $failed
