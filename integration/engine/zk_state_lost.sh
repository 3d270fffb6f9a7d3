#!/usr/bin/env bash
# ZooKeeper loses a running job's znodes (state, task log, run records) while PostgreSQL
# still records its tasks dispatched. ZooKeeper 3.8.0 does this on quick leader changes (a
# follower that took a DIFF sync without writing it to disk is elected and truncates the
# others: ZOOKEEPER-4646 and kin; the long chaos run of 2026-11-26 hit it). The test deletes
# the znodes itself while no node owns the job. The next owner must not start the job over
# (its creates would make second machines): it ends the job failed, saying why, and runs
# nothing again. Before, it found no state, started the job afresh, and every task ran twice.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
GATE="$T/gate"
start_droverd 1
start_worker worker-1
setup_tenant
read -r _ JID <<< "$(create_cluster lost 2 "$(jq -cn --arg f "$GATE" '{hold_on: {task: "bootstrap", file: $f}}')")"
creates_done() { [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND id LIKE '%/create' AND status = 'succeeded'")" = 2 ]; }
wait_until 120 "job $JID's creates to succeed" creates_done
kill -KILL "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not die"

# What ZooKeeper lost: the job's whole subtree (the announcement with it).
echo "deleteall /drover/jobs/$JID" | "$ZKCLI" -server "$DROVER_ZK" > "$T/zkcli.out" 2>&1 || true
zk get "/drover/jobs/$JID/state" > /dev/null 2>&1 && fail "the job's state is still there: $(tail -3 "$T/zkcli.out")"

PORT=
start_droverd 2
wait_job "$JID" failed 120
err=$(job_status_field "$JID" .error)
[[ $err == *"ZooKeeper state is gone though PostgreSQL records"*"tasks dispatched"* ]] ||
  fail "job $JID's error does not say its ZooKeeper state was lost: $err"
grep -q "event=job-unresumable job=$JID " "$T/droverd-2.log" || fail "droverd-2 did not say job $JID is unresumable"
grep -q "event=job-started job=$JID " "$T/droverd-2.log" && fail "droverd-2 started job $JID over"
touch "$GATE"
# Whatever was held at the gate ends now; the worker stops once it has (its grace).
kill -TERM "$(pid_of worker-1)"
wait_exit worker-1 90 > /dev/null || fail "worker-1 did not stop"
creates=$(grep -c "^$JID\\.f[0-9]*\\.[0-9]* node-[12]/create " "$RUNS/runs.log")
[ "$creates" = 2 ] || fail "job $JID's creates ran $creates times, not 2: $(grep "^$JID\\." "$RUNS/runs.log")"
pass "ZooKeeper lost a running job's state: the next owner ended it failed, and ran nothing again ($err)"
