#!/bin/bash
# A soak of the real farm on this host: one farm-coordinator (its own store in the output
# folder, a free loopback port) and one farm-worker (--compile-slots 1) run a random
# campaign of a tiny block whose budget outlasts the soak. Every 2 to 3 minutes (seeded
# random) the worker or the coordinator, in turn, is killed with SIGKILL and restarted at
# once on the same store and endpoint (the worker with the same --id). Every 30 s the
# resident memory (VmRSS) and open descriptors of each daemon's main process go to
# samples.csv. At the end the worker is drained (SIGTERM) and the coordinator stopped,
# and the script checks:
#   - no result lost: every lease a worker incarnation logged as acknowledged
#     (event=result_acked) is in `farmctl export`, or the coordinator logged it as a
#     duplicate_result of a candidate whose result the export holds (a restarted
#     coordinator forgets the leases in flight and leases their candidates again);
#   - none duplicated: no lease id twice, no (pipeline, schedule, repeat) recorded OK twice;
#   - the counters agree: export rows = the campaign's `results` (status --json) =
#     the worker's results_ok + failures (workers --json);
#   - no daemon exited unless this script killed or stopped it, and both stop on SIGTERM;
#   - descriptors: no incarnation gained more than 50 (growth from its first sample at
#     least 60 s after its start to its last sample). Memory growth is printed, not judged,
#     as are sandbox processes that outlive a killed worker (then killed) and the sandbox
#     folders killed workers leave behind (in OUT/tmp, removed at the end).
# It prints `figure soak ...` lines (duration, kills, results, lost, duplicates, per
# process kind RSS/FD growth and maxima) and writes them to OUT/summary.txt.
#
# Usage: ops/soak.sh [--duration 30m] [--out DIR] [--kill-every 120-180] [--seed N]
#   --duration    how long the farm runs under kills (s, m or h suffix; env SOAK_DURATION)
#   --out         output folder, created, must be empty if it exists (env SOAK_OUT;
#                 default a new ${TMPDIR:-/tmp}/schedfarm-soak.XXXXXX): the store, logs/,
#                 samples.csv, incarnations.csv, export.jsonl, summary.txt
#   --kill-every  seconds between kills, MIN-MAX (env SOAK_KILL_EVERY)
#   --seed        seeds the kill times and the campaign (env SOAK_SEED, default 1)
# Needs the built binaries: FARM_COORDINATOR_BIN, FARM_WORKER_BIN, FARMCTL_BIN, by
# default build/coordinator/farm-coordinator, build/worker/farm-worker and
# build/farmctl/farmctl under the repository (SCHEDFARM_SOURCE_DIR, default this
# script's parent folder), and python3. Exit codes: 0 every check passed, 1 a check
# failed (or the soak was interrupted), 2 bad arguments or a missing binary, 3 the farm
# did not start.
# Everything it starts is stopped on exit, however it exits.
set -u

readonly fd_leak_limit=50       # descriptors gained in one incarnation that fail the soak
readonly sample_every_s=30
readonly worker_id=soak-worker

say() { echo "soak: $*"; }
usage_error() {
  echo "soak: $*" >&2
  echo "usage: ops/soak.sh [--duration 30m] [--out DIR] [--kill-every MIN-MAX] [--seed N]" >&2
  exit 2
}
to_seconds() {  # 90, 90s, 30m, 1h -> seconds; empty output if malformed
  [[ "$1" =~ ^([0-9]+)([smh]?)$ ]] || return 0
  case "${BASH_REMATCH[2]}" in
    h) echo $((BASH_REMATCH[1] * 3600)) ;;
    m) echo $((BASH_REMATCH[1] * 60)) ;;
    *) echo $((BASH_REMATCH[1])) ;;
  esac
}

