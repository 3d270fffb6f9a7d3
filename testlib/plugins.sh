# shellcheck shell=bash
# plugins.sh: helpers for the plugin integration tests. Source it from a
# test run by scripts/with-stack. It plays the worker's part: it writes task
# JSON as docs/plugins.md describes it, runs a plugin with it on standard input,
# and merges the result's key-values into the node's config for later tasks.
#
# Nodes: every test gets its own provider root ($T/nodes) and its own /24 of
# loopback addresses, reserved machine-wide under /tmp/drover-loopback-nets so
# that tests running side by side never share one. Every node made through
# lb_create (create_nodes) is deleted by the EXIT trap however the test ends, and its sshd (the
# PID 1 of the node's namespace) is recorded in the stack's pid directory, so
# that the stack's reaper stops it even when the test is killed with SIGKILL.

# shellcheck source=test-lib.sh
. "$DROVER_SOURCE_DIR/testlib/test-lib.sh"

PLUGINS="$DROVER_BUILD_DIR/plugins"
LB="$PLUGINS/loopback/loopback"
# shellcheck disable=SC2034 # the plugins, for the tests that source this file
SSHA="$PLUGINS/ssh/ssh" POOL="$PLUGINS/ssh-pool/ssh-pool"
KEYGEN="$DROVER_BUILD_DIR/tests/plugins/drover-test-keygen"
NODES="$T/nodes"
KV="$T/kv"
NET_LOCKS=/tmp/drover-loopback-nets
mkdir -p "$KV" "$T/pids"
: > "$T/plugins.log"

# reserve_slot LOCKS GEN: reserve a name under the machine-wide directory LOCKS for this
# test (an atomic mkdir; LOCKS/NAME/owner names the test's directory), into SLOT; GEN
# prints a candidate each time it runs. A reservation whose owner directory is gone (a
# test that died; `stack down` releases a dead stack's) is stale: it is moved aside (an
# atomic rename: one taker wins) and the name tried again. The reservation's path goes to
# a file of the caller's choosing (net.lock, ct-net.lock), for its EXIT trap.
reserve_slot() {
  local locks=$1 gen=$2 n owner
  mkdir -p "$locks"
  for _ in $(seq 1 500); do
    n=$("$gen")
    if mkdir "$locks/$n" 2> /dev/null; then
      echo "$T" > "$locks/$n/owner"
      SLOT=$n
      return 0
    fi
    owner=$(cat "$locks/$n/owner" 2> /dev/null) || continue # being made: not stale
    if [ ! -d "$owner" ] && mv "$locks/$n" "$locks/.stale.$$.$n" 2> /dev/null; then
      rm -rf "${locks:?}/.stale.$$.$n"
    fi
  done
  return 1
}

# reserve_net: a free 127.X.Y.0/24 for this test, into NET.
lb_net_candidate() { echo "127.$((100 + RANDOM % 150)).$((RANDOM % 256))"; }
reserve_net() {
  reserve_slot "$NET_LOCKS" lb_net_candidate || fail "no free loopback /24 for the test"
  NET="$SLOT.0/24"
  # shellcheck disable=SC2034 # the first three octets, for the tests that source this file
  NET_PREFIX="$SLOT"
  echo "$NET_LOCKS/$SLOT" > "$T/net.lock"
}
reserve_net

# loopback_settings: the operator's loopback settings for a worker (this test's root and
# network: host fields a tenant's provider may not set, docs/security.md), written to
# $T/provider-settings.json; prints the worker config line that names the file.
loopback_settings() {
  jq -n --arg root "$NODES" --arg net "$NET" '{loopback: {root: $root, network: $net}}' \
    > "$T/provider-settings.json"
  echo "worker.provider_settings = $T/provider-settings.json"
}

# The cluster's key pair, made by the engine's own function (sshkey_generate).
"$KEYGEN" "$T/cluster_key" "drover-test-cluster" || fail "keygen"
CLUSTER_PUB=$(cat "$T/cluster_key.pub")

# provider_json: the provider in the tasks task() makes. PROVIDER: loopback (the default,
# this test's root and network) or container (container.sh sets it). With PROVIDER_FROM
# (a catalogue's providers/ folder: catalog.sh), that catalogue's entity of the provider
# instead, its provisioner fields in (loopback's with this test's root and network).
provider_json() {
  local from=${PROVIDER_FROM:-}
  case "${PROVIDER:-loopback}" in
    container)
      if [ -n "$from" ]; then
        jq -c '{name, providertype} + .provisioner' "$from/container.json"
      else
        jq -cn '{name: "container", providertype: "container"}'
      fi
      ;;
    *)
      if [ -n "$from" ]; then
        jq -c --arg root "$NODES" --arg net "$NET" '{name, providertype} + .provisioner +
          {root: $root, network: $net}' "$from/loopback.json"
      else
        jq -cn --arg root "$NODES" --arg net "$NET" \
          '{name: "local", providertype: "loopback", root: $root, network: $net}'
      fi
      ;;
  esac
}

