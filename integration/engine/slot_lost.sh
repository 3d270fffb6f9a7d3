#!/usr/bin/env bash
# A slot task's outcome loses its answer (issue 37): the worker's one multi-op that creates
# the run record, whole, and deletes the attempt's key record (worker/slot.c, gathered with
# the turn's other outcomes) applies, and its answer is lost: the worker runs with
# DROVER_FAULT=zk-answer-lost:multi:/runs/ (coord's test hook: every other multi-op writing
# under runs/ that applied hears a connection loss instead). The resend finds its own record
# (ZNODEEXISTS on op 0: the record's name is the delivery's own, so the lost one applied,
# whole) and takes the outcome as written (event=outcome-recovered), never running the task
# again or writing a second outcome. Every job succeeds, each task run once, on its slots.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
DROVER_FAULT=zk-answer-lost:multi:/runs/ CONCURRENCY=2 start_worker worker-1 "worker.slots = true"
setup_tenant
read -r CID JID <<< "$(create_cluster c1 2)"
wait_job "$JID" succeeded 120
n=$(grep -c 'event=fault-injected fault=zk-answer-lost' "$T/worker-1.log")
[ "$n" -ge 2 ] || fail "only $n answers were lost: the test tested too little"
grep -q 'event=outcome-recovered' "$T/worker-1.log" || fail "no outcome was recovered"
grep -q 'via=queue' "$T/worker-1.log" && fail "a task came from the queue, not a slot"
grep -q 'via=slot' "$T/worker-1.log" || fail "no task came through a slot"
grep -q 'event=task-dropped' "$T/worker-1.log" && fail "the worker dropped a task"
pass "the job succeeded though $n answers of the worker's outcomes were lost"
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active"' "the cluster is active"
check_runs
check_tree_clean
