#!/usr/bin/env bash
# Builds schedfarm (doing its own set-up) and runs the main job: a campaign on a whole
# farm on this machine (farmctl local): a coordinator with its store in
# ./schedfarm-local, a worker, the live view, then the best schedules found and their
# speedups over Halide's autoschedulers.
#
#   ops/run.sh                 the quickstart: configs/campaigns/quickstart.yaml (under the
#                              pretrained model) beside quickstart_random.yaml, compared
#   ops/run.sh CAMPAIGN.yaml [farmctl local flags...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
if [ $# -eq 0 ]; then
  exec "$build/farmctl/farmctl" local "$root/configs/campaigns/quickstart.yaml" \
    "$root/configs/campaigns/quickstart_random.yaml"
fi
campaign="$1"
shift
exec "$build/farmctl/farmctl" local "$campaign" "$@"
