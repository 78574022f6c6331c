#!/usr/bin/env bash
# install-deps.sh [openblas] [cuda] [mpi] — installs the Debian packages the build
# tags need, only when they are missing. Runs as root (CI) or through sudo.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
updated=""
apt_update() { [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }; }
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
      src=/etc/apt/sources.list.d/debian.sources
      if [ -f "$src" ] && ! grep -q 'non-free' "$src"; then
        $SUDO sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$src"
        updated=""
      elif [ -f /etc/apt/sources.list ] && ! grep -q 'non-free' /etc/apt/sources.list; then
        $SUDO sed -i 's/ main$/ main contrib non-free non-free-firmware/' /etc/apt/sources.list
        updated=""
      fi
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
