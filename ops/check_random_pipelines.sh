#!/usr/bin/env bash
# Checks the Halide lowering against the libtorch oracle on many random pipelines:
# builds schedfarm (ops/build.sh), then runs random_pipeline_check over COUNT seeds
# from FIRST, one line per pipeline (seed, stages, id, math, compile s, run ms, max
# abs error, PASS/FAIL) and a final "N passed, M failed". Exits non-zero on failures.
#
# Usage: ops/check_random_pipelines.sh [-n COUNT] [-s FIRST_SEED] [--no-build]
#                                      [-- random_pipeline_check options]
#   -n COUNT       pipelines to check (default 300)
#   -s FIRST_SEED  first seed (default 1); seeds FIRST .. FIRST+COUNT-1
#   --no-build     use the existing build
# Options after "--" go to the checker: --max-ops N, --max-elements N, --max-flops F,
# --math exact|pade|mixed (default mixed: odd seeds Padé), --timeout S (per pipeline).
# SCHEDFARM_BUILD_DIR selects the build directory (default build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SCHEDFARM_BUILD_DIR:-$root/build}"

count=300
first=1
do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    -n) count="$2"; shift 2 ;;
    -s) first="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "check_random_pipelines: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [ "$do_build" -eq 1 ]; then
  "$root/ops/build.sh" >&2
fi
checker="$build/tests/torch/random_pipeline_check"
if [ ! -x "$checker" ]; then
  echo "check_random_pipelines: $checker not found; build first" >&2
  exit 2
fi
exec "$checker" --first-seed "$first" --count "$count" "$@"
