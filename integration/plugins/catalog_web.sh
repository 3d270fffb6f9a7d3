#!/usr/bin/env bash
# The shipped catalogue's web tier, for real on container nodes (PROVIDER: container,
# the default, or loopback; every check made inside the nodes): HAProxy in
# front of nginx nodes. Create, check with a real client through the balancer,
# configure-restart with a new message, expand and shrink (with the balancer
# reconfigured), add and remove a service (a ZooKeeper ensemble on the nginx
# nodes), restart, delete; and a failed create (a fault injected in one
# node's nginx start) rolled back, leaving no node, process or address.
. "$DROVER_SOURCE_DIR/testlib/catalog.sh"

TEMPLATE=web-tier
LAYOUT="$CL/target.json"
layout_solve 3
run_op create --target "$LAYOUT"
LAYOUT="$CL/layout.json"
cp "$CL/target.json" "$LAYOUT"

lb=$(with_service haproxy)
[ "$(echo "$lb" | wc -w)" = 1 ] || fail "expected one haproxy node, got: $lb"
for n in $(with_service nginx); do [ "$n" = "$lb" ] && fail "haproxy and nginx share $n"; done
LB_URL="http://$(kv "$lb" .ipaddresses.access_v4)/"


want_backends "$(nginx_nodes)"
grep -q "message=Hello from Drover's web tier" <<< "$(curl -s "$LB_URL")" || fail "the page's message"
node_has "$lb" "haproxy" || fail "no haproxy process on $lb"
for n in $(with_service nginx); do node_has "$n" "nginx: master" || fail "no nginx on $n"; done
pass "create: haproxy on $lb spreads requests over $(nginx_nodes)"

# --- configure with a restart: a new message everywhere ---
export USER_CONFIG='{"nginx": {"message": "second edition"}}'
run_op configure-restart --existing "$LAYOUT"
for i in 1 2 3 4; do
  grep -q "message=second edition" <<< "$(curl -s "$LB_URL")" || fail "an old page after configure-restart"
done
pass "configure-restart: every backend serves the new page"

# --- expand to 4, then reconfigure the balancer: three backends ---
layout_solve 4 --existing "$LAYOUT"
change_layout expand
[ "$(with_service nginx | wc -l)" = 3 ] || fail "expand did not add an nginx node"
run_op configure-restart --existing "$LAYOUT" --services haproxy
want_backends "$(nginx_nodes)"
pass "expand + configure-restart of haproxy: requests spread over $(nginx_nodes)"

# --- shrink back to 3: the node that leaves is deleted, the balancer follows ---
before=$(layout_nodes | tr '\n' ' ')
layout_solve 3 --existing "$LAYOUT"
gone=$(comm -23 <(layout_nodes | sort) <(jq -r '.nodes[].id' "$CL/target.json" | sort))
[ -n "$gone" ] || fail "shrink removes no node of $before"
gone_dir=$(node_dir "$gone")
gone_addr=$(kv "$gone" .ipaddresses.access_v4)
change_layout shrink
[ -e "$gone_dir" ] && fail "shrink left $gone's directory"
listening "$gone_addr:80" && fail "shrink left $gone's nginx listening"
run_op configure-restart --existing "$LAYOUT" --services haproxy
want_backends "$(nginx_nodes)"
pass "shrink: $gone deleted, requests spread over $(nginx_nodes)"

# --- add a service (a ZooKeeper ensemble on the nginx nodes), then remove it ---
cp "$LAYOUT" "$CL/before.json"
# The cluster's nodes while the services arrive: the target's (the nginx nodes, as the solver
# places the ensemble; zookeeper-server cannot coexist with haproxy).
jq '.nodes |= map(if (.services | index("nginx")) then .services += ["zookeeper-server"] else . end)' \
  "$CL/before.json" > "$LAYOUT"
run_op add-services --existing "$CL/before.json" --services zookeeper-server
for n in $(with_service zookeeper-server); do
  a=$(kv "$n" .ipaddresses.access_v4)
  for _ in $(seq 300); do
    mode=$( ( (exec 3<> "/dev/tcp/$a/2181" && printf srvr >&3 && timeout 3 cat <&3) 2> /dev/null || true) |
      awk -F': ' '/^Mode/ {print $2}')
    case "$mode" in leader | follower) break ;; esac
    sleep 0.1
  done
  case "$mode" in leader | follower) ;; *) fail "zookeeper on $n: mode \"$mode\"" ;; esac
