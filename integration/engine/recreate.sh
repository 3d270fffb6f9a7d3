#!/usr/bin/env bash
# A failed create made again with the failed layout excluded (seed 001): the
# sleep plugin fails every install on small machines, so the create of a
# template that prefers small ones rolls back; `recreate` solves the cluster
# afresh without that node layout, on big machines, and succeeds. Refused:
# a recreate of a cluster that is not failed (409), and one with no layout
# left (422, nothing written).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
start_worker worker-1
setup_tenant

body=$(jq -cn --argjson c "$(sleep_config '{"fail_on": {"hardwaretype": "small", "task": "install"}}')" \
  '{name: "r", template: "twohw", nodes: 2, config: $c}')
r=$(api POST /v1/clusters "$body")
expect 202 "$r" '' "create on small machines"
CID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" rolled-back 120
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "failed" and (.nodes | length) == 0' "the failed create left a failed, empty cluster"
pass "the create failed on small machines and was rolled back"

expect 409 "$(api POST "/v1/clusters/$CID/expand" '{"nodes": 1}')" '.error.code == "conflict"' "a failed cluster takes no expand"
r=$(api POST "/v1/clusters/$CID/recreate" '{}')
expect 202 "$r" '.job.operation == "create" and (.job.request.target.excluded | length) == 1 and .job.request.target.excluded[0].hardwaretype == "small" and ([.cluster.layout.nodes[].hardwaretype] | unique) == ["big"]' "recreate: solved again without the small layout"
JID=$(body_of "$r" | jq -r .job.id)
wait_job "$JID" succeeded 120
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active" and .size == 2 and ([.nodes[] | select(.status == "active" and .hardwaretype == "big" and (.properties["provider-id"] | startswith("sleep-")))] | length) == 2' "the cluster is active on big machines, with fresh key-values"
[ "$(psql_q "SELECT count(*) FROM nodes WHERE cluster_id = $CID")" = 2 ] || fail "node rows: $(psql_q "SELECT id, status, hardwaretype FROM nodes WHERE cluster_id = $CID")"
pass "recreate: the cluster runs on the layout the solver chose instead"

expect 409 "$(api POST "/v1/clusters/$CID/recreate" '{}')" '.error.code == "conflict"' "an active cluster is not made again"

# Both layouts fail: the second recreate has nothing left to choose.
body=$(jq -cn --argjson c "$(sleep_config '{"fail_on": {"task": "install"}}')" \
  '{name: "r2", template: "twohw", nodes: 1, config: $c}')
r=$(api POST /v1/clusters "$body")
C2=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" rolled-back 120
r=$(api POST "/v1/clusters/$C2/recreate" '{}')
expect 202 "$r" '' "first recreate of r2"
wait_job "$(body_of "$r" | jq -r .job.id)" rolled-back 120
jobs=$(psql_q "SELECT count(*) FROM jobs WHERE cluster_id = $C2")
expect 422 "$(api POST "/v1/clusters/$C2/recreate" '{}')" '.error.code == "unsatisfiable"' "no layout is left"
[ "$(psql_q "SELECT count(*) FROM jobs WHERE cluster_id = $C2")" = "$jobs" ] || fail "a refused recreate wrote a job"
pass "recreate refused: an active cluster (409), no layout left (422, nothing written)"
