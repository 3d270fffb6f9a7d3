#!/usr/bin/env bash
# The watchdog (src/engine/watchdog.c, docs/engine.md "Watchdog"): a job that nothing can
# move says so, and gives up in the end (issue 22, item 12: "with no worker at all a job
# waits forever as running, saying nothing"). Each case is one way a tester would leave a
# job with nobody to run it:
#   1. no worker yet: the owner says job-no-worker and counts the job in
#      drover_engine_jobs_unserved; a worker that comes in time takes the job to the end.
#   2. no worker ever: past engine.no_worker_timeout the job fails and rolls back, its error
#      naming the tenant and class nobody serves.
#   3. the worker dies mid-job: the forward plan gives up, and so does the rollback that
#      nobody can run either: needs-operator, both reasons in the error.
#   4. a live worker with a task that takes too long: past engine.job_deadline the job
#      fails and rolls back (what runs finishes first).
#   5. the only worker drains (SIGTERM while its task runs): it takes nothing more, so the
#      job is unserved at once, though the worker is still a member.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

logged() { grep -q "event=$2 job=$3 " "$T/$1.log"; }
unserved_is() { [ "$(metric "$PORT" "drover_engine_jobs_unserved{node=\"$1\"}")" = "$2" ]; }
restart_droverd() { # OLD NEW [config lines...]: stop droverd-OLD, start droverd-NEW
  local old=$1 new=$2
  shift 2
  kill -TERM "$(pid_of "droverd-$old")"
  wait_exit "droverd-$old" 60 > /dev/null || fail "droverd-$old did not stop"
  PORT=
  start_droverd "$new" "$@"
}

# 1. A long timeout: the job only says it waits, until a worker comes.
start_droverd 1 "engine.no_worker_timeout = 1h"
setup_tenant
read -r _ JID <<< "$(create_cluster wait 2)"
wait_until 60 "droverd-1 to say job $JID has no worker" logged droverd-1 job-no-worker "$JID"
grep -q "event=job-no-worker job=$JID tenant=acme class=default " "$T/droverd-1.log" ||
  fail "job-no-worker does not name the tenant and class: $(grep job-no-worker "$T/droverd-1.log")"
wait_until 30 "drover_engine_jobs_unserved to count job $JID" unserved_is droverd-1 1
[ "$(job_status_field "$JID" .status)" = running ] || fail "job $JID is not running while it waits"
start_worker worker-1
wait_job "$JID" succeeded 120
wait_until 30 "droverd-1 to say a worker came back for job $JID" logged droverd-1 job-worker-back "$JID"
wait_until 30 "drover_engine_jobs_unserved back to 0" unserved_is droverd-1 0
pass "no worker: the owner said so, counted it, and the job ran when a worker came"

# 2. Nobody ever comes: a short timeout ends the job, rolled back, saying why.
kill -TERM "$(pid_of worker-1)"
wait_exit worker-1 60 > /dev/null || fail "worker-1 did not stop"
restart_droverd 1 2 "engine.no_worker_timeout = 3s"
read -r _ JID <<< "$(create_cluster never 2)"
wait_job "$JID" rolled-back 120
err=$(job_status_field "$JID" .error)
[[ $err == *"no worker of tenant acme serves class default"* ]] ||
  fail "job $JID's error does not say nobody serves it: $err"
logged droverd-2 job-no-worker-gave-up "$JID" || fail "no job-no-worker-gave-up line for job $JID"
[ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND status IN ('queued', 'running')")" = 0 ] ||
  fail "job $JID ended with tasks still queued or running in PostgreSQL"
check_tree_clean
pass "no worker ever: the job gave up after engine.no_worker_timeout and rolled back ($err)"

# 3. The worker dies after node-1 is made, while node-2's create runs: the forward plan gives
#    up for want of a worker, then the rollback (node-1's delete) too.
start_worker worker-2
read -r _ JID <<< "$(create_cluster dies 2 '{"durations": {"node-2/create": 600000}}')"
node1_made() { grep -q "^$JID\\.f[0-9]*\\.[0-9]* node-1/create .* ok " "$RUNS/runs.log" 2> /dev/null; }
wait_until 120 "node-1/create to succeed" node1_made
node2_runs() { [ "$(psql_q "SELECT status FROM tasks WHERE job_id = $JID AND id = 'node-2/create'")" = running ]; }
wait_until 60 "node-2/create to run" node2_runs
kill -KILL "$(pid_of worker-2)"
wait_job "$JID" needs-operator 180
err=$(job_status_field "$JID" .error)
[[ $err == *"no worker of tenant acme serves class default"*"; rollback stopped: no worker of tenant acme"* ]] ||
  fail "job $JID's error does not give both reasons: $err"
pass "the worker died: the forward plan and then the rollback gave up, needs-operator ($err)"

# 4. A live worker, a task that outlasts engine.job_deadline: the job's creates are held on a
#    gate until the owner says the deadline passed (whenever that comes on a loaded machine),
#    then let go: what was running ends, nothing is cut off, and the job rolls back.
restart_droverd 2 3 "engine.job_deadline = 4s"
start_worker worker-3
GATE="$T/gate-late"
read -r _ JID <<< "$(create_cluster late 1 "$(jq -cn --arg f "$GATE" '{hold_on: {task: "create", file: $f}}')")"
wait_until 120 "droverd-3 to say job $JID ran past its deadline" logged droverd-3 job-deadline "$JID"
# The alert DroverJobPastDeadline (conf/prometheus) reads this counter.
[ "$(metric "$PORT" drover_engine_jobs_past_deadline_total)" = 1 ] ||
  fail "drover_engine_jobs_past_deadline_total is not 1: $(metric "$PORT" drover_engine_jobs_past_deadline_total)"
touch "$GATE"
wait_job "$JID" rolled-back 120
err=$(job_status_field "$JID" .error)
[[ $err == *"ran past its deadline of 4 s"* ]] || fail "job $JID's error does not name the deadline: $err"
# Nothing the forward plan started was cut off: each of its attempts ended succeeded.
cut=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND left(phase, 1) = 'f' AND status <> 'succeeded'")
[ "$cut" = 0 ] || fail "$cut attempts of job $JID's forward plan did not succeed: $(grep "^$JID\." "$RUNS/runs.log")"
check_runs
pass "past engine.job_deadline: the job failed after its running task ended, and rolled back"

# 5. The only worker drains (SIGTERM, a long grace, a task still running): it stays a member
#    until its task ends, but takes nothing more, so the job is unserved at once. Before, a
#    draining worker counted as serving and the job waited without a word.
GATE="$T/gate-drain"
kill -TERM "$(pid_of worker-3)"
wait_exit worker-3 60 > /dev/null || fail "worker-3 did not stop"
restart_droverd 3 4 "engine.no_worker_timeout = 1h"
start_worker worker-4 "worker.grace = 10m"
read -r _ JID <<< "$(create_cluster drain 1 "$(jq -cn --arg f "$GATE" '{hold_on: {task: "create", file: $f}}')")"
create_runs() { [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND id LIKE '%/create' AND status = 'running'")" = 1 ]; }
wait_until 120 "job $JID's create to run" create_runs
kill -TERM "$(pid_of worker-4)"
wait_until 60 "droverd-4 to say job $JID has no worker" logged droverd-4 job-no-worker "$JID"
kill -0 "$(pid_of worker-4)" || fail "worker-4 left before the test could see it draining"
zk get "/drover/members/worker/worker-4" | grep -q '"draining":true' ||
  fail "worker-4's member data does not say draining: $(zk get /drover/members/worker/worker-4)"
touch "$GATE"
wait_exit worker-4 120 > /dev/null || fail "worker-4 did not stop once its task ended"
start_worker worker-5
wait_job "$JID" succeeded 120
pass "a draining worker does not count as serving: the owner said job-no-worker while it drained"
