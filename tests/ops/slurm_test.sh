#!/bin/bash
# ops/slurm/farm-workers.sbatch against a real single-node Slurm that this test starts
# from Debian's packages in a scratch directory (munged, slurmctld, slurmd as root, free
# ports): the worker registers (figure: seconds from sbatch), runs a tiny campaign to
# its end, is drained by scancel while leases of a second campaign are in flight, and
# by the time-limit warning of a second job (--signal=B:USR1); every result a worker had
# acknowledged is in the store exactly once, no process of a job is left; a third job
# registers with a CURVE coordinator; and without SCHEDFARM_COORDINATOR the script fails
# with exit code 2. Exits 77 (skipped) only where the machine cannot run it (not root,
# the packages not installed); daemons that are installed and do not start are a
# failure (exit 1) with their logs. Needs FARM_COORDINATOR_BIN, FARM_WORKER_BIN,
# FARMCTL_BIN.
set -u

source_dir="${SCHEDFARM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
sbatch_script="$source_dir/ops/slurm/farm-workers.sbatch"
readonly kill_wait_s=60  # the drain timeout the script derives: 50 s

say() { echo "slurm_test: $*"; }
skip() {
  echo "slurm_test: skipped: $*" >&2
  exit 77
}
# An installed daemon that will not start: a broken slurm.conf or a start-up regression.
start_failed() {
  echo "slurm_test: FAIL: $*" >&2
  exit 1
}
failures=0
check() {  # check DESCRIPTION COMMAND...: runs the command, records a failure
  local what="$1"
  shift
  if "$@"; then
    say "ok: $what"
  else
    say "FAIL: $what"
    failures=$((failures + 1))
  fi
}
die() {  # the logs of a failed run go with it: cleanup removes the scratch directory
  say "FAIL: $*"
  local log
  for log in "${scratch:-/nonexistent}"/job-*.out "${scratch:-/nonexistent}"/logs/*.log; do
    [[ -f "$log" ]] && { echo "---- ${log#"$scratch"/} (last 40 lines)"; tail -n 40 "$log"; }
  done
  exit 1
}

for binary in FARM_COORDINATOR_BIN FARM_WORKER_BIN FARMCTL_BIN; do
  [[ -x "${!binary:-}" ]] || die "$binary must name the built binary (got '${!binary:-}')"
done
[[ "$(id -u)" == 0 ]] ||
  skip "slurmd must run as root to start job steps (running as uid $(id -u))"
for command in munged munge unmunge slurmctld slurmd sbatch srun scancel squeue scontrol ss \
  python3; do
  command -v "$command" >/dev/null ||
    skip "$command is not installed (ops/setup.sh installs munge, slurmctld, slurmd," \
      "slurm-client, iproute2, python3)"
done

scratch="$(mktemp -d "${TMPDIR:-/tmp}/slurm_test.XXXXXX")"
mkdir -p "$scratch"/{munge,state,spool,logs}
chmod 700 "$scratch/munge"
# Every process of this Slurm (daemons, job steps, workers) inherits this variable,
# which is how cleanup finds them: by pid, only ours.
export SLURM_CONF="$scratch/slurm.conf"
coordinator_pids=()
unset SCHEDFARM_COORDINATOR SCHEDFARM_CURVE_KEY SCHEDFARM_SERVER_KEY SCHEDFARM_DRAIN_TIMEOUT_S

# The pids whose environment names this test's slurm.conf (bash builtins only, so the
# scan never finds itself). With a job id: only the processes of that job.
our_pids() {
  local job="${1:-}" proc pid entry ours in_job
  for proc in /proc/[0-9]*; do
    pid="${proc#/proc/}"
    [[ "$pid" == "$$" ]] && continue
    ours=0
    in_job=0
    while IFS= read -r -d '' entry; do
      [[ "$entry" == "SLURM_CONF=$SLURM_CONF" ]] && ours=1
      [[ -n "$job" && "$entry" == "SLURM_JOB_ID=$job" ]] && in_job=1
    done 2>/dev/null <"$proc/environ"
    ((ours)) && { [[ -z "$job" ]] || ((in_job)); } && echo "$pid"
  done
}

cleanup() {
  if [[ -n "$(our_pids)" ]] && squeue -h -o %i >/dev/null 2>&1; then
    local jobs
    jobs="$(squeue -h -o %i)"
    if [[ -n "$jobs" ]]; then
      # shellcheck disable=SC2086  # one id per word
      scancel $jobs
      for ((i = 0; i < (kill_wait_s + 10) * 2; i++)); do
        [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break
        sleep 0.5
      done
    fi
  fi
  ((${#coordinator_pids[@]})) && kill "${coordinator_pids[@]}" 2>/dev/null
  local pids
  pids="$(our_pids)"
  # shellcheck disable=SC2086
  [[ -n "$pids" ]] && kill $pids 2>/dev/null
  for ((i = 0; i < 20; i++)); do
    pids="$(our_pids)"
    [[ -z "$pids" ]] && break
    sleep 0.25
  done
  # shellcheck disable=SC2086
  [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null
  ((${#coordinator_pids[@]})) && wait "${coordinator_pids[@]}" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
  local port
  for ((try = 0; try < 100; try++)); do
    port=$((20000 + RANDOM % 40000))
    [[ -z "$(ss -Htan "( sport = :$port )")" && "$port" != "${1:-}" ]] && { echo "$port"; return; }
  done
  die "no free TCP port found"
}
wait_for() {  # wait_for SECONDS COMMAND...: polls every 0.2 s
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
now_ms() { date +%s%3N; }
seconds_since() { python3 -c "print(f'{($(now_ms) - $1) / 1000:.2f}')"; }

# ---- munged, slurmctld, slurmd ------------------------------------------------------
say "scratch $scratch"
munge_socket="$scratch/munge/munge.socket"
head -c 1024 /dev/urandom >"$scratch/munge/munge.key"
chmod 600 "$scratch/munge/munge.key"
munged --foreground --force --socket="$munge_socket" --key-file="$scratch/munge/munge.key" \
  --pid-file="$scratch/munge/munged.pid" --seed-file="$scratch/munge/munged.seed" \
  --log-file="$scratch/logs/munged.log" >"$scratch/logs/munged.out" 2>&1 &
munge_works() { munge -n --socket="$munge_socket" 2>/dev/null | unmunge --socket="$munge_socket" >/dev/null 2>&1; }
wait_for 10 munge_works ||
  start_failed "munged did not start: $(tail -n 3 "$scratch/logs/munged.out" "$scratch/logs/munged.log" 2>/dev/null)"

host="$(hostname -s)"
node_line="$(slurmd -C | head -n 1)"  # NodeName=HOST CPUs=... RealMemory=... as detected
[[ "$node_line" == NodeName=* ]] || start_failed "slurmd -C cannot describe this host: $node_line"
slurmctld_port="$(free_port)"
slurmd_port="$(free_port "$slurmctld_port")"
cat >"$SLURM_CONF" <<EOF
ClusterName=schedfarmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$slurmctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=$kill_wait_s
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/logs/slurmctld.log
SlurmdLogFile=$scratch/logs/slurmd.log
PlugStackConfig=$scratch/plugstack.conf
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=farm Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
: >"$scratch/plugstack.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$scratch/logs/slurmctld.out" 2>&1 &
slurmd -D -f "$SLURM_CONF" >"$scratch/logs/slurmd.out" 2>&1 &
node_idle() { [[ "$(sinfo -h -n "$host" -o %T 2>/dev/null)" == idle ]]; }
wait_for 30 node_idle ||
  start_failed "slurmctld/slurmd did not bring node $host up:" \
    "$(tail -n 5 "$scratch/logs/slurmctld.log" "$scratch/logs/slurmd.log" 2>/dev/null)"
say "slurm up: $node_line, slurmctld port $slurmctld_port, slurmd port $slurmd_port"

# ---- the bad input --------------------------------------------------------------------
env -u SCHEDFARM_COORDINATOR bash "$sbatch_script" >/dev/null 2>"$scratch/no_coordinator.err"
status=$?
check "without SCHEDFARM_COORDINATOR the script exits 2 (got $status)" test $status -eq 2
check "and says why on stderr" grep -q "SCHEDFARM_COORDINATOR is not set" "$scratch/no_coordinator.err"
SCHEDFARM_COORDINATOR=tcp://127.0.0.1:1 SCHEDFARM_CURVE_KEY="$scratch/worker" \
  bash "$sbatch_script" >/dev/null 2>"$scratch/half_curve.err"
status=$?
check "SCHEDFARM_CURVE_KEY without SCHEDFARM_SERVER_KEY exits 2 (got $status)" test $status -eq 2
check "and says both go together" grep -q "go together" "$scratch/half_curve.err"
bad_job="$(env -u SCHEDFARM_COORDINATOR sbatch --parsable --output="$scratch/job-%j.out" \
  "$sbatch_script")" || die "sbatch refused the script"
job_gone() { [[ -z "$(squeue -h -j "$1" 2>/dev/null)" ]]; }
wait_for 60 job_gone "$bad_job" || die "job $bad_job without a coordinator did not end"
check "that job through sbatch ends with exit code 2" \
  grep -q "ExitCode=2:0" <(scontrol show job "$bad_job")
check "its output says why" grep -q "SCHEDFARM_COORDINATOR is not set" "$scratch/job-$bad_job.out"

# ---- the coordinator and the first job ------------------------------------------------
# start_coordinator NAME [FLAGS...]: a coordinator on a free loopback port; exports
# SCHEDFARM_COORDINATOR, its endpoint, for farmctl and the jobs.
start_coordinator() {
  local name="$1" log="$scratch/logs/$1.log"
  shift
  "$FARM_COORDINATOR_BIN" --store "$scratch/$name.store" --endpoint 'tcp://127.0.0.1:*' "$@" \
    >"$log" 2>&1 &
  coordinator_pids+=($!)
  endpoint_logged() { grep -qs "event=coordinator_started" "$log"; }
  wait_for 30 endpoint_logged || die "farm-coordinator did not start: $(cat "$log")"
  SCHEDFARM_COORDINATOR="$(grep -o 'endpoint=tcp://[^ ]*' "$log" | head -n 1)"
  export SCHEDFARM_COORDINATOR="${SCHEDFARM_COORDINATOR#endpoint=}"
  say "$name $SCHEDFARM_COORDINATOR"
}
start_coordinator coordinator
export SCHEDFARM_WORKER_BIN="$FARM_WORKER_BIN"
export SCHEDFARM_WORKER_FLAGS="--compile-slots 1"

farmctl_flags=()  # the client's CURVE keys once the coordinator wants them
farmctl() { "$FARMCTL_BIN" "${farmctl_flags[@]}" "$@"; }
# The worker's registration time (unix ms) once it is registered and alive, else nothing.
registered_ms() {
  farmctl --json workers 2>/dev/null | python3 -c '
import json, sys
for w in json.load(sys.stdin).get("workers", {}).get("workers", []):
    if w["state"] in ("WORKER_IDLE", "WORKER_BUSY"):
        print(w["record"]["registered_unix_ms"])'
}
# submit_job [SBATCH FLAGS...]: sbatch the script, wait for its worker; sets job.
submit_job() {
  local submitted_ms registered=""
  submitted_ms="$(now_ms)"
  job="$(sbatch --parsable --output="$scratch/job-%j.out" "$@" "$sbatch_script")" ||
    die "sbatch refused the script"
  for ((i = 0; i < 300; i++)); do
    registered="$(registered_ms)"
    [[ -n "$registered" && "$registered" -ge "$submitted_ms" ]] && break
    registered=""
    sleep 0.2
  done
  [[ -n "$registered" ]] ||
    die "job $job: no worker registered within 60 s: $(cat "$scratch/job-$job.out" 2>/dev/null)"
  local worker_started_ms
  worker_started_ms="$(sed -n 's/.*ts=\([0-9]*\) .*event=started .*/\1/p' "$scratch/job-$job.out")"
  say "figure sbatch_registration_seconds=$(python3 -c "print(f'{($registered - $submitted_ms) / 1000:.2f}')")" \
    "job=$job (sbatch to the worker registered and alive in farmctl workers;" \
    "farm-worker started $(python3 -c "print(f'{(${worker_started_ms:-0} - $submitted_ms) / 1000:.2f}')") s after sbatch)"
}
campaign_file() {  # campaign_file NAME SEED BENCHMARKS
  cat >"$scratch/$1.yaml" <<EOF
name: $1
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: random, settings: {seed: $2}}
budget: {benchmarks: $3}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
EOF
  echo "$scratch/$1.yaml"
}
submit_campaign() {
  farmctl submit "$(campaign_file "$@")" | sed -n 's/^submitted campaign \([^ ]*\) .*/\1/p'
}
# The job ended: SIGTERM found the worker with leases in hand, it drained, was never
# stopped nor killed, acknowledged every lease it started, and left no process behind.
check_drained() {
  local job="$1" log="$scratch/job-$1.out" in_flight
  in_flight="$(sed -n 's/.*event=draining leases=\([0-9]*\).*/\1/p' "$log")"
  check "job $job: SIGTERM reached the worker with leases in flight (${in_flight:-none})" \
    test "${in_flight:-0}" -ge 1
  check "job $job: the worker drained" grep -q "event=drained" "$log"
  check "job $job: it was not stopped with leases abandoned" \
    test -z "$(grep -e "event=stopped" -e "drain timed out" "$log")"
  check "job $job: no task was killed (SIGKILL)" test -z "$(grep "Killed" "$log")"
  check "job $job: every lease it started was finished and its result acknowledged" \
    diff <(grep -o 'event=lease_started lease=[^ ]*' "$log" | sed 's/.*lease=//' | sort) \
    <(grep -o 'event=result_acked lease=[^ ]*' "$log" | sed 's/.*lease=//' | sort)
  check "job $job: the batch script saw srun end with 0" grep -q "srun exit code 0" "$log"
  check "job $job: no process of the job is left" test -z "$(our_pids "$job")"
}

