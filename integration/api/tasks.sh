#!/usr/bin/env bash
# api_tasks: a job's tasks for large jobs (docs/api.md "Jobs"): GET /v1/jobs/{id}/tasks a
# page at a time (cursor, filters, limits, bad input 400), the groups, the full read
# streamed in chunks, and the summary kept at write time (task counts, revision, ETag).
# One droverd and a worker with the sleep plugin: a finished job, a rolled-back one and
# one that runs while it is paged through.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

# few requests in progress per user: a streamed read whose client went away must give its slot back
start_droverd 1 "api.max_requests_per_user = 4"
CONCURRENCY=8 start_worker worker-1
setup_tenant
U="http://127.0.0.1:$PORT"

read -r _ JID <<< "$(create_cluster finished 3)"
read -r _ FJID <<< "$(create_cluster doomed 2 '{"fail_on": {"node": "node-2", "task": "install", "service": "app"}}')"
wait_job "$JID" succeeded 120
wait_job "$FJID" rolled-back 120

# pages JID QUERY LIMIT: every page of the job's tasks after one another, as one JSON array
# of the items (each page checked for its size and cursor), into $T/pages.json
pages() {
  local jid=$1 q=$2 limit=$3 cursor='' r n next k=0
  : > "$T/pages.ndjson"
  while :; do
    r=$(api GET "/v1/jobs/$jid/tasks?limit=$limit$q${cursor:+&cursor=$cursor}")
    expect 200 "$r" '.items | type == "array"' "page $k of job $jid ($q)"
    body_of "$r" | jq -c '.items[]' >> "$T/pages.ndjson"
    n=$(body_of "$r" | jq '.items | length')
    next=$(body_of "$r" | jq -r '.next // empty')
    [ "$n" -le "$limit" ] || fail "a page of $n items for limit $limit"
    if [ -z "$next" ]; then break; fi
    [ "$n" = "$limit" ] || fail "a short page ($n of $limit) with a next cursor"
    cursor=$next
    k=$((k + 1))
    [ "$k" -lt 1000 ] || fail "more than 1000 pages"
  done
  jq -s . "$T/pages.ndjson" > "$T/pages.json"
}

# ---- every task once, in plan order, the same as the full read
full=$(curl -s -D "$T/full.head" -H "Authorization: Bearer $TOKEN" "$U/v1/jobs/$FJID")
grep -qi '^transfer-encoding: chunked' "$T/full.head" || fail "the full read is not streamed: $(cat "$T/full.head")"
jq -e '.tasks | length > 0' <<< "$full" > /dev/null || fail "full read: $full"
jq -e 'has("task_changes") | not' <<< "$full" > /dev/null || fail "task_changes leaked into the full read"
total=$(jq '.progress.total + (.rollback_progress.total // 0)' <<< "$full")
[ "$(jq '.tasks | length' <<< "$full")" = "$total" ] || fail "full read: $(jq '.tasks | length' <<< "$full") tasks, progress says $total"
pages "$FJID" "" 4
[ "$(jq -c '[.[] | [.phase, .idx]]' "$T/pages.json")" = "$(jq -c '[.tasks[] | [.phase, .idx]]' <<< "$full")" ] ||
  fail "pages of 4 differ from the full read: $(jq -c '[.[] | .id]' "$T/pages.json")"
jq -e '[.[] | select(.phase == "r")] | length > 0' "$T/pages.json" > /dev/null || fail "no rollback task in the pages"
n1=$(jq length "$T/pages.json")
pages "$FJID" "" 1000
[ "$(jq length "$T/pages.json")" = "$n1" ] || fail "one page of 1000 has $(jq length "$T/pages.json") tasks, pages of 4 had $n1"
pass "tasks: pages of 4 and of 1000 list every task once ($n1), in the full read's order; the full read is chunked"

# ---- filters
pages "$FJID" "&state=failed" 2
jq -e 'length >= 1 and all(.status == "failed") and any(.id == "node-2/app/install")' "$T/pages.json" > /dev/null ||
  fail "state=failed: $(cat "$T/pages.json")"
