#!/usr/bin/env bash
# Builds schedfarm (doing its own set-up) and runs the main job.
#
#   ops/run.sh                 the pipeline demo: every zoo block lowered to Halide,
#                              compiled with the reference schedule, run and timed
#   ops/run.sh SOURCE...       the same for the given pipelines: a zoo name, a YAML
#                              pipeline, an ONNX model, or random:SEED
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/ops/build.sh" >&2
build="${SCHEDFARM_BUILD_DIR:-$root/build}"
tool="$build/tools/farm-pipeline"

if [ $# -eq 0 ]; then
  mapfile -t sources < <("$tool" list | awk 'NR > 1 {print $1}')
else
  sources=("$@")
fi
for source in "${sources[@]}"; do
  "$tool" run "$source"
  echo
done
