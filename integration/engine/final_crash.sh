#!/usr/bin/env bash
# The owner decided a job's end (its state says succeeded) and died before the final
# PostgreSQL write (DROVER_FAULT=crash-before-final-write makes it exit right there):
# PostgreSQL still says running, and the cluster is not active yet. The next owner
# resumes the job in its final phase and writes the end: succeeded, the cluster active
# with its nodes, nothing run again, nothing left in ZooKeeper.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

DROVER_FAULT=crash-before-final-write start_droverd 1
start_worker worker-1
setup_tenant
read -r CID JID <<< "$(create_cluster c1 3)"
wait_exit droverd-1 60 > /dev/null || fail "droverd-1 did not reach the fault"
grep -q "event=fault-injected fault=crash-before-final-write job=$JID" "$T/droverd-1.log" ||
  fail "droverd-1 exited, but not at the fault"
[ "$(psql_q "SELECT status FROM jobs WHERE id = $JID")" = running ] ||
  fail "the job's status before the final write: $(psql_q "SELECT status FROM jobs WHERE id = $JID")"
[ "$(psql_q "SELECT status FROM clusters WHERE id = $CID")" != active ] || fail "the cluster is active before the final write"
zk get "/drover/jobs/$JID/state" | grep -q '"phase":"succeeded"' || fail "the state does not say succeeded"
pass "the owner died after deciding the end, before writing it"

PORT=
start_droverd 2
wait_job "$JID" succeeded 60
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active" and ([.nodes[] | select(.status == "active")] | length == 3)' "the cluster as the job left it"
grep -q "event=job-resumed job=$JID phase=succeeded" "$T/droverd-2.log" || fail "droverd-2 did not resume the finished job"
check_runs
check_tree_clean
pass "the next owner wrote the end: succeeded, the cluster active, nothing ran twice, nothing left"
