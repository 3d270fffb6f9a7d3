#!/usr/bin/env bash
# The worker's record of an attempt (its run record, created under its claim in one
# multi-op: coord_queue_txn_commit) applies and its answer is lost; so does the answer of
# its complete (claim, item and the record's outcome, one multi-op). The worker runs with
# DROVER_FAULT=zk-answer-lost:multi:/runs/ (coord's test hook: every other multi-op that
# writes under runs/ and applied hears a connection loss instead). The record's resend finds
# its own record (ZNODEEXISTS on op 0; its name is the delivery's own) and must take it as
# recorded: before the fix (issue 33 item 1) it dropped the item unrun and the task showed
# running for ever. Every job succeeds, each task run once.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
DROVER_FAULT=zk-answer-lost:multi:/runs/ CONCURRENCY=1 start_worker worker-1
setup_tenant
read -r CID JID <<< "$(create_cluster c1 2)"
wait_job "$JID" succeeded 120
n=$(grep -c 'event=fault-injected fault=zk-answer-lost' "$T/worker-1.log")
[ "$n" -ge 2 ] || fail "only $n answers were lost: the test tested too little"
grep -q 'event=task-dropped' "$T/worker-1.log" && fail "the worker dropped an item"
grep -q 'event=record-recovered' "$T/worker-1.log" || fail "no record was recovered"
pass "the job succeeded though $n answers of the worker's multi-ops were lost"
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active"' "the cluster is active"
check_runs
check_tree_clean
