#!/usr/bin/env bash
# Issue 22, 6: a final write sent again after its COMMIT's answer was lost (the owner
# retries it) must change nothing once the job row says it ended. Job 1 creates a 2-node
# cluster, job 2 expands it to 3, job 3 shrinks it back to 2; then job 2's final write is
# replayed (final_replay, fenced with job 2's own token as the engine's is). The cluster,
# its nodes, the snapshots and the audit log must be as job 3 left them (before the guard
# the replay made the cluster 3 nodes again, the removed node's row active). Then again in
# a batch with job 1's final write, as the engine sends the final writes of jobs that end
# together (engine__pg_multi_work): the same.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

REPLAY="$DROVER_BUILD_DIR/integration/engine/final_replay"

start_droverd 1
start_worker worker-1
setup_tenant
read -r CID J1 <<< "$(create_cluster c1 2)"
wait_job "$J1" succeeded 120
op() { # NAME BODY: runs the operation to success, prints its job id
  local r
  r=$(api POST "/v1/clusters/$CID/$1" "$2")
  expect 202 "$r" '' "$1" > /dev/null
  body_of "$r" | jq -r .job.id
}
J2=$(op expand '{"nodes":1}')
wait_job "$J2" succeeded 120
J3=$(op shrink '{"nodes":1}')
wait_job "$J3" succeeded 120

cluster_state() {
  psql_q "SELECT c.status, c.config::text, c.updated_at,
    (SELECT string_agg(n.id || ':' || n.status || ':' || n.updated_at, ',' ORDER BY n.id) FROM nodes n WHERE n.cluster_id = c.id),
    (SELECT count(*) FROM snapshots s WHERE s.cluster_id = c.id),
    (SELECT count(*) FROM audit_log a WHERE a.entity_id = '$J2'),
    (SELECT ended_at FROM jobs WHERE id = $J2)
    FROM clusters c WHERE c.id = $CID"
}
before=$(cluster_state)
"$REPLAY" "$DROVER_PG" "$J2" || fail "the replayed final write failed"
after=$(cluster_state)
[ "$before" = "$after" ] || fail "the replayed final write of job $J2 changed what job $J3 left:
before: $before
after:  $after"
expect 200 "$(api GET "/v1/clusters/$CID")" '.size == 2 and ([.nodes[] | select(.status == "active")] | length == 2)' "the cluster as job $J3 left it"
pass "a replayed final write changed nothing: job $J3's cluster, nodes, snapshots and audit stand"

"$REPLAY" "$DROVER_PG" "$J1" "$J2" || fail "the replayed final writes in one batch failed"
after=$(cluster_state)
[ "$before" = "$after" ] || fail "job $J2's final write replayed in a batch changed what job $J3 left:
before: $before
after:  $after"
pass "replayed in a batch with job $J1's, job $J2's final write changed nothing either"
