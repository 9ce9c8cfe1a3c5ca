#!/usr/bin/env bash
# Checks the Kubernetes manifests of ops/k8s offline with Debian's kubectl 1.20
# (kubernetes-client, unpacked by ops/setup.sh; $SCHEDFARM_KUBECTL overrides it), then
# runs the three daemons with the manifests' own arguments on this machine.
#
# Validated (k8s_manifest_check.py; kubectl without a server):
# - every object decodes into kubectl's typed API objects (`kubectl set env|selector
#   --local -o json`): wrong types, unknown apiVersion/kind and malformed quantities
#   are refused; no field is dropped by that decoding (unknown or misspelled fields,
#   except ones with a zero value, which change nothing); `kubectl kustomize` renders
#   exactly the objects of the files;
# - every --flag against the binary's --help, $(VAR)s, volumes and mounts, Secrets
#   (created by the operator as README.md says; the files the flags name are in them,
#   mounted read-only, the secret keys copied mode 0600 by an init container), the
#   worker's grace period > --drain-timeout-s, its Guaranteed QoS with whole CPUs and
#   its sandboxes' memory within the pod's, placement on and off the benchmark nodes,
#   the coordinator's Service, ports and scrape annotations;
# - the pods' commands run here: the volumes laid out in a scratch folder (Secrets
#   from farmctl keygen files with their defaultMode), the init containers' install
#   run, then the daemons with the manifests' arguments (paths moved into the scratch
#   folder, endpoints to 127.0.0.1): the worker registers over CURVE under the node's
#   name, a key off the allow-list is refused, the metrics answer, the learner polls
#   without a warning, SIGTERM stops all three with exit 0 (the worker drained).
# Not validated: what only an API server checks (server-side validation of names,
# required fields and ranges, defaulting, admission): `kubectl apply/create
# --dry-run=client` need API discovery, and a local discovery stub would only echo
# the test's own documents; schema validation (--validate) needs the server's
# OpenAPI document, which is not available offline. The image (ops/k8s/Containerfile)
# is not built: no container engine runs here.
# A few broken copies of the manifests show that the checks fail when they should.
# Exit: 0 passed, 1 failed, 77 skipped (no kubectl).
set -euo pipefail

source_dir="${SCHEDFARM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
kubectl="${SCHEDFARM_KUBECTL:-${XDG_CACHE_HOME:-$HOME/.cache}/schedfarm/kubernetes-client/usr/bin/kubectl}"
if [ ! -x "$kubectl" ]; then
  echo "k8s_test: skipped: no kubectl at $kubectl (ops/setup.sh unpacks Debian's" \
    "kubernetes-client there; SCHEDFARM_KUBECTL overrides)" >&2
  exit 77
fi
for var in FARM_COORDINATOR_BIN FARM_WORKER_BIN FARM_LEARNER_BIN FARMCTL_BIN; do
  if [ ! -x "${!var:-}" ]; then
    echo "k8s_test: $var is not set to an executable" >&2
    exit 1
  fi
done
export KUBECTL="$kubectl" FARM_COORDINATOR_BIN FARM_WORKER_BIN FARM_LEARNER_BIN
check="$source_dir/tests/ops/k8s_manifest_check.py"
manifests="$source_dir/ops/k8s"

