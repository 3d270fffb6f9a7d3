#!/usr/bin/env bash
# inflight_bytes.sh: what one in-flight task costs ZooKeeper, for engine.max_in_flight's
# default (docs/configuration.md, docs/engine.md "In flight"). Run under scripts/with-stack
# (bench/run inflight-bytes).
#
# One job of NODES nodes (the engine test catalogue's template "single", default 400) with
# no worker at all, so that every task the owner dispatches stays queued: first with
# engine.max_in_flight = LOW (20), then, the owner restarted with HIGH (220), the same job
# with that many in flight. ZooKeeper's own count (mntr: zk_approximate_data_size, the bytes
# of every znode's data, and zk_znode_count) is read once the queue holds exactly LOW, then
# HIGH items; the difference over HIGH - LOW is what one more in-flight task costs, the job's
# fixed part (its announcement, state, context, nodes map, task log) cancelled out. Prints
#   inflight: per task B bytes (N znodes); item I bytes; job at HIGH: J bytes
# PROVIDERMAP_BYTES (default 0): a string of that many bytes in the image type's
# providermap, to show how a tenant's entity fields reach every item.
. "$DROVER_SOURCE_DIR/testlib/test-lib.sh"
. "$DROVER_SOURCE_DIR/testlib/api.sh"
. "$DROVER_SOURCE_DIR/testlib/engine.sh"

NODES=${NODES:-400} LOW=${LOW:-20} HIGH=${HIGH:-220}
mntr() { zk_4lw mntr | awk -v k="$1" '$1 == k { print $2 }'; }
Q=/drover/queues/acme/default
items() {
  local s n=0
  for s in $(zk ls "$Q/items" 2> /dev/null); do n=$((n + $(zk ls "$Q/items/$s" | grep -c . || true))); done
  echo "$n"
}
items_are() { [ "$(items)" = "$1" ]; }

start_droverd 1 "engine.max_in_flight = $LOW"
setup_tenant
if [ "${PROVIDERMAP_BYTES:-0}" -gt 0 ]; then
  pad=$(head -c "$PROVIDERMAP_BYTES" /dev/zero | tr '\0' x)
  catalogue_json "$CATALOG" | jq --arg p "$pad" '.imagetypes |= map(.providermap.fake.pad = $p)' > "$T/cat.json"
  expect 200 "$(api POST /v1/import "@$T/cat.json")" '' "import the padded catalogue"
fi
base=$(mntr zk_approximate_data_size)
r=$(api POST /v1/clusters "$(jq -cn --argjson n "$NODES" '{name: "b1", template: "single", nodes: $n}')")
expect 202 "$r" '' "create the cluster"
wait_until 300 "$LOW items queued" items_are "$LOW"
b1=$(mntr zk_approximate_data_size) z1=$(mntr zk_znode_count)
kill "$(pid_of droverd-1)"
wait_exit droverd-1 60 > /dev/null || fail "droverd-1 did not stop"
PORT=
start_droverd 2 "engine.max_in_flight = $HIGH"
wait_until 300 "$HIGH items queued" items_are "$HIGH"
sleep 2 # (the nodes map and state are written with the dispatch; let the last multi-op land)
b2=$(mntr zk_approximate_data_size) z2=$(mntr zk_znode_count)
one=$(zk ls "$Q/items/s00" | head -1)
item=$(zk get "$Q/items/s00/$one" | wc -c)
echo "inflight: per task $(((b2 - b1) / (HIGH - LOW))) bytes ($(((z2 - z1) / (HIGH - LOW))) znodes);" \
  "item $item bytes; job at $HIGH: $((b2 - base)) bytes; nodes=$NODES providermap_bytes=${PROVIDERMAP_BYTES:-0}"
