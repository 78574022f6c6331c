#!/bin/bash
# Checks the CPU bundle (`make cpu-bundle-check`, after `make cpu-bundle`):
# extracts .cpubundle/bundle.tar.xz (or copies the unpacked bundle folder
# given instead) into a temporary folder and runs every
# step of its run-cpu.sh at toy sizes (TINY=1) in an emptied environment,
# under strace, twice:
#
#   - bundle mode (the bundle's relocated Open MPI): no shared library or
#     other file may be opened from the build host's Open MPI, PMIx, hwloc,
#     ScaLAPACK, hypre or BLAS installation; the only libraries from outside
#     the bundle are glibc's, libstdc++ and libgcc_s;
#   - host mode as on the GPU hosts (Ubuntu 24.04 with Open MPI, OpenBLAS,
#     LAPACK(E), libgfortran, hwloc, libevent and PMIx, without ScaLAPACK or
#     hypre): `ldconfig -p` is replaced by a list of those libraries, and every
#     library opened from outside the bundle must be on it or belong to the
#     host's Open MPI.
#
# It prints the offending opens and fails if there is any, or if a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
tarball=${1:-.cpubundle/bundle.tar.xz}
command -v strace >/dev/null || { echo "cpu-bundle-check: needs strace" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
b=$tmp/cb
mkdir -p "$b"
if [ -d "$tarball" ]; then cp -a "$tarball"/. "$b"/; else tar -C "$b" -xJf "$tarball"; fi

# glibc, and the two GCC runtime libraries every apt-based system has.
base='/(ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libmvec|libstdc\+\+|libgcc_s)\.so[.0-9]*$'
# What the GPU hosts' loader cache lists (from the probe of 2026-11-25 and a
# stock Ubuntu 24.04); anything else must come from the bundle.
host_sonames='libmpi.so.40 libmpi_cxx.so.40 libmpi_mpifh.so.40 libopen-pal.so.40 libopen-rte.so.40 libpmix.so.2
libhwloc.so.15 libevent-2.1.so.7 libevent_core-2.1.so.7 libevent_pthreads-2.1.so.7 libevent_extra-2.1.so.7
libopenblas.so.0 liblapack.so.3 libblas.so.3 liblapacke.so.3 libgfortran.so.5 libquadmath.so.0
libz.so.1 libbz2.so.1.0 liblzma.so.5 libzstd.so.1 libudev.so.1 libcap.so.2 libgcrypt.so.20 libgpg-error.so.0
libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 ld-linux-x86-64.so.2'
mkdir -p "$tmp"/fake
{
	echo "$(echo "$host_sonames" | wc -w) libs found in cache \`/etc/ld.so.cache'"
	for s in $host_sonames; do printf '\t%s (libc6,x86-64) => /lib/x86_64-linux-gnu/%s\n' "$s" "$s"; done
} >"$tmp"/fake/ldconfig.out
printf '#!/bin/sh\ncat %s\n' "$tmp"/fake/ldconfig.out >"$tmp"/fake/ldconfig
chmod +x "$tmp"/fake/ldconfig

# opened FILE: the files that processes running a program of the bundle
# (its scripts aside; with their threads, and children until they run
# another program) opened
# successfully, less those inside the bundle, the temporary and the
# kernel's files. FILE is strace -f output with execve and clone traced.
opened() {
	awk -v b="$b/" '
		function follow(parent, child) { if (parent in prog) prog[child] = prog[parent] }
		/ execve\("/ { split($0, q, "\""); pending[$1] = q[2] }
		/execve/ && / = 0$/ { prog[$1] = pending[$1] }
		/(clone3?|v?fork)[(<].* = [0-9]+$/ { follow($1, $NF) }
		/ open(at)?\(/ && !/ = -1 / && !/unfinished/ {
			if (!($1 in prog) || index(prog[$1], b) != 1 || prog[$1] ~ /\.sh$/) next
			split($0, q, "\""); print q[2]
		}' "$1" | sort -u | grep -vE "^($b|$tmp|/tmp|/proc|/sys|/dev)(/|$)" || true
}
fail=0
check() { # check MODE PATH FILTER: FILTER reads the opened files, prints the forbidden ones
	local mode=$1 log=$tmp/$1.strace bad
	echo "== $mode mode: run-cpu.sh (TINY=1) under strace, empty environment"
	if ! env -i PATH="$2" HOME=/tmp OUT="$tmp/out-$mode" TINY=1 MGLA_CPU_MPI="$mode" \
		strace -f -qq -e trace=open,openat,execve,clone,clone3,fork,vfork -o "$log" "$b"/run-cpu.sh >"$tmp/$mode.out" 2>&1; then
		echo "FAIL: run-cpu.sh in $mode mode:"
		tail -30 "$tmp/$mode.out"
		fail=1
	fi
	tail -5 "$tmp/$mode.out"
	echo "files the bundle's programs opened outside it (logs and /tmp aside):"
	opened "$log" | sed 's/^/    /'
	bad=$(opened "$log" | "$3" || true)
	if [ -n "$bad" ]; then
		echo "FAIL: in $mode mode the bundle's programs opened these from this machine:"
		echo "$bad"
		fail=1
	fi
}
# bundle mode: no shared library but glibc's, libstdc++ and libgcc_s, and
# nothing of the Open MPI, PMIx or hwloc installations.
bundle_bad() { grep -E '\.so[.0-9]*$|openmpi|pmix|hwloc' | grep -vE "$base"; }
# host mode: the host's own Open MPI and libraries may load whatever they
# load; but no library the bundle carries may come from this machine unless
# the GPU hosts have it.
host_bad() {
	local f n
	grep -E '\.so[.0-9]*$' | while read -r f; do
		n=$(basename "$f")
		[ -e "$b/lib/$n" ] || continue
		grep -qxF "$n" <<<"$(echo "$host_sonames" | tr ' ' '\n')" || echo "$f"
	done
}
check bundle /usr/bin:/bin bundle_bad
check host "$tmp/fake:/usr/bin:/bin" host_bad
[ $fail -eq 0 ] && echo "cpu-bundle-check: OK"
exit $fail
