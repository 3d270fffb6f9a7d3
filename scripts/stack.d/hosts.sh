# shellcheck shell=bash disable=SC2154 # dir, top and the options are scripts/stack's
# stack.d/hosts.sh: the multi-host stack (scripts/stack up --hosts): every server, and every
# droverd, worker and HAProxy started on the stack later, on a host of its own: a network
# namespace with one veth on a private bridge and an address of its own, as separate machines
# would be. Sourced by scripts/stack (common.sh first).
#
# The network: 10.252.N.0/24, N (1-250) reserved machine-wide for the stack by an atomic
# mkdir of /tmp/drover-hosts-nets/N (its owner file names DIR), as the tests' node ranges are
# (testlib/plugins.sh reserve_slot); the container nodes keep 10.251.0.0/24.
# The bridge drvhN lives in the machine's own namespace with 10.252.N.1, the operator's
# address: the tests, `drover` and curl reach every host from there, and netfault never cuts
# it. Forwarding is off on the bridge and no host has a default route, so nothing leaves the
# /24: the range is never routed off the machine.
#
# A host is a namespace drvN-NAME (NAME: zk1, pg2, haproxy, droverd-1, worker-acme-1, ...)
# with lo and eth0 (the inside of the veth dhNxK, K its address's last byte, on the bridge);
# DIR/hosts/NAME holds its address, DIR/hosts/net the slot. host_prefix puts a command there
# with nsenter --net (only the network namespace: mounts, cgroups and /sys stay the
# machine's, which LXC needs); the command's pid is the program's own (nsenter execs).
#
# Servers listen on their host's address with their standard ports (ZooKeeper 2181, quorum
# 2888 and 3888, TLS 2281; PostgreSQL 5432; Patroni 8008), since no two share an address.
#
# Teardown (hosts_down, the last step of `down`, after every process is stopped): every
# namespace of the stack, with its veth and whatever netfault put inside (nft tables, tc
# qdiscs die with it), then the bridge and the reservation. A slot whose owner directory is
# gone is taken over, and its leftovers (namespaces drvN-*, bridge drvhN) deleted first.

HOSTS_LOCKS=/tmp/drover-hosts-nets

# hosts_on: this stack runs on hosts (up --hosts made DIR/hosts/net).
hosts_on() { [ -f "$dir/hosts/net" ]; }
hosts_slot() { cat "$dir/hosts/net"; }

# hosts_leftovers N: delete the namespaces drvN-*, the bridge drvhN and the placeholder
# drvnN (a dead stack's, or this one's at down).
hosts_leftovers() {
  local n=$1 ns
  for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep "^drv$n-" || true); do
    ip netns del "$ns" 2> /dev/null || true
  done
  ip link del "drvh$n" 2> /dev/null || true
  # The placeholder of the nodes' bridge (scripts/run --hosts, nodes_host).
  ip link del "drvn$n" 2> /dev/null || true
}

# hosts_up: reserve a slot, make the bridge; DIR/hosts/net names the slot.
hosts_up() {
  command -v nsenter > /dev/null && command -v nft > /dev/null || die "--hosts needs nsenter and nft (scripts/deps)"
  [ "$(id -u)" = 0 ] || die "--hosts needs root (network namespaces)"
  mkdir -p "$HOSTS_LOCKS" "$dir/hosts"
  local n owner
  for _ in $(seq 1 500); do
    n=$((1 + RANDOM % 250))
    if mkdir "$HOSTS_LOCKS/$n" 2> /dev/null; then
      echo "$dir" > "$HOSTS_LOCKS/$n/owner"
      break
    fi
    owner=$(cat "$HOSTS_LOCKS/$n/owner" 2> /dev/null) || continue # being made: not stale
    if [ ! -d "$owner" ] && mv "$HOSTS_LOCKS/$n" "$HOSTS_LOCKS/.stale.$$.$n" 2> /dev/null; then
      rm -rf "${HOSTS_LOCKS:?}/.stale.$$.$n"
    fi
    n=
  done
  [ -n "$n" ] || die "no free 10.252.N.0/24 for the hosts"
  hosts_leftovers "$n"
  echo "$n" > "$dir/hosts/net"
  echo 10 > "$dir/hosts/.next"
  ip link add "drvh$n" type bridge || die "cannot create the bridge drvh$n"
  ip addr add "10.252.$n.1/24" dev "drvh$n"
  echo 0 > "/proc/sys/net/ipv4/conf/drvh$n/forwarding"
  [ -e "/proc/sys/net/ipv6/conf/drvh$n/disable_ipv6" ] && echo 1 > "/proc/sys/net/ipv6/conf/drvh$n/disable_ipv6"
  ip link set "drvh$n" up
}

# host_ns NAME: the namespace of host NAME.
host_ns() { echo "drv$(hosts_slot)-$1"; }

# host_add NAME: the host NAME (made when missing); prints its address.
host_add() {
  local name=$1 n k ns addr
  [[ $name =~ ^[a-z][a-z0-9-]{0,40}$ ]] || die "host name \"$name\" is not [a-z][a-z0-9-]*"
  hosts_on || die "not a --hosts stack: $dir"
  if [ -f "$dir/hosts/$name" ]; then
    cat "$dir/hosts/$name"
    return 0
  fi
  n=$(hosts_slot)
  exec 7> "$dir/hosts/.lock"
  flock 7
  if [ -f "$dir/hosts/$name" ]; then
    cat "$dir/hosts/$name"
    return 0
  fi
  k=$(cat "$dir/hosts/.next")
  [ "$k" -le 254 ] || die "no address left in 10.252.$n.0/24"
  echo $((k + 1)) > "$dir/hosts/.next"
  ns="drv$n-$name"
  addr="10.252.$n.$k"
  ip netns add "$ns" || die "cannot create the namespace $ns"
  ip link add "dh${n}x$k" type veth peer name eth0 netns "$ns" || die "cannot create the veth of $name"
  ip link set "dh${n}x$k" master "drvh$n" up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  echo "$addr" > "$dir/hosts/$name"
  flock -u 7
  echo "$addr"
}