scratch="$(mktemp -d)"
cleanup() {  # the daemons still running (jobs of this shell), then the scratch folder
  for pid in $(jobs -p); do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

fail() {
  echo "k8s_test: FAIL: $*" >&2
  exit 1
}

echo "== the manifests"
python3 "$check" "$manifests" || fail "the manifests of $manifests do not pass the checks (above)"

# expect_refused NAME FILE OLD NEW PATTERN: a copy of the manifests with OLD replaced
# by NEW in FILE must fail the checks with a line matching PATTERN.
expect_refused() {
  local name="$1" file="$2" old="$3" new="$4" pattern="$5" copy="$scratch/broken-$1"
  cp -r "$manifests" "$copy"
  python3 - "$copy/$file" "$old" "$new" <<'EOF' || fail "$name: the test's edit does not apply"
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if old not in text:
    sys.exit(f"{path}: no {old!r}")
open(path, "w").write(text.replace(old, new, 1))
EOF
  local status=0
  python3 "$check" "$copy" >"$copy.out" 2>&1 || status=$?
  [ "$status" -eq 1 ] || fail "$name: the check exited $status, not 1: $(cat "$copy.out")"
  grep -qE -- "$pattern" "$copy.out" || fail "$name: no line matching '$pattern' in: $(cat "$copy.out")"
  echo "refused as expected ($name): $(grep -E -- "$pattern" "$copy.out" | head -1)"
}

echo "== broken copies"
expect_refused misspelled-flag worker.yaml "- --drain-timeout-s" "- --drain-timeout-secs" \
  "farm-worker has no flag --drain-timeout-secs"
expect_refused short-grace worker.yaml "terminationGracePeriodSeconds: 660" \
  "terminationGracePeriodSeconds: 300" "terminationGracePeriodSeconds 300 <= the worker's --drain-timeout-s 600"
expect_refused wrong-type coordinator.yaml "replicas: 1" "replicas: one" \
  "StatefulSet/farm-coordinator: kubectl's typed decoding refuses it: .*Replicas"
expect_refused unknown-field worker.yaml "nodeSelector:" "nodeSelecter:" \
  "unknown field spec.template.spec.nodeSelecter"
expect_refused malformed-yaml learner.yaml "values: [\"true\"]" "values: [\"true\"" \
  "learner.yaml: kubectl cannot read it"
expect_refused fractional-cpu worker.yaml 'cpu: "4"' "cpu: 3500m" \
  "cpu requests != limits"
expect_refused undocumented-secret learner.yaml "secretName: farm-learner-key" \
  "secretName: farm-learner-keys" "Secret farm-learner-keys is not one README.md creates"
expect_refused learner-on-benchmark-nodes learner.yaml "operator: NotIn" "operator: In" \
  "no required node affinity schedfarm.io/benchmark NotIn"
expect_refused sandboxes-too-big worker.yaml '- "3584"' '- "4608"' \
  "4 sandboxes x --memory-limit-mb 4608 do not fit"
expect_refused readable-secret-key worker.yaml '"0600"' '"0640"' \
  "worker.key is installed with mode 640"
expect_refused file-left-out kustomization.yaml "  - learner.yaml" "" \
  "kustomization.yaml: renders"

echo "== the daemons with the manifests' arguments"
keys="$scratch/keys"
mkdir "$keys"
for name in coordinator worker learner operator stranger; do
  "$FARMCTL_BIN" keygen "$keys/$name" >/dev/null
done
cat "$keys/worker.pub" "$keys/learner.pub" "$keys/operator.pub" >"$keys/allowed.txt"
python3 "$check" "$manifests" --stage "$scratch/stage" "$keys" >/dev/null

# start BINARY NAME: runs the pod's init containers (install, copying the keys out of
# the Secrets), then NAME with the staged arguments and environment, in the background.
start() {
  local binary="$1" name="$2" args envs init
  for init in "$scratch/stage/$name".init.*; do
    [ -e "$init" ] || continue
    mapfile -d '' args <"$init"
    "${args[@]}" || fail "$name's init container failed: ${args[*]}"
  done
  mapfile -d '' args <"$scratch/stage/$name.args"
  mapfile -d '' envs <"$scratch/stage/$name.env"
  args=("${args[@]//@COORDINATOR@/${endpoint:-}}")
  env "${envs[@]}" "$binary" "${args[@]}" >"$scratch/$name.log" 2>&1 &
  started_pid=$!
  echo "started $name: ${args[*]}"
}

# wait_for_line FILE PATTERN: up to 20 s for PATTERN in FILE.
wait_for_line() {
  for _ in $(seq 200); do
    grep -qE -- "$2" "$1" && return 0
    sleep 0.1
  done
  fail "no '$2' in $1 within 20 s: $(tail -5 "$1")"
}

start "$FARM_COORDINATOR_BIN" farm-coordinator
coordinator_pid="$started_pid"
wait_for_line "$scratch/farm-coordinator.log" "event=coordinator_started"
endpoint="$(grep -oE 'endpoint=tcp://[0-9.]+:[0-9]+' "$scratch/farm-coordinator.log" | head -1)"
endpoint="${endpoint#endpoint=}"
wait_for_line "$scratch/farm-coordinator.log" "metrics_port=[0-9]+"
metrics_port="$(grep -oE 'metrics_port=[0-9]+' "$scratch/farm-coordinator.log" | head -1)"
metrics_port="${metrics_port#metrics_port=}"

start "$FARM_WORKER_BIN" farm-worker
worker_pid="$started_pid"
start "$FARM_LEARNER_BIN" farm-learner
learner_pid="$started_pid"

farmctl_as() {  # farmctl_as KEY ARGS...: farmctl with KEY's pair against the coordinator
  local key="$1"
  shift
  "$FARMCTL_BIN" --coordinator "$endpoint" --curve-key "$keys/$key" \
    --server-key "$keys/coordinator.pub" "$@"
}
registered=""
for _ in $(seq 100); do
  if farmctl_as operator --retry-s 2 workers 2>/dev/null | grep -q "k8s-test-node"; then
    registered=yes
    break
  fi
  sleep 0.2
done
[ -n "$registered" ] || fail "the worker did not register as k8s-test-node: $(tail -5 "$scratch/farm-worker.log")"
echo "the worker registered over CURVE as k8s-test-node (its \$(NODE_NAME))"

status=0
farmctl_as stranger --retry-s 2 workers >/dev/null 2>&1 || status=$?
[ "$status" -eq 4 ] || fail "a key off the allow-list got exit $status from farmctl, not 4 (refused)"
echo "a key off the allow-list is refused (farmctl exit 4)"

python3 - "$metrics_port" <<'EOF' || fail "the metrics endpoint does not serve schedfarm_workers"
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
sys.exit(0 if "schedfarm_workers" in body else 1)
EOF
echo "the metrics endpoint answers on port $metrics_port"

# A learner whose key is refused logs coordinator_unavailable at its first poll (every
# second by default): two polls' time without one means the coordinator answers it.
wait_for_line "$scratch/farm-learner.log" "event=learner_started"
sleep 2
kill -0 "$learner_pid" 2>/dev/null || fail "the learner exited: $(tail -5 "$scratch/farm-learner.log")"
! grep -E "level=(warn|error)" "$scratch/farm-learner.log" ||
  fail "the learner warned (above)"
echo "the learner polls the coordinator without a warning"

# stop PID NAME: SIGTERM, then its exit code must be 0 within 30 s.
stop() {
  kill -TERM "$1"
  for _ in $(seq 300); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$1" 2>/dev/null && fail "$2 still runs 30 s after SIGTERM"
  local status=0
  wait "$1" || status=$?
  [ "$status" -eq 0 ] || fail "$2 exited $status after SIGTERM: $(tail -5 "$scratch/$2.log")"
  echo "$2 stopped on SIGTERM (exit 0)"
}
stop "$worker_pid" farm-worker
grep -q "event=drained" "$scratch/farm-worker.log" || fail "the worker did not log its drain"
stop "$learner_pid" farm-learner
stop "$coordinator_pid" farm-coordinator
echo "k8s_test: PASS"
