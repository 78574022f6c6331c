#!/bin/bash
# Builds the carried CPU bundle (`make cpu-bundle`): mgla's MPI and OpenBLAS
# benchmark binaries, built here against Debian's Open MPI 4.1.4, ScaLAPACK,
# hypre and OpenBLAS, with every shared library they load except glibc's, and
# a relocatable copy of the Open MPI runtime (mpirun, orted, the MCA
# components, the help files, the params files). It is made for a quiet
# multi-core Linux host without Go or those packages (run-cpu.sh in the
# bundle says how it picks the host's Open MPI or its own).
#
#	scripts/cpu-bundle.sh [OUTDIR]    # default .cpubundle: OUTDIR/bundle.tar.xz
#
# VSLAPACK_PKGS (default: every package with a Benchmark...VsLAPACK) names
# the packages whose `-tags openblas` test binaries run-cpu.sh's openblas
# step runs. The tarball has no top folder:
#
#	mkdir -p /tmp/cb && tar xf .cpubundle/bundle.tar.xz -C /tmp/cb && /tmp/cb/run-cpu.sh openblas collbench dist sparse
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=${1:-.cpubundle}
limit_mib=45

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
b=$tmp/b
mkdir -p "$b"/bin "$b"/lib "$b"/ompi/bin "$b"/ompi/lib/openmpi "$b"/ompi/lib/pmix "$b"/ompi/lib/hwloc \
	"$b"/ompi/share/openmpi "$b"/ompi/share/pmix "$b"/ompi/etc

# ---- the binaries ----
build=("$GO" build -tags mpi -trimpath -ldflags=-s\ -w)
testc=("$GO" test -c -tags mpi -trimpath -ldflags=-s\ -w)
"${build[@]}" -o "$b"/bin/collbench ./cmd/collbench
"${build[@]}" -o "$b"/bin/sparsebench ./cmd/sparsebench
"${build[@]}" -o "$b"/bin/poisson ./examples/poisson
"${testc[@]}" -o "$b"/bin/dist.test ./dist/
"${testc[@]}" -o "$b"/bin/distops.test ./dist/distops/
pkgs=${VSLAPACK_PKGS:-$(grep -rlE --include='*_test.go' '^func Benchmark[A-Za-z0-9_]*VsLAPACK\(' . |
	xargs -r -n1 dirname | sort -u | sed 's|$|/|')}
[ -n "$pkgs" ] || { echo "cpu-bundle: no package has a Benchmark...VsLAPACK" >&2; exit 1; }
for p in $pkgs; do
	name=$(echo "${p#./}" | tr -c 'a-zA-Z0-9\n' _ | sed 's/_*$//')
	CGO_LDFLAGS='-llapacke -lopenblas' "$GO" test -c -tags openblas -trimpath -ldflags='-s -w' \
		-o "$b/bin/openblas-$name.test" "$p"
done

# ---- the Open MPI runtime, laid out for OPAL_PREFIX=$b/ompi (run-cpu.sh sets the rest) ----
path() { ompi_info --parsable --path "$1" | sed -n "s/^path:$1://p" | head -1; }
ompi_bindir=$(path bindir)
ompi_pkglib=$(path pkglibdir)
ompi_pkgdata=$(path pkgdatadir)
ompi_sysconf=$(path sysconfdir)
ompi_version=$(ompi_info --parsable | sed -n 's/^ompi:version:full://p')
for x in orterun orted ompi_info; do cp -L "$ompi_bindir/$x" "$b"/ompi/bin/; done
ln -s orterun "$b"/ompi/bin/mpirun
ln -s orterun "$b"/ompi/bin/mpiexec
cp -rL "$ompi_pkgdata"/. "$b"/ompi/share/openmpi/
cp -L "$ompi_sysconf"/openmpi-mca-params.conf "$ompi_sysconf"/openmpi-default-hostfile "$b"/ompi/etc/
# The MCA components, less those for networks a single host does not use
# (their libraries: libfabric, UCX, verbs, PSM), OpenSHMEM's and the Java
# binding's.
skip='lib(fabric|uc[pstm]|ibverbs|rdmacm|psm_infinipath|psm2|oshmem|jvm|jawt)\.|not found'
for c in "$ompi_pkglib"/*.so; do
	deps=$(ldd "$c")
	if grep -qE "$skip" <<<"$deps"; then continue; fi
	cp -L "$c" "$b"/ompi/lib/openmpi/
done
# PMIx (external in Debian): its components, help files and params file.
pmix_lib=$(ldd "$ompi_pkglib"/mca_pmix_ext3x.so | awk '$1 ~ /^libpmix\.so/ {print $3}')
pmix_root=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
[ -d "$pmix_root/lib/pmix" ] || pmix_root=$(strings "$pmix_lib" | grep -E '^/usr/lib/.*/pmix[0-9]*$' | head -1 || true)
cp -L "$pmix_root"/lib/pmix/*.so "$b"/ompi/lib/pmix/
cp -L "$pmix_root"/share/pmix/* "$b"/ompi/share/pmix/ 2>/dev/null || true
grep -v '^mca_base_component_path' "$pmix_root"/share/pmix-mca-params.conf >"$b"/ompi/etc/pmix-mca-params.conf || true
printf 'hwloc plugins (none carried: PCI, GL and OpenCL discovery are not needed to bind ranks to cores)\n' \
	>"$b"/ompi/lib/hwloc/README

# ---- the shared libraries: every one the ELF files above load, except glibc's ----
# (and libstdc++/libgcc_s, which every Linux with apt has), under its soname.
system='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libmvec|libstdc\+\+|libgcc_s)\.so'
elfs=$(find "$b"/bin "$b"/ompi -type f -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
ldd $elfs 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
	while read -r soname file; do
		if [[ $soname =~ $system ]]; then continue; fi
		[ -e "$b/lib/$soname" ] || cp -L "$file" "$b/lib/$soname"
	done
missing=$(env LD_LIBRARY_PATH="$b"/lib ldd $elfs "$b"/lib/* 2>/dev/null | grep 'not found' | sort -u || true)
if [ -n "$missing" ]; then
	echo "cpu-bundle: unresolved libraries:" >&2
	echo "$missing" >&2
	exit 1
fi

# ---- the runner and a manifest ----
cp scripts/run-cpu.sh "$b"/run-cpu.sh
{
	echo "mgla CPU bundle, built $(date -u +%FT%TZ) from $(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "build host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
	echo "Open MPI $ompi_version (Debian layout: bindir $ompi_bindir, pkglibdir $ompi_pkglib, pkgdatadir $ompi_pkgdata, sysconfdir $ompi_sysconf; PMIx $pmix_root)"
	echo "openblas test binaries: $pkgs"
	echo "highest glibc symbol version needed: $(objdump -T $elfs "$b"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
	echo
	echo "lib/ (sonames):"
	(cd "$b"/lib && ls)
} >"$b"/MANIFEST
mkdir -p "$out"
rm -f "$out"/bundle.tar.xz
tar -C "$b" -cf - . | xz -6 -T2 >"$out"/bundle.tar.xz
size=$(du -m "$out"/bundle.tar.xz | cut -f1)
echo "cpu-bundle: $out/bundle.tar.xz, ${size} MiB ($(du -sm "$b" | cut -f1) MiB unpacked)"
if [ "$size" -gt "$limit_mib" ]; then
	echo "cpu-bundle: larger than ${limit_mib} MiB" >&2
	exit 1
fi
