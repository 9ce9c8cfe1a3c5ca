#!/usr/bin/env bash
# The model table of docs/EVALUATION.md from the repository's dataset, without
# benchmarking: the whole dataset replayed as one campaign (configs/campaigns/
# replay_all.yaml) on a local farm, then every model kind trained on it and scored on
# its held-out pipelines (farm-learner --train). The GCN takes the longest (tens of
# minutes on two cores).
#
#   ops/model_table.sh [--models A,B ...more farm-learner flags]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
work="$(mktemp -d)"
"$build/farmctl/farmctl" local "$root/configs/campaigns/replay_all.yaml" --dir "$work" >"$work/local.log"
"$build/coordinator/farm-coordinator" --store "$work/store" --endpoint tcp://127.0.0.1:5598 \
  >"$work/coordinator.log" 2>&1 &
coordinator=$!
trap 'kill $coordinator 2>/dev/null || true' EXIT
campaign="$(grep -o 'submitted campaign [^ ]*' "$work/local.log" | head -1 | cut -d' ' -f3)"
"$build/learner/daemon/farm-learner" --coordinator tcp://127.0.0.1:5598 --train "$campaign" \
  --threads "$(nproc)" "$@"
