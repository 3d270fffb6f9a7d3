#!/usr/bin/env bash
# A worker cut from a node but not from ZooKeeper (docs/operations.md "When the network
# fails"): container nodes on a host of their own ("nodes", scripts/stack nodes-host), each
# worker host with a leg to their bridge; a one-node zookeeper-ensemble is created while
# worker-1, the only worker, is cut from the node right after the node's create. worker-1
# keeps its session and its claims: the ssh task it takes cannot reach the node, its plugin
# gives up at its connect timeout, and the attempt is recorded failed with the reason; healed,
# the task's retry (engine.max_failures) reaches the node and the job succeeds. No attempt
# overlapped another; the node's delete leaves nothing behind.
. "$(dirname "$0")/../../testlib/container.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=6s
# The nodes' bridge is on the nodes' host (scripts/stack nodes-host); the workers take the
# plugin directory it makes (the container plugin entering that host).
WORKER_PLUGIN_DIR=$("$STACK" nodes-host --dir "$T" --host-conf "$T/host.conf" --plugin-dir "$DROVER_BUILD_DIR/plugins")
"$STACK" worker-leg worker-1 --dir "$T" --host-conf "$T/host.conf" > /dev/null
start_droverd 1
WORKER_PLUGINS=container,ssh CONCURRENCY=4 start_worker worker-1 \
  "worker.resources_dir = $DROVER_SOURCE_DIR/conf/catalog/resources" "worker.host_conf = $T/host.conf"
setup_tenant_from "$DROVER_SOURCE_DIR/conf/catalog"
r=$(api POST /v1/clusters '{"name":"zk","template":"zookeeper-ensemble","nodes":1,"provider":"container"}')
expect 202 "$r" '' "create a 1-node zookeeper-ensemble on a container node"
JID=$(body_of "$r" | jq -r .job.id)
CID=$(body_of "$r" | jq -r .cluster.id)
# node_addr: the node's address, from the plugin's claims (not a worker's leg).
node_addr() { grep -lv '^leg-' "$CT_ROOT"/.addresses/* 2> /dev/null | head -n 1 | xargs -r basename; }
created() { [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND action = 'create' AND status = 'succeeded'")" = 1 ]; }
wait_until 180 "the node's create to succeed" created
ADDR=$(node_addr)
[ -n "$ADDR" ] || fail "no node address claimed in $CT_ROOT/.addresses"
FID=$(nf cut worker-1 "$ADDR" --oneway)
pass "worker-1 cut from its node $ADDR (ZooKeeper still reached)"
failed_attempt() {
  why=$(psql_q "SELECT task_id || ': ' || coalesce(message, '') FROM task_attempts WHERE job_id = $JID AND status = 'failed' AND worker = 'worker-1' LIMIT 1")
  [ -n "$why" ]
}
why=
wait_until 120 "an attempt of worker-1's to fail on the cut" failed_attempt
grep -q 'event=claim-lost' "$T/worker-1.log" && fail "worker-1 lost a claim: it was cut from the node only"
nf heal "$FID" > /dev/null
pass "the attempt failed, worker-1 kept its session: $why"
wait_job "$JID" succeeded 300
# No two attempts of a task overlapped in time (as PostgreSQL recorded them: real plugins keep
# no record of their own), none recorded succeeded twice.
overlap=$(psql_q "SELECT a.task_id FROM task_attempts a JOIN task_attempts b ON a.job_id = b.job_id
  AND a.phase = b.phase AND a.task_id = b.task_id AND (a.attempt, a.run) < (b.attempt, b.run)
  WHERE a.started_at < coalesce(b.ended_at, now()) AND b.started_at < coalesce(a.ended_at, now()) LIMIT 5")
[ -z "$overlap" ] || fail "attempts that overlapped in time: $overlap"
check_attempts
r=$(api DELETE "/v1/clusters/$CID")
expect 202 "$r" '' "delete the cluster"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 180
check_tree_clean
pass "healed, the retry reached the node: the job succeeded, no attempt overlapped; the node deleted"
