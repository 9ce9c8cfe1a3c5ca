#!/usr/bin/env bash
# The A/A repeatability test of the measurement protocol: builds (ops/build.sh) and
# measures the same random schedules of zoo blocks twice through the worker's sandbox,
# then prints each schedule's two medians and the distribution of their relative
# difference (mean, median, p90, max), beside the 2.4% the value-learning paper saw.
# For a figure worth quoting, run it on an otherwise idle host.
#
# Usage: ops/aa_test.sh [--candidates N] [--samples K] [--threads T] [--no-build]
# SCHEDFARM_BUILD_DIR selects the build directory (default build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
args=()
do_build=1
for arg in "$@"; do
  if [ "$arg" = "--no-build" ]; then do_build=0; else args+=("$arg"); fi
done
[ "$do_build" -eq 0 ] || "$root/ops/build.sh" >/dev/null
exec "$build/bench/aa_repeatability" "${args[@]}"
