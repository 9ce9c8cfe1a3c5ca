#!/usr/bin/env bash
# How much of a model-guided campaign's wall time the workers spend waiting for the
# learner: `farmctl local` runs a greedy campaign under the GBT (the three blocks of
# configs/campaigns/greedy.yaml, batch 8, retrain every 12 results, every model kind
# trained beside the GBT as farm-learner does by default) on N workers of this host
# until its benchmark budget is spent, then the workers' logs say when each held a
# lease (from `lease_started` to `lease_finished`). It prints `figure utilization ...`
# lines: the wall time (first lease to last result), each worker's busy share, the
# share of the wall time with no worker busy, and the stalls (every worker idle) of
# 10 s or more, their count and the longest; and writes them to OUT/summary.txt.
#
#   ops/worker_utilization.sh [--budget 240] [--workers 2] [--out DIR]
#
# The binaries are farmctl's (SCHEDFARM_BIN_DIR, else the build tree: FARMCTL_BIN,
# default build/farmctl/farmctl): a folder with another farm-learner beside links to
# the rest measures that learner. Exit codes: 0 measured, 1 the campaign did not end
# done, 2 bad arguments.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
budget=240
workers=2
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "worker_utilization: unknown argument '$1'" >&2
       echo "usage: ops/worker_utilization.sh [--budget N] [--workers N] [--out DIR]" >&2
       exit 2 ;;
  esac
done
[[ "$budget" =~ ^[1-9][0-9]*$ ]] || { echo "worker_utilization: --budget '$budget' is not a positive integer" >&2; exit 2; }
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || { echo "worker_utilization: --workers '$workers' is not a positive integer" >&2; exit 2; }
out="${out:-$(mktemp -d "${TMPDIR:-/tmp}/schedfarm-utilization.XXXXXX")}"
mkdir -p "$out"
farmctl="${FARMCTL_BIN:-$root/build/farmctl/farmctl}"
[ -n "${SCHEDFARM_BIN_DIR:-}" ] && farmctl="$SCHEDFARM_BIN_DIR/farmctl"

cat >"$out/campaign.yaml" <<YAML
name: utilization
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.5}
  - zoo: {block: squeezenet_fire, spatial_scale: 0.5}
  - zoo: {block: resnet18_basic, spatial_scale: 0.5, channel_scale: 0.5}
strategy:
  name: greedy
  settings: {options: 64, noise: 0.1, seed: 1, epsilon: 0.05, batch: 8, retrain_every: 12,
             model: gbt, acquisition: exploit}
budget: {benchmarks: $budget, wall_time: 60m}
measurement: {samples: 5, min_sample_time: 10ms, max_samples: 10, compile_timeout: 60s,
              run_timeout: 10s}
YAML

status=0
"$farmctl" local "$out/campaign.yaml" --workers "$workers" --dir "$out/farm" \
  >"$out/local.txt" 2>&1 || status=$?
[ "$status" -eq 0 ] || echo "worker_utilization: farmctl local ended with exit code $status (see $out/local.txt)" >&2

python3 - "$out/farm/logs" "$workers" <<'PY' | tee "$out/summary.txt"
import glob, os, re, sys
logs, workers = sys.argv[1], int(sys.argv[2])
busy = {}  # worker -> [(start, end)]
for path in sorted(glob.glob(os.path.join(logs, "local-*.log"))):
    name = os.path.basename(path)[:-4]
    started, spans = {}, []
    for line in open(path, errors="replace"):
        m = re.match(r"ts=(\d+) \S+ event=(lease_started|lease_finished) lease=(\S+)", line)
        if not m:
            continue
        ts, event, lease = int(m.group(1)) / 1000, m.group(2), m.group(3)
        if event == "lease_started":
            started.setdefault(lease, ts)
        elif lease in started:
            spans.append((started.pop(lease), ts))
    busy[name] = spans
spans = [s for v in busy.values() for s in v]
if not spans:
    print("figure utilization no leases were finished"); sys.exit(1)
begin, end = min(s for s, _ in spans), max(e for _, e in spans)
wall = end - begin

def union(intervals):
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged

print(f"figure utilization wall_s={wall:.1f} leases={len(spans)} workers={workers}")
for name, v in sorted(busy.items()):
    held = sum(e - s for s, e in union(v))
    print(f"figure utilization worker={name} busy_share={held / wall:.3f}")
any_busy = union(spans)
idle = wall - sum(e - s for s, e in any_busy)
gaps = [b[0] - a[1] for a, b in zip(any_busy, any_busy[1:])]
stalls = [g for g in gaps if g >= 10]
print(f"figure utilization all_idle_share={idle / wall:.3f} "
      f"stalls_10s={len(stalls)} longest_stall_s={max(gaps, default=0):.1f}")
PY
[ "$status" -eq 0 ] || exit 1
