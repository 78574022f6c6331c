#!/usr/bin/env bash
# install-deps.sh [openblas] [cuda] [mpi] — installs the Debian packages the build
# tags need, and make, only when they are missing. Runs as root (CI) or through sudo.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
updated=""
apt_update() { [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }; }
# with_nonfree FILE prints FILE (one-line "deb ..." sources or deb822
# .sources) with the components contrib and non-free added where missing to
# every deb line and Components field that has main; the components are
# compared as whole words (non-free-firmware is not non-free).
with_nonfree() {
  awk '{ first = 0 }
    /^[ \t]*deb[ \t]/ { first = 3 }
    /^Components:/ { first = 2 }
    first {
      m = c = n = 0
      for (i = first; i <= NF; i++) { m += $i == "main"; c += $i == "contrib"; n += $i == "non-free" }
      if (m) { if (!c) $0 = $0 " contrib"; if (!n) $0 = $0 " non-free" }
    }
    { print }' "$1"
}
for what in "$@"; do
  case "$what" in
  openblas)
    if ! { [ -e /usr/include/lapacke.h ] || [ -e /usr/include/x86_64-linux-gnu/lapacke.h ] || ls /usr/include/*/lapacke.h >/dev/null 2>&1; } \
       || ! ldconfig -p | grep -q libopenblas; then
      apt_update
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libopenblas-dev liblapacke-dev >/dev/null
    fi ;;
  cuda)
    if [ ! -e /usr/include/cuda.h ]; then
      # nvidia-cuda-dev is in non-free (its dependencies in contrib).
      for src in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
        [ -f "$src" ] || continue
        fixed=$(with_nonfree "$src")
        if [ "$fixed" != "$(cat "$src")" ]; then
          printf '%s\n' "$fixed" | $SUDO tee "$src" >/dev/null
          updated=""
        fi
      done
      apt_update
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nvidia-cuda-dev >/dev/null
    fi ;;
  mpi)
    # Open MPI (the mpi build tag: collective/mpi) with ScaLAPACK and hypre
    # built against it.
    if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi-c 2>/dev/null \
       || ! ls /usr/lib/*/libscalapack-openmpi.so >/dev/null 2>&1 || [ ! -e /usr/include/hypre/HYPRE.h ]; then
      apt_update
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libopenmpi-dev openmpi-bin libscalapack-openmpi-dev libhypre-dev pkg-config >/dev/null
    fi ;;
  *) echo "install-deps.sh: unknown component $what" >&2; exit 2 ;;
  esac
done
# make runs the build and the tests (make test).
if ! command -v make >/dev/null; then
  apt_update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make >/dev/null
fi
