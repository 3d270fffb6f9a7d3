# shellcheck shell=bash
# container.sh: helpers for the tests of the container provider (real unprivileged LXC
# containers). Source it instead of plugins.sh (which it sources): the same task(),
# run, merge, kv, on and known_host, with the container provider in place of loopback.
#
# Every test gets its own host settings ($T/host.conf: DROVER_HOST_CONF), so tests
# running side by side never share anything: its own container root ($T/containers), its
# own bridge (drvt<N>) and its own 10.251.<N>.0/24, N reserved machine-wide under
# /tmp/drover-container-nets. The image is the shared one (scripts/image, built once by
# the fixture test plugins_container_image). The EXIT trap deletes every node the test
# made, through the plugin, then the bridge, however the test ends.

# shellcheck source=plugins.sh
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

CT="$PLUGINS/container/container"
CT_ROOT="$T/containers"
CT_NET_LOCKS=/tmp/drover-container-nets
IMAGE_DIR=${DROVER_IMAGE_DIR:-/var/cache/drover/images}

# reserve_ct_net: a free 10.251.N.0/24 and bridge drvtN for this test (reserve_slot).
ct_net_candidate() { echo $((100 + RANDOM % 150)); }
reserve_ct_net() {
  reserve_slot "$CT_NET_LOCKS" ct_net_candidate || fail "no free 10.251.N.0/24 for the test"
  CT_NET="10.251.$SLOT.0/24"
  # shellcheck disable=SC2034 # the first three octets, for the tests
  CT_NET_PREFIX="10.251.$SLOT"
  CT_BRIDGE="drvt$SLOT"
  echo "$CT_NET_LOCKS/$SLOT" > "$T/ct-net.lock"
}
reserve_ct_net
cat > "$T/host.conf" << CONF
container.root = $CT_ROOT
container.image_dir = $IMAGE_DIR
container.bridge = $CT_BRIDGE
container.network = $CT_NET
CONF
export DROVER_HOST_CONF="$T/host.conf" DROVER_CHECKS=1

[ -f "$IMAGE_DIR/debian12/image.json" ] ||
  fail "no image in $IMAGE_DIR/debian12: the fixture test plugins_container_image builds it (scripts/image)"

# The tasks' provider (plugins.sh provider_json), and the hardware type's fields for every
# task (small: 1 CPU, 512 MiB), unless HW says otherwise.
PROVIDER=${PROVIDER:-container}
HW=${HW:-'{"image": "debian12", "cpus": "1", "memory": "512M", "flavor": "container"}'}

# ct_task TASKNAME NODE [ATTEMPT [INDEX [EXTRA_JQ]]]: task() with the hardware fields.
ct_task() {
  local extra=${5:-.}
  task "$1" "$2" "${3:-1}" "${4:-1}" ". * {config: $HW} | $extra"
}

# ct_create NODE...: container nodes (create_nodes).
ct_create() { create_nodes "$CT" ct_task "$@"; }

ct_dir() { echo "$CT_ROOT/$(kv "$1" '."provider-id"')"; }
# ct_id NODE [TENANT [CLUSTER]]: the id the plugin gives a node of the test's tasks (tenant
# acme, cluster $CLUSTER_ID): a keyed hash with the root's secret (plugins/container).
ct_id() {
  local h k
  h=$(printf '%s' "$CT_ROOT" | md5sum | cut -c1-6)
  k=$({ cat "$CT_ROOT/.secret"; printf '\n%s\n%s\n%s' "${2:-acme}" "${3:-${CLUSTER_ID:-c1}}" "$1"; } | sha256sum | cut -c1-20)
  echo "ct-$h-$k"
}
# known_host (plugins.sh) reads the host key under node_dir: the container's directory.
node_dir() { ct_dir "$1"; }
# The loopback helpers' pid bookkeeping: a container is not a process of the test.
record_node() { :; }

# ct_procs NAME CGROUP: host processes whose command line has NAME (an LXC monitor names
# its root and container) or whose cgroup path has CGROUP, one line each. One grep over
# all of /proc for each (a loop of reads per process is slow on a loaded machine).
ct_procs() {
  local f
  for f in $(grep -lasF -- "${1%% *}" /proc/[0-9]*/cmdline 2> /dev/null || true); do
    tr '\0' ' ' 2> /dev/null < "$f" | grep -qF -- "$1" && echo "process $(basename "$(dirname "$f")"): $(tr '\0' ' ' 2> /dev/null < "$f")"
  done
  for f in $(grep -lsF -- "$2" /proc/[0-9]*/cgroup 2> /dev/null || true); do
    echo "process $(basename "$(dirname "$f")") in cgroup $2"
  done
  return 0
}

