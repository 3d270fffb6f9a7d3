# shellcheck shell=bash
# container_lib.sh: helpers for the tests of the container provider (real unprivileged LXC
# containers). Source it instead of plugins_lib.sh (which it sources): the same task(),
# run, merge, kv, on and known_host, with the container provider in place of loopback.
#
# Every test gets its own host settings ($T/host.conf: DROVER_HOST_CONF), so tests
# running side by side never share anything: its own container root ($T/containers), its
# own bridge (drvt<N>) and its own 10.251.<N>.0/24, N reserved machine-wide under
# /tmp/drover-container-nets. The image is the shared one (scripts/image, built once by
# the fixture test plugins_container_image). The EXIT trap deletes every node the test
# made, through the plugin, then the bridge, however the test ends.

# shellcheck source=plugins_lib.sh
. "$DROVER_SOURCE_DIR/integration/plugins/plugins_lib.sh"

CT="$PLUGINS/container/container"
CT_ROOT="$T/containers"
CT_NET_LOCKS=/tmp/drover-container-nets
IMAGE_DIR=${DROVER_IMAGE_DIR:-/var/cache/drover/images}

# reserve_ct_net: a free 10.251.N.0/24 and bridge drvtN for this test.
reserve_ct_net() {
  mkdir -p "$CT_NET_LOCKS"
  local n owner
  for _ in $(seq 1 300); do
    n=$((100 + RANDOM % 150))
    owner=$(cat "$CT_NET_LOCKS/$n/owner" 2> /dev/null || echo /nonexistent)
    if mkdir "$CT_NET_LOCKS/$n" 2> /dev/null || [ ! -d "$owner" ]; then
      echo "$T" > "$CT_NET_LOCKS/$n/owner"
      CT_NET="10.251.$n.0/24"
      # shellcheck disable=SC2034 # the first three octets, for the tests
      CT_NET_PREFIX="10.251.$n"
      CT_BRIDGE="drvt$n"
      echo "$CT_NET_LOCKS/$n" > "$T/ct-net.lock"
      return 0
    fi
  done
  fail "no free 10.251.N.0/24 for the test"
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

# The hardware type's fields for every task (small: 1 CPU, 512 MiB), unless HW says otherwise.
provider_json() { jq -cn '{name: "container", providertype: "container"}'; }
HW=${HW:-'{"image": "debian12", "cpus": "1", "memory": "512M", "flavor": "container"}'}

# ct_task TASKNAME NODE [ATTEMPT [INDEX [EXTRA_JQ]]]: task() with the hardware fields.
ct_task() {
  local extra=${5:-.}
  task "$1" "$2" "${3:-1}" "${4:-1}" ". * {config: $HW} | $extra"
}

# ct_create NODE...: create and confirm each node (in parallel), failing the test on error.
ct_create() {
  local n pids=() rc=0
  for n in "$@"; do
    (ct_task create "$n" | "$CT" > "$T/create-$n.json" 2>> "$T/plugins.log") &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  for n in "$@"; do
    cp "$T/create-$n.json" "$T/last.json"
    [ "$(last .status)" = ok ] || fail "create $n: $(last .message)"
    merge "$n"
    ct_task confirm "$n" | run "$CT" || fail "confirm $n: $(last .message)"
    merge "$n"
    known_host "$n"
  done
  return $rc
}

ct_dir() { echo "$CT_ROOT/$(kv "$1" '."provider-id"')"; }
# known_host (plugins_lib) reads the host key under node_dir: the container's directory.
node_dir() { ct_dir "$1"; }
# The loopback helpers' pid bookkeeping: a container is not a process of the test.
record_node() { :; }

# ct_leftovers ID ADDR: what is left of container node ID (address ADDR) on the host, one
# line each: process, mount, veth, cgroup, file, claim. Empty when nothing is.
ct_leftovers() {
  local id=$1 addr=$2 veth p
  veth=$(printf 'dv%08x' "$(echo "$addr" | awk -F. '{print ($1 * 16777216) + ($2 * 65536) + ($3 * 256) + $4}')")
  for p in /proc/[0-9]*; do
    tr '\0' ' ' < "$p/cmdline" 2> /dev/null | grep -qF "$CT_ROOT $id" && echo "process ${p#/proc/}: $(tr '\0' ' ' < "$p/cmdline")"
    grep -qs "lxc.payload.$id" "$p/cgroup" && echo "process ${p#/proc/} in the node's cgroup"
  done
  grep -F "$CT_ROOT/$id" /proc/self/mountinfo | sed 's/^/mount /'
  ip link show "$veth" > /dev/null 2>&1 && echo "veth $veth"
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name "lxc.*.$id*" 2> /dev/null | sed 's/^/cgroup /'
  [ -e "$CT_ROOT/$id" ] && echo "file $CT_ROOT/$id"
  [ -e "$CT_ROOT/.addresses/$addr" ] && echo "claim $addr"
  return 0
}

cleanup_containers() {
  local rc=$? j id
  for j in "$CT_ROOT"/ct-*/node.json; do
    [ -f "$j" ] || continue
    id=$(jq -r .id "$j")
    jq -cn --arg id "$id" '{taskId: "0.0.1", taskName: "delete", config: {provider:
      {name: "container", providertype: "container"}, "provider-id": $id}}' |
      "$CT" > /dev/null 2>> "$T/plugins.log" || echo "cleanup: delete $id failed" >&2
  done
  ip link del "$CT_BRIDGE" 2> /dev/null || true
  [ -f "$T/ct-net.lock" ] && rm -rf "$(cat "$T/ct-net.lock")"
  [ -f "$T/net.lock" ] && rm -rf "$(cat "$T/net.lock")"
  return $rc
}
trap cleanup_containers EXIT
