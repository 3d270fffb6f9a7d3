#!/usr/bin/env bash
# A task the log says is queued ('q') whose queue item is gone, with no run record, is put
# again by the next owner (issue 22, item 2: "q tasks with no queue item and no run record
# are never rebuilt": a withdraw outside the fenced multi-op, a retry's 'q' written while
# the queue could not take its item). jobresume.c's reconciliation, recon.c's PUT.
#
# No worker runs, so the job's first tasks wait in the queue. The owner hands the job over
# to nobody (SIGTERM), the items and all but one of their key records are deleted behind its
# back, and a new node takes the job: it must find the tasks lost, put them again, and once
# a worker comes the job succeeds with every task run exactly once. The key record left
# names an item that is gone: it is stale, and would refuse the put of its key for ever
# unless the new owner deletes it (it did not: the task waited, queued, for ever).
#
# lost_items.sh answer-lost (engine_lost_items_answer): the new owner's multi-ops under the
# queue's keys/ (the stale record's fenced delete, the puts) lose their answers after they
# applied (DROVER_FAULT=zk-answer-lost:multi:/keys/:1). The delete's is settled by reading
# the record again (gone: done), so the resume goes on: the job is taken once. Before the
# fix (issue 33 item 5) the resume gave up and the job was taken again.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh

queued_job_orphaned lost

# Every item of the queue and its key record, deleted in one zkCli session (a JVM each).
queue_items
[ ${#items[@]} -ge 2 ] || fail "expected at least 2 queue items of job $JID, found ${#items[@]}"
queue_keys
[ ${#keys[@]} -ge 2 ] || fail "expected at least 2 key records, found ${#keys[@]}"
stale=${keys[0]}
keys=("${keys[@]:1}")
printf 'delete %s\n' "${items[@]}" "${keys[@]}" | "$ZKCLI" -server "$DROVER_ZK" > "$T/zkcli.out" 2>&1 || true
count_items() {
  local n=0 s
  for s in $(zk ls "$Q/items"); do n=$((n + $(zk ls "$Q/items/$s" | grep -c . || true))); done
  echo "$n"
}
[ "$(count_items)" = 0 ] || fail "the items were not deleted: $(tail -5 "$T/zkcli.out")"
[ "$(zk ls "$Q/keys" | grep -c . || true)" = 1 ] || fail "expected only the stale key record left"

if [ "${1:-}" = answer-lost ]; then
  DROVER_FAULT=zk-answer-lost:multi:/keys/:1 start_droverd 2
else
  start_droverd 2
fi
PORT=${DPORTS[2]}
lost=${#items[@]}
put_again() { [ "$(grep -c "event=task-reconciled job=$JID .* action=put" "$T/droverd-2.log" || true)" -ge "$lost" ]; }
wait_until 60 "droverd-2 to put job $JID's $lost lost tasks again" put_again
has_items() { [ "$(count_items)" -ge "$lost" ]; }
wait_until 30 "the lost tasks' items to be back in the queue" has_items
grep -q "event=stale-queue-key job=$JID key=$stale " "$T/droverd-2.log" ||
  fail "droverd-2 did not say the key record $stale was stale"
pass "the next owner found $lost queued tasks without an item or a run record (one with a stale key record) and put them again"
if [ "${1:-}" = answer-lost ]; then
  n=$(grep -c "event=fault-injected fault=zk-answer-lost" "$T/droverd-2.log" || true)
  [ "$n" -ge 2 ] || fail "only $n answers were lost: the test tested too little"
  a=$(grep -c "event=job-acquired job=$JID " "$T/droverd-2.log" || true)
  [ "$a" = 1 ] || fail "droverd-2 took job $JID $a times: a lost answer gave its resume up"
  pass "the stale record's delete and the puts lost their answers ($n); the resume went on"
fi

start_worker worker-1
wait_job "$JID" succeeded 120
check_runs
check_tree_clean
pass "the job succeeded, every task ran once"
