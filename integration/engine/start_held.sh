#!/usr/bin/env bash
# A job's start that meets another transaction's lock is held and sent again, the job keeping
# its lock and its plan, and the other jobs' starts in its transaction go on (issue 33 items
# 5b and 5f; docs/engine.md "Batching across jobs"). One droverd, drained while K new jobs are
# submitted, then undrained: it takes them at once, and their starts go as one transaction
# (DROVER_FAULT=gather-starts=K, batch.c). Before that, a transaction of the test's own locks
# job S's cluster row (as an edit of the cluster through the API would) and stays open. S's
# start writes that row (the cluster's status): its statement passes lock_timeout, S's part is
# rolled back alone and held, and the other jobs start and succeed while the lock is held; S
# is neither given back nor planned again (its lock taken once, no event=job-start-failed),
# and once the lock goes it starts and succeeds. On the code before, S's statement waited for
# the lock with the whole transaction: no job of the batch could start while it was held.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

K=4
DROVER_FAULT=gather-starts=$K start_droverd 1
setup_tenant
WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-1
D() { DROVER_URL="http://127.0.0.1:${DPORTS[1]}" DROVER_TOKEN=$SUPER "$BIN/drover" "$@"; }

D node drain droverd-1 --wait 20 > "$T/drain.out" || fail "drover node drain: $(cat "$T/drain.out")"
ids=()
for ((i = 1; i <= K; i++)); do ids+=("$(submit "s$i")"); done
S=${ids[1]}
C=$(psql_q "SELECT cluster_id FROM jobs WHERE id = $S")

# The holder: job S's cluster row locked, open until $T/release exists (the EXIT trap makes
# the file, so it ends with the test).
PGAPPNAME=drover-test-holder psql "$DROVER_PG" -qAtX > "$T/holder.out" 2>&1 <<SQL &
BEGIN;
SELECT 'locked' FROM clusters WHERE id = $C FOR UPDATE;
\! sh -c 'while [ ! -e "$T/release" ]; do sleep 0.1; done'
COMMIT;
SQL
HOLDER=$!
trap 'touch "$T/release"' EXIT
holding() {
  [ "$(psql_q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'drover-test-holder'
    AND state = 'idle in transaction' AND query LIKE '%FOR UPDATE%'")" = 1 ]
}
wait_until 30 "the holder to lock job $S's cluster row" holding

D node undrain droverd-1 > /dev/null || fail "drover node undrain"
for J in "${ids[@]}"; do [ "$J" = "$S" ] || WAIT_JOB_POLL=0.5 wait_job "$J" succeeded 120; done
kill -0 "$HOLDER" 2> /dev/null || fail "the holder ended before the others finished: $(cat "$T/holder.out")"
st=$(job_status_field "$S" .status)
case $st in pending | queued) ;; *) fail "job $S is $st while its cluster row is locked" ;; esac
log="$T/droverd-1.log"
grep -q "event=fault-injected fault=gather-starts parts=$K " "$log" || fail "the starts did not gather"
grep -qE "event=job-part-held job=$S part=start batch=$K .*lock timeout" "$log" ||
  fail "job $S's start was not held by its lock_timeout in the batch of $K: $(grep "job=$S " "$log" | tail -n 5)"
pass "the other $((K - 1)) jobs started and succeeded while job $S's cluster row stayed locked; job $S is $st"

touch "$T/release"
wait "$HOLDER" || fail "the holder failed: $(cat "$T/holder.out")"
WAIT_JOB_POLL=0.5 wait_job "$S" succeeded 120
! grep -E "event=job-(load|start|pg-write|final-write)-failed|event=job-part-failed-in-batch|event=job-lost" "$log" ||
  fail "a write failed or a job was lost: $(grep -E "event=job-(load|start|pg-write|final-write)-failed|event=job-part-failed-in-batch|event=job-lost" "$log" | head -n 3)"
[ "$(grep -c "event=job-acquired job=$S " "$log")" = 1 ] || fail "job $S's lock was taken more than once"
[ "$(grep -c "event=job-started job=$S " "$log")" = 1 ] || fail "job $S was started more than once"
pass "job $S's start waited for the lock, holding its lock and its plan, and then it succeeded"

check_attempts
check_tree_clean
pass "no task succeeded twice, the tree is clean"