submit_job
tiny="$(submit_campaign tiny 3 6)"
[[ -n "$tiny" ]] || die "the tiny campaign was not submitted"
started_ms="$(now_ms)"
watch_to_end() { timeout 300 "$FARMCTL_BIN" watch "$1" >"$scratch/watch-$1.log"; }
check "campaign $tiny completes" watch_to_end "$tiny"
say "figure tiny_campaign_seconds=$(seconds_since "$started_ms") (6 benchmarks, --compile-slots 1)"

# ---- scancel while leases of a longer campaign are in flight --------------------------
long="$(submit_campaign long 5 200)"
[[ -n "$long" ]] || die "the long campaign was not submitted"
long_acked() {
  local lease
  while read -r lease; do
    grep -q "event=result_acked lease=$lease\$" "$scratch/job-$job.out" && return 0
  done < <(sed -n "s/.*event=lease_started lease=\([^ ]*\) .*campaign=$long\$/\1/p" \
    "$scratch/job-$job.out")
  return 1
}
wait_for 180 long_acked || die "no result of campaign $long within 180 s"
cancelled_ms="$(now_ms)"
scancel "$job"
wait_for $((kill_wait_s + 30)) job_gone "$job" || die "job $job still there after scancel"
end_seconds="$(seconds_since "$cancelled_ms")"
say "figure scancel_to_job_end_seconds=$end_seconds (KillWait $kill_wait_s s)"
check "job $job: it ended before KillWait's SIGKILL" \
  python3 -c "import sys; sys.exit(not $end_seconds < $kill_wait_s)"
