#!/usr/bin/env bash
# The engine and real workers on container nodes (the container provider, host settings
# from the workers' worker.host_conf): the shipped catalogue's zookeeper-ensemble created
# through the API while workers are SIGKILLed twice:
#
#   mid-create   worker-1 dies in a node's create: the create runs again on worker-2
#                (cleanup first), and the job ends with exactly three containers and
#                claims (nothing of the killed attempt is left);
#   mid-install  worker-2 dies while the three zookeeper-server installs run inside the
#                nodes (held there by a gate the test opens); both workers are started
#                again: each install is delivered again, finds its run still running in
#                the node and re-attaches to it (not run again, not harvested after the
#                end), and the job goes on to start the ensemble in those nodes.
#
# The nodes keep running across their workers' deaths and restarts, a later job reaches
# them; the cluster's delete leaves nothing on the host.
. "$(dirname "$0")/../../testlib/container.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

SESSION=6s
# The shipped catalogue's resources, with a gate in zookeeper-server's install: it counts
# its runs in the node, then waits (at most 5 minutes) until the test opens the gate, so
# that a delivery made after its worker's death finds the run still running however slow
# the machine is (the loopback form: integration/plugins/reattach.sh).
RESOURCES="$T/resources"
cp -r "$DROVER_SOURCE_DIR/conf/catalog/resources" "$RESOURCES"
sed -i '/^\. lib\/drover.sh$/a\
echo "$DROVER_TASK_ID" >> /var/lib/drover-test-runs\
i=0\
while [ ! -e /var/lib/drover-test-open ] \&\& [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done' \
  "$RESOURCES/zookeeper-server/install.sh"
grep -q drover-test-open "$RESOURCES/zookeeper-server/install.sh" || fail "the install's gate is not in place"
ct_worker() {
  WORKER_PLUGINS=container,ssh CONCURRENCY=8 start_worker "$1" "worker.resources_dir = $RESOURCES" \
    "worker.host_conf = $T/host.conf"
}
start_droverd 1
# Only worker-1 at first, so that a create surely runs there (with both, a loaded CI machine
# saw worker-2 take every create: the test waited 120 s for one on worker-1 and failed);
# worker-2 comes once worker-1 runs one, before worker-1 is killed.
ct_worker worker-1
setup_tenant_from "$DROVER_SOURCE_DIR/conf/catalog"

r=$(api POST /v1/clusters '{"name":"zk","template":"zookeeper-ensemble","nodes":3,"provider":"container"}')
expect 202 "$r" '' "create a 3-node zookeeper-ensemble on containers"
CID=$(body_of "$r" | jq -r .cluster.id)
JID=$(body_of "$r" | jq -r .job.id)
create_on_worker_1() {
  victim=$(psql_q "SELECT id FROM tasks WHERE job_id = $JID AND action = 'create' AND status = 'running' AND worker = 'worker-1' LIMIT 1")
  [ -n "$victim" ]
}
victim=""
wait_until 120 "a create to run on worker-1" create_on_worker_1
ct_worker worker-2
kill -9 "$(pid_of worker-1)"
pass "worker-1 SIGKILLed while it ran $victim"

# Mid-install: the three installs run in their nodes (each counted its run), all on
# worker-2, the only one alive; it is SIGKILLed and both workers are started again.
runs_in() { ct_exec "$1" cat /var/lib/drover-test-runs 2> /dev/null || true; }
nodes_up() { mapfile -t CTS < <(lxc-ls -P "$CT_ROOT" --running | tr -s ' ' '\n' | grep .); }
installs_running() {
  local id
  nodes_up
  [ "${#CTS[@]}" = 3 ] || return 1
  for id in "${CTS[@]}"; do [ -n "$(runs_in "$id")" ] || return 1; done
  [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND action = 'install' AND service = 'zookeeper-server' AND status = 'running' AND worker = 'worker-2'")" = 3 ]
}
CTS=()
wait_until 300 "the three zookeeper-server installs to run in their nodes on worker-2" installs_running
# waits_in ID: the pids of the plugin's "wait for the run" commands in node ID (sshrun.c's
# wait_sh, whose script alone begins its work with H="$1"; end=...; ps shows its first line).
waits_in() {
  # shellcheck disable=SC2016 # the script's own text
  ct_exec "$1" ps -e -o pid= -o args= 2> /dev/null | grep -F 'H="$1"; end=$((' | awk '{print $1}' | sort
}
declare -A old_waits
for id in "${CTS[@]}"; do old_waits[$id]=$(waits_in "$id"); done
kill -9 "$(pid_of worker-2)"
ct_worker worker-1
ct_worker worker-2
# re_delivered ID: a new delivery waits for the run in node ID (a wait command that was not
# there at the kill): its probe found the run running.
re_delivered() { [ -n "$(comm -13 <(echo "${old_waits[$1]}") <(waits_in "$1"))" ]; }
for id in "${CTS[@]}"; do wait_until 120 "a new delivery of $id's install to wait for its run" re_delivered "$id"; done
for id in "${CTS[@]}"; do ct_exec "$id" touch /var/lib/drover-test-open; done
wait_job "$JID" succeeded 600
for id in "${CTS[@]}"; do
  [ "$(runs_in "$id" | wc -l)" = 1 ] || fail "the install ran $(runs_in "$id" | wc -l) times in $id: $(runs_in "$id" | paste -sd' ')"
