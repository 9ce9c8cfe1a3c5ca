#!/usr/bin/env bash
# Trains the pretrained models of data/models (docs/MODELS.md, "Pretrained models") on
# a recorded dataset of the repository, one farm-pretrain run per kind, or with
# --transfer prints the transfer table of docs/EVALUATION.md instead: each kind trained
# without one network's tasks, without the zoo blocks or without the random pipelines,
# and scored on them. Flags after the options go to farm-pretrain (another --dataset of
# the same host kind, --ensemble, --threads).
#
#   ops/pretrain.sh DATASET.sfds [--kinds gbt,sage,gcn] [--transfer] [farm-pretrain flags]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 1 ] || { echo "usage: ops/pretrain.sh DATASET.sfds [--kinds K,...] [--transfer] [flags]" >&2; exit 2; }
dataset="$1"
shift
kinds="gbt,sage,gcn"
transfer=0
flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kinds) kinds="$2"; shift 2 ;;
    --transfer) transfer=1; shift ;;
    *) flags+=("$1"); shift ;;
  esac
done
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
for kind in ${kinds//,/ }; do
  if [ "$transfer" = 1 ]; then
    # The pipelines' provenance: a network's tasks name its file, the zoo blocks "zoo:",
    # the generator's pipelines "random:".
    for held in resnet18/ mobilenet_v2/ zoo: random:; do
      "$build/tools/farm-pretrain" --kind "$kind" --dataset "$dataset" --hold-out "$held" \
        "${flags[@]}"
    done
  else
    "$build/tools/farm-pretrain" --kind "$kind" --dataset "$dataset" \
      --output-dir "$root/data/models" "${flags[@]}"
  fi
done