check_drained "$job"

# ---- the time limit: Slurm's SIGUSR1 ahead of it, then the drain ----------------------
# Slurm may send the warning up to 60 s before its lead (sbatch(1)): --time=3 with a
# 90 s lead signals 30 s to 90 s into the job, 90 s or more before the limit.
started_ms="$(now_ms)"
submit_job --time=3 --signal=B:USR1@90
wait_for 200 job_gone "$job" || die "job $job did not end by its time limit"
say "figure time_limit_job_seconds=$(seconds_since "$started_ms") (--time=3, USR1 90 s ahead)"
check "job $job: the batch script passed the time-limit warning on" \
  grep -q "time limit near" "$scratch/job-$job.out"
scontrol show job "$job" >"$scratch/job-$job.state"
check "job $job: it ended COMPLETED before the limit" grep -q "JobState=COMPLETED" "$scratch/job-$job.state"
check "job $job: with exit code 0" grep -q "ExitCode=0:0" "$scratch/job-$job.state"
check_drained "$job"

# ---- the store: every acknowledged result exactly once --------------------------------
for campaign in "$tiny" "$long"; do
  farmctl export "$campaign" --format jsonl --output "$scratch/$campaign.jsonl" >/dev/null ||
    die "export of $campaign failed"
  farmctl --json status "$campaign" >"$scratch/$campaign.status.json" || die "status of $campaign failed"
