# shellcheck shell=bash
# A multi-host rig in network namespaces, sourced by tests/ops/netns_rig_test.sh: each
# host is a namespace of its own with one address on a private subnet, plugged by a
# veth pair into a Linux bridge that lives in a namespace of its own (the switch), so
# the machine's root network namespace is never touched. Names carry a per-run prefix.
#
#   rig_init PREFIX SUBNET        the switch namespace PREFIX-switch; SUBNET like 10.231.0
#   rig_add_host NAME OCTET       host namespace PREFIX-NAME at SUBNET.OCTET/24
#   rig_exec NAME COMMAND...      run COMMAND on host NAME
#   rig_spawn NAME LOG COMMAND... start COMMAND on host NAME in the background, its
#                                 output to LOG; its PID in rig_spawned_pid
#   rig_link NAME up|down         plug or unplug host NAME's cable at the switch
#   rig_teardown                  kill what runs in the rig's namespaces, delete them
#
# rig_init and rig_add_host return 1 with the reason on stderr when the kernel or the
# permissions refuse a namespace, a bridge or a veth pair; rig_add_host returns 2 for a
# NAME too long for an interface name (p-NAME, at most 15 characters).

rig_prefix=""
rig_subnet=""
rig_namespaces=()

rig_init() {
  rig_prefix="$1"
  rig_subnet="$2"
  rig_make_namespace "$rig_prefix-switch" || return 1
  if ! { ip -n "$rig_prefix-switch" link add name br0 type bridge &&
    ip -n "$rig_prefix-switch" link set br0 up; }; then
    echo "netns rig: cannot make a bridge in namespace $rig_prefix-switch" >&2
    return 1
  fi
}

rig_make_namespace() {
  local error
  if ! error="$(ip netns add "$1" 2>&1)"; then
    echo "netns rig: 'ip netns add $1' failed: $error" >&2
    return 1
  fi
  rig_namespaces+=("$1")
  ip -n "$1" link set lo up
}

rig_add_host() {
  local name="$1" octet="$2" ns="$rig_prefix-$1"
  if [ ${#name} -gt 13 ]; then
    echo "netns rig: host name '$name' is longer than 13 characters (port p-$name)" >&2
    return 2
  fi
  rig_make_namespace "$ns" || return 1
  if ! { ip -n "$rig_prefix-switch" link add name "p-$name" type veth peer name eth0 netns "$ns" &&
    ip -n "$rig_prefix-switch" link set "p-$name" master br0 &&
    ip -n "$rig_prefix-switch" link set "p-$name" up &&
    ip -n "$ns" addr add "$rig_subnet.$octet/24" dev eth0 &&
    ip -n "$ns" link set eth0 up; }; then
    echo "netns rig: cannot plug host $name ($ns) into the switch with a veth pair" >&2
    return 1
  fi
}

rig_exec() {
  local name="$1"
  shift
  ip netns exec "$rig_prefix-$name" "$@"
}

rig_spawn() {
  local name="$1" log="$2"
  shift 2
  # ip execs COMMAND once in the namespace: the PID is COMMAND's own.
  ip netns exec "$rig_prefix-$name" "$@" >"$log" 2>&1 &
  # shellcheck disable=SC2034  # read by the script that sources this file
  rig_spawned_pid=$!
}

rig_link() {
  ip -n "$rig_prefix-switch" link set "p-$1" "$2"
}

# The processes in a namespace of the rig, as the kernel lists them.
rig_pids() {
  ip netns pids "$1" 2>/dev/null || true
}

rig_teardown() {
  local ns pids pid i
  for ns in "${rig_namespaces[@]}"; do
    for pid in $(rig_pids "$ns"); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  for _ in $(seq 50); do
    pids=""
    for ns in "${rig_namespaces[@]}"; do pids+="$(rig_pids "$ns")"; done
    [ -z "$pids" ] && break
    sleep 0.1
  done
  for ns in "${rig_namespaces[@]}"; do
    for pid in $(rig_pids "$ns"); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  # The hosts first: deleting a host namespace deletes its veth pair.
  for ((i = ${#rig_namespaces[@]} - 1; i >= 0; i--)); do
    ip netns del "${rig_namespaces[i]}" 2>/dev/null || true
  done
  rig_namespaces=()
}