done
# Every zookeeper-server install: a lost delivery on worker-2, then one of the same attempt
# that re-attached (its message says so), and nothing else.
att=$(psql_q "SELECT a.task_id || ' ' || string_agg(a.attempt || ':' || a.worker || ':' || a.status || ':' ||
  CASE WHEN a.message LIKE '%re-attached%' THEN 'reattached' WHEN a.message LIKE '%harvested%' THEN 'harvested'
  WHEN a.message LIKE '%ran it%' THEN 'ran' ELSE '-' END, ',' ORDER BY a.started_at)
  FROM task_attempts a JOIN tasks t ON t.job_id = a.job_id AND t.id = a.task_id
  WHERE a.job_id = $JID AND a.phase = 'f' AND t.action = 'install' AND t.service = 'zookeeper-server'
  GROUP BY a.task_id ORDER BY 1")
[ "$(wc -l <<< "$att")" = 3 ] || fail "zookeeper-server install attempts: $att"
while read -r task rows; do
  [[ $rows =~ ^1:worker-2:lost:-,1:worker-[12]:succeeded:reattached$ ]] || fail "the install $task: $rows"
done <<< "$att"
n=$(find "$CT_ROOT" -mindepth 1 -maxdepth 1 -name 'ct-*' | wc -l)
c=$(find "$CT_ROOT/.addresses" -type f | wc -l)
[ "$n" = 3 ] && [ "$c" = 3 ] || fail "$n node directories and $c claims for 3 nodes"
[ "$(lxc-ls -P "$CT_ROOT" --running | wc -w)" = 3 ] || fail "running: $(lxc-ls -P "$CT_ROOT" --running)"
rows=$(psql_q "SELECT string_agg(worker || ':' || status, ',' ORDER BY started_at) FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")
[[ $rows == worker-1:lost,worker-2:* ]] || fail "attempts of $victim: $rows"
mapfile -t ADDRS < <(body_of "$(api GET "/v1/clusters/$CID")" | jq -r '.nodes[].properties.ipaddresses.access_v4')
wait_quorum "${ADDRS[@]}"
pass "create: job $JID succeeded; $victim ran again on worker-2 ($rows); each install re-attached, ran once in its node (${att//$'\n'/; }); 3 containers, 3 claims, one leader and two followers"

# The workers died and came back: the nodes kept running; a later job reaches them.
r=$(api POST "/v1/clusters/$CID/stop" '{}')
expect 202 "$r" '' "stop"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
[ "$(zk_modes "${ADDRS[@]}")" = "" ] || fail "servers still answer after stop"
for id in "${CTS[@]}"; do ct_has "$id" QuorumPeerMain && fail "$id still runs ZooKeeper after stop"; done
pass "the containers outlived their workers; a later job (stop) reached them"

gone=$(body_of "$(api GET "/v1/clusters/$CID")" | jq -r '.nodes[].properties | "\(."provider-id") \(.ipaddresses.access_v4)"')
r=$(api DELETE "/v1/clusters/$CID")
expect 202 "$r" '' "delete"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
while read -r id a; do
  left=$(ct_leftovers "$id" "$a")
  [ -z "$left" ] || fail "delete left of $id: $left"
done <<< "$gone"
[ -z "$(find "$CT_ROOT" -mindepth 1 -maxdepth 1 -name 'ct-*')" ] || fail "node directories left: $(ls "$CT_ROOT")"
pass "delete: no process, mount, veth, cgroup, file or claim left"
pass "container nodes through the engine"
