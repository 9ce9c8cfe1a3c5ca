#!/usr/bin/env bash
# Collects the dataset of the layout space (docs/DATASETS.md): on one local farm (one
# worker, the learner idle), the random pipelines and zoo blocks of
# configs/campaigns/dataset_layouts.yaml, the distinct tasks of ResNet-18 and
# MobileNetV2 at 224x224 (random weights, exported by tests/onnx/export_torchvision.py)
# under random schedules at the measurement settings of farmctl tune, and the first 400
# schedules of the first campaign measured again for the noise floor. Every campaign
# ends by its wall time (110 minutes), so the run takes about two hours; then pack the
# four campaigns into one file. With --next, the second run: the campaigns of
# configs/campaigns/dataset_layouts_next.yaml (the next 200 random pipelines), other
# random schedules of the networks' tasks, every campaign named with "-next" and ending
# at 75 minutes; pack its campaigns --into the first run's file.
#
#   ops/collect_dataset.sh [--next] [DIR]      DIR defaults to ./schedfarm-dataset
#   farm-coordinator --store DIR/store --endpoint tcp://127.0.0.1:5555 &
#   farmctl dataset pack dataset-layouts --output A.sfds
#   farmctl dataset pack dataset-layouts-resnet18 --into A.sfds --output B.sfds ...
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
campaign=dataset_layouts suffix="" seed=21 wall_time=110m
if [ "${1:-}" = --next ]; then
  campaign=dataset_layouts_next suffix=-next seed=22 wall_time=75m
  shift
fi
work="$(realpath -m "${1:-./schedfarm-dataset}")"
mkdir -p "$work"
/usr/bin/python3 "$root/tests/onnx/export_torchvision.py" "$work/nets" --image-size 224 \
    --only resnet18,mobilenet_v2 >&2

sed -e "s/^name: dataset-layouts$suffix\$/name: dataset-layouts$suffix-repeat/" \
    -e 's/benchmarks: 8000,/benchmarks: 400,/' \
    "$root/configs/campaigns/$campaign.yaml" > "$work/${campaign}_repeat.yaml"
for net in resnet18 mobilenet_v2; do
  cat > "$work/${campaign}_$net.yaml" <<YAML
# Random schedules of the distinct tasks of $net at 224x224, channels-last between
# tasks, the tasks' templates first, as farmctl tune measures them.
name: dataset-layouts$suffix-${net//_/-}
network: {onnx: {path: nets/$net/model.onnx}}
layout: channels_last
strategy:
  name: random
  settings: {seed: $seed, batch: 8, retrain_every: 1000000}
budget: {benchmarks: 3000, wall_time: $wall_time}
measurement: {samples: 3, max_samples: 5, min_sample_time: 5ms, compile_timeout: 300s, run_timeout: 10s, threads: 2}
workers: {isa: [avx512f]}
YAML
done
exec "$build/farmctl/farmctl" local --dir "$work" \
    "$root/configs/campaigns/$campaign.yaml" \
    "$work/${campaign}_resnet18.yaml" "$work/${campaign}_mobilenet_v2.yaml" \
    "$work/${campaign}_repeat.yaml"