# The keys of a node that are its provider's facts (src/common/facts.h): the worker gives
# them to a plugin at config's top level and whole in config.facts, which is where the
# shipped plugins read a machine's id, address and login.
FACT_KEYS='["provider-id", "hostname", "ipaddresses", "ssh_host_key", "ssh_host_key_type",
  "ssh_user", "ssh_port", "node_hostname", "node_root"]'

# task TASKNAME NODE [ATTEMPT [INDEX [EXTRA_JQ]]]: a task JSON on stdout. The
# node's config is what earlier tasks returned ($KV/NODE.json), plus the
# provider, the cluster's keys and CLUSTER_CONFIG (a JSON object, default {}).
# EXTRA_JQ is a jq filter applied next (to add fields or break things); last,
# config.facts is made of config's fact keys as the worker makes it, unless
# EXTRA_JQ set config.facts itself.
task() {
  local name=$1 node=$2 attempt=${3:-1} index=${4:-1} extra=${5:-.}
  local kv="$KV/$node.json"
  [ -f "$kv" ] || echo '{}' > "$kv"
  jq -c --arg name "$name" --arg node "$node" --argjson att "$attempt" --arg idx "$index" \
    --arg job "${JOB_ID:-7}" --arg cluster "${CLUSTER_ID:-c1}" \
    --argjson prov "$(provider_json)" --argjson cc "${CLUSTER_CONFIG:-{\}}" \
    --arg pub "$CLUSTER_PUB" --rawfile priv "$T/cluster_key" \
    --argjson timeout "${TIMEOUT_MS:-120000}" --arg svc "${SERVICE:-}" --argjson fk "$FACT_KEYS" \
    '{format: 2, taskId: ($job + "." + $idx + "." + ($att|tostring)), jobId: $job,
      clusterId: $cluster, tenant: "acme", task: ($node + "/" + $name), taskName: $name,
      nodeId: $node, service: $svc, attempt: $att, cleanup: false, timeout_ms: $timeout,
      config: (. + {clustername: "c1", cluster: $cc, provider: $prov,
                    ssh: {user: "root", public_key: $pub, private_key: $priv}})} | '"$extra"' |
    .config.facts = (.config.facts // (.config | with_entries(select(.key | IN($fk[])))))' "$kv"
}

# run PLUGIN: the task on stdin; the result in $T/last.json, stderr appended to
# $T/plugins.log; returns the plugin's exit status.
run() {
  local rc=0
  "$1" > "$T/last.json" 2>> "$T/plugins.log" || rc=$?
  return $rc
}

last() { jq -r "$1" "$T/last.json"; }

# expect_fail PLUGIN WHAT PATTERN: run PLUGIN with the task on stdin; it must fail, with a
# message matching PATTERN (an extended regex).
expect_fail() {
  local rc=0
  run "$1" || rc=$?
  [ "$rc" != 0 ] || fail "$2: the plugin succeeded"
  last .message | grep -qE "$3" || fail "$2: message \"$(last .message)\" lacks /$3/"
}

# merge NODE: merge the last result's key-values into the node's config.
merge() {
  local kv="$KV/$1.json"
  jq -c --slurpfile r "$T/last.json" '. + $r[0].result | with_entries(select(.value != null))' \
    "$kv" > "$kv.new" && mv "$kv.new" "$kv"
}

kv() { jq -r "$2" "$KV/$1.json"; }

node_dir() { echo "$NODES/$(kv "$1" '."provider-id"')"; }

# create_nodes PLUGIN TASK_FN NODE...: create and confirm each node (the creates in
# parallel) with the provider PLUGIN, its task JSON made by TASK_FN (task, or
# container.sh's ct_task); each node is recorded (record_node) and its host key trusted
# (known_host). Fails the test on error.
create_nodes() {
  local plugin=$1 taskfn=$2 n pids=() rc=0
  shift 2
  for n in "$@"; do
    ("$taskfn" create "$n" | "$plugin" > "$T/create-$n.json" 2>> "$T/plugins.log") &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  for n in "$@"; do
    cp "$T/create-$n.json" "$T/last.json"
    [ "$(last .status)" = ok ] || fail "create $n: $(last .message)"
    merge "$n"
    record_node "$n"
    "$taskfn" confirm "$n" | run "$plugin" || fail "confirm $n: $(last .message)"
    merge "$n"
    known_host "$n"
  done
  return $rc
}
# lb_create NODE...: loopback nodes.
lb_create() { create_nodes "$LB" task "$@"; }

# record_node NODE: put the node's sshd in the stack's pid directory (reaper).
record_node() {
  local dir
  dir=$(node_dir "$1")
  jq -r .sshd_pid "$dir/node.json" > "$T/pids/lbnode-$1.pid"
}

lb_delete() {
  task delete "$1" | run "$LB" || fail "delete $1: $(last .message)"
  rm -f "$T/pids/lbnode-$1.pid"
}

