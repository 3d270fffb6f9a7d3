#!/usr/bin/env bash
# A retry is a dispatch like any other (fsm J1): a job paused while one of its tasks is
# failing and being retried starts no new attempt of it while paused (the retry is taken
# back, pending again); after a resume the task is dispatched again (with cleanup: a
# create) and the job succeeds. run.c task_event, engine__commit_retries_withdraw (commit.c).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1 "engine.max_failures = 10"
start_worker worker-1
setup_tenant

# node-1's create fails on its first five attempts, each taking 3 s: the pause, asked
# after the first failure, has 12 s to land before an attempt could succeed, however
# loaded the machine is.
read -r _ JID <<< "$(create_cluster r 2 '{"durations": {"node-1/create": 3000}, "fail_on": {"node": "node-1", "task": "create", "attempts": 5}}')"
attempts() { grep -c "^$JID\\.f[0-9]*\\.[0-9]* node-1/create " "$RUNS/runs.log" 2> /dev/null || true; }
first_failed() { [ "$(attempts)" -ge 1 ]; }
wait_until 60 "node-1/create to fail once" first_failed
expect 202 "$(api POST "/v1/jobs/$JID/pause")" '.control == "pause"' "pause while node-1/create is retried"
wait_job "$JID" paused 30
seen=$(attempts)
# What was running when the pause came finishes; nothing is queued or running after that.
in_flight() { job_field "$JID" '[.tasks[] | select(.status == "queued" or .status == "running")] | length'; }
idle() { [ "$(in_flight)" = 0 ]; }
wait_until 60 "the paused job to have nothing in flight" idle
n=$(attempts)
[ "$n" -le $((seen + 1)) ] ||
  fail "node-1/create was tried again while paused: $seen attempts at the pause, $n now: $(grep node-1/create "$RUNS/runs.log")"
! grep -q "^$JID\\.f[0-9]*\\.[0-9]* node-1/create .* ok " "$RUNS/runs.log" ||
  fail "node-1/create succeeded while the job was paused: $(grep node-1/create "$RUNS/runs.log")"
expect 200 "$(api GET "/v1/jobs/$JID")" '.status == "paused" and ([.tasks[] | select(.id == "node-1/create")][0].status | IN("pending", "waiting"))' \
  "the retried task waits, pending, while paused"
pass "paused while a task was retried: no new attempt started ($n attempts)"

expect 202 "$(api POST "/v1/jobs/$JID/resume")" '.control == "resume"' "resume"
wait_job "$JID" succeeded 120
grep -q "^$JID\\.f[0-9]*\\.[0-9]* node-1/create .* ok 1$" "$RUNS/runs.log" ||
  fail "node-1/create did not succeed with cleanup after the resume: $(grep node-1/create "$RUNS/runs.log")"
check_runs
check_tree_clean
pass "resumed: the retried task was dispatched again and the job succeeded"
