#!/bin/bash
# Runs mgla's mglacuda binaries (built by `make gpu-bin` on a machine with Go)
# on a GPU machine that has the NVIDIA driver and the CUDA runtime libraries
# but no Go toolchain. Full logs go to $OUT (or ./gpu-logs); a pass/fail
# summary with timings is printed last. STEP_TIMEOUT (seconds, default 600)
# bounds each step; PARALLEL=1 runs the steps of one call at the same time,
# except two that run after the others, alone: graph-flat, which reads the
# devices' free memory (cudaMemGetInfo counts every process on a GPU), and
# sharding-oom (TestDroppedTensorsFreeDeviceMemory, part of the sharding
# step), which fills every GPU's memory on purpose.
#
#   run-gpu.sh tests [STEP...]  the GPU test suite (or only the steps named:
#                               shim sharding ops graph-gpu shared-mesh shared-auto
#                               shared-1gpu shared-2gpu shared-3gpu nccl nccl-procs
#                               graph-flat; shared-3gpu, a mesh of an odd number of
#                               GPUs, is skipped on machines with fewer than 3)
#   run-gpu.sh bench ARGS...    mgbench with ARGS (CSV into the log folder)
#   run-gpu.sh nccl-bench       the NCCL engine against raw NCCL calls, 1 MiB to 1 GiB, and
#                               a process communicator with its checks against without
set -u
BIN=$(cd "$(dirname "$0")" && pwd)
LOG=${OUT:-./gpu-logs}
mkdir -p "$LOG"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# step NAME CMD...: runs CMD under STEP_TIMEOUT, its output in $LOG/NAME.log
# and its result line in $LOG/NAME.result; with PARALLEL=1 in the background
# (the test steps only check correctness, and each has its own process).
step() {
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
	if timeout "${STEP_TIMEOUT:-600}" "$@" >"$LOG/$name.log" 2>&1; then r=PASS; else r="FAIL(rc=$?)"; fi
	printf '%-10s %-28s %4d s\n' "$r" "$name" $((SECONDS - start)) >"$LOG/$name.result"
	grep -E '^(--- FAIL|FAIL|panic|capacity:)' "$LOG/$name.log" | head -20
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
	flat='^TestGPUManyPotrsFlat$'
	oom='^TestDroppedTensorsFreeDeviceMemory$'
	nvidia-smi -L >"$LOG/gpus.log" 2>&1
	ngpu=$(grep -c '^GPU' "$LOG/gpus.log")
	# nvidia-smi lists every GPU; the tests see only CUDA_VISIBLE_DEVICES.
	if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
		ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
	fi
	[ "$ngpu" -ge 1 ] || ngpu=1
	wanted shim && step shim "$BIN/cusolver.test" -test.v -test.count=1
	wanted sharding && step sharding "$BIN/sharding.test" -test.v -test.count=1 -test.skip "$oom"
	wanted ops && step ops "$BIN/ops.test" -test.v -test.count=1
	wanted graph-gpu && step graph-gpu "$BIN/mgla.test" -test.v -test.count=1 -test.run 'GPU' -test.skip "$flat"
	wanted shared-mesh && step shared-mesh "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=mesh -test.skip GPU
	wanted shared-auto && step shared-auto "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=auto -test.skip GPU
	wanted shared-1gpu && step shared-1gpu env CUDA_VISIBLE_DEVICES=0 "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=mesh -test.skip GPU
	wanted shared-2gpu && step shared-2gpu env CUDA_VISIBLE_DEVICES=0,1 "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=mesh -test.skip GPU
	if wanted shared-3gpu; then
		if [ "$ngpu" -ge 3 ]; then
			step shared-3gpu env CUDA_VISIBLE_DEVICES=0,1,2 "$BIN/mgla.test" -test.v -test.count=1 -mgla.mesh=gpu -mgla.dispatch=mesh -test.skip GPU
		else
			printf '%-10s %-28s %4d s\n' "SKIP" "shared-3gpu ($ngpu GPUs)" 0 >"$LOG/shared-3gpu.result"
		fi
	fi
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
	wanted sharding && run_step sharding-oom "$BIN/sharding.test" -test.v -test.count=1 -test.run "$oom"
	wanted graph-flat && run_step graph-flat "$BIN/mgla.test" -test.v -test.count=1 -test.run "$flat"
	;;
nccl-bench)
	step nccl-bench env NCCL_NVLS_ENABLE=0 "$BIN/nccl.test" -test.run '^$' -test.bench 'Collectives|CollectivePaths|ProcessChecks' -test.benchtime 0.5s
	wait
	cat "$LOG"/nccl-bench.log
	;;
bench)
	shift
	step "bench-$(date +%s)" "$BIN/mgbench" -csv "$LOG/mgbench.csv" "$@"
	tail -n 200 "$LOG"/bench-*.log
	;;
esac
wait
echo "== summary =="
cat "$LOG"/*.result 2>/dev/null