# ---- arguments and binaries ----------------------------------------------------------
duration_arg="${SOAK_DURATION:-30m}"
out="${SOAK_OUT:-}"
kill_every="${SOAK_KILL_EVERY:-120-180}"
seed="${SOAK_SEED:-1}"
while (($#)); do
  case "$1" in
    --duration | --out | --kill-every | --seed)
      (($# >= 2)) || usage_error "$1 needs a value"
      case "$1" in
        --duration) duration_arg="$2" ;;
        --out) out="$2" ;;
        --kill-every) kill_every="$2" ;;
        --seed) seed="$2" ;;
      esac
      shift 2 ;;
    --duration=* | --out=* | --kill-every=* | --seed=*)
      set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
duration_s="$(to_seconds "$duration_arg")"
[[ -n "$duration_s" && "$duration_s" -gt 0 ]] ||
  usage_error "--duration must be a positive number of seconds, minutes or hours (30m), got '$duration_arg'"
[[ "$kill_every" =~ ^([0-9]+)-([0-9]+)$ ]] || kill_every_error=1
kill_min_s="${BASH_REMATCH[1]:-0}"
kill_max_s="${BASH_REMATCH[2]:-0}"
if ((${kill_every_error:-0} || kill_min_s == 0 || kill_min_s > kill_max_s)); then
  usage_error "--kill-every must be MIN-MAX seconds with 0 < MIN <= MAX, got '$kill_every'"
fi
[[ "$seed" =~ ^[0-9]+$ ]] || usage_error "--seed must be a non-negative integer, got '$seed'"

source_dir="${SCHEDFARM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}"
coordinator_bin="${FARM_COORDINATOR_BIN:-$source_dir/build/coordinator/farm-coordinator}"
worker_bin="${FARM_WORKER_BIN:-$source_dir/build/worker/farm-worker}"
farmctl_bin="${FARMCTL_BIN:-$source_dir/build/farmctl/farmctl}"
for binary in "$coordinator_bin" "$worker_bin" "$farmctl_bin"; do
  [[ -x "$binary" ]] || usage_error "no executable $binary (build the project, or set" \
    "FARM_COORDINATOR_BIN, FARM_WORKER_BIN, FARMCTL_BIN)"
done
command -v python3 >/dev/null || usage_error "python3 is needed for the checks"

if [[ -z "$out" ]]; then
  out="$(mktemp -d "${TMPDIR:-/tmp}/schedfarm-soak.XXXXXX")"
else
  mkdir -p "$out" || usage_error "cannot create --out folder $out"
  [[ -z "$(ls -A "$out")" ]] || usage_error "--out folder $out is not empty"
fi
out="$(cd "$out" && pwd)"
mkdir -p "$out/logs" "$out/tmp"

# ---- the daemons ---------------------------------------------------------------------
# Per kind: its pid, incarnation number and start time; incarnations.csv gets a row when
# an incarnation ends. Each daemon runs in a session of its own, so that a Ctrl-C
# reaches only this script, which then stops them.
declare -A pid=([coordinator]=0 [worker]=0) incarnation=([coordinator]=0 [worker]=0)
declare -A started_s=() kills=([coordinator]=0 [worker]=0)
unexpected_exits=0
orphans=0
endpoint=""
soak_start_s="$EPOCHSECONDS"
elapsed() { echo $((EPOCHSECONDS - soak_start_s)); }
echo "process,incarnation,pid,started_s,ended_s,ended_by" >"$out/incarnations.csv"
echo "time_s,process,incarnation,pid,rss_kb,fds" >"$out/samples.csv"

