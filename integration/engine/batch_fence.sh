#!/usr/bin/env bash
# Batching across jobs keeps each job's fencing (docs/engine.md "Batching across jobs"): one
# droverd owns K small jobs whose first tasks wait on the queue (no worker yet). Two of them
# are fenced out under it, as a new owner would: job P by a newer token recorded in
# PostgreSQL, job Z by its state znode written by someone else (its version moves). Then a
# worker comes and the jobs' writes go out together. P's part of a PostgreSQL batch and Z's
# part of a ZooKeeper multi-op fail, and only theirs: those two are lost by this owner
# (taken again, resumed, and they succeed), every other job goes on without a failed write
# and is never lost, and each job ends succeeded with every attempt row.
# A third, W, has its task rows refused by a trigger (a write that fails, not a fencing):
# its part of a batch is rolled back and retried, the others' commit; once the trigger is
# gone, W goes on and succeeds.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
# Whether a fenced job's first write met others' in a batch was the scheduling's (one
# multi-op and one transaction in flight per node): with six jobs, once the owner wrote less,
# 3 runs in 10 found both fenced jobs alone. So the owner holds its first rounds that carry
# a worker's progress (a task running or ended) until all K jobs have one
# (DROVER_FAULT=gather-progress=K, batch.c): those go as one PostgreSQL transaction, where P
# is found out and W's part fails, each beside the others.
K=${BATCH_FENCE_K:-6}
DROVER_FAULT=gather-progress=$K start_droverd 1
setup_tenant

ids=()
for ((i = 1; i <= K; i++)); do ids+=("$(submit "b$i")"); done
wait_until 120 "the $K jobs to dispatch" dispatched "${ids[@]}"
# ... and their dispatch's multi-ops applied (each job's state set with its items), so that
# the state written below is the last one the owner wrote, not raced by its own dispatch.
Q=/drover/queues/acme/default
all_items() { queue_items && [ "${#items[@]}" -ge "$(psql_q "SELECT count(*) FROM tasks WHERE status = 'queued'")" ]; }
wait_until 60 "the $K jobs' items on the queue" all_items
P=${ids[1]}
Z=${ids[3]}
W=${ids[5]}

# P: a newer token in PostgreSQL. Z: its state written by someone else (the same data: only
# the version moves, as a new owner's write would move it).
psql_q "UPDATE jobs SET owner_token = owner_token + 1 WHERE id = $P"
state=$(zk get "/drover/jobs/$Z/state" | sed 's/^[^ ]*  //')
"$ZKCLI" -server "$DROVER_ZK" set "/drover/jobs/$Z/state" "$state" > "$T/zkcli.out" 2>&1 ||
  fail "could not write job $Z's state: $(cat "$T/zkcli.out")"

# W: its task rows refused
psql_q "CREATE FUNCTION refuse_w() RETURNS trigger LANGUAGE plpgsql AS \$\$
  BEGIN RAISE EXCEPTION 'job $W refused by the test'; END \$\$;
  CREATE TRIGGER refuse_w BEFORE UPDATE ON tasks FOR EACH ROW WHEN (OLD.job_id = $W)
  EXECUTE FUNCTION refuse_w()" > /dev/null

WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-1
for J in "${ids[@]}"; do [ "$J" = "$W" ] || wait_job "$J" succeeded 120; done
pass "the other jobs succeeded, the two fenced out included, while job $W's writes failed"
[ "$(job_status_field "$W" .status)" = running ] || fail "job $W is $(job_status_field "$W" .status), not running"
grep -q "event=job-pg-write-failed job=$W " "$T/droverd-1.log" || fail "job $W's write did not fail"
# W's first failure is in the gathered batch (its first progress is one of the K).
grep -qE "event=job-part-failed-in-batch job=$W " "$T/droverd-1.log" ||
  fail "job $W's write did not fail in a batch of several"
psql_q "DROP TRIGGER refuse_w ON tasks" > /dev/null
wait_job "$W" succeeded 120
pass "job $W's part of the batches was rolled back alone; its writes went on once allowed, and it succeeded"

log="$T/droverd-1.log"
grep -q "event=job-lost job=$P .*fenced out" "$log" || fail "job $P was not fenced out by its token"
grep -q "event=job-lost job=$Z .*version" "$log" || fail "job $Z was not fenced out by its state's version"
lost=$(grep -o 'event=job-lost job=[0-9]*' "$log" | sort -u | sed 's/.*=//' | paste -sd' ')
[ "$lost" = "$(printf '%s\n' "$P" "$Z" | sort | paste -sd' ')" ] || fail "jobs lost: $lost (want $P and $Z only)"
! grep -E "event=job-(pg|zk)-write-failed" "$log" | grep -v "job=$W " || fail "writes failed"
grep -q "event=fault-injected fault=gather-progress parts=$K " "$log" || fail "the first progress did not gather"
grep -E "event=job-fenced-in-batch job=$P .*store=pg" "$log" || fail "job $P was not found out in a batch of several"
# Z's first ZooKeeper write after the worker came may go before the gathered transaction
# (a multi-op with nothing for PostgreSQL: seen in 3 runs of 18), alone: said, not asserted.
grep -qE "event=job-fenced-in-batch job=$Z .*store=zk" "$log" ||
  echo "note: job $Z was found out in a multi-op of its own this run"
pass "only jobs $P and $Z were fenced out ($P in a batch of several); no other job lost or failed a write"

tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $P AND action <> 'anchor'")
check_attempt_rows "$tasks" "${ids[@]}"
check_attempts
check_tree_clean
pass "every job has its $tasks succeeded attempt rows, no task succeeded twice, the tree is clean"