# ct_leftovers ID ADDR: what is left of container node ID (address ADDR) on the host, one
# line each: process, mount, veth, cgroup, file, claim, owner record. Empty when nothing is.
ct_leftovers() {
  local id=$1 addr=$2 veth
  veth=$(printf 'dv%08x' "$(echo "$addr" | awk -F. '{print ($1 * 16777216) + ($2 * 65536) + ($3 * 256) + $4}')")
  ct_procs "$CT_ROOT $id" "lxc.payload.$id"
  grep -F "$CT_ROOT/$id" /proc/self/mountinfo | sed 's/^/mount /'
  ip link show "$veth" > /dev/null 2>&1 && echo "veth $veth"
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name "lxc.*.$id*" 2> /dev/null | sed 's/^/cgroup /'
  [ -e "$CT_ROOT/$id" ] && echo "file $CT_ROOT/$id"
  [ -e "$CT_ROOT/.addresses/$addr" ] && echo "claim $addr"
  [ -e "$CT_ROOT/.owners/$id" ] && echo "owner record $id"
  return 0
}

# Checks made inside a node by its container (lxc-attach: the node's namespaces and root, no
# SSH key needed; for tests where the engine holds the cluster's key). ID: the provider-id.
# ct_exec ID CMD...: run CMD in the node.
ct_exec() {
  local id=$1
  shift
  lxc-attach -P "$CT_ROOT" -n "$id" --clear-env -- "$@"
}
# ct_has ID REGEX: a process of the node (not a zombie) matches REGEX.
ct_has() { ct_exec "$1" ps -e -o stat= -o args= 2> /dev/null | grep -v '^Z' | grep -qE "$2"; }
# ct_four ID ADDR WORD: ZooKeeper's four-letter WORD asked inside node ID of ADDR:2181.
ct_four() {
  # shellcheck disable=SC2016 # expanded by the node's shell
  ct_exec "$1" bash -c '(exec 3<> "/dev/tcp/$1/2181" && printf "%s" "$2" >&3 && timeout 5 cat <&3) 2> /dev/null || true' \
    _ "$2" "$3" 2> /dev/null || true
}

# ct_root_leftovers: what is left on the host of any node of this test's container root
# ($CT_ROOT, bridge $CT_BRIDGE), one line each: node directory, address claim, owner record,
# mount, veth, cgroup, process (an LXC monitor naming the root, or one in a node's cgroup).
# Empty when nothing is. Node names carry a hash of the root (plugins/container).
ct_root_leftovers() {
  local h o1 o2 o3
  h=$(printf '%s' "$CT_ROOT" | md5sum | cut -c1-6)
  IFS=. read -r o1 o2 o3 <<< "$CT_NET_PREFIX"
  find "$CT_ROOT" -mindepth 1 -maxdepth 1 -name 'ct-*' 2> /dev/null | sed 's/^/file /'
  find "$CT_ROOT/.addresses" -type f 2> /dev/null | sed 's/^/claim /'
  find "$CT_ROOT/.owners" -type f 2> /dev/null | sed 's/^/owner record /'
  grep -F " $CT_ROOT/" /proc/self/mountinfo | sed 's/^/mount /'
  ip -o link show 2> /dev/null | grep -oE "dv$(printf '%02x%02x%02x' "$o1" "$o2" "$o3")[0-9a-f]{2}" | sed 's/^/veth /'
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name "lxc.*.ct-$h*" 2> /dev/null | sed 's/^/cgroup /'
  ct_procs "$CT_ROOT ct-$h" "ct-$h"
  return 0
}

cleanup_containers() {
  local rc=$? j id
  for j in "$CT_ROOT"/ct-*/node.json; do
    [ -f "$j" ] || continue
    id=$(jq -r .id "$j")
    jq -cn --arg id "$id" '{taskId: "0.0.1", taskName: "delete", config: {provider:
      {name: "container", providertype: "container"}, facts: {"provider-id": $id}}}' |
      "$CT" > /dev/null 2>> "$T/plugins.log" || echo "cleanup: delete $id failed" >&2
  done
  ip link del "$CT_BRIDGE" 2> /dev/null || true
  [ -f "$T/ct-net.lock" ] && rm -rf "$(cat "$T/ct-net.lock")"
  cleanup_nodes || true # plugins.sh's part: loopback nodes, if any, and their /24
  return $rc
}
trap cleanup_containers EXIT
