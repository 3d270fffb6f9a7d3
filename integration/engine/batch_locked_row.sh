#!/usr/bin/env bash
# A job whose row another transaction holds does not hold the other jobs of its batch
# (docs/engine.md "Batching across jobs"): one droverd, drained while K small jobs are
# submitted, then undrained, so that it takes the K jobs at once and their loads go out in one
# transaction (DROVER_FAULT=gather-loads=K, batch.c: the first loads wait until all K jobs have
# one, whatever the scheduling; without it, a job whose load went alone waited FOR UPDATE and
# was never in a batch to skip). Before that, a transaction of the test's own locks job L's row
# and stays open, as an older owner frozen mid-transaction would (until PostgreSQL's idle limit
# ended it). The batch's fence skips the locked row (SKIP LOCKED): every other job succeeds
# while the lock is still held, L only waits (its load held and sent again, its lock kept:
# never lost, failed or given back), and once the lock goes L succeeds too. On the code
# before, the fence waited for the row, and every job of the batch with it; later, L's load
# failed and gave the lock back to the ring (issue 33 item 5b).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

K=5
DROVER_FAULT=gather-loads=$K start_droverd 1
setup_tenant
WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-1
D() { DROVER_URL="http://127.0.0.1:${DPORTS[1]}" DROVER_TOKEN=$SUPER "$BIN/drover" "$@"; }

D node drain droverd-1 --wait 20 > "$T/drain.out" || fail "drover node drain: $(cat "$T/drain.out")"
ids=()
for ((i = 1; i <= K; i++)); do ids+=("$(submit "b$i")"); done
L=${ids[2]}

# The holder: a transaction with L's row locked, open until $T/release exists (the EXIT
# trap makes the file, so it ends with the test). PostgreSQL says when it holds the lock:
# its session idle in the transaction, after the locking statement.
PGAPPNAME=drover-test-holder psql "$DROVER_PG" -qAtX > "$T/holder.out" 2>&1 <<SQL &
BEGIN;
SELECT 'locked' FROM jobs WHERE id = $L FOR UPDATE;
\! sh -c 'while [ ! -e "$T/release" ]; do sleep 0.1; done'
COMMIT;
SQL
HOLDER=$!
trap 'touch "$T/release"' EXIT
holding() {
  [ "$(psql_q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'drover-test-holder'
    AND state = 'idle in transaction' AND query LIKE '%FOR UPDATE%'")" = 1 ]
}
wait_until 30 "the holder to lock job $L's row" holding

D node undrain droverd-1 > /dev/null || fail "drover node undrain"
for J in "${ids[@]}"; do [ "$J" = "$L" ] || WAIT_JOB_POLL=0.5 wait_job "$J" succeeded 180; done
kill -0 "$HOLDER" 2> /dev/null || fail "the holder ended before the others finished: $(cat "$T/holder.out")"
st=$(job_status_field "$L" .status)
case $st in pending | queued | running) ;; *) fail "job $L is $st while its row is locked" ;; esac
pass "the other $((K - 1)) jobs succeeded while job $L's row stayed locked; job $L is $st"

touch "$T/release"
wait "$HOLDER" || fail "the holder failed: $(cat "$T/holder.out")"
WAIT_JOB_POLL=0.5 wait_job "$L" succeeded 180
log="$T/droverd-1.log"
grep -q "event=fault-injected fault=gather-loads parts=$K " "$log" || fail "the loads did not gather"
! grep -q "event=job-lost" "$log" || fail "a job was lost: $(grep 'event=job-lost' "$log")"
# Held, not failed (issue 33 item 5b): the load waited and was sent again, with the job's lock
# kept; it was never given back to the ring (before, event=job-load-failed, then a release).
! grep -E "event=job-(load|start)-failed job=$L " "$log" ||
  fail "job $L's lock was given back while its row was held: $(grep -E "event=job-(load|start)-failed job=$L " "$log" | head -n 3)"
[ "$(grep -c "event=job-acquired job=$L " "$log")" = 1 ] ||
  fail "job $L's lock was taken more than once: $(grep "event=job-acquired job=$L " "$log")"
grep -q "event=job-part-held job=$L part=load .*its row is locked by another transaction" "$log" ||
  fail "job $L's part was not held as locked: $(grep "job=$L " "$log" | tail -n 5)"
pass "job $L's load waited for its row, holding its lock, and then it succeeded; no job was lost"

check_attempts
check_tree_clean
pass "no task succeeded twice, the tree is clean"
