#!/usr/bin/env bash
# Builds schedfarm and runs the whole test suite (ctest). Does its own set-up.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/build.sh"
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j "${SCHEDFARM_TEST_JOBS:-2}" "$@"