done
want_backends "$(nginx_nodes)"
pass "add-services zookeeper-server: an ensemble on $(with_service zookeeper-server | tr '\n' ' ')"
zk_nodes=$(with_service zookeeper-server)
run_op remove-services --existing "$LAYOUT" --services zookeeper-server
jq '.nodes |= map(.services -= ["zookeeper-server"])' "$LAYOUT" > "$LAYOUT.new" && mv "$LAYOUT.new" "$LAYOUT"
for n in $zk_nodes; do
  node_has "$n" QuorumPeerMain && fail "remove-services left ZooKeeper running on $n"
  node_test "$n" /srv/drover/zookeeper && fail "remove-services left files on $n"
done
want_backends "$(nginx_nodes)"
pass "remove-services zookeeper-server: stopped and removed, the web tier untouched"

# --- restart (stop > start) ---
run_op restart --existing "$LAYOUT"
want_backends "$(nginx_nodes)"
pass "restart: served again"

# --- delete ---
dirs=$(for n in $(layout_nodes); do node_dir "$n"; done)
addrs=$(for n in $(layout_nodes); do kv "$n" .ipaddresses.access_v4; done)
run_op delete --existing "$LAYOUT"
for d in $dirs; do [ -e "$d" ] && fail "$d left"; done
for a in $addrs; do listening "$a:80" && fail "$a:80 in use"; listening "$a:22" && fail "$a:22 in use"; done
[ -z "$(ls -A "$PROV_ROOT/.addresses")" ] || fail "address claims left"
pass "delete: nothing left"

# --- a failed create is rolled back: a fault in one node's nginx start ---
export DROVER_RESOURCES="$T/faulty"
cp -r "$CATALOG/resources" "$DROVER_RESOURCES"
cat >> "$DROVER_RESOURCES/lib/drover.sh" << 'EOF'
if [ "${DROVER_SERVICE:-}/${DROVER_TASK:-}/${DROVER_NODE_ID:-}" = "nginx/start/node-3" ]; then
  echo "injected fault: nginx will not start on node-3" >&2
  exit 9
fi
EOF
unset USER_CONFIG
LAYOUT="$CL/target.json"
layout_solve 3
plan create --target "$LAYOUT"
exec_plan && fail "the faulty create succeeded"
[ "$FAILED_TASK" = node-3/nginx/start ] || fail "failed at $FAILED_TASK: $FAILED_MESSAGE"
echo "$FAILED_MESSAGE" | grep -q "exit 9: injected fault" || fail "failure message: $FAILED_MESSAGE"
pass "the faulty create fails at $FAILED_TASK: $FAILED_MESSAGE"

# The rollback: the inverse of every task done, in reverse order (docs/planner.md:
# create > delete, install > remove, start > stop; the rest has nothing to undo).
tac "$CL/done" | while read -r i; do
  jq -c --argjson i "$i" '.tasks[$i] | .action as $a |
    {create: "delete", install: "remove", start: "stop"}[$a] as $inv |
    select($inv) | {id: ("undo/" + .id), node, service, action: $inv,
      type: (if $inv == "delete" then .type else "shell" end),
      fields: (if $inv == "delete" then .fields else
        {script: "\(.service)/\($inv).sh", data: ["lib/drover.sh"]} end)}' "$CL/plan.json"
done | jq -s '{tasks: (. as $t | [range(0; $t | length) as $k |
  $t[$k] + {deps: (if $k == 0 then [] else [$t[$k - 1].id] end)}])}' > "$CL/rollback.json"
cp "$CL/rollback.json" "$CL/plan.json"
exec_plan || fail "rollback: $FAILED_TASK failed: $FAILED_MESSAGE"
pass "rollback: $(jq '.tasks | length' "$CL/rollback.json") inverse tasks done"
# (the host's own bookkeeping stays: the allocation lock, the claims and owner records
# directories, the secret that keys the node ids)
left=$(find "$PROV_ROOT" -mindepth 1 -maxdepth 1 ! -name .lock ! -name .addresses ! -name .owners \
  ! -name .secret -printf '%f ' | sed 's/ $//')
[ -z "$left" ] || fail "the rollback left node directories: $left"
[ -z "$(ls -A "$PROV_ROOT/.addresses")" ] || fail "the rollback left address claims"
[ -z "$(ls -A "$PROV_ROOT/.owners" 2> /dev/null)" ] || fail "the rollback left owner records: $(ls -A "$PROV_ROOT/.owners")"
# shellcheck disable=SC2009 # every process whose command line names the directory, shown
ps -eo args | grep -F "$PROV_ROOT" | grep -v grep && fail "the rollback left a process"
pass "rolled back: no node, process or address left"
pass "web-tier catalogue"
