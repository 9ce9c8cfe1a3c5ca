#!/usr/bin/env bash
# Configures and builds schedfarm in build/ (Release, Ninja, ccache).
# Usage: ops/build.sh [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/setup.sh"

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/schedfarm-ccache}"
# Precompiled headers and ccache work together only with these sloppiness settings.
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Paths relative to the checkout, so that another clone of the tree hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"

build="${SCHEDFARM_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@"
fi
jobs="${SCHEDFARM_JOBS:-$(nproc)}"
cmake --build "$build" -j "$jobs"
