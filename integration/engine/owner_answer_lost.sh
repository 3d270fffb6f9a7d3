#!/usr/bin/env bash
# Every write of the owner applies and loses its answer: droverd runs with
# DROVER_FAULT=zk-answer-lost:any:/drover/:1 (coord's test hook: each create, set, delete and
# multi-op under /drover/ that applied hears a connection loss instead: the job's lock and
# announcement, its start, the rounds' fenced multi-ops with their queue items, the sweep).
# Each is settled by a read or is idempotent (docs/engine.md "Requests"): the start's
# multi-op by the state znode and its token, a round's by the state's version, a delete
# that finds nothing is done. Before the fix (issue 33, finding A) a start whose answer was
# lost was swept and begun again, and with every answer lost that was for ever. Two jobs
# succeed, each task once, and the tree is clean.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

DROVER_FAULT=zk-answer-lost:any:/drover/:1 start_droverd 1
start_worker worker-1
setup_tenant
read -r _ J1 <<< "$(create_cluster c1 2)"
read -r _ J2 <<< "$(create_cluster c2 1)"
wait_job "$J1" succeeded 120
wait_job "$J2" succeeded 120
n=$(grep -c 'event=fault-injected fault=zk-answer-lost' "$T/droverd-1.log")
[ "$n" -ge 10 ] || fail "only $n answers were lost: the test tested too little"
r=$(grep -c 'event=job-init-resolved .* applied=1' "$T/droverd-1.log")
[ "$r" -ge 2 ] || fail "only $r of the two starts were settled by a read"
pass "both jobs succeeded though $n answers of the owner's writes were lost"
check_runs
check_tree_clean