# host_addr NAME: the address of host NAME; 127.0.0.1 on a loopback stack.
host_addr() {
  if hosts_on; then cat "$dir/hosts/$1"; else echo 127.0.0.1; fi
}

# host_prefix NAME: HX, the words that put a command in host NAME's network namespace
# ("${HX[@]}" CMD...); empty on a loopback stack.
# shellcheck disable=SC2034 # HX is the callers'
host_prefix() {
  HX=()
  if hosts_on; then HX=(nsenter --net="/run/netns/$(host_ns "$1")" --); fi
  return 0
}

# hosts_list: one line per host: NAME ADDRESS NAMESPACE.
hosts_list() {
  hosts_on || return 0
  local f
  for f in "$dir"/hosts/*; do
    case "$(basename "$f")" in net | .*) continue ;; esac
    echo "$(basename "$f") $(cat "$f") $(host_ns "$(basename "$f")")"
  done
}

# hosts_down: every namespace of the stack, the bridge, the reservation.
hosts_down() {
  [ -f "$dir/hosts/net" ] || return 0
  local n
  n=$(hosts_slot)
  hosts_leftovers "$n"
  if [ "$(cat "$HOSTS_LOCKS/$n/owner" 2> /dev/null)" = "$dir" ]; then
    rm -rf "${HOSTS_LOCKS:?}/$n"
  fi
  rm -f "$dir/hosts/net"
}

# hosts_net: the stack's range, 10.252.N.0/24.
hosts_net() { echo "10.252.$(hosts_slot).0/24"; }

# ---- container nodes on hosts ---------------------------------------------------------------
# nodes_host CONF PLUGINS: the container nodes' own host "nodes" for the host settings CONF (a
# worker's worker.host_conf: container.bridge, container.network, container.root) and the
# built plugins in PLUGINS. Their bridge is made there, the container plugin runs there (a
# wrapper in DIR/plugins, which the workers take as their plugin directory, enters the host's
# namespace), and each worker host gets a leg on that bridge (worker_leg), so that every worker
# reaches every node and scripts/netfault can cut a worker from a node. Prints DIR/plugins.
#
# LXC tells a Linux bridge from an Open vSwitch one by its /sys/class/net entry, and nsenter
# --net leaves /sys the machine's: a placeholder of the same name stands in the machine's
# namespace, a bridge that is down, with no address and no port (deleted at down: by
# sweep_containers, which deletes an empty bridge of host.conf, and by hosts_leftovers).
nodes_host() {
  local conf=$1 plugins=$2 ns b p
  [ -f "$conf" ] || die "nodes-host: no host settings $conf"
  host_add nodes > /dev/null
  ns=$(host_ns nodes)
  b=$(conf_get container.bridge "$conf")
  [ -n "$b" ] || die "nodes-host: $conf names no container.bridge"
  ip link show "$b" > /dev/null 2>&1 || ip link add "$b" type bridge
  ip -n "$ns" link show "$b" > /dev/null 2>&1 || ip -n "$ns" link add "$b" type bridge
  ip -n "$ns" link set "$b" up
  rm -rf "$dir/plugins"
  mkdir -p "$dir/plugins/container"
  for p in "$plugins"/*/; do
    p=$(basename "$p")
    [ "$p" = container ] || ln -s "$plugins/$p" "$dir/plugins/$p"
  done
  cp "$plugins/container/plugin.json" "$dir/plugins/container/"
  printf '#!/bin/sh\n# The container plugin, run on the nodes'"'"' host (scripts/stack nodes-host).\nexec nsenter --net=/run/netns/%s -- %s "$@"\n' \
    "$ns" "$plugins/container/container" > "$dir/plugins/container/container"
  chmod 755 "$dir/plugins/container/container"
  echo "$dir/plugins"
}

# worker_leg NAME CONF: host NAME's leg on the nodes' bridge (nodes_host first): a veth from
# its host (nodes0) to the bridge, with an address of container.network from the top down,
# claimed in the plugin's address claims (container.root/.addresses, "leg-NAME") so that no
# node takes it. Prints the address.
worker_leg() {
  local name=$1 conf=$2 ns wns b net root a i leg
  ns=$(host_ns nodes)
  host_add "$name" > /dev/null
  wns=$(host_ns "$name")
  b=$(conf_get container.bridge "$conf")
  net=$(conf_get container.network "$conf")
  root=$(conf_get container.root "$conf")
  if ip -n "$wns" link show nodes0 > /dev/null 2>&1; then
    ip -n "$wns" -4 -o addr show dev nodes0 | awk '{print $4}' | cut -d/ -f1
    return 0
  fi
  mkdir -p "$root/.addresses"
  for i in $(seq 254 -1 200); do
    a="${net%.*}.$i"
    (set -o noclobber && echo "leg-$name" > "$root/.addresses/$a") 2> /dev/null && break
    a=
  done
  [ -n "$a" ] || die "worker-leg: no address left for $name in $net"
  leg="wl$(hosts_slot)x${a##*.}"
  ip -n "$ns" link add "$leg" type veth peer name nodes0 netns "$wns"
  ip -n "$ns" link set "$leg" master "$b" up
  ip -n "$wns" addr add "$a/${net#*/}" dev nodes0
  ip -n "$wns" link set nodes0 up
  echo "$a"
}
