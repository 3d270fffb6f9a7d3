#!/usr/bin/env bash
# A worker killed with SIGKILL in the middle of a task: its plugin dies with it (no
# overlap with the next attempt: the sleep plugin's flock), the task goes to the other
# worker once the dead worker's session has expired, and the job succeeds. The dead
# delivery is recorded as a lost attempt.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
CONCURRENCY=2
start_worker worker-1
start_worker worker-2
setup_tenant

# Three nodes' tasks at once for two places a worker: the job needs both workers, also on
# slots, where a job keeps its worker's slots for many tasks in a row (a two-node job fitted in
# worker-2's two and never reached worker-1: CI, 2026-11-29, engine_worker_death_slots).
read -r _ JID <<< "$(create_cluster w1 3 '{"duration_ms": 1500}')"
# running_on_worker_1: victim is a task of the job running on worker-1.
running_on_worker_1() {
  victim=$(psql_q "SELECT id FROM tasks WHERE job_id = $JID AND status = 'running' AND worker = 'worker-1' LIMIT 1")
  [ -n "$victim" ]
}
victim=""
wait_until 60 "a task to run on worker-1" running_on_worker_1
kill -9 "$(pid_of worker-1)"
t_kill=$(now_ms)
wait_job "$JID" succeeded 120
rows=$(psql_q "SELECT string_agg(worker || ':' || status, ',' ORDER BY started_at) FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")
echo "task $victim: $rows"
[[ $rows == "worker-1:lost,worker-2:succeeded" ]] || fail "attempts of $victim: $rows"
start2=$(awk -v t="$victim" '$2 == t && $5 == "ok" { print $3 }' "$RUNS/runs.log")
echo "the task started again on worker-2 $((start2 - t_kill)) ms after the kill (session timeout $SESSION)"
check_runs
check_tree_clean
pass "kill -9 of a worker mid-task: the task ran again on the other worker after the session expired; no overlap"
