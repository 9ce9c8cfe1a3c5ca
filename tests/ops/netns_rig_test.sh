#!/usr/bin/env bash
# The farm on several hosts, made of network namespaces (tests/ops/netns_rig_lib.sh):
# a coordinator, two workers, a learner and a client each on a host of its own, talking
# TCP over a bridge with CURVE on. It checks that an unlisted key is refused, runs a
# model-guided campaign through the learner, then unplugs a worker's cable while it
# holds leases for longer than the coordinator's liveness window and checks that the
# leases were requeued, the worker came back, and every result was recorded once; last,
# it cuts the other worker's cable while frames wait for it and checks that the
# coordinator's connection is closed within a bound (TCP's user timeout).
#
# Needs root (CAP_NET_ADMIN) for `ip netns`; exits 77 (skipped) without it. Prints
# `figure ...` lines: the results under the link flap and the time to recover.
# Environment: FARM_COORDINATOR_BIN, FARM_WORKER_BIN, FARM_LEARNER_BIN, FARMCTL_BIN.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=netns_rig_lib.sh
source "$here/netns_rig_lib.sh"

say() { echo "netns_rig_test: $*" >&2; }
skip() {
  say "skipped: $*"
  exit 77
}
fail() {
  say "FAIL: $*"
  exit 1
}

for var in FARM_COORDINATOR_BIN FARM_WORKER_BIN FARM_LEARNER_BIN FARMCTL_BIN; do
  if [ ! -x "${!var:-}" ]; then
    say "\$$var must name an executable, got '${!var:-}'"
    exit 2
  fi
done
command -v python3 >/dev/null || {
  say "python3 is needed to read the farm's JSON replies"
  exit 2
}
command -v ip >/dev/null || skip "no 'ip' command (iproute2)"
[ "$(id -u)" = 0 ] || skip "network namespaces need root (CAP_NET_ADMIN); running as uid $(id -u)"

subnet=10.231.0
endpoint="tcp://$subnet.1:5555"
# Longer than the coordinator's liveness window (its defaults: 3 missed heartbeats of
# 1 s), so that the unplugged worker is declared dead and its leases requeued.
link_down_seconds=9
learner_budget=20
flap_budget=24
scratch="$(mktemp -d)"
keys="$scratch/keys"
test_start=$SECONDS

