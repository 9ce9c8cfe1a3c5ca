#!/usr/bin/env bash
# The model table of docs/EVALUATION.md from the repository's dataset, without
# benchmarking: the whole dataset replayed as one campaign (configs/campaigns/
# replay_all.yaml) on a local farm, then every model kind trained on it and scored on
# its held-out pipelines (farm-learner --train). The GCN takes the longest (tens of
# minutes on two cores).
#
#   ops/model_table.sh [--dataset FILE] [--models A,B ...more farm-learner flags]
#
# --dataset FILE replays another recorded dataset (default: the one replay_all.yaml
# names) with the same campaign settings.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
campaign_file="$root/configs/campaigns/replay_all.yaml"
work="$(mktemp -d)"
if [ "${1:-}" = "--dataset" ]; then
  [ $# -ge 2 ] || { echo "model_table: --dataset needs a file" >&2; exit 2; }
  dataset="$(realpath "$2")" || exit 2
  [ -f "$dataset" ] || { echo "model_table: no dataset file $2" >&2; exit 2; }
  shift 2
  sed "s|^replay: .*|replay: {dataset: $dataset}|" "$campaign_file" >"$work/replay.yaml"
  campaign_file="$work/replay.yaml"
fi
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
"$build/farmctl/farmctl" local "$campaign_file" --dir "$work" >"$work/local.log"
"$build/coordinator/farm-coordinator" --store "$work/store" --endpoint tcp://127.0.0.1:5598 \
  >"$work/coordinator.log" 2>&1 &
coordinator=$!
trap 'kill $coordinator 2>/dev/null || true' EXIT
campaign="$(grep -o 'submitted campaign [^ ]*' "$work/local.log" | head -1 | cut -d' ' -f3)"
"$build/learner_daemon/farm-learner" --coordinator tcp://127.0.0.1:5598 --train "$campaign" \
  --threads "$(nproc)" "$@"
