#!/usr/bin/env bash
# The one way the pretrained models of data/models are rebuilt (docs/MODELS.md,
# "Pretrained models"): one farm-pretrain run per kind on the datasets of record with
# the settings the shipped models were trained with (data/models/README.md). Run it
# after a change of the feature schema: tests/pretrained/shipped_models_test.cc fails,
# naming this script, until the shipped models are rebuilt. With --transfer it prints
# the transfer table of docs/EVALUATION.md instead: each kind trained without one
# network's tasks, without the zoo blocks or without the random pipelines, and scored on
# them. With --host-transfer, the table across hosts: each kind trained on the Intel
# Xeon dataset, on the AMD EPYC datasets and on both, each scored on the held-out
# pipelines of every dataset (one split over all of them).
#
#   ops/pretrain.sh [--kinds gbt,sage,gcn] [--dataset FILE]... [--transfer |
#                   --host-transfer] [flags]
#
# --dataset (repeatable) replaces the datasets of record (data/datasets/: the AMD EPYC
# files dataset-amd-epyc-layouts.sfds and dataset-amd-epyc.sfds, and the Intel Xeon
# file dataset-intel-xeon.sfds); other flags go to farm-pretrain after each kind's own
# (gbt: --threads 2; sage and gcn: --threads 1 --ensemble 2), so that they win.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kinds="gbt,sage,gcn"
transfer=0
datasets=()
flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kinds) kinds="$2"; shift 2 ;;
    --dataset) datasets+=(--dataset "$2"); shift 2 ;;
    --transfer) transfer=1; shift ;;
    --host-transfer) transfer=hosts; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) flags+=("$1"); shift ;;
  esac
done
amd=(--dataset "$root/data/datasets/dataset-amd-epyc-layouts.sfds"
     --dataset "$root/data/datasets/dataset-amd-epyc.sfds")
intel=(--dataset "$root/data/datasets/dataset-intel-xeon.sfds")
if [ ${#datasets[@]} -eq 0 ]; then
  datasets=("${amd[@]}" "${intel[@]}")
fi
scored=()
for ((i = 1; i < ${#datasets[@]}; i += 2)); do scored+=(--score-on "${datasets[$i]}"); done
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
for kind in ${kinds//,/ }; do
  case "$kind" in
    gbt) settings=(--threads 2) ;;
    *) settings=(--threads 1 --ensemble 2) ;;
  esac
  if [ "$transfer" = hosts ]; then
    for training in intel amd both; do
      case "$training" in
        intel) trained=("${intel[@]}") ;;
        amd) trained=("${amd[@]}") ;;
        both) trained=("${amd[@]}" "${intel[@]}") ;;
      esac
      "$build/tools/farm-pretrain" --kind "$kind" "${trained[@]}" "${scored[@]}" \
        "${settings[@]}" ${flags[@]+"${flags[@]}"}
    done
  elif [ "$transfer" = 1 ]; then
    # The pipelines' provenance: a network's tasks name its file, the zoo blocks "zoo:",
    # the generator's pipelines "random:".
    for held in resnet18/ mobilenet_v2/ zoo: random:; do
      "$build/tools/farm-pretrain" --kind "$kind" "${datasets[@]}" --hold-out "$held" \
        "${settings[@]}" ${flags[@]+"${flags[@]}"}
    done
  else
    "$build/tools/farm-pretrain" --kind "$kind" "${datasets[@]}" \
      --output-dir "$root/data/models" "${settings[@]}" ${flags[@]+"${flags[@]}"}
  fi
done
