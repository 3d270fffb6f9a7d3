#!/usr/bin/env bash
# Issue 22, B: the owner's last result arrives while PostgreSQL is down. Its ZooKeeper
# multi-op applies (the task log says S, the state says succeeded) and its PostgreSQL
# batch fails (the task row, the attempt row); then it is killed (SIGKILL) before the
# final write. The next owner resumes the job in its final phase: it must reconcile
# PostgreSQL with the task log and the run records still in ZooKeeper before it writes
# the end. Checked from PostgreSQL: every task row agrees with the end, every succeeded
# task has a succeeded attempt row, every node has its key-values.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

LAST=node-1/db/start # the plan's last task (3-node create of template simple)
GATE="$T/gate-last"

start_droverd 1
start_worker worker-1
setup_tenant
read -r CID JID <<< "$(create_cluster c1 3 "$(jq -cn --arg t "$LAST" --arg f "$GATE" '{hold_on: {id: $t, file: $f}}')")"

last_running() {
  [ "$(psql_q "SELECT status FROM tasks WHERE job_id = $JID AND phase = 'f' AND id = '$LAST'")" = running ] &&
    [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND phase = 'f' AND id <> '$LAST' AND status NOT IN ('succeeded', 'skipped')")" = 0 ]
}
wait_until 120 "every task but $LAST done and $LAST running in PostgreSQL" last_running
pg_stop
touch "$GATE"
state_succeeded() { zk get "/drover/jobs/$JID/state" 2> /dev/null | grep -q '"phase":"succeeded"'; }
wait_until 60 "the state znode to say succeeded" state_succeeded
pg_write_failed() { grep -q "event=job-pg-write-failed job=$JID" "$T/droverd-1.log"; }
wait_until 60 "droverd-1's PostgreSQL write to fail" pg_write_failed
kill -9 "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not die"
pass "the owner wrote succeeded to ZooKeeper, failed to write it to PostgreSQL, and was killed"

pg_start
PORT=
start_droverd 2
wait_job "$JID" succeeded 120
grep -q "event=job-resumed job=$JID phase=succeeded" "$T/droverd-2.log" || fail "droverd-2 did not resume the job in its final phase"
bad=$(psql_q "SELECT string_agg(id || '=' || status, ' ') FROM tasks WHERE job_id = $JID AND status NOT IN ('succeeded', 'skipped')")
[ -z "$bad" ] || fail "task rows that disagree with the end (succeeded): $bad"
missing=$(psql_q "SELECT string_agg(t.id, ' ') FROM tasks t WHERE t.job_id = $JID AND t.status = 'succeeded'
  AND NOT EXISTS (SELECT 1 FROM task_attempts a WHERE a.job_id = t.job_id AND a.phase = t.phase
  AND a.task_id = t.id AND a.status = 'succeeded')")
[ -z "$missing" ] || fail "succeeded tasks without a succeeded attempt row: $missing"
nokv=$(psql_q "SELECT string_agg(id, ' ') FROM nodes WHERE cluster_id = $CID AND status = 'active'
  AND NOT (properties ? 'provider-id' AND properties ? 'hostname')")
[ -z "$nokv" ] || fail "nodes without their key-values: $nokv"
[ "$(psql_q "SELECT count(*) FROM nodes WHERE cluster_id = $CID AND status = 'active'")" = 3 ] ||
  fail "the cluster's nodes: $(psql_q "SELECT string_agg(id || '=' || status, ' ') FROM nodes WHERE cluster_id = $CID")"
check_runs
check_tree_clean
pass "the next owner reconciled PostgreSQL with the task log, then wrote the end: rows, attempts and key-values agree"