pages "$FJID" "&state=succeeded,skipped&phase=r" 3
jq -e 'length >= 1 and all(.phase == "r" and (.status == "succeeded" or .status == "skipped"))' "$T/pages.json" > /dev/null ||
  fail "state=succeeded,skipped&phase=r: $(cat "$T/pages.json")"
pages "$JID" "&node=node-1&service=app" 2
jq -e 'length >= 2 and all(.node_id == "node-1" and .service == "app")' "$T/pages.json" > /dev/null ||
  fail "node=node-1&service=app: $(cat "$T/pages.json")"
pages "$JID" "&action=install" 50
jq -e 'length >= 3 and all(.action == "install")' "$T/pages.json" > /dev/null || fail "action=install: $(cat "$T/pages.json")"
pages "$JID" "&service=&node=node-2" 50
jq -e 'length >= 2 and all(.service == null and .node_id == "node-2")' "$T/pages.json" > /dev/null || fail "service= (none): $(cat "$T/pages.json")"
pages "$JID" "&node=" 50
jq -e 'length >= 1 and all(.node_id == null)' "$T/pages.json" > /dev/null || fail "node= (none): $(cat "$T/pages.json")"
pass "tasks: filters by state (a list), phase, node, service and action; empty node or service: the tasks without one"

# ---- bad input: 400 naming the parameter; another tenant's job 404
for q in limit=0 limit=1001 limit=x limit=; do
  expect 400 "$(api GET "/v1/jobs/$JID/tasks?$q")" '.error.field == "limit"' "$q"
done
for c in x f.x f.01 f.-1 g.1 f.1234567890 f. r; do
  expect 400 "$(api GET "/v1/jobs/$JID/tasks?cursor=$c")" '.error.field == "cursor"' "cursor=$c"
done
for s in bogus succeeded,bogus 'succeeded,' ','; do
  expect 400 "$(api GET "/v1/jobs/$JID/tasks?state=$s")" '.error.field == "state"' "state=$s"
done
expect 400 "$(api GET "/v1/jobs/$JID/tasks?phase=x")" '.error.field == "phase"' "phase=x"
expect 400 "$(api GET "/v1/jobs/$JID/tasks?action=")" '.error.field == "action"' "action="
expect 400 "$(api GET "/v1/jobs/$JID/tasks/groups?by=x")" '.error.field == "by"' "groups by=x"
expect 404 "$(api GET "/v1/jobs/999999/tasks")" '.error.code == "not-found"' "no such job"
expect 201 "$(api POST /v1/tenants '{"name":"globex"}' "$SUPER")" '' "tenant globex"
GTOKEN=$(body_of "$(api POST /v1/users '{"name":"gina","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
expect 404 "$(api GET "/v1/jobs/$JID/tasks" '' "$GTOKEN")" '' "another tenant's tasks"
expect 404 "$(api GET "/v1/jobs/$JID/tasks/groups" '' "$GTOKEN")" '' "another tenant's groups"
pass "tasks: bad limit, cursor, state, phase, by: 400 naming it; unknown or another tenant's job: 404"

# ---- groups: every task counted once
r=$(api GET "/v1/jobs/$JID/tasks/groups?by=node")
expect 200 "$r" ".groups == 4 and any(.items[]; .key == \"(no node)\") and ([.items[].total] | add) == $(job_status_field "$JID" .progress.total)" "groups by node"
r=$(api GET "/v1/jobs/$FJID/tasks/groups?by=service&limit=1")
expect 200 "$r" '(.items | length) == 1 and .groups > 1 and (.items[0].states.failed // 0) >= 1 and .items[0].service == "app" and .items[0].action == "install"' "groups by service, failed first"
pass "groups: by node (3 nodes and the anchor, every task counted once), by service with the failed group first"

# ---- the summary: counts kept at write time, a revision that follows the tasks, ETag
sum=$(body_of "$(api GET "/v1/jobs/$FJID?tasks=none")")
want=$(jq -c '[.tasks[] | select(.phase == "f") | .status] | group_by(.) | map({(.[0]): length}) | add' <<< "$full")
[ "$(jq -c '.progress.states' <<< "$sum")" = "$want" ] || fail "summary states $(jq -c .progress.states <<< "$sum"), tasks say $want"
jq -e 'has("task_changes") | not' <<< "$sum" > /dev/null || fail "task_changes leaked into the summary"
rev=$(jq -r .revision <<< "$sum")
h=$(curl -s -o /dev/null -D - -H "Authorization: Bearer $TOKEN" "$U/v1/jobs/$FJID?tasks=none" | tr -d '\r')
grep -qi "^etag: \"$rev\"$" <<< "$h" || fail "no ETag \"$rev\" on the summary: $h"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -H "If-None-Match: \"$rev\"" "$U/v1/jobs/$FJID?tasks=none")
[ "$code" = 304 ] || fail "If-None-Match with the revision: $code"
pass "summary: states from the kept counts equal the tasks', revision as ETag, 304 when unchanged"

