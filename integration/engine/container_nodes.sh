#!/usr/bin/env bash
# The engine and real workers on container nodes (the container provider, host settings
# from the workers' worker.host_conf): the shipped catalogue's zookeeper-ensemble created
# through the API while a worker is SIGKILLed in the middle of a node's create. The create
# runs again on the other worker (cleanup first), the job succeeds with exactly three
# containers and claims (nothing of the killed attempt is left), the nodes keep running
# across the killed worker's restart and a later job reaches them; the cluster's delete
# leaves nothing on the host.
. "$(dirname "$0")/../plugins/container_lib.sh"
. "$(dirname "$0")/../api/api_lib.sh"
. "$(dirname "$0")/engine_lib.sh"

SESSION=6s
RESOURCES="$DROVER_SOURCE_DIR/conf/catalog/resources"
start_droverd 1
for w in worker-1 worker-2; do
  WORKER_PLUGINS=container,ssh CONCURRENCY=8 start_worker "$w" "worker.resources_dir = $RESOURCES" \
    "worker.host_conf = $T/host.conf"
done
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
catalogue_json "$DROVER_SOURCE_DIR/conf/catalog" > "$T/catalog.json"
expect 200 "$(api POST /v1/import "@$T/catalog.json")" '' "import the shipped catalogue"

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
kill -9 "$(pid_of worker-1)"
pass "worker-1 SIGKILLed while it ran $victim"
wait_job "$JID" succeeded 600
rows=$(psql_q "SELECT string_agg(worker || ':' || status, ',' ORDER BY started_at) FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")
[[ $rows == worker-1:lost,worker-2:* ]] || fail "attempts of $victim: $rows"
n=$(find "$CT_ROOT" -mindepth 1 -maxdepth 1 -name 'ct-*' | wc -l)
c=$(find "$CT_ROOT/.addresses" -type f | wc -l)
[ "$n" = 3 ] && [ "$c" = 3 ] || fail "$n node directories and $c claims for 3 nodes"
[ "$(lxc-ls -P "$CT_ROOT" --running | wc -w)" = 3 ] || fail "running: $(lxc-ls -P "$CT_ROOT" --running)"
mapfile -t ADDRS < <(body_of "$(api GET "/v1/clusters/$CID")" | jq -r '.nodes[].properties.ipaddresses.access_v4')
wait_quorum "${ADDRS[@]}"
pass "create: job $JID succeeded ($rows); 3 containers, 3 claims, one leader and two followers"

# worker-1 back (a restart): the nodes kept running; a later job reaches them.
WORKER_PLUGINS=container,ssh CONCURRENCY=8 start_worker worker-1 "worker.resources_dir = $RESOURCES" \
  "worker.host_conf = $T/host.conf"
[ "$(lxc-ls -P "$CT_ROOT" --running | wc -w)" = 3 ] || fail "a container stopped with its worker"
r=$(api POST "/v1/clusters/$CID/stop" '{}')
expect 202 "$r" '' "stop"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 300
[ "$(zk_modes "${ADDRS[@]}")" = "" ] || fail "servers still answer after stop"
pass "the containers outlived their worker; a later job (stop) reached them"

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
