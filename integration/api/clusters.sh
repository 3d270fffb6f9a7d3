#!/usr/bin/env bash
# Clusters and jobs through the API: a create is recorded with a pending job,
# which the engine runs (a worker with the noop plugins); bad inputs
# (malformed JSON, wrong types, missing fields, unknown template, oversized
# body, unsatisfiable layout) each get the documented status and leave
# nothing behind; operations on a busy cluster get 409; pause, resume and
# cancel are requests the owner acts on; and a second tenant sees nothing of
# the first.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a "http.max_body = 1m"
# A worker running every task at once (the noop plugins): jobs end quickly.
start_noop_worker worker-a acme
for t in acme globex; do
  expect 201 "$(api POST /v1/tenants "{\"name\":\"$t\"}" "$SUPER")" '' "tenant $t"
done
ADMIN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
USER=$(body_of "$(api POST /v1/users '{"name":"bob","role":"user"}' "$ADMIN")" | jq -r .token)
USER2=$(body_of "$(api POST /v1/users '{"name":"carol","role":"user"}' "$ADMIN")" | jq -r .token)
OTHER=$(body_of "$(api POST /v1/users '{"name":"olga","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
TOKEN=$ADMIN
catalogue_json "$FIXTURES" > "$T/catalogue.json"
expect 200 "$(api POST /v1/import "@$T/catalogue.json")" '' "import"
pass "two tenants; acme has the catalogue"

counts() { psql_q "SELECT (SELECT count(*) FROM clusters) || '/' || (SELECT count(*) FROM jobs)"; }

# A create is recorded with a pending job.
r=$(api POST /v1/clusters '{"name":"web1","template":"lamp","nodes":3,"provider":"rackspace"}' "$USER")
expect 202 "$r" '.cluster.status == "pending" and .job.status == "pending" and .job.operation == "create" and .cluster.template == "lamp" and .cluster.template_version == 1' "create cluster"
CID=$(body_of "$r" | jq -r .cluster.id)
JID=$(body_of "$r" | jq -r .job.id)
# The layout is the solved one (entries with a count) until the job's final write, which
# records one entry per node; on a loaded machine the noop workers may finish the job first.
expect 200 "$(api GET "/v1/clusters/$CID" '' "$USER")" '.name == "web1" and .size == 3 and (.services | length > 0) and (.layout.nodes | map(.count // 1) | add) == 3' "get cluster (with the solved layout)"
expect 200 "$(api GET "/v1/jobs/$JID" '' "$USER")" '(.status == "pending" or .status == "running" or .status == "succeeded") and .cluster == "'"$CID"'"' "get job"
expect 200 "$(api GET /v1/clusters '' "$USER")" '.items | length == 1' "list clusters"
api_wait_job "$JID" succeeded "$USER"
expect 200 "$(api GET "/v1/jobs/$JID?tasks=none" '' "$USER")" '(has("tasks") | not) and .progress.done == .progress.total and .progress.total > 0' "a job without its tasks"
expect 400 "$(api GET "/v1/jobs/$JID?tasks=some" '' "$USER")" '.error.field == "tasks"' "tasks=some"
expect 200 "$(api GET "/v1/clusters/$CID" '' "$USER")" '.status == "active" and (.nodes | length) == 3' "the engine made the cluster"
[ "$(psql_q "SELECT count(*) FROM audit_log WHERE action = 'cluster.create' AND entity_id = '$CID'")" = 1 ] ||
  fail "no audit entry for the create"
pass "cluster create recorded with a pending job (202), then run by the engine"

# Bad inputs: each with its status, code and field, and nothing written.
before=$(counts)
bad() { # WANT CODE FIELD BODY WHAT
  expect "$1" "$(api POST /v1/clusters "$4" "$USER")" ".error.code == \"$2\" and (.error.field // \"\") == \"$3\" and (.error.message | length > 0)" "$5"
}
bad 400 malformed "" '{"name": "x", "template": ' "malformed JSON"
bad 400 malformed "" '"just a string"' "not an object"
bad 400 invalid nodes '{"name":"x","template":"lamp","nodes":"three"}' "nodes as a string"
bad 400 invalid name '{"name":5,"template":"lamp","nodes":1}' "name as a number"
bad 400 invalid services '{"name":"x","template":"lamp","nodes":1,"services":"apache"}' "services not a list"
bad 400 invalid config '{"name":"x","template":"lamp","nodes":1,"config":[]}' "config not an object"
bad 400 invalid template '{"name":"x","nodes":1}' "missing template"
bad 400 invalid nodes '{"name":"x","template":"lamp"}' "missing nodes"
bad 400 invalid name '{"template":"lamp","nodes":1}' "missing name"
bad 400 invalid nodes '{"name":"x","template":"lamp","nodes":0}' "zero nodes"
bad 422 unknown-reference template '{"name":"x","template":"no-such-template","nodes":1}' "unknown template"
bad 422 unknown-reference provider '{"name":"x","template":"lamp","nodes":1,"provider":"nowhere"}' "unknown provider"
bad 422 unsatisfiable services '{"name":"x","template":"lamp","nodes":1,"provider":"rackspace","services":["hadoop-hdfs-namenode"]}' "service outside the template"
bad 422 unsatisfiable nodes '{"name":"x","template":"hadoop-singlenode","nodes":5,"provider":"rackspace"}' "more nodes than the template allows"
TOKEN=$ADMIN
api POST /v1/services '{"name":"a1","provisioner":{"actions":{}}}' > /dev/null
api POST /v1/services '{"name":"b1","provisioner":{"actions":{}}}' > /dev/null
expect 201 "$(api POST /v1/clustertemplates '{"name":"tight","compatibility":{"services":["a1","b1"]},"defaults":{"services":["a1","b1"],"provider":"rackspace","hardwaretype":"standard-small","imagetype":"centos6"},"constraints":{"layout":{"cantcoexist":[["a1","b1"]]},"services":{"a1":{"quantities":{"min":2}},"b1":{"quantities":{"min":2}}}}}')" '' "template tight"
before=$(counts)
expect 422 "$(api POST /v1/clusters '{"name":"x","template":"tight","nodes":3}' "$USER")"   '.error.code == "unsatisfiable" and (.error.message | test("^no layout: "))' "unsatisfiable layout (the solver's reason)"
r=$(api POST /v1/clusters '{"name":"t4","template":"tight","nodes":4}' "$USER")
expect 202 "$r" '.cluster.layout.nodes | length == 2' "the same template with enough nodes"
T4=$(body_of "$r" | jq -r .cluster.id)
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded "$USER"
# Layout changes are solved against the cluster as it is: a shrink that would
# break a quantity is refused with the solver's reason, and records nothing.
before_t4=$(counts)
expect 422 "$(api POST "/v1/clusters/$T4/shrink" '{"nodes":1}' "$USER")" \
  '.error.code == "unsatisfiable" and (.error.message | test("^no layout: "))' "shrink below a service's minimum"
[ "$(counts)" = "$before_t4" ] || fail "a refused shrink wrote rows"
r=$(api POST "/v1/clusters/$T4/expand" '{"nodes":2}' "$USER")
expect 202 "$r" '.job.operation == "expand"' "expand t4 by 2"
expect 200 "$(api GET "/v1/jobs/$(body_of "$r" | jq -r .job.id)" '' "$USER")" \
  '.request.target.size == 6 and (.request.target.layout.nodes | map(.count) | add) == 6' \
  "the expand's job carries the solved target layout"
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded "$USER"
expect 200 "$(api GET "/v1/clusters/$T4" '' "$USER")" '.size == 6' "t4 expanded"
before=$(counts)
bad 409 conflict name '{"name":"web1","template":"lamp","nodes":1,"provider":"rackspace"}' "name in use"
head -c 1100000 /dev/zero | tr '\0' 'a' | jq -Rc '{name: "big", template: "lamp", nodes: 1, config: {blob: .}}' > "$T/big.json"
code=$(curl -s -o "$T/big.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $USER" \
  --data-binary "@$T/big.json" "http://127.0.0.1:$PORT/v1/clusters")
[ "$code" = 413 ] || fail "oversized body: expected 413, got $code"
[ "$(counts)" = "$before" ] || fail "bad inputs wrote rows: $before -> $(counts)"
pass "bad inputs: 400 malformed/invalid with the field, 422 unknown-reference/unsatisfiable (solver's reason), 409, 413; nothing written"

# Preview: solve and plan, nothing written.
expect 200 "$(api POST /v1/plans '{"template":"hadoop-distributed","nodes":5,"provider":"rackspace"}' "$USER")" \
  '(.layout.nodes | map(.count) | add) == 5 and .tasks > 0 and (.plan.tasks | length) == .tasks' "preview"
code=$(curl -s -o "$T/plan.dot" -w '%{http_code}' -X POST -H "Authorization: Bearer $USER" \
  --data-binary '{"template":"lamp","nodes":2,"provider":"rackspace"}' "http://127.0.0.1:$PORT/v1/plans?format=dot")
[ "$code" = 200 ] && grep -q '^digraph' "$T/plan.dot" || fail "preview as dot: $code $(head -c 200 "$T/plan.dot")"
expect 422 "$(api POST /v1/plans '{"template":"tight","nodes":3}' "$USER")" '.error.code == "unsatisfiable"' "unsatisfiable preview"
[ "$(counts)" = "$before" ] || fail "a preview wrote rows"
pass "POST /v1/plans: layout and task DAG (json, dot), nothing written"

# Operations: busy cluster -> 409; pause, resume, cancel. No worker from here on:
# jobs stay running, so their requests can be watched.
stop_worker worker-a
r=$(api POST "/v1/clusters/$CID/expand" '{"nodes":2}' "$USER")
expect 202 "$r" '.job.operation == "expand"' "expand web1"
XJ=$(body_of "$r" | jq -r .job.id)
api_wait_job "$XJ" running "$USER"
expect 409 "$(api POST "/v1/clusters/$CID/expand" '{"nodes":2}' "$USER")" '.error.code == "conflict" and (.error.message | test("busy"))' "operation on a busy cluster"
expect 409 "$(api POST "/v1/jobs/$XJ/resume" '' "$USER")" '.error.code == "conflict"' "resume a running job"
expect 202 "$(api POST "/v1/jobs/$XJ/pause" '' "$USER")" '.control == "pause"' "pause"
api_wait_job "$XJ" paused "$USER"
expect 409 "$(api POST "/v1/jobs/$XJ/pause" '' "$USER")" '.error.code == "conflict"' "pause a paused job"
expect 202 "$(api POST "/v1/jobs/$XJ/resume" '' "$USER")" '.control == "resume"' "resume"
api_wait_job "$XJ" running "$USER"
expect 202 "$(api POST "/v1/jobs/$XJ/cancel" '' "$USER")" '.control == "cancel"' "cancel"
api_wait_job "$XJ" cancelled "$USER"
expect 409 "$(api POST "/v1/jobs/$XJ/cancel" '' "$USER")" '.error.code == "conflict"' "cancel a cancelled job"
expect 404 "$(api POST "/v1/jobs/$XJ/retry" '' "$USER")" '.error.code == "not-found"' "retry is no job action"
expect 404 "$(api POST "/v1/jobs/$XJ/explode" '' "$USER")" '.error.code == "not-found"' "unknown job action"
expect 200 "$(api GET "/v1/jobs/$XJ/plan" '' "$USER")" '.operation == "expand" and (.tasks | length > 0)' "the job's plan"
expect 200 "$(api GET "/v1/clusters/$CID" '' "$USER")" '.status == "active" and .size == 3' "a cancelled expand leaves the cluster as it was"
expect 400 "$(api POST "/v1/clusters/$CID/expand" '{"nodes":"two"}' "$USER")" '.error.field == "nodes"' "expand with a bad body"
expect 422 "$(api POST "/v1/clusters/$CID/shrink" '{"nodes":3}' "$USER")" '.error.code == "unsatisfiable"' "shrink to nothing"
expect 404 "$(api POST "/v1/clusters/$CID/fly" '{}' "$USER")" '.error.code == "not-found"' "unknown operation"
expect 422 "$(api POST "/v1/clusters/$CID/upgrade" '{}' "$USER")" '.error.field == "template_version"' "upgrade to the version it has"
expect 422 "$(api POST "/v1/clusters/$CID/removeservices" '{"services":["php"]}' "$USER")" \
  '.error.code == "unsatisfiable" and (.error.message | test("php-modules"))' "remove a service another one requires"
for op in 'expand {"nodes":2}' 'shrink {"nodes":1}' 'addservices {"services":["memcached"]}' \
  'removeservices {"services":["mysql-server"]}' 'configure {"config":{"a":1}}' 'start {}' 'stop {}' \
  'restart {}'; do
  name=${op%% *}
  r=$(api POST "/v1/clusters/$CID/$name" "${op#* }" "$USER")
  expect 202 "$r" ".job.operation == \"$name\" and .job.status == \"pending\"" "$name"
  J=$(body_of "$r" | jq -r .job.id)
  expect 202 "$(api POST "/v1/jobs/$J/cancel" '' "$USER")" '' "cancel $name"
  api_wait_job "$J" cancelled "$USER"
done
# Ten operations at once on the idle cluster: exactly one is accepted.
racers=()
for i in $(seq 1 10); do
  curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $USER" \
    --data-binary '{}' "http://127.0.0.1:$PORT/v1/clusters/$CID/restart" > "$T/race.$i" &
  racers+=($!)
done
wait "${racers[@]}"
[ "$(cat "$T"/race.* | sort | uniq -c | tr -s ' ' | sed 's/^ //' | paste -sd, -)" = "1 202,9 409" ] ||
  fail "ten concurrent operations: $(cat "$T"/race.* | sort | uniq -c | paste -sd, -)"
RJ=$(body_of "$(api GET "/v1/jobs?cluster=$CID" '' "$USER")" | jq -r '.items[0].id')
expect 202 "$(api POST "/v1/jobs/$RJ/cancel" '' "$USER")" '' "cancel the raced restart"
api_wait_job "$RJ" cancelled "$USER"
pass "ten concurrent operations on one cluster: one 202, nine 409"

# A cluster keeps the template version it was made from.
TOKEN=$ADMIN
lamp=$(body_of "$(api GET /v1/clustertemplates/lamp)" | jq -c '.description = "lamp, second edition"')
expect 200 "$(api PUT /v1/clustertemplates/lamp "$lamp")" '' "replace lamp"
expect 200 "$(api GET "/v1/clusters/$CID" '' "$USER")" '.template_version == 1' "old cluster keeps version 1"
expect 202 "$(api POST /v1/clusters '{"name":"web2","template":"lamp","nodes":1,"provider":"rackspace"}' "$USER")" \
  '.cluster.template_version == 2' "new cluster takes version 2"
pass "clusters keep the template version they were created from"

r=$(api DELETE "/v1/clusters/$CID" '' "$USER")
expect 202 "$r" '.job.operation == "delete" and .cluster.status == "deleting"' "delete cluster"
expect 200 "$(api GET "/v1/jobs?cluster=$CID" '' "$USER")" '.items | length == 12' "jobs of the cluster"
pass "operations recorded as pending jobs, 409 while busy, pause/resume/cancel acted on by the owner"

# Isolation: another tenant's admin sees nothing; another user of the tenant neither.
TOKEN=$OTHER
expect 200 "$(api GET /v1/clusters)" '.items == []' "other tenant lists clusters"
expect 404 "$(api GET "/v1/clusters/$CID")" '.error.code == "not-found"' "other tenant gets the cluster"
expect 404 "$(api GET "/v1/jobs/$JID")" '.error.code == "not-found"' "other tenant gets the job"
expect 404 "$(api POST "/v1/jobs/$JID/cancel")" '.error.code == "not-found"' "other tenant cancels the job"
expect 404 "$(api DELETE "/v1/clusters/$CID")" '.error.code == "not-found"' "other tenant deletes the cluster"
expect 200 "$(api GET /v1/clustertemplates)" '.items == []' "other tenant lists templates"
expect 404 "$(api GET /v1/clustertemplates/lamp)" '.error.code == "not-found"' "other tenant gets a template"
expect 200 "$(api GET /v1/export)" '[.[] | length] | add == 0' "other tenant exports"
expect 200 "$(api GET /v1/jobs)" '.items == []' "other tenant lists jobs"
expect 200 "$(api GET /v1/members)" '.jobs == [] and (.members | length == 1)' "other tenant's members view"
expect 422 "$(api POST /v1/clusters '{"name":"x","template":"lamp","nodes":1}')" '.error.code == "unknown-reference"' "other tenant uses the template"
expect 200 "$(api GET /v1/users)" '.items | map(.name) == ["olga"]' "other tenant lists users"
TOKEN=$USER2
expect 200 "$(api GET /v1/clusters)" '.items == []' "another user lists clusters"
expect 404 "$(api GET "/v1/clusters/$CID")" '.error.code == "not-found"' "another user gets the cluster"
TOKEN=$ADMIN
expect 200 "$(api GET "/v1/clusters/$CID")" '.owner == "bob"' "the tenant admin sees every cluster"
pass "tenant isolation: another tenant (and another user) gets 404 and empty lists"

# Fleet views and metrics.
expect 200 "$(api GET /v1/members)" '.members[0].id == "droverd-a" and .ring.size > 0' "members"
expect 200 "$(api GET /v1/workers)" '.workers == []' "workers"
expect 200 "$(api GET /v1/queues)" '.queues | length == 1 and .[0].tenant == "acme" and .[0].class == "default" and .[0].length > 0' "queues: the running jobs' tasks wait for a worker"
expect 403 "$(api GET /v1/members '' "$USER")" '.error.code == "forbidden"' "user reads members"
grep -q '^drover_http_requests_total{code="202"} ' <<< "$(curl -sf "http://127.0.0.1:$PORT/metrics")" ||
  fail "/metrics lacks request counters"
pass "members, workers, /metrics"
