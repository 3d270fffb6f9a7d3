#!/usr/bin/env bash
# The owner made a new job's znodes (its state znode says pending) and died before the
# START event's first write (DROVER_FAULT=crash-after-start makes it exit right there).
# The next owner resumes the job still pending and must start it: the job succeeds,
# nothing runs twice, nothing is left in ZooKeeper. (Found by a 600 s chaos run: such a
# job was resumed with PROGRESS, which leaves PENDING be, and waited for ever.)
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

DROVER_FAULT=crash-after-start start_droverd 1
start_worker worker-1
setup_tenant
read -r CID JID <<< "$(create_cluster c1 2)"
wait_exit droverd-1 60 > /dev/null || fail "droverd-1 did not reach the fault"
grep -q "event=fault-injected fault=crash-after-start job=$JID" "$T/droverd-1.log" ||
  fail "droverd-1 exited, but not at the fault"
zk get "/drover/jobs/$JID/state" | grep -q '"phase":"pending"' ||
  fail "the state does not say pending: $(zk get "/drover/jobs/$JID/state")"
pass "the owner died with the job's znodes made and its state pending"

PORT=
start_droverd 2
wait_job "$JID" succeeded 60
grep -q "event=job-resumed job=$JID phase=pending" "$T/droverd-2.log" || fail "droverd-2 did not resume the pending job"
expect 200 "$(api GET "/v1/clusters/$CID")" '.status == "active"' "the cluster is active"
check_runs
check_tree_clean
pass "a job resumed while still pending is started and succeeds"
