#!/usr/bin/env bash
# The whole product on real machines: droverd's engine and two workers run the
# shipped catalogue's zookeeper-ensemble (conf/catalog) with the real plugins
# (loopback provider, ssh automator) through the API, as a user would:
#
#   create 3 nodes  ->  every server answers ruok, srvr shows one leader and two
#                       followers, the tree is read through every server
#   stop / start    ->  no server answers, then the quorum is back
#   restart         ->  a rolling restart (zookeeper-server's stop and start are
#                       one-by-one): srvr asked of every server throughout, at
#                       least two of the three answer at every moment, and each
#                       server was restarted (a new process)
#   delete          ->  nothing of the nodes is left: no process, directory or
#                       address in use; the cluster is gone from the API
#
# and a create that cannot succeed (a service whose install fails) is rolled
# back: its nodes are deleted, nothing is left.
. "$(dirname "$0")/../plugins/plugins_lib.sh"
. "$(dirname "$0")/../api/api_lib.sh"
. "$(dirname "$0")/engine_lib.sh"

SESSION=6s
RESOURCES="$DROVER_SOURCE_DIR/conf/catalog/resources"

start_droverd 1
SETTINGS=$(loopback_settings)
WORKER_PLUGINS=loopback,ssh CONCURRENCY=8 start_worker worker-1 "worker.resources_dir = $RESOURCES" "$SETTINGS"
WORKER_PLUGINS=loopback,ssh CONCURRENCY=8 start_worker worker-2 "worker.resources_dir = $RESOURCES" "$SETTINGS"

expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
# The loopback provider's root and network are the workers' (loopback_settings), not the
# tenant's: the shipped catalogue's provider names neither.
catalogue_json "$DROVER_SOURCE_DIR/conf/catalog" > "$T/catalog.json"
expect 200 "$(api POST /v1/import "@$T/catalog.json")" '' "import the shipped catalogue"

r=$(api POST /v1/clusters '{"name":"zk","template":"zookeeper-ensemble","nodes":3}')
expect 202 "$r" '' "create a 3-node zookeeper-ensemble"
CID=$(body_of "$r" | jq -r .cluster.id)
JID=$(body_of "$r" | jq -r .job.id)
wait_job "$JID" succeeded 600
pass "create: job $JID succeeded ($(job_field "$JID" '.progress.total') tasks)"

c=$(api GET "/v1/clusters/$CID")
expect 200 "$c" '.status == "active" and ([.nodes[] | select(.properties.ipaddresses.access_v4 != null and .properties.ssh_host_key != null)] | length == 3)' \
  "nodes carry their addresses and host keys"
mapfile -t ADDRS < <(body_of "$c" | jq -r '.nodes[].properties.ipaddresses.access_v4')

wait_quorum "${ADDRS[@]}"
for a in "${ADDRS[@]}"; do [ "$(zk_four "$a" ruok)" = imok ] || fail "server $a does not answer ruok"; done
zkhosts=$(printf '%s\n' "${ADDRS[@]}" | sed 's/$/:2181/' | paste -sd,)
"$BIN/drover" zk ls / --zk "$zkhosts" | grep -q zookeeper || fail "drover zk cannot list / on the ensemble"
for a in "${ADDRS[@]}"; do
  "$BIN/drover" zk ls / --zk "$a:2181" | grep -q zookeeper || fail "server $a does not serve reads"
done
pass "the ensemble works: ruok from every server, one leader and two followers, reads through each"

r=$(api POST "/v1/clusters/$CID/stop" '{}')
expect 202 "$r" '' "stop"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
[ "$(zk_modes "${ADDRS[@]}")" = "" ] || fail "servers still answer after stop: $(zk_modes "${ADDRS[@]}")"
r=$(api POST "/v1/clusters/$CID/start" '{}')
expect 202 "$r" '' "start"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
wait_quorum "${ADDRS[@]}"
pass "stop and start: the servers went away and came back to a quorum"

