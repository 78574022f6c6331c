#!/usr/bin/env bash
# Runs the prebuilt cusolver test binary on a GPU machine.
#
#   build (on a machine with Go and the CUDA headers, see doc.go):
#     go test -c -tags mglacuda -o cusolver.test ./kernels/cusolver/
#   run:
#     kernels/cusolver/run_gpu_tests.sh ./cusolver.test [extra test flags...]
#     e.g. ... -test.run 'TestMg$' -mgla.seed=42 -mgla.bench
#
# The full -test.v log goes to $OUT/cusolver.log when $OUT is set (else to a
# temporary file); a short PASS/FAIL summary is printed last. The exit status
# is the test binary's.
set -u -o pipefail

bin=${1:?usage: run_gpu_tests.sh /path/to/cusolver.test [test flags...]}
shift
case $bin in */*) ;; *) bin=./$bin ;; esac
[ -x "$bin" ] || chmod +x "$bin" 2>/dev/null || true

if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	log=$OUT/cusolver.log
else
	log=$(mktemp /tmp/cusolver.XXXXXX.log)
fi

# Let dlopen find the CUDA libraries of a standard install (the package also
# tries these directories itself, after MGLA_CUDA_LIB_DIR and the bare names).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/targets/sbsa-linux/lib; do
	if [ -d "$d" ]; then
		export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	fi
done

{
	echo "== $(date -u +%FT%TZ) $(hostname) =="
	nvidia-smi -L 2>&1 || true
	nvidia-smi topo -m 2>&1 || true
	echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH MGLA_CUDA_LIB_DIR=${MGLA_CUDA_LIB_DIR:-}"
	echo "== $bin -test.v -test.timeout 30m $* =="
} 2>&1 | tee "$log"

"$bin" -test.v -test.timeout 30m "$@" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}

pass=$(grep -cE '^ *--- PASS' "$log")
fail=$(grep -cE '^ *--- FAIL' "$log")
skip=$(grep -cE '^ *--- SKIP' "$log")
echo
echo "================ cusolver summary ================"
grep -E '^BENCH ' "$log" || true
grep -E '^--- (PASS|FAIL|SKIP)' "$log" || true
if grep -q 'no CUDA device' "$log"; then
	echo "WARNING: the CUDA runtime reported no device: GPU tests were skipped"
fi
if [ "$fail" -gt 0 ]; then
	echo "failed (sub)tests:"
	grep -E '^ *--- FAIL' "$log" | sed 's/^ */  /'
fi
echo "(sub)tests: $pass passed, $fail failed, $skip skipped; log: $log"
if [ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]; then
	echo "RESULT: PASS"
else
	echo "RESULT: FAIL (exit status $rc)"
	[ "$rc" -eq 0 ] && rc=1
fi
exit "$rc"