# Processes (not zombies) in the PID namespace NS ("pid:[...]").
ns_procs() {
  local ns=$1 p n=0
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$ns" ] || continue
    [ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" = Z ] && continue
    n=$((n + 1))
  done
  echo $n
}

# ns_has NODE REGEX: a live process of the node's PID namespace matches REGEX. The test
# defines node_pidns NODE (the namespace, "pid:[...]"), from the layout or from the API.
ns_has() {
  local ns p
  ns=$(node_pidns "$1")
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/pid" 2> /dev/null)" = "$ns" ] || continue
    [ "$(awk '{print $3}' "$p/stat" 2> /dev/null)" = Z ] && continue
    tr '\0' ' ' < "$p/cmdline" 2> /dev/null | grep -qE "$2" && return 0
  done
  return 1
}

# The web tier of the shipped catalogue (HAProxy in front of nginx nodes). The test sets
# LB_URL (the balancer) and defines with_service SERVICE (the nodes that run it).
# seen N: the distinct nodes that answer N requests through the balancer.
seen() {
  for _ in $(seq "$1"); do curl -s -m 5 "$LB_URL"; done | awk '{print $1}' | sort -u | tr '\n' ' '
}
nginx_nodes() { for n in $(with_service nginx); do printf 'node=%s ' "$n"; done; }
# want_backends "node=node-2 node=node-3 ": until the balancer spreads over exactly those.
want_backends() {
  local got
  for _ in $(seq 100); do
    got=$(seen 12)
    [ "$got" = "$1" ] && return 0
    sleep 0.2
  done
  fail "through the balancer: \"$got\", expected \"$1\""
}

listening() { ss -Htln "src = $1" 2>/dev/null | grep -q .; }

# on NODE CMD...: run a command on the node with OpenSSH's client (a second,
# independent client: what libssh2 did is checked with another tool).
on() {
  local node=$1
  shift
  ssh -n -i "$T/cluster_key" -o BatchMode=yes -o StrictHostKeyChecking=yes \
    -o UserKnownHostsFile="$T/known_hosts" -o LogLevel=ERROR \
    "root@$(kv "$node" .ipaddresses.access_v4)" "$@"
}

# known_host NODE: trust the node's host key (the public key the provider wrote).
known_host() {
  local dir addr
  dir=$(node_dir "$1")
  addr=$(kv "$1" .ipaddresses.access_v4)
  touch "$T/known_hosts"
  grep -v "^$addr " "$T/known_hosts" > "$T/known_hosts.new" || true
  echo "$addr $(cut -d' ' -f1-2 "$dir/ssh/host_ed25519_key.pub")" >> "$T/known_hosts.new"
  mv "$T/known_hosts.new" "$T/known_hosts"
}

cleanup_nodes() {
  local rc=$? j id
  for j in "$NODES"/*/node.json; do
    [ -f "$j" ] || continue
    id=$(jq -r '."provider-id"' "$j")
    jq -cn --arg id "$id" --argjson prov "$(provider_json)" \
      '{taskId: "0.0.1", taskName: "delete", config: {provider: $prov, facts: {"provider-id": $id}}}' |
      "$LB" > /dev/null 2>> "$T/plugins.log" || echo "cleanup: delete $id failed" >&2
  done
  rm -f "$T"/pids/lbnode-*.pid
  [ -f "$T/net.lock" ] && rm -rf "$(cat "$T/net.lock")"
  return $rc
}
trap cleanup_nodes EXIT

# claims PATH: the ssh-pool claims under PATH (a pool's claims znode), sorted, one a line
# (nothing while there is none).
claims() { zk ls "$1" 2> /dev/null | sort; }

# pool_hosts HOST...: loopback nodes for an ssh-pool, whose only authorised key is a new
# pool key ($T/pool_key); the cluster key ($T/cluster_key, CLUSTER_PUB) is left as it was.
pool_hosts() {
  "$KEYGEN" "$T/pool_key" "pool-key" || fail "keygen"
  cp "$T/cluster_key" "$T/cluster_key.saved"
  cp "$T/cluster_key.pub" "$T/cluster_key.pub.saved"
  cp "$T/pool_key" "$T/cluster_key"
  cp "$T/pool_key.pub" "$T/cluster_key.pub"
  CLUSTER_PUB=$(cat "$T/cluster_key.pub")
  CLUSTER_ID=hosts lb_create "$@"
  mv "$T/cluster_key.saved" "$T/cluster_key"
  mv "$T/cluster_key.pub.saved" "$T/cluster_key.pub"
  CLUSTER_PUB=$(cat "$T/cluster_key.pub")
}

# pool_hosts_json HOST...: those of pool_hosts' nodes as an ssh-pool provider lists its hosts
# (address, port, user, host key), a JSON array on one line.
pool_hosts_json() {
  local h
  for h in "$@"; do
    jq -c --arg hk "$(cut -d' ' -f1-2 "$(node_dir "$h")/ssh/host_ed25519_key.pub")" \
      '{address: .ipaddresses.access_v4, port: 22, user: "root", host_key: $hk}' "$KV/$h.json"
  done | jq -cs .
}