# A rolling restart keeps a quorum: a node's stop-then-start finishes before the next node's
# stop (docs/catalog.md "Rolling restarts"). A sampler asks srvr of every server until the job
# ends; a server answers srvr while its process runs, serving or in an election. zk_pids: the
# servers' pids as their nodes' pid files say (one line each, in node order).
zk_pids() { find "$NODES" -path '*/zookeeper/run/zookeeper.pid' | sort | xargs cat; }
before=$(zk_pids)
sample() {
  local a alive serving out
  while [ ! -e "$T/roll.stop" ] && kill -0 $$ 2> /dev/null; do
    alive=0 serving=0
    for a in "${ADDRS[@]}"; do
      out=$(zk_four "$a" srvr)
      [ -n "$out" ] && alive=$((alive + 1))
      case $out in *Mode:*) serving=$((serving + 1)) ;; esac
    done
    echo "$alive $serving" >> "$T/roll.samples"
  done
}
sample &
SAMPLER=$!
r=$(api POST "/v1/clusters/$CID/restart" '{}')
expect 202 "$r" '' "restart"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
touch "$T/roll.stop"
wait "$SAMPLER"
wait_quorum "${ADDRS[@]}"
n=$(wc -l < "$T/roll.samples")
[ "$n" -ge 10 ] || fail "only $n samples during the restart"
low=$(awk '$1 < 2' "$T/roll.samples" | wc -l)
[ "$low" = 0 ] || fail "$low of $n samples had fewer than 2 of 3 servers up: $(awk '$1 < 2' "$T/roll.samples" | sort | uniq -c | paste -sd' ')"
after=$(zk_pids)
[ "$(wc -l <<< "$before")" = 3 ] && [ "$(paste -d' ' <(echo "$before") <(echo "$after") | awk '$1 != $2' | wc -l)" = 3 ] ||
  fail "not every server was restarted: pids before $(paste -sd' ' <<< "$before"), after $(paste -sd' ' <<< "$after")"
pass "rolling restart: $n samples, 2 or 3 servers up in each ($(awk '$2 >= 2' "$T/roll.samples" | wc -l) with a serving quorum), every server restarted"

dirs_before=$(find "$NODES" -mindepth 1 -maxdepth 1 -not -name '.*' | wc -l)
[ "$dirs_before" = 3 ] || fail "$dirs_before node directories, expected 3"
r=$(api DELETE "/v1/clusters/$CID")
expect 202 "$r" '' "delete"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
left=$(find "$NODES" -mindepth 1 -maxdepth 1 -not -name '.*' | wc -l)
[ "$left" = 0 ] || fail "node directories left after delete: $(ls "$NODES")"
for a in "${ADDRS[@]}"; do listening "$a" && fail "something still listens on $a"; done
claims=$(find "$NODES/.addresses" -type f 2> /dev/null | wc -l)
[ "$claims" = 0 ] || fail "$claims address claims left"
expect 404 "$(api GET "/v1/clusters/$CID")" '' "the deleted cluster is gone"
pass "delete: no node directory, process, listener or address claim left"

# A create whose install fails is rolled back: its machines are deleted too.
mkdir -p "$T/badres"
cp -r "$RESOURCES"/. "$T/badres/"
printf '#!/bin/sh\necho "install refused by the test" >&2\nexit 3\n' > "$T/badres/zookeeper-server/install.sh"
chmod +x "$T/badres/zookeeper-server/install.sh"
stop_worker worker-1
stop_worker worker-2
WORKER_PLUGINS=loopback,ssh CONCURRENCY=8 start_worker worker-3 "worker.resources_dir = $T/badres"
r=$(api POST /v1/clusters '{"name":"zk-bad","template":"zookeeper-ensemble","nodes":2}')
expect 202 "$r" '' "create a cluster whose install fails"
BAD=$(body_of "$r" | jq -r .job.id)
wait_job "$BAD" rolled-back 600
left=$(find "$NODES" -mindepth 1 -maxdepth 1 -not -name '.*' | wc -l)
[ "$left" = 0 ] || fail "the rolled-back create left nodes: $(ls "$NODES")"
job_field "$BAD" .error | grep -q "install" || fail "the job's error does not name the failed install: $(job_field "$BAD" .error)"
pass "a failed create is rolled back: its nodes are deleted, the error names the install"
