#!/usr/bin/env bash
# Issue 22, C: a worker made its run record and was killed (SIGKILL); its owner was
# killed too; a cancel came. The next owner resumes, and the cancel takes the task's item
# back (unclaimed: its worker is gone) while its run record says it runs: that attempt is
# over, and the task must go back (before the fix it stayed running for ever, and the
# job rolling-back). That owner dies right after the withdraw, before its task log says
# so (DROVER_FAULT=crash-after-withdraw): the owner after it finds the task 'q', no queue
# item, and a run record nobody will finish. It must declare the attempt lost (a failed
# attempt), so that the drain ends and the rollback runs: the job ends cancelled within
# wait_job's bound.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

HELD=node-1/app/install # held on its first attempt for ever (a file never made)

# droverd-2 serves the API throughout and owns nothing (drained: out of the ring), so that
# the cancel can be asked while no owner is alive.
start_droverd 1
start_droverd 2
DROVER_URL="http://127.0.0.1:${DPORTS[1]}" DROVER_TOKEN=$SUPER "$BIN/drover" node drain droverd-2 --wait 20 > "$T/drain.out" ||
  fail "drover node drain droverd-2: $(cat "$T/drain.out")"
start_worker worker-1
setup_tenant
read -r CID JID <<< "$(create_cluster c1 1 "$(jq -cn --arg t "$HELD" --arg f "$T/never" '{hold_on: {id: $t, attempts: 1, file: $f}}')")"

held_running() {
  [ "$(psql_q "SELECT status || ' ' || coalesce(worker, '') FROM tasks WHERE job_id = $JID AND phase = 'f' AND id = '$HELD'")" = "running worker-1" ]
}
wait_until 120 "$HELD running on worker-1" held_running
# Run records without an outcome (the owner keeps finished ones until the job ends or
# ENGINE_RUNS_KEEP pile up: docs/engine.md).
runs() {
  local r n=0
  for r in $(zk ls "/drover/jobs/$JID/runs"); do
    zk get "/drover/jobs/$JID/runs/$r" | grep -q '"status"' || n=$((n + 1))
  done
  echo "$n"
}
[ "$(runs)" = 1 ] || fail "run records without an outcome: $(runs) in $(zk ls "/drover/jobs/$JID/runs")"
kill -9 "$(pid_of worker-1)"
no_claims() { [ "$(zk ls /drover/queues/acme/default/claims 2> /dev/null | grep -c . || true)" = 0 ]; }
wait_until 60 "worker-1's claim to go with its session" no_claims
# (the owner's session outlives it by a session timeout: the next owner is ready by then)
kill -9 "$(pid_of droverd-1)"
pass "worker-1 and the owner killed after the run record; the claim is gone, the item back in the queue"

PORT=${DPORTS[2]}
expect 202 "$(api POST "/v1/jobs/$JID/cancel")" '.control == "cancel"' "cancel (no owner alive)"
DROVER_FAULT=crash-after-withdraw start_droverd 3
wait_exit droverd-3 60 > /dev/null ||
  fail "droverd-3 never took the task back after withdrawing its item (the job hangs)"
grep -q "event=fault-injected fault=crash-after-withdraw job=$JID" "$T/droverd-3.log" ||
  fail "droverd-3 exited, but not at the fault"
[ "$(runs)" = 1 ] || fail "the run record without an outcome is gone: $(zk ls "/drover/jobs/$JID/runs")"
pass "droverd-3 withdrew the item, took the task back, and died before its task log said so"

start_worker worker-2
start_droverd 4
wait_job "$JID" cancelled 120
grep -q "event=task-reconciled job=$JID task=$HELD attempt=1 action=lost" "$T/droverd-4.log" ||
  fail "droverd-4 did not declare the attempt lost"
lost=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND task_id = '$HELD' AND worker = 'worker-1' AND status = 'lost'")
[ "$lost" = 1 ] || fail "worker-1's attempt is not recorded as lost: $(psql_q "SELECT string_agg(task_id || ' ' || worker || ' ' || status, ', ') FROM task_attempts WHERE job_id = $JID")"
bad=$(psql_q "SELECT string_agg(id || '=' || status, ' ') FROM tasks WHERE job_id = $JID AND status IN ('queued', 'running')")
[ -z "$bad" ] || fail "task rows still in flight after the end: $bad"
[ "$(psql_q "SELECT status FROM clusters WHERE id = $CID")" = failed ] ||
  fail "the cluster after a cancelled create: $(psql_q "SELECT status FROM clusters WHERE id = $CID")"
check_overlaps
check_tree_clean
pass "the next owner declared the attempt lost, drained, rolled back: cancelled"