# ---- a streamed read of 30,000 tasks (15 pages): whole; cut by its client, it ends and frees
# its slot (4 per user here); HEAD gets the head only
BJID=$(psql_q "INSERT INTO jobs (tenant_id, cluster_id, operation, status, request)
  SELECT tenant_id, cluster_id, 'create', 'succeeded', '{}' FROM jobs WHERE id = $JID RETURNING id" | head -1)
psql_q "INSERT INTO tasks (job_id, phase, idx, id, node_id, service, action, status, attempts, deps)
  SELECT $BJID, 'f', i, 'node-' || (i / 3 + 1) || '/s/install-' || i, 'node-' || (i / 3 + 1), 's', 'install',
  'succeeded', 1, '[]' FROM generate_series(0, 29999) i" > /dev/null
n=$(curl -s -H "Authorization: Bearer $TOKEN" "$U/v1/jobs/$BJID" | jq '.tasks | length')
[ "$n" = 30000 ] || fail "the streamed read of 30,000 tasks has $n"
for _ in 1 2 3 4 5 6 7 8; do
  curl -s -N -H "Authorization: Bearer $TOKEN" "$U/v1/jobs/$BJID" 2> /dev/null | head -c 3000 > /dev/null || true
done
whoami_ok() { [ "$(api GET /v1/whoami | cut -d' ' -f1)" = 200 ]; }
wait_until 30 "the cut streams to give their slots back" whoami_ok
h=$(curl -s -I -H "Authorization: Bearer $TOKEN" "$U/v1/jobs/$BJID" | tr -d '\r')
grep -q '^HTTP/1.1 200' <<< "$h" && grep -qi '^transfer-encoding: chunked' <<< "$h" || fail "HEAD of the full read: $h"
[ "$(job_status_field "$BJID" .progress.total)" = 30000 ] || fail "the summary of 30,000 tasks counts $(job_status_field "$BJID" .progress.total)"
pass "full read of 30,000 tasks streamed whole; 8 reads cut by their client freed their slots; HEAD: the head only"

# ---- a running job paged through while it changes: stable cursor, every task once
read -r _ LJID <<< "$(create_cluster live 2 '{"duration_ms": 300}')"
planned() { [ "$(job_status_field "$1" '.progress.total')" -gt 0 ]; }
wait_until 60 "job $LJID to be planned" planned "$LJID"
revs=()
rounds=0
while :; do
  pages "$LJID" "" 3
  jq -e '(map([.phase, .idx]) | unique | length) == length' "$T/pages.json" > /dev/null || fail "a task listed twice while the job ran"
  revs+=("$(job_status_field "$LJID" .revision)")
  st=$(job_status_field "$LJID" .status)
  rounds=$((rounds + 1))
  [ "$st" = succeeded ] && break
  [ "$rounds" -lt 200 ] || fail "job $LJID still $st"
done
n=$(jq length "$T/pages.json")
[ "$n" = "$(job_status_field "$LJID" .progress.total)" ] || fail "the last listing has $n tasks"
[ "$(printf '%s\n' "${revs[@]}" | sort -u | wc -l)" -ge 2 ] || [ "$rounds" = 1 ] || fail "the revision never changed while the job ran"
pass "a running job paged through $rounds times in pages of 3: no task twice, all $n at the end; the revision followed it"