done
cat "$scratch"/job-*.out | grep -o 'event=result_acked lease=[^ ]*' | sed 's/.*lease=//' |
  sort >"$scratch/acked_leases"
python3 - "$scratch/acked_leases" "$scratch/$tiny" "$scratch/$long" >"$scratch/store_check" <<'EOF'
# Checks the exports against the leases the workers saw acknowledged and the status.
import collections, json, sys
acked = open(sys.argv[1]).read().split()
rows = []
for base in sys.argv[2:]:
    campaign_rows = [json.loads(line) for line in open(base + ".jsonl")]
    status = json.load(open(base + ".status.json"))["status"]["campaigns"][0]["campaign"]
    counters = status["counters"]
    ok = [r for r in campaign_rows if r["status"] == "OK"]
    ok_candidates = collections.Counter(
        (r["pipeline_id"], r["schedule_hash"], r["repeat"]) for r in ok)
    print(f"{status['id']}: rows={len(campaign_rows)} results={counters['results']}"
          f" ok_rows={len(ok)} measured={counters['measured']}"
          f" candidates_measured_twice={sum(n > 1 for n in ok_candidates.values())}")
    assert len(campaign_rows) == int(counters["results"]), "rows != status results"
    assert len(ok) == int(counters["measured"]), "OK rows != status measured"
    assert all(n == 1 for n in ok_candidates.values()), "a candidate measured OK twice"
    rows += campaign_rows
