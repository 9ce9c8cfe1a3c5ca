#!/usr/bin/env bash
# Configures and builds schedfarm in build/ (Release, Ninja, ccache).
# Usage: ops/build.sh [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/setup.sh"

# shellcheck source=ops/ccache_env.sh
source "$root/ops/ccache_env.sh"

build="${SCHEDFARM_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@"
fi
jobs="${SCHEDFARM_JOBS:-$(nproc)}"
cmake --build "$build" -j "$jobs"
