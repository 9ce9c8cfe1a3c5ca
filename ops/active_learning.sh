#!/usr/bin/env bash
# The active-learning comparison of docs/ACTIVE_LEARNING.md, regenerated from the
# repository's dataset without benchmarking: replay campaigns of every acquisition and
# of random sampling, over several seeds, on one local farm (farmctl local), then their
# learning curves, tables and charts (farmctl curves) written to docs/active_learning/.
#
#   ops/active_learning.sh [DATASET.sfds] [SEEDS] [BUDGET]
#
# Defaults: data/datasets/dataset-amd-epyc.sfds, 5 seeds, every schedule of the
# training pipelines. The work directory is $SCHEDFARM_AL_DIR (default: a temporary one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
dataset="$(realpath "${1:-$root/data/datasets/dataset-amd-epyc.sfds}")"
seeds="${2:-5}"
budget="${3:-1000000}"
work="${SCHEDFARM_AL_DIR:-$(mktemp -d)}"
mkdir -p "$work/campaigns"

# group name, strategy, settings beyond seed and the shared ones
groups=(
  "random|random|"
  "exploit|model-guided|acquisition: exploit, epsilon: 0"
  "epsilon-greedy|model-guided|acquisition: exploit, epsilon: 0.1"
  "uncertainty|model-guided|acquisition: uncertainty, epsilon: 0"
  "lcb|model-guided|acquisition: lcb, epsilon: 0"
  "ei|model-guided|acquisition: ei, epsilon: 0"
  "thompson|model-guided|acquisition: thompson, epsilon: 0"
  "diversity|model-guided|acquisition: diversity, epsilon: 0"
)
shared="model: gbt, batch: 16, retrain_every: 100, retrain_growth: 0.5"
names=()
for group in "${groups[@]}"; do
  IFS='|' read -r name strategy settings <<<"$group"
  for seed in $(seq 1 "$seeds"); do
    extra="$shared"
    [ "$strategy" = model-guided ] && extra="$extra, sample_size: 4096, $settings"
    cat >"$work/campaigns/al-$name-s$seed.yaml" <<YAML
name: al-$name-s$seed
replay: {dataset: $dataset, held_out: 0.2}
strategy: {name: $strategy, settings: {seed: $seed, $extra}}
budget: {benchmarks: $budget}
YAML
    names+=("al-$name-s$seed")
  done
done

"$build/farmctl/farmctl" local "$work"/campaigns/*.yaml --dir "$work/farm" >"$work/local.log"
"$build/coordinator/farm-coordinator" --store "$work/farm/store" \
  --endpoint tcp://127.0.0.1:5599 >"$work/coordinator.log" 2>&1 &
coordinator=$!
trap 'kill $coordinator 2>/dev/null || true' EXIT
mkdir -p "$root/docs/active_learning"
"$build/farmctl/farmctl" --coordinator tcp://127.0.0.1:5599 curves "${names[@]}" \
  --output "$root/docs/active_learning"
