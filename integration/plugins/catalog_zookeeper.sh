#!/usr/bin/env bash
# The shipped catalogue's ZooKeeper ensemble, for real on container nodes (PROVIDER:
# container, the default, or loopback): create a 3-node cluster from template
# zookeeper-ensemble (solver, planner, provider, ssh automator, the catalogue's
# scripts installing from the node's own Debian packages), check it with real clients
# inside the nodes and from the host (ruok, srvr: one leader and two followers; a znode
# listed through every server), then stop, start, configure with and without a
# restart, and delete, each checked on the nodes themselves.
. "$DROVER_SOURCE_DIR/testlib/catalog.sh"

TEMPLATE=zookeeper-ensemble
LAYOUT="$CL/target.json"

layout_solve 3
run_op create --target "$LAYOUT"
LAYOUT="$CL/layout.json"
cp "$CL/target.json" "$LAYOUT"

# ADDRS: the servers' addresses (the layout's nodes keep theirs until the delete).
mapfile -t ADDRS < <(for n in $(layout_nodes); do kv "$n" .ipaddresses.access_v4; done)
ruok_all() {
  local a
  for a in "${ADDRS[@]}"; do [ "$(zk_four "$a" ruok)" = imok ] || return 1; done
}

# --- the ensemble answers real clients ---
ruok_all || fail "a server does not answer ruok"
wait_quorum "${ADDRS[@]}"
zkhosts=$(printf '%s\n' "${ADDRS[@]}" | sed 's/$/:2181/' | paste -sd, -)
"$BIN/drover" zk ls / --zk "$zkhosts" | grep -q zookeeper || fail "drover zk cannot list / on the ensemble"
for a in "${ADDRS[@]}"; do
  "$BIN/drover" zk ls / --zk "$a:2181" | grep -q zookeeper || fail "server $a does not serve reads"
done
ZK=/srv/drover/zookeeper
for n in $(layout_nodes); do
  node_has "$n" "QuorumPeerMain" || fail "no ZooKeeper server process on $n"
  node_cat "$n" "$ZK/conf/zoo.cfg" > "$T/zoo-$n.cfg"
  grep -q "^clientPortAddress=$(kv "$n" .ipaddresses.access_v4)$" "$T/zoo-$n.cfg" ||
    fail "$n's server is not bound to its address"
  [ "$(grep -c '^server\.' "$T/zoo-$n.cfg")" = 3 ] || fail "$n does not list 3 servers"
  [ "$(node_four "$n" ruok)" = imok ] || fail "$n's server does not answer ruok inside the node"
done
modes=$(for n in $(layout_nodes); do node_four "$n" srvr | awk -F': ' '/^Mode/ {print $2}'; done | sort | tr '\n' ' ')
[ "$modes" = "follower follower leader " ] || fail "srvr inside the nodes: $modes"
myids=$(for n in $(layout_nodes); do node_cat "$n" "$ZK/data/myid"; done | sort | tr '\n' ' ')
[ "$myids" = "1 2 3 " ] || fail "myids: $myids"
if [ "$PROVIDER" = container ]; then
  # The server is the node's own Debian package (the image's), not the host's binary.
  node_has node-1 'java .*-cp /srv/drover/zookeeper/conf:/usr/share/java/zookeeper.jar' ||
    fail "node-1's server does not run the node's zookeeper.jar"
  [ "$(on node-1 nproc)" = 1 ] || fail "node-1 (small) has nproc $(on node-1 nproc)"
fi
pass "ensemble of 3 on $PROVIDER nodes: ruok and srvr inside every node (one leader, two followers), reads through every server"

# --- stop: no server process left; start: the quorum is back ---
run_op stop --existing "$LAYOUT"
for n in $(layout_nodes); do node_has "$n" QuorumPeerMain && fail "$n still runs ZooKeeper"; done
ruok_all && fail "a stopped server answers"
pass "stop: every server gone"
run_op start --existing "$LAYOUT"
wait_quorum "${ADDRS[@]}"
pass "start: the quorum is back"

# --- configure without a restart: the file changes, the process does not ---
pid1=$(node_cat node-1 "$ZK/run/zookeeper.pid")
USER_CONFIG='{"zookeeper": {"tick_ms": 700}}' run_op configure --existing "$LAYOUT"
node_cat node-1 "$ZK/conf/zoo.cfg" | grep -q '^tickTime=700$' ||
  fail "configure did not write the new tickTime"
[ "$(node_cat node-1 "$ZK/run/zookeeper.pid")" = "$pid1" ] ||
  fail "configure without restart restarted the server"
pass "configure: new zoo.cfg, same process"

# --- configure with a restart: a new process with the new config, quorum kept ---
USER_CONFIG='{"zookeeper": {"tick_ms": 700}}' run_op configure-restart --existing "$LAYOUT"
[ "$(node_cat node-1 "$ZK/run/zookeeper.pid")" != "$pid1" ] ||
  fail "configure-restart did not restart the server"
wait_quorum "${ADDRS[@]}"
for a in "${ADDRS[@]}"; do
  zk_four "$a" conf | grep -q '^tickTime=700$' || fail "server $a does not run with tickTime 700"
done
pass "configure-restart: every server runs the new config, quorum kept"

# --- delete: nothing left ---
roots=$(for n in $(layout_nodes); do node_dir "$n"; done)
gone=$(for n in $(layout_nodes); do echo "$(kv "$n" '."provider-id"') $(kv "$n" .ipaddresses.access_v4)"; done)
run_op delete --existing "$LAYOUT"
if [ "$PROVIDER" = container ]; then
  while read -r id a; do
    left=$(ct_leftovers "$id" "$a")
    [ -z "$left" ] || fail "delete left of $id: $left"
  done <<< "$gone"
  pass "delete: no process, mount, veth, cgroup, file or claim left"
  pass "zookeeper-ensemble catalogue on containers"
  exit 0
fi
for a in "${ADDRS[@]}"; do
  listening "$a:2181" && fail "$a:2181 still in use"
  listening "$a:22" && fail "$a:22 still in use"
done
for d in $roots; do [ -e "$d" ] && fail "$d is left"; done
# shellcheck disable=SC2009 # every process whose command line names the directory, shown
ps -eo args | grep -F "$NODES" | grep -v grep && fail "a process of the deleted cluster is left"
[ -z "$(ls -A "$NODES/.addresses")" ] || fail "address claims left"
pass "delete: no process, directory, claim or address left"
pass "zookeeper-ensemble catalogue"
