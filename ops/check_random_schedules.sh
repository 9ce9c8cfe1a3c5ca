#!/usr/bin/env bash
# The large run of the random-schedule contract: builds random_schedule_check
# (ops/build.sh) and runs it over COUNT random legal schedules (ScheduleSpace) of zoo
# blocks at half size and random pipelines. For each schedule it checks that Halide's
# loop nest agrees with the schedule space and that the scheduled run computes the
# reference schedule's outputs; it prints one line per schedule (pipeline, stages,
# schedule hash, compile s, run ms, max abs error, PASS/FAIL and why), the compile and
# run time distributions, the failures grouped by cause, and "N passed, M failed".
# Exits non-zero on failures.
#
# Usage: ops/check_random_schedules.sh [COUNT] [--no-build] [-- checker options]
#   COUNT        schedules to check (default 1000)
#   --no-build   use the existing build
# Checker options after "--": --first-pipeline P, --per-pipeline K (default 4),
# --pipelines zoo|random|mixed (default mixed: every third pipeline a zoo block),
# --threads T (default 2), --samples S (timed runs, default 3), --timeout S (per
# schedule, default 300), --layout nchw|channels_last (the pipelines' boundary layout,
# default nchw), --network FILE (repeatable: the distinct tasks of networks such as the
# corpus' ONNX exports instead, each first under its templates), --fusion none|blocks
# (how those networks are cut into tasks: blocks checks the fused tasks).
# SCHEDFARM_BUILD_DIR selects the build directory (default build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SCHEDFARM_BUILD_DIR:-$root/build}"

count=1000
do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) do_build=0; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *[!0-9]*|'') echo "check_random_schedules: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    *) count="$1"; shift ;;
  esac
done

if [ "$do_build" -eq 1 ]; then
  "$root/ops/build.sh" >&2
fi
checker="$build/tests/scheduler/halide/random_schedule_check"
if [ ! -x "$checker" ]; then
  echo "check_random_schedules: $checker not found; build first" >&2
  exit 2
fi
exec "$checker" --count "$count" "$@"
