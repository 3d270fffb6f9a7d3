#!/usr/bin/env bash
# A lock another transaction holds a moment (a user's pause or cancel holding a job row, a
# task row held by someone) holds back only its own job's part of a batch, and the job waits
# for it without counting PostgreSQL as down (issue 33 items 5b and 5f; docs/engine.md
# "Batching across jobs"). One droverd owns K small jobs whose first tasks wait on the queue
# (no worker yet); a transaction of the test's own then locks job A's row (FOR UPDATE, as the
# API's pause does) and job B's task rows, and stays open. A worker comes; the owner holds its
# first rounds that carry a worker's progress until all K jobs have one
# (DROVER_FAULT=gather-progress=K, batch.c), so they go as one transaction whatever the
# scheduling. A's part is held at the fence (SKIP LOCKED), B's when its task rows' upsert has
# waited lock_timeout: each is rolled back alone and sent again shortly, while the other jobs
# commit and succeed with the locks still held; no write fails, no job is lost or given back.
# Once the locks go, A and B succeed too. On the code before, B's statement waited for the
# lock with the whole transaction (no lock_timeout), so no other job could succeed while it was
# held; and A's skipped part counted as a failed write (event=job-pg-write-failed: PostgreSQL
# "unreachable", its rounds stopped with backoff).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

K=4
DROVER_FAULT=gather-progress=$K start_droverd 1
setup_tenant

ids=()
for ((i = 1; i <= K; i++)); do ids+=("$(submit "h$i")"); done
wait_until 120 "the $K jobs to dispatch" dispatched "${ids[@]}"
Q=/drover/queues/acme/default
all_items() { queue_items && [ "${#items[@]}" -ge "$(psql_q "SELECT count(*) FROM tasks WHERE status = 'queued'")" ]; }
wait_until 60 "the $K jobs' items on the queue" all_items
A=${ids[1]}
B=${ids[2]}

# The holder: job A's row and job B's task rows locked, open until $T/release exists (the
# EXIT trap makes the file, so it ends with the test).
PGAPPNAME=drover-test-holder psql "$DROVER_PG" -qAtX > "$T/holder.out" 2>&1 <<SQL &
BEGIN;
SELECT 'locked' FROM jobs WHERE id = $A FOR UPDATE;
SELECT count(*) FROM (SELECT 1 FROM tasks WHERE job_id = $B FOR UPDATE) t;
\! sh -c 'while [ ! -e "$T/release" ]; do sleep 0.1; done'
COMMIT;
SQL
HOLDER=$!
trap 'touch "$T/release"' EXIT
holding() {
  [ "$(psql_q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'drover-test-holder'
    AND state = 'idle in transaction' AND query LIKE '%tasks%FOR UPDATE%'")" = 1 ]
}
wait_until 30 "the holder to lock job $A's row and job $B's task rows" holding

WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-1
for J in "${ids[@]}"; do
  [ "$J" = "$A" ] || [ "$J" = "$B" ] || WAIT_JOB_POLL=0.5 wait_job "$J" succeeded 120
done
kill -0 "$HOLDER" 2> /dev/null || fail "the holder ended before the others finished: $(cat "$T/holder.out")"
log="$T/droverd-1.log"
for J in "$A" "$B"; do
  st=$(job_status_field "$J" .status)
  case $st in pending | queued | running) ;; *) fail "job $J is $st while its rows are locked" ;; esac
done
grep -q "event=fault-injected fault=gather-progress parts=$K " "$log" || fail "the first progress did not gather"
grep -qE "event=job-part-held job=$A part=round batch=$K .*its row is locked by another transaction" "$log" ||
  fail "job $A's part was not held at the fence in the batch of $K: $(grep "job=$A " "$log" | tail -n 5)"
grep -qE "event=job-part-held job=$B part=round batch=$K .*lock timeout" "$log" ||
  fail "job $B's part was not held by its lock_timeout in the batch of $K: $(grep "job=$B " "$log" | tail -n 5)"
pass "the other $((K - 2)) jobs succeeded while job $A's row and job $B's task rows stayed locked"

touch "$T/release"
wait "$HOLDER" || fail "the holder failed: $(cat "$T/holder.out")"
WAIT_JOB_POLL=0.5 wait_job "$A" succeeded 120
WAIT_JOB_POLL=0.5 wait_job "$B" succeeded 120
! grep -E "event=job-(pg-write|load|start|final-write)-failed|event=job-part-failed-in-batch|event=job-lost" "$log" ||
  fail "a write failed or a job was lost: $(grep -E "event=job-(pg-write|load|start|final-write)-failed|event=job-part-failed-in-batch|event=job-lost" "$log" | head -n 3)"
for J in "${ids[@]}"; do
  [ "$(grep -c "event=job-acquired job=$J " "$log")" = 1 ] || fail "job $J's lock was taken more than once"
done
held=$(metric_value "${DPORTS[1]}" drover_engine_pg_held_total)
[ "${held:-0}" -ge 2 ] || fail "drover_engine_pg_held_total is ${held:-?}"
pass "jobs $A and $B waited for their rows, never counting PostgreSQL down, then succeeded ($held parts held)"

tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $A AND action <> 'anchor'")
check_attempt_rows "$tasks" "${ids[@]}"
check_attempts
check_tree_clean
pass "every job has all its attempt rows, no task succeeded twice, the tree is clean"