leases = collections.Counter(r["lease_id"] for r in rows)
duplicates = [lease for lease, n in leases.items() if n > 1]
assert not duplicates, f"leases stored twice: {duplicates}"
assert sorted(leases) == sorted(acked), \
    f"acked but not stored: {set(acked) - set(leases)}; stored, never acked: {set(leases) - set(acked)}"
print(f"acknowledged results {len(acked)}, all stored once")
killed = [r["lease_id"] + ": " + r["error"] for r in rows if "killed by SIGTERM" in r["error"]]
for line in killed:
    print("killed by Slurm's SIGTERM:", line)
EOF
status=$?
check "the store holds every acknowledged result exactly once, counts match status" \
  test $status -eq 0
cat "$scratch/store_check"
check "no candidate was recorded as crashed by the SIGTERM meant for its worker" \
  test -z "$(grep "killed by Slurm's SIGTERM" "$scratch/store_check")"

# ---- CURVE: the keys reach the workers ------------------------------------------------
keys="$scratch/keys"
mkdir -p "$keys"
for party in coordinator workers client; do
  "$FARMCTL_BIN" keygen "$keys/$party" >/dev/null || die "farmctl keygen failed"
done
cat "$keys/workers.pub" "$keys/client.pub" >"$keys/allowed.txt"
start_coordinator secure_coordinator --curve-key "$keys/coordinator" \
  --allow-list "$keys/allowed.txt"
farmctl_flags=(--curve-key "$keys/client" --server-key "$keys/coordinator.pub")
export SCHEDFARM_CURVE_KEY="$keys/workers" SCHEDFARM_SERVER_KEY="$keys/coordinator.pub"
submit_job
scancel "$job"
wait_for $((kill_wait_s + 30)) job_gone "$job" || die "job $job still there after scancel"
check "job $job: the CURVE worker drained" grep -q "event=drained" "$scratch/job-$job.out"
check "job $job: the batch script saw srun end with 0" grep -q "srun exit code 0" \
  "$scratch/job-$job.out"
check "job $job: no process of the job is left" test -z "$(our_pids "$job")"

((failures == 0)) || die "$failures check(s) failed"
say "passed"