running() {  # running PID: alive and not a zombie
  local state
  state="$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)"
  [[ -n "$state" && "$state" != Z ]]
}
log_of() { echo "$out/logs/$1-${incarnation[$1]}.log"; }
wait_for_line() {  # wait_for_line FILE TEXT SECONDS
  local deadline=$((SECONDS + $3))
  until grep -qs -- "$2" "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

start_coordinator() {
  incarnation[coordinator]=$((incarnation[coordinator] + 1))
  local log started_at_ms attempt
  log="$(log_of coordinator)"
  started_at_ms="$(date +%s%3N)"
  for attempt in 1 2 3 4 5; do  # the port of a killed coordinator may take a moment to free
    setsid "$coordinator_bin" --store "$out/store" --endpoint "${endpoint:-tcp://127.0.0.1:*}" \
      >>"$log" 2>&1 &
    pid[coordinator]=$!
    started_s[coordinator]="$(elapsed)"
    wait_for_line "$log" "event=coordinator_started" 120 && break
    say "coordinator incarnation ${incarnation[coordinator]} did not start (attempt $attempt):"
    tail -n 5 "$log"
    kill -KILL "${pid[coordinator]}" 2>/dev/null
    wait "${pid[coordinator]}" 2>/dev/null
    pid[coordinator]=0
    ((attempt < 5)) || exit 3
    sleep 1
  done
  echo "$(elapsed),coordinator,${incarnation[coordinator]},$(($(date +%s%3N) - started_at_ms))" \
    >>"$out/coordinator_starts.csv"
  [[ -n "$endpoint" ]] ||
    endpoint="$(grep -o 'event=coordinator_started endpoint=[^ ]*' "$log" | sed 's/.*endpoint=//')"
}

start_worker() {
  incarnation[worker]=$((incarnation[worker] + 1))
  # The sandbox folders go under OUT/tmp, where those a killed worker leaves are counted.
  TMPDIR="$out/tmp" setsid "$worker_bin" --coordinator "$endpoint" --id "$worker_id" \
    --compile-slots 1 --drain-timeout-s 300 >"$(log_of worker)" 2>&1 &
  pid[worker]=$!
  started_s[worker]="$(elapsed)"
}

end_incarnation() {  # end_incarnation KIND HOW: records the row of the incarnation that ended
  echo "$1,${incarnation[$1]},${pid[$1]},${started_s[$1]},$(elapsed),$2" >>"$out/incarnations.csv"
  pid[$1]=0
}

sandbox_pids() {  # sandbox_pids [WORKER_PID]: the live sandbox processes of this soak
  local proc          # (their --scratch-dir is ours), or of that worker only
  for proc in /proc/[0-9]*; do
    running "${proc#/proc/}" || continue
    tr '\0' ' ' <"$proc/cmdline" 2>/dev/null |
      grep -q -- "--scratch-dir=$out/tmp/schedfarm-sandbox-${1:+$1-}" && echo "${proc#/proc/}"
  done
}

kill_and_restart() {  # kill_and_restart KIND: SIGKILL, then a new incarnation at once
  local kind="$1" victim="${pid[$1]}" left
  say "$(elapsed) s: kill -9 $kind incarnation ${incarnation[$kind]} (pid $victim)"
  kill -KILL "$victim"
  wait "$victim" 2>/dev/null
  kills[$kind]=$((kills[$kind] + 1))
  end_incarnation "$kind" kill9
  if [[ "$kind" == worker ]]; then
    start_worker
    sleep 5  # time for the killed worker's sandbox processes to notice its death
    left="$(sandbox_pids "$victim")"
    if [[ -n "$left" ]]; then
      say "WARN: sandbox processes outlived the killed worker: $left (killed now)"
      orphans=$((orphans + $(wc -w <<<"$left")))
      # shellcheck disable=SC2086  # one pid per word
      kill -KILL $left 2>/dev/null
    fi
  else
    start_coordinator
  fi
}

sample() {  # one row per running daemon: VmRSS and the count of open descriptors
  local kind rss fds now
  now="$(elapsed)"
  for kind in coordinator worker; do
    if ((pid[$kind] == 0)) || ! running "${pid[$kind]}"; then continue; fi
    rss="$(awk '/^VmRSS:/ {print $2}' "/proc/${pid[$kind]}/status" 2>/dev/null)"
    fds="$(find "/proc/${pid[$kind]}/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
    [[ -n "$rss" ]] && echo "$now,$kind,${incarnation[$kind]},${pid[$kind]},$rss,$fds" >>"$out/samples.csv"
  done
}

restart_if_dead() {  # a daemon that exited on its own is a failure; it is restarted
  local kind code
  for kind in coordinator worker; do
    if ((pid[$kind] == 0)) || running "${pid[$kind]}"; then continue; fi
    wait "${pid[$kind]}"
    code=$?
    say "FAIL: $kind incarnation ${incarnation[$kind]} exited on its own (code $code); last lines:"
    tail -n 5 "$(log_of "$kind")"
    unexpected_exits=$((unexpected_exits + 1))
    end_incarnation "$kind" "exit$code"
    if [[ "$kind" == worker ]]; then start_worker; else start_coordinator; fi
  done
}

stop_daemon() {  # stop_daemon KIND SECONDS: SIGTERM, SIGKILL after SECONDS; 0 if it exited
  local kind="$1" victim="${pid[$1]}" deadline=$((SECONDS + $2)) code=0
  ((victim)) || return 0
  kill -TERM "$victim" 2>/dev/null
  while running "$victim" && ((SECONDS < deadline)); do sleep 0.5; done
  if running "$victim"; then
    say "FAIL: $kind did not exit within $2 s of SIGTERM; killed"
    kill -KILL "$victim"
    code=1
  fi
  wait "$victim" 2>/dev/null
  end_incarnation "$kind" sigterm
  return "$code"
}

# shellcheck disable=SC2317  # run by the trap
cleanup() {
  local kind left
  trap - EXIT INT TERM
  for kind in worker coordinator; do
    ((pid[$kind])) && running "${pid[$kind]}" && stop_daemon "$kind" 20 >/dev/null
  done
  left="$(sandbox_pids)"
  # shellcheck disable=SC2086  # one pid per word
  [[ -n "$left" ]] && kill -KILL $left 2>/dev/null
  rm -rf "$out/tmp"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 1' INT TERM

# ---- the soak ------------------------------------------------------------------------
say "output in $out; duration ${duration_s} s, a kill every ${kill_min_s}-${kill_max_s} s, seed $seed"
cat >"$out/campaign.yaml" <<EOF
name: soak
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: random, settings: {seed: $seed}}
budget: {benchmarks: 100000}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
EOF
start_coordinator
say "coordinator at $endpoint"
start_worker
campaign="$("$farmctl_bin" --coordinator "$endpoint" submit "$out/campaign.yaml" | awk '/^submitted campaign/ {print $3}')"
[[ -n "$campaign" ]] || { say "farmctl submit failed"; exit 3; }
say "campaign $campaign"

RANDOM="$seed"
next_kind=worker
next_kill_s=$((kill_min_s + RANDOM % (kill_max_s - kill_min_s + 1)))
next_sample_s=0
while (($(elapsed) < duration_s)); do
  restart_if_dead
  if (($(elapsed) >= next_sample_s)); then
    sample
    next_sample_s=$((next_sample_s + sample_every_s))
  fi
  if (($(elapsed) >= next_kill_s)); then
    kill_and_restart "$next_kind"
    if [[ "$next_kind" == worker ]]; then next_kind=coordinator; else next_kind=worker; fi
    next_kill_s=$(($(elapsed) + kill_min_s + RANDOM % (kill_max_s - kill_min_s + 1)))
  fi
  sleep 1
done
soak_seconds="$(elapsed)"
sample

say "$(elapsed) s: draining the worker (SIGTERM)"
stop_ok=1
stop_daemon worker 360 || stop_ok=0
grep -q "event=result_acked" "$out"/logs/worker-*.log || say "WARN: no worker logged an acknowledged result"
grep -ho 'event=result_acked lease=[^ ]*' "$out"/logs/worker-*.log | sed 's/.*lease=//' >"$out/acked_leases.txt"
"$farmctl_bin" --coordinator "$endpoint" export "$campaign" --format jsonl --output "$out/export.jsonl" ||
  { say "FAIL: farmctl export failed"; exit 1; }
"$farmctl_bin" --coordinator "$endpoint" status "$campaign" --json >"$out/status.json" ||
  { say "FAIL: farmctl status failed"; exit 1; }
"$farmctl_bin" --coordinator "$endpoint" workers --json >"$out/workers.json" ||
  { say "FAIL: farmctl workers failed"; exit 1; }
say "$(elapsed) s: stopping the coordinator (SIGTERM)"
stop_daemon coordinator 60 || stop_ok=0
sandbox_dirs_left="$(find "$out/tmp" -mindepth 1 -maxdepth 1 -name 'schedfarm-sandbox-*' | wc -l)"

# ---- the checks ----------------------------------------------------------------------
python3 - "$out" "$campaign" "$worker_id" "$soak_seconds" "${kills[worker]}" \
  "${kills[coordinator]}" "$unexpected_exits" "$orphans" "$stop_ok" "$sandbox_dirs_left" \
  "$fd_leak_limit" <<'EOF' | tee "$out/summary.txt"
import collections, csv, glob, json, re, sys

(out, campaign, worker_id, soak_s, worker_kills, coordinator_kills, unexpected, orphans,
 stop_ok, sandbox_dirs_left, fd_leak_limit) = sys.argv[1:]
soak_s, fd_leak_limit = int(soak_s), int(fd_leak_limit)
failures = []

rows = [json.loads(line) for line in open(f"{out}/export.jsonl") if line.strip()]
acked = [line.strip() for line in open(f"{out}/acked_leases.txt") if line.strip()]
leases = collections.Counter(row["lease_id"] for row in rows)
ok_schedules = collections.Counter((row["pipeline_id"], row["schedule_hash"], row.get("repeat", 0))
                                   for row in rows if row["status"] == "OK")
# A result the coordinator acknowledged but dropped as a duplicate of a stored one (the
# same candidate leased again after a coordinator restart forgot the lease in flight) is
# not lost when the store holds that candidate's result under the other lease.
dropped_as_duplicate = {}
for log in glob.glob(f"{out}/logs/coordinator-*.log"):
    for match in re.finditer(r'event=duplicate_result .*?lease=(\S+) why="(\S+) (\S+) (\S+)"', open(log).read()):
        dropped_as_duplicate[match[1]] = (match[2], match[3], match[4])
stored = {(row["pipeline_id"], row["schedule_hash"], row["status"]) for row in rows}
deduplicated = sorted(lease for lease in set(acked) - set(leases)
                      if dropped_as_duplicate.get(lease) in stored)
lost = sorted(set(acked) - set(leases) - set(deduplicated))
duplicated_leases = sorted(lease for lease, n in leases.items() if n > 1)
duplicated_ok = sorted(key for key, n in ok_schedules.items() if n > 1)
for what, items in (("lost (acknowledged, not in the store)", lost),
                    ("lease ids recorded twice", duplicated_leases),
                    ("schedules recorded OK twice (pipeline, hash, repeat)", duplicated_ok)):
    if items:
        failures.append(f"{len(items)} {what}: {items[:5]}")

status = json.load(open(f"{out}/status.json"))["status"]["campaigns"]
campaign_results = next(int(c["campaign"]["counters"].get("results", 0)) for c in status
                        if c["campaign"]["id"] == campaign)
workers = json.load(open(f"{out}/workers.json"))["workers"].get("workers", [])
record = next((w["record"] for w in workers if w["record"]["host"]["worker_id"] == worker_id), {})
worker_results = int(record.get("results_ok", 0)) + sum(
    int(n) for n in record.get("failures_by_status", {}).values())
worker_rows = sum(1 for row in rows if row["worker_id"] == worker_id)
if campaign_results != len(rows):
    failures.append(f"status says {campaign_results} results, the export has {len(rows)} rows")
if worker_results != worker_rows:
    failures.append(f"workers says {worker_id} has {worker_results} results (ok + failures), "
                    f"the export has {worker_rows} of its rows")
if int(unexpected):
    failures.append(f"{unexpected} daemon exits nobody asked for")
if stop_ok != "1":
    failures.append("a daemon did not stop on SIGTERM")

print(f"figure soak duration_s={soak_s}")
print(f"figure soak kills worker={worker_kills} coordinator={coordinator_kills}")
print(f"figure soak results_recorded={len(rows)} results_per_min={len(rows) / (soak_s / 60):.2f} "
      f"acked_by_worker_logs={len(acked)} failed_results={len(rows) - sum(ok_schedules.values())}")
print(f"figure soak lost={len(lost)} duplicated_leases={len(duplicated_leases)} "
      f"duplicated_ok_schedules={len(duplicated_ok)} acked_but_dropped_as_duplicate={len(deduplicated)}")
print(f"figure soak counters status_results={campaign_results} worker_results={worker_results} "
      f"export_rows={len(rows)}")
print(f"figure soak unexpected_exits={unexpected} orphaned_sandbox_processes={orphans} "
      f"sandbox_dirs_left_by_kills={sandbox_dirs_left}")

starts = [int(row[3]) for row in csv.reader(open(f"{out}/coordinator_starts.csv"))]
print(f"figure soak coordinator_start_ms first={starts[0]} "
      f"restart_max={max(starts[1:], default=0)} restart_mean={sum(starts[1:]) / max(len(starts) - 1, 1):.0f}")

# Growth within an incarnation: its last sample minus its first sample taken at least 60 s
# after it started (start-up allocations are not growth).
incarnations = {(r["process"], r["incarnation"]): r for r in csv.DictReader(open(f"{out}/incarnations.csv"))}
samples = collections.defaultdict(list)
for r in csv.DictReader(open(f"{out}/samples.csv")):
    samples[(r["process"], r["incarnation"])].append((int(r["time_s"]), int(r["rss_kb"]), int(r["fds"])))
for kind in ("coordinator", "worker"):
    keys = sorted((k for k in samples if k[0] == kind), key=lambda k: int(k[1]))
    all_samples = [s for k in keys for s in samples[k]]
    rss_growth_total, minutes_total, fd_growth_max, rss_growth_max = 0, 0.0, None, None
    for key in keys:
        began = int(incarnations[key]["started_s"]) if key in incarnations else 0
        settled = [s for s in samples[key] if s[0] - began >= 60]
        if len(settled) < 2:
            print(f"soak: {kind} incarnation {key[1]}: fewer than 2 samples after its first minute")
            continue
        (t0, rss0, fd0), (t1, rss1, fd1) = settled[0], settled[-1]
        rss_growth_total += rss1 - rss0
        minutes_total += (t1 - t0) / 60
        fd_growth_max = max(fd1 - fd0, fd_growth_max if fd_growth_max is not None else fd1 - fd0)
        rss_growth_max = max(rss1 - rss0, rss_growth_max if rss_growth_max is not None else rss1 - rss0)
        print(f"soak: {kind} incarnation {key[1]}: {t1 - t0} s settled, rss {rss0} -> {rss1} kB, "
              f"fds {fd0} -> {fd1}")
        if fd1 - fd0 > fd_leak_limit:
            failures.append(f"{kind} incarnation {key[1]} gained {fd1 - fd0} descriptors "
                            f"(more than {fd_leak_limit}): a leak")
    rate = f"{rss_growth_total / minutes_total:.1f}" if minutes_total else "n/a"
    print(f"figure soak {kind} incarnations={len(keys)} rss_growth_kb_per_min={rate} "
          f"rss_growth_kb_max={rss_growth_max if rss_growth_max is not None else 'n/a'} "
          f"fd_growth={fd_growth_max if fd_growth_max is not None else 'n/a'} "
          f"rss_max_kb={max((s[1] for s in all_samples), default=0)} "
          f"fds_max={max((s[2] for s in all_samples), default=0)}")

for failure in failures:
    print(f"soak: FAIL: {failure}")
print("soak: PASS" if not failures else f"soak: FAIL ({len(failures)} checks)")
sys.exit(1 if failures else 0)
EOF
verdict="${PIPESTATUS[0]}"
say "output kept in $out"
exit "$verdict"
