#!/usr/bin/env bash
# Failures: a create that fails once is retried with cleanup (delete-then-create) and the
# job succeeds; an install that fails on every attempt fails the job, which rolls back
# (meanwhile the cluster takes no operation and the job no cancel):
# every machine made is deleted, the cluster is failed and empty, the job says
# rolled-back and why; nothing ran twice, nothing stays in ZooKeeper.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1 "engine.max_failures = 2"
start_worker worker-1
start_worker worker-2
setup_tenant

# A create that fails on its first attempt only.
read -r CID JID <<< "$(create_cluster once 2 '{"fail_on": {"node": "node-1", "task": "create", "attempts": 1}}')"
wait_job "$JID" succeeded 90
grep -q "^$JID\\.f[0-9]*\\.1 node-1/create .* failed 0$" "$RUNS/runs.log" || fail "node-1's first create did not fail: $(grep node-1/create "$RUNS/runs.log")"
grep -q "^$JID\\.f[0-9]*\\.2 node-1/create .* ok 1$" "$RUNS/runs.log" || fail "node-1's second create was not a cleanup: $(grep node-1/create "$RUNS/runs.log")"
[ "$(psql_q "SELECT attempts FROM tasks WHERE job_id = $JID AND id = 'node-1/create'")" = 2 ] || fail "attempts of node-1/create"
[ "$(psql_q "SELECT string_agg(status, ',' ORDER BY attempt) FROM task_attempts WHERE job_id = $JID AND task_id = 'node-1/create'")" = "failed,succeeded" ] ||
  fail "attempt rows of node-1/create: $(psql_q "SELECT status FROM task_attempts WHERE job_id = $JID AND task_id = 'node-1/create'")"
[ "$(psql_q "SELECT count(DISTINCT worker) FROM task_attempts WHERE job_id = $JID AND task_id = 'node-1/create'")" = 2 ] ||
  fail "the retry of node-1/create ran on the worker that failed: $(psql_q "SELECT attempt, worker FROM task_attempts WHERE job_id = $JID AND task_id = 'node-1/create'")"
check_runs
pass "a failed create is retried with cleanup on the other worker, and the job succeeds"

# An install that always fails: the job fails and rolls back.
: > "$RUNS/runs.log"
read -r CID JID <<< "$(create_cluster doomed 3 '{"duration_ms": 30, "durations": {"node-1/delete": 3000}, "fail_on": {"node": "node-2", "task": "install", "service": "app"}}')"
wait_job "$JID" rolling-back 60
# While it rolls back the cluster is busy, and the rollback cannot be cancelled.
expect 409 "$(api POST "/v1/clusters/$CID/restart" '{}')" '.error.code == "conflict"' "an operation during the rollback"
expect 409 "$(api POST "/v1/jobs/$JID/cancel")" '.error.message | test("rolling-back")' "a cancel during the rollback"
wait_job "$JID" rolled-back 120
j=$(api GET "/v1/jobs/$JID")
expect 200 "$j" '.error | test("node-2/app/install")' "the job says why"
expect 200 "$j" '.rollback_progress.done == .rollback_progress.total and .rollback_progress.total > 0' "the rollback ran whole"
expect 200 "$j" '[.tasks[] | select(.phase == "f" and .id == "node-2/app/install")][0].status == "failed"' "the failed task"
expect 200 "$j" '[.tasks[] | select(.phase == "f" and .status == "succeeded")] | length > 0' "some tasks had succeeded"
made=$(grep -c '/create .* ok ' "$RUNS/runs.log")
deleted=$(grep -c '/delete .* ok ' "$RUNS/runs.log")
[ "$made" = 3 ] && [ "$deleted" = 3 ] || fail "machines made $made, deleted $deleted"
for n in 1 2 3; do
  grep -q " node-$n/delete .* ok " "$RUNS/runs.log" || fail "node-$n was not deleted"
done
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "failed" and ([.nodes[] | select(.status != "deleted")] | length == 0)' "the cluster is failed and empty"
[ "$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND task_id = 'node-2/app/install' AND status = 'failed'")" = 2 ] ||
  fail "the failing task was not tried engine.max_failures times"
check_runs
check_tree_clean
pass "a job that fails rolls back: every machine made is deleted, the job says rolled-back and why"
