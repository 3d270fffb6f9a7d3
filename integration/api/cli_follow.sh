#!/usr/bin/env bash
# `drover job logs --follow` reads only what is new (issue 24): droverd, a worker and the
# sleep plugin. A running job's follower prints each attempt as it ends, while the job
# still runs (its install held at a gate), and ends with the job. The API under it,
# GET /v1/jobs/{id}/attempts?since=CURSOR: the attempts written after the cursor, in the
# order they were written, with the job's status; bad cursors and limits refused; another
# tenant's job not found. A poll's cost does not grow with the job's size: at the end of a
# 1-node job and of a 12-node job (ten times the tasks) a poll answers the same few bytes,
# where the whole job the follower used to read each time grows with the tasks (byte
# counts of one run compared, no timing).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
CONCURRENCY=8 start_worker worker-1
setup_tenant
D="$BIN/drover"
export DROVER_URL="http://127.0.0.1:$PORT" DROVER_TOKEN=$TOKEN

# ---- a running job, followed: app's install waits at a gate until the test opens it
read -r _ JID <<< "$(create_cluster small 1 "$(jq -cn --arg g "$T/gate" '{
  hold_on: {task: "install", service: "app", file: $g}}')")"
"$D" job logs "$JID" --follow > "$T/follow.out" 2> "$T/follow.err" &
follow=$!
printed() { grep -q "^==> $1 attempt 1 on worker-1: succeeded" "$T/follow.out"; }
wait_until 60 "the follower to print node-1/create's attempt" printed node-1/create
job_is "$JID" running || fail "job $JID is $st while held at the gate"
gone "$follow" && fail "job logs --follow ended before the job: $(cat "$T/follow.err")"
grep -q "node-1/app/install" "$T/follow.out" && fail "the held install printed before it ended"
pass "job logs --follow streams a running job: node-1/create printed while the job waits at its gate"
touch "$T/gate"
wait_job "$JID" succeeded 60
wait_until 30 "job logs --follow to end with the job" gone "$follow"
set +e
wait "$follow"
rc=$?
set -e
[ $rc = 0 ] || fail "job logs --follow of a succeeded job: status $rc $(cat "$T/follow.err")"
printed node-1/app/install || fail "follow: no install attempt: $(cat "$T/follow.out")"
ran=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND ended_at IS NOT NULL")
[ "$(grep -c '^==> ' "$T/follow.out")" = "$ran" ] ||
  fail "follow printed $(grep -c '^==> ' "$T/follow.out") attempts, the job has $ran: $(cat "$T/follow.out")"
pass "job logs --follow: every one of the job's $ran attempts once, then exit 0 with the job"

# ---- the API: since=, its cursor and its checks
r=$(api GET "/v1/jobs/$JID/attempts?since=0&limit=2")
expect 200 "$r" '.status == "succeeded" and .more == true and (.items | length == 2) and .cursor == .items[1].seq and (.items[0].seq | tonumber) < (.items[1].seq | tonumber)' "the first page since 0"
c=$(body_of "$r" | jq -r .cursor)
r=$(api GET "/v1/jobs/$JID/attempts?since=$c&limit=500")
expect 200 "$r" "(.items | length) == $(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID") - 2 and .more == false and all(.items[]; (.seq | tonumber) > $c)" "the rest after the cursor"
end=$(body_of "$r" | jq -r .cursor)
expect 200 "$(api GET "/v1/jobs/$JID/attempts?since=$end")" ".items == [] and .cursor == \"$end\" and .more == false" "nothing after the last cursor"
expect 200 "$(api GET "/v1/jobs/$JID/attempts?since=0&task=node-1/app/install")" '.items | length >= 1 and all(.task == "node-1/app/install")' "one task's attempts since 0"
expect 404 "$(api GET "/v1/jobs/$JID/attempts?since=0&task=node-9/nothing")" '.error.field == "task"' "an unknown task"
for q in since=x since=-1 "since=0&limit=0" "since=0&limit=501" "since=0&phase=z"; do
  expect 400 "$(api GET "/v1/jobs/$JID/attempts?$q")" '.error.code == "invalid"' "attempts?$q"
done
expect 201 "$(api POST /v1/tenants '{"name":"globex"}' "$SUPER")" '' "tenant globex"
GTOKEN=$(body_of "$(api POST /v1/users '{"name":"gina","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
expect 404 "$(api GET "/v1/jobs/$JID/attempts?since=0" '' "$GTOKEN")" '' "another tenant's attempts"
pass "attempts?since=: pages in write order, the cursor, one task, 404 for an unknown task or another tenant's job, 400 for bad parameters"

# ---- a poll's cost: the same at the end of a job ten times larger
read -r _ BJID <<< "$(create_cluster big 12)"
wait_job "$BJID" succeeded 240
bytes() { curl -s -H "Authorization: Bearer $TOKEN" "$DROVER_URL$1" | wc -c; }
cursor_of() { body_of "$(api GET "/v1/jobs/$1/attempts?since=0&limit=500")" | jq -r .cursor; }
small_tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID")
big_tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $BJID")
small_poll=$(bytes "/v1/jobs/$JID/attempts?since=$(cursor_of "$JID")&limit=500")
big_poll=$(bytes "/v1/jobs/$BJID/attempts?since=$(cursor_of "$BJID")&limit=500")
small_full=$(bytes "/v1/jobs/$JID")
big_full=$(bytes "/v1/jobs/$BJID")
echo "tasks $small_tasks and $big_tasks; a follow poll $small_poll and $big_poll bytes; the whole job $small_full and $big_full bytes"
[ "$big_tasks" -ge $((8 * small_tasks)) ] || fail "the big job has $big_tasks tasks, the small $small_tasks"
[ "$big_poll" -le $((small_poll + 8)) ] || fail "a follow poll of the big job is $big_poll bytes, of the small $small_poll"
[ "$big_full" -ge $((5 * small_full)) ] || fail "the whole big job is $big_full bytes, the small $small_full"
"$D" job logs "$BJID" --follow > "$T/big.out" || fail "follow of the finished big job"
[ "$(grep -c '^==> ' "$T/big.out")" = "$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $BJID AND ended_at IS NOT NULL")" ] ||
  fail "follow of the big job printed $(grep -c '^==> ' "$T/big.out") attempts"
pass "a follow poll costs $big_poll bytes for $big_tasks tasks, $small_poll for $small_tasks; the whole job $big_full and $small_full"