cleanup() {
  local status=$?
  trap - EXIT
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for log in "$scratch"/*.log; do
      [ -f "$log" ] || continue
      say "--- last lines of $(basename "$log")"
      tail -n 15 "$log" >&2
    done
  fi
  rig_teardown
  rm -rf "$scratch"
  if ip netns list | grep -q "^sfrig$$-"; then
    say "FAIL: namespaces left behind: $(ip netns list | grep "^sfrig$$-" | tr '\n' ' ')"
    status=1
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'say "FAIL: line $LINENO: $BASH_COMMAND exited $?"' ERR

rig_init "sfrig$$" "$subnet" || skip "this machine refuses network namespaces or bridges"
rig_add_host coordinator 1 || { [ $? = 1 ] && skip "this machine refuses veth pairs"; exit 2; }
rig_add_host worker1 11
rig_add_host worker2 12
rig_add_host learner 21
rig_add_host client 31

# Key pairs for every party, and an allow-list without the intruder's key.
mkdir -p "$keys"
for party in coordinator worker1 worker2 learner client intruder; do
  "$FARMCTL_BIN" keygen "$keys/$party" >/dev/null
done
cat "$keys/worker1.pub" "$keys/worker2.pub" "$keys/learner.pub" "$keys/client.pub" \
  >"$keys/allowed.txt"

farmctl() {
  rig_exec client "$FARMCTL_BIN" --coordinator "$endpoint" \
    --curve-key "$keys/client" --server-key "$keys/coordinator.pub" "$@"
}
# Evaluates a Python expression over the one-line JSON reply on standard input (`j`).
json() { python3 -c 'import json, sys; j = json.loads(sys.stdin.readline()); print(eval(sys.argv[1]))' "$1"; }
now_ms() { date +%s%3N; }

wait_for_log() {
  local log="$1" pattern="$2" seconds="$3"
  for _ in $(seq $((seconds * 10))); do
    grep -q -- "$pattern" "$log" && return 0
    sleep 0.1
  done
  fail "no '$pattern' in $(basename "$log") within $seconds s"
}

# --- the farm -----------------------------------------------------------------------
daemons=() # host:pid of each daemon started
rig_spawn coordinator "$scratch/coordinator.log" "$FARM_COORDINATOR_BIN" \
  --store "$scratch/store" --endpoint "$endpoint" \
  --curve-key "$keys/coordinator" --allow-list "$keys/allowed.txt"
daemons+=("coordinator:$rig_spawned_pid")
wait_for_log "$scratch/coordinator.log" "event=coordinator_started" 30
for worker in worker1 worker2; do
  rig_spawn "$worker" "$scratch/$worker.log" "$FARM_WORKER_BIN" --coordinator "$endpoint" \
    --id "rig-$worker" --compile-slots 1 --drain-timeout-s 5 \
    --curve-key "$keys/$worker" --server-key "$keys/coordinator.pub"
  daemons+=("$worker:$rig_spawned_pid")
done
rig_spawn learner "$scratch/learner.log" "$FARM_LEARNER_BIN" --coordinator "$endpoint" \
  --models gbt --min-samples 4 --threads 1 --nice 10 \
  --curve-key "$keys/learner" --server-key "$keys/coordinator.pub"
daemons+=("learner:$rig_spawned_pid")
wait_for_log "$scratch/worker1.log" "event=registered" 30
wait_for_log "$scratch/worker2.log" "event=registered" 30

cat >"$scratch/learner.yaml" <<YAML
name: rig-learner
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy:
  name: model-guided
  settings: {seed: 3, model: gbt, batch: 2, retrain_every: 4, sample_size: 32, epsilon: 0}
budget: {benchmarks: $learner_budget}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
YAML
cat >"$scratch/flap.yaml" <<YAML
name: rig-flap
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: random, settings: {seed: 5}}
budget: {benchmarks: $flap_budget}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
YAML

# --- CURVE is on: an unlisted key and a plain client get nowhere -------------------------
intruder_code=0
intruder_output="$(rig_exec client "$FARMCTL_BIN" --coordinator "$endpoint" --retry-s 5 \
  --curve-key "$keys/intruder" --server-key "$keys/coordinator.pub" \
  submit "$scratch/flap.yaml" 2>&1)" || intruder_code=$?
plain_code=0
plain_output="$(rig_exec client "$FARMCTL_BIN" --coordinator "$endpoint" --retry-s 3 \
  status 2>&1)" || plain_code=$?
[ "$intruder_code" = 4 ] ||
  fail "a client with an unlisted key got exit code $intruder_code, not 4: $intruder_output"
grep -q "CURVE key" <<<"$intruder_output" ||
  fail "the refusal of an unlisted key does not name the CURVE key: $intruder_output"
[ "$plain_code" = 4 ] || fail "a client without CURVE got exit code $plain_code, not 4: $plain_output"
campaigns="$(farmctl --json status | json 'len(j["status"].get("campaigns", []))')"
[ "$campaigns" = 0 ] || fail "the refused submission created a campaign ($campaigns campaigns)"
say "CURVE: an unlisted key was refused (exit 4), a plain client got no answer (exit 4)"

# Waits until campaign $1 is done (at most $2 s) and prints its status reply.
wait_done() {
  local id="$1" seconds="$2" reply state
  for _ in $(seq "$seconds"); do
    reply="$(farmctl --json status "$id")"
    state="$(json 'j["status"]["campaigns"][0]["campaign"]["state"]' <<<"$reply")"
    case "$state" in
      CAMPAIGN_DONE)
        echo "$reply"
        return 0
        ;;
      CAMPAIGN_CANCELLED | CAMPAIGN_FAILED) fail "campaign $id ended $state" ;;
    esac
    sleep 1
  done
  fail "campaign $id not done within $seconds s (state $state)"
}

# --- 1. a campaign proposed by the learner ------------------------------------------------
learner_id="$(farmctl --json submit "$scratch/learner.yaml" | json 'j["submitted"]["id"]')"
learner_start=$SECONDS
wait_done "$learner_id" 300 >"$scratch/learner_status.json"
learner_seconds=$((SECONDS - learner_start))
farmctl export "$learner_id" --format jsonl --output "$scratch/learner.jsonl" >/dev/null
# Rows of the export, and the OK ones proposed under a model the learner trained.
read -r learner_rows learner_guided < <(python3 - "$scratch/learner.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(len(rows), sum(1 for r in rows if r["model_version"] and r["status"] == "OK"))
PY
)
grep -q "event=model_trained campaign=$learner_id" "$scratch/learner.log" ||
  fail "the learner trained no model on $learner_id"
[ "$learner_guided" -ge 1 ] ||
  fail "no measurement of $learner_id was proposed under a model ($learner_rows rows)"
say "learner campaign $learner_id: $learner_rows results, $learner_guided proposed under a model, $learner_seconds s"
echo "figure learner_results=$learner_rows model_guided=$learner_guided campaign_seconds=$learner_seconds"

# --- 2. a worker's link flaps while it holds leases ----------------------------------------
flap_id="$(farmctl --json submit "$scratch/flap.yaml" | json 'j["submitted"]["id"]')"
flap_start=$SECONDS
held=0
for _ in $(seq 300); do
  held="$(farmctl --json workers | json \
    'sum(w.get("leases", 0) for w in j["workers"]["workers"] if w["record"]["host"]["worker_id"] == "rig-worker1")')"
  [ "$held" -gt 0 ] && break
  sleep 0.2
done
[ "$held" -gt 0 ] || fail "worker1 never held a lease of $flap_id"
down_ms="$(now_ms)"
rig_link worker1 down
sleep "$((link_down_seconds - 2))"
worker1_state="$(farmctl --json workers | json \
  '[w["state"] for w in j["workers"]["workers"] if w["record"]["host"]["worker_id"] == "rig-worker1"][0]')"
sleep 2
rig_link worker1 up
up_ms="$(now_ms)"
[ "$worker1_state" = WORKER_DEAD ] ||
  fail "farmctl workers said $worker1_state for worker1 $((link_down_seconds - 2)) s into its outage"
say "worker1's link was down for $(((up_ms - down_ms) / 1000)) s while it held $held leases"
wait_done "$flap_id" 300 >"$scratch/flap_status.json"
flap_seconds=$((SECONDS - flap_start))
farmctl export "$flap_id" --format jsonl --output "$scratch/flap.jsonl" >/dev/null

# The export against the status, and the coordinator's and worker1's logs around the flap.
read -r rows lease_repeats duplicates candidates ok results finished measured requeued dead_ms \
  reconnect_ms first_ack_ms first_new_ms worker1_after < <(python3 - "$scratch" "$down_ms" "$up_ms" <<'PY'
import collections, json, re, sys
scratch, down_ms, up_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(line) for line in open(scratch + "/flap.jsonl")]
counters = json.load(open(scratch + "/flap_status.json"))["status"]["campaigns"][0]["campaign"]["counters"]
key = lambda r: (r["pipeline_id"], r["schedule_hash"], r["repeat"])
leases = collections.Counter(r["lease_id"] for r in rows)
ok = collections.Counter(key(r) for r in rows if r["status"] == "OK")

def events(log, name, worker=None):
    for line in open(scratch + "/" + log):
        fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
        if fields.get("event") == name and (worker is None or fields.get("worker") == worker):
            yield int(fields["ts"]), fields

dead = [(ts, f) for ts, f in events("coordinator.log", "worker_dead", "rig-worker1")
        if down_ms <= ts <= up_ms]
first_after_up = lambda times: min((t - up_ms for t in times if t >= up_ms), default=-1)
worker1_new = [r["finished_unix_ms"] for r in rows
               if r["worker_id"] == "rig-worker1" and r["finished_unix_ms"] > up_ms]
print(len(rows),
      sum(n - 1 for n in leases.values()),
      sum(n - 1 for n in ok.values()),
      len({key(r) for r in rows}),
      sum(ok.values()),
      counters.get("results", 0), counters.get("finished", 0), counters.get("measured", 0),
      sum(int(f["leases_requeued"]) for _, f in dead) if dead else -1,
      dead[0][0] - down_ms if dead else -1,
      first_after_up(ts for ts, _ in events("worker1.log", "registered")),
      first_after_up(ts for ts, _ in events("worker1.log", "result_acked")),
      first_after_up(worker1_new),
      len(worker1_new))
PY
)
echo "figure flap_results=$rows duplicates=$duplicates requeued=$requeued campaign_seconds=$flap_seconds"
echo "figure link_down_ms=$((up_ms - down_ms)) declared_dead_after_ms=$dead_ms"
# Each counted from the moment the link came back up.
echo "figure reregistered_ms=$reconnect_ms first_ack_ms=$first_ack_ms" \
  "first_new_result_ms=$first_new_ms worker1_new_results=$worker1_after"
[ "$requeued" -ge 1 ] ||
  fail "the coordinator logged no worker_dead with requeued leases for worker1 while its link was down"
[ "$reconnect_ms" -ge 0 ] || fail "worker1 did not register again after its link came back"
# At worst a silent coordinator's 3 s (liveness) and the 4 s reconnect back-off, plus
# slack for a loaded machine.
[ "$reconnect_ms" -le 15000 ] ||
  fail "worker1 registered again $reconnect_ms ms after its link came back (bound: 15000)"
[ "$worker1_after" -ge 1 ] || fail "worker1 recorded no result after its link came back"
[ "$lease_repeats" = 0 ] || fail "$lease_repeats leases recorded more than once"
[ "$duplicates" = 0 ] || fail "$duplicates schedules measured OK more than once"
[ "$rows" = "$results" ] || fail "the export has $rows rows, status says $results results"
[ "$candidates" = "$flap_budget" ] ||
  fail "$candidates distinct candidates exported for a budget of $flap_budget"
[ "$finished" = "$flap_budget" ] || fail "status says $finished finished for a budget of $flap_budget"
[ "$ok" = "$measured" ] || fail "$ok OK rows exported, status says $measured measured"
[ "$rows" = "$flap_budget" ] ||
  say "note: $rows results for $flap_budget candidates: $((rows - ok)) failed attempts were retried"

# --- 3. a link cut while data waits for the peer --------------------------------------------
# The coordinator heartbeats worker2 until it declares it dead, and those frames wait
# unacknowledged: TCP keepalive never probes such a connection, and TCP's
# retransmissions would hold it for many minutes. The user timeout (30 s,
# protocol/keepalive.h) closes it: within 45 s of the cut, the coordinator's host has no
# connection to worker2 left.
worker2_ip="$subnet.12"
links_to_worker2() { rig_exec coordinator ss -Htn state established dst "$worker2_ip" | wc -l; }
[ "$(links_to_worker2)" -ge 1 ] || fail "the coordinator has no connection to worker2 before the cut"
registrations_before="$(grep -c "event=registered" "$scratch/worker2.log")"
cut_ms="$(now_ms)"
rig_link worker2 down
closed_ms=-1
for _ in $(seq 60); do
  sleep 1
  if [ "$(links_to_worker2)" = 0 ]; then
    closed_ms=$(($(now_ms) - cut_ms))
    break
  fi
done
rig_link worker2 up
echo "figure cut_link_closed_after_ms=$closed_ms user_timeout_s=30"
[ "$closed_ms" -ge 0 ] || fail "the coordinator still held its connection to worker2 60 s after the cut"
[ "$closed_ms" -le 45000 ] ||
  fail "the coordinator closed its connection to worker2 $closed_ms ms after the cut (bound: 45000)"
for _ in $(seq 300); do
  [ "$(grep -c "event=registered" "$scratch/worker2.log")" -gt "$registrations_before" ] && break
  sleep 0.1
done
[ "$(grep -c "event=registered" "$scratch/worker2.log")" -gt "$registrations_before" ] ||
  fail "worker2 did not register again within 30 s of its link coming back"
say "worker2's link cut with data waiting: the coordinator closed the connection after $closed_ms ms; worker2 registered again"

# --- the end: each daemon stops on SIGTERM with exit code 0, leaving nothing behind --------
for daemon in "${daemons[@]}"; do kill -TERM "${daemon#*:}"; done
for daemon in "${daemons[@]}"; do
  for _ in $(seq 200); do
    kill -0 "${daemon#*:}" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "${daemon#*:}" 2>/dev/null && fail "the daemon on ${daemon%:*} runs 20 s after SIGTERM"
  code=0
  wait "${daemon#*:}" || code=$?
  [ "$code" = 0 ] || fail "the daemon on ${daemon%:*} exited with code $code on SIGTERM"
done
sleep 1 # the sandbox children die with their worker (PR_SET_PDEATHSIG)
for ns in "${rig_namespaces[@]}"; do
  left="$(rig_pids "$ns")"
  [ -z "$left" ] || fail "processes left in namespace $ns after the daemons stopped: ${left//$'\n'/ }"
done
say "all daemons stopped; the test took $((SECONDS - test_start)) s"
