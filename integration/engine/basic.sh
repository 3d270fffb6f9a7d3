#!/usr/bin/env bash
# The engine end to end: one droverd and two workers running the sleep plugin take a
# cluster through create, expand, configure, stop, start, restart, shrink and delete.
# Each job succeeds; every task ran once; the nodes carry their providers' key-values;
# attempts, audit and snapshots are in PostgreSQL; the provider's password reached the
# plugin opened and is nowhere in clear; nothing of a finished job stays in ZooKeeper.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
start_worker worker-1
start_worker worker-2
setup_tenant

read -r CID JID <<< "$(create_cluster c1 3 '{"duration_ms": 20}')"
wait_job "$JID" succeeded 90
j=$(api GET "/v1/jobs/$JID")
expect 200 "$j" '.progress.done == .progress.total and .progress.total > 30 and ([.tasks[] | select(.status != "succeeded" and .status != "skipped")] | length == 0) and .owner == "droverd-1"' "create: every task succeeded"
total=$(body_of "$j" | jq '[.tasks[] | select(.action != "anchor")] | length')
ran=$(grep -c ' ok [01]$' "$RUNS/runs.log")
[ "$ran" = "$total" ] || fail "the plugin ran $ran tasks successfully, the plan has $total"
check_runs
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active" and .size == 3 and (.nodes | length == 3) and ([.nodes[] | select(.status == "active" and (.properties["provider-id"] | startswith("sleep-")) and .properties.hostname != null)] | length == 3) and (.layout.nodes | length == 3) and .layout.nodes[0].id == "node-1"' "cluster active, nodes with their key-values"
[ "$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND status = 'succeeded'")" = "$total" ] ||
  fail "attempt rows: $(psql_q "SELECT status, count(*) FROM task_attempts WHERE job_id = $JID GROUP BY 1")"
[ "$(psql_q "SELECT string_agg(action, ',' ORDER BY id) FROM audit_log WHERE entity_id = '$JID' AND action LIKE 'job.%'")" = "job.started,job.succeeded" ] ||
  fail "audit: $(psql_q "SELECT string_agg(action, ',') FROM audit_log WHERE entity_id = '$JID'")"
[ "$(psql_q "SELECT count(*) FROM snapshots WHERE job_id = $JID")" = 1 ] || fail "no snapshot"
check_tree_clean
pass "create: 3 nodes, $total tasks each run once, key-values merged, history in PostgreSQL, tree clean"

# The provider's password: sealed in PostgreSQL, never in ZooKeeper or a log in clear.
psql_q "SELECT body::text FROM entities WHERE name = 'fake'" | grep -q 's3cret-provider-password' &&
  fail "the provider's password is stored in clear"
grep -q 's3cret-provider-password' <<< "$(pg_dump "$DROVER_PG" 2>/dev/null)" && fail "the password is in the database in clear"
grep -l 's3cret-provider-password' "$T"/*.log && fail "the password is in a log"
pass "secrets: sealed at rest, opened for the plugin only (the plugin checked it), in no log"

for op in 'expand {"nodes":1} 4' 'configure {"config":{"sleep":{"duration_ms":5,"record_dir":"'"$RUNS"'","exclusive_dir":"'"$RUNS"'","clear_secret":true}}} 4' \
  'stop {} 4' 'start {} 4' 'restart {} 4' 'shrink {"nodes":1} 3'; do
  read -r name body size <<< "$op"
  r=$(api POST "/v1/clusters/$CID/$name" "$body")
  expect 202 "$r" '' "$name"
  J=$(body_of "$r" | jq -r .job.id)
  wait_job "$J" succeeded 90
  want=active
  [ "$name" = stop ] && want=stopped
  expect 200 "$(api GET "/v1/clusters/$CID")" ".status == \"$want\" and .size == $size" "cluster after $name"
  pass "$name: succeeded, cluster size $size"
done
check_runs
expect 200 "$(api GET "/v1/clusters/$CID")" '[.nodes[] | select(.status == "active")] | length == 3' "three active nodes after the shrink"
# The final write: the target's rows active, the removed node's row deleted, none left behind.
rows=$(psql_q "SELECT status || ':' || count(*) FROM nodes WHERE cluster_id = $CID GROUP BY status ORDER BY 1" | paste -sd' ')
[ "$rows" = "active:3 deleted:1" ] || fail "node rows after the shrink: $rows"

# Snapshots: the state after each successful operation, newest first; one with its state.
expect 200 "$(api GET "/v1/clusters/$CID/snapshots")" '.items | length == 7 and .[0].operation == "shrink" and .[0].nodes == 3 and .[-1].operation == "create" and .[-1].job == "'"$JID"'" and ([.[] | select(.operation == "expand")][0].nodes == 4)' "snapshots of the cluster"
expect 200 "$(api GET "/v1/clusters/$CID/snapshots/$JID")" '.job == "'"$JID"'" and .operation == "create" and .state.cluster.id == '"$CID"' and (.state.nodes | length == 3) and (.state.cluster | has("secrets") | not)' "the create's snapshot"
expect 404 "$(api GET "/v1/clusters/$CID/snapshots/999999")" '.error.code == "not-found"' "a snapshot that is not there"
expect 404 "$(api GET "/v1/clusters/999999/snapshots")" '.error.code == "not-found"' "snapshots of a cluster that is not there"
snaps=$(DROVER_URL="http://127.0.0.1:$PORT" DROVER_TOKEN=$TOKEN "$BIN/drover" cluster snapshots "$CID" 2>&1) || fail "drover cluster snapshots: $snaps"
[ "$(awk 'NR == 2 { print $2 }' <<< "$snaps")" = shrink ] || fail "drover cluster snapshots: $snaps"
pass "snapshots: seven, newest first, one with its state (no secrets), 404s; the CLI lists them"

r=$(api DELETE "/v1/clusters/$CID")
expect 202 "$r" '' "delete"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 90
[ "$(psql_q "SELECT status FROM clusters WHERE id = $CID")" = deleted ] || fail "cluster not deleted"
deletes=$(grep -c '/delete .* ok [01]$' "$RUNS/runs.log")
[ "$deletes" = 4 ] || fail "$deletes machine deletes ran (4 machines were made: 3, one expand, one shrunk)"
check_tree_clean
check_runs
pass "delete: every machine deleted once, cluster deleted, tree clean"
