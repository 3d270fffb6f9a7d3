#!/usr/bin/env bash
# Pause, resume and cancel of running jobs, and the explanation of waiting tasks:
#  - pause: running tasks finish, nothing new starts (the plugin's record stays still),
#    waiting tasks say "paused"; resume: the job goes on and succeeds;
#  - a waiting task says which dependency it waits for;
#  - cancel: running tasks finish, then what was done is rolled back: cancelled.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
start_worker worker-1
setup_tenant

read -r CID JID <<< "$(create_cluster p 2 '{"duration_ms": 300}')"
progressing "$JID" 3
j=$(api GET "/v1/jobs/$JID")
expect 200 "$j" '[.tasks[] | select(.why.reason == "dependency")] | length > 0' "waiting tasks say which dependency"
expect 200 "$j" '[.tasks[] | select(.status == "waiting" and .why == null)] | length == 0' "every waiting task has a reason"
expect 202 "$(api POST "/v1/jobs/$JID/pause")" '.control == "pause"' "pause"
wait_job "$JID" paused 30
# What was running when the pause came finishes (waited for, not guessed): then, over a
# window of 2 s, nothing new runs.
in_flight() { job_field "$JID" '[.tasks[] | select(.status == "queued" or .status == "running")] | length'; }
idle() { [ "$(in_flight)" = 0 ]; }
wait_until 60 "the paused job to have nothing in flight" idle
n1=$(wc -l < "$RUNS/runs.log")
sleep 2
n2=$(wc -l < "$RUNS/runs.log")
[ "$n1" = "$n2" ] || fail "tasks ran while paused: $n1 -> $n2"
expect 200 "$(api GET "/v1/jobs/$JID")" '[.tasks[] | select(.status == "waiting")][0].why.reason == "paused"' "waiting tasks say paused"
expect 409 "$(api POST "/v1/jobs/$JID/pause")" '.error.code == "conflict"' "pause a paused job"
expect 202 "$(api POST "/v1/jobs/$JID/resume")" '.control == "resume"' "resume"
wait_job "$JID" succeeded 90
check_runs
pass "pause: nothing new started; resume: the job went on and succeeded"

read -r CID JID <<< "$(create_cluster c 2 '{"duration_ms": 300}')"
progressing "$JID" 4
expect 202 "$(api POST "/v1/jobs/$JID/cancel")" '.control == "cancel"' "cancel"
wait_job "$JID" cancelled 90
made=$(awk -v j="$JID" 'index($1, j ".") == 1 && $2 ~ /\/create$/ && $5 == "ok"' "$RUNS/runs.log" | wc -l)
deleted=$(awk -v j="$JID" 'index($1, j ".") == 1 && $2 ~ /\/delete$/ && $5 == "ok"' "$RUNS/runs.log" | wc -l)
[ "$made" = "$deleted" ] && [ "$made" -gt 0 ] || fail "cancelled create: $made machines made, $deleted deleted"
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "failed"' "the cancelled create's cluster"
expect 409 "$(api POST "/v1/jobs/$JID/cancel")" '.error.code == "conflict"' "cancel a cancelled job"
check_runs
check_tree_clean
pass "cancel: running tasks finished, what was made was undone, the job is cancelled"
