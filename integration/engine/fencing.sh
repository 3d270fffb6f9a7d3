#!/usr/bin/env bash
# Fencing (invariant 2, docs/architecture.md): an owner whose token is no longer the one in
# PostgreSQL, whose lock znode is gone, or whose session expired while it was frozen,
# stops acting on the job; the job is taken up again (by it, with a new token, or by
# another member) and succeeds with no task run twice.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
for n in 1 2; do start_droverd $n; done
CONCURRENCY=6
for w in 1 2; do start_worker worker-$w; done
setup_tenant
token_of() { psql_q "SELECT owner_token FROM jobs WHERE id = $1"; }

# 1. PostgreSQL: a newer token recorded (as a new owner would): the owner's next write
#    changes nothing, it stops, takes the lock again (a newer token still) and goes on.
#    (The start tasks wait on a gate until the token is changed, as in 2 and 3 below.)
GATE1="$T/gate-p1"
read -r _ JID <<< "$(create_cluster p1 4 "$(jq -cn --arg f "$GATE1" '{duration_ms: 200, hold_on: {task: "start", file: $f}}')")"
progressing "$JID" 8
OWNER=$(owner_of "$JID")
psql_q "UPDATE jobs SET owner_token = owner_token + 1 WHERE id = $JID"
touch "$GATE1"
wait_job "$JID" succeeded 120
grep -q "event=job-lost job=$JID .*fenced out" "$T/$OWNER.log" || fail "$OWNER did not stop on a newer token"
check_runs
pass "PostgreSQL fencing: a write with a lower token than the recorded one changed nothing; the job succeeded"

# 2. ZooKeeper: the owner's lock znode deleted under it: it stops at once.
#    The job's start tasks wait on a gate until then, so that the job cannot end (and
#    its lock go) before the delete, however slow the machine (zkCli is a JVM).
GATE2="$T/gate-z1"
read -r _ JID <<< "$(create_cluster z1 4 "$(jq -cn --arg f "$GATE2" '{duration_ms: 200, hold_on: {task: "start", file: $f}}')")"
progressing "$JID" 8
OWNER=$(owner_of "$JID")
node=$(zk ls "/drover/locks/jobs/$JID" | sort -t- -k4 | head -n 1)
"$ZKCLI" -server "$DROVER_ZK" delete "/drover/locks/jobs/$JID/$node" > /dev/null 2>&1 || fail "could not delete the lock znode"
touch "$GATE2"
wait_job "$JID" succeeded 120
grep -q "event=job-lost job=$JID " "$T/$OWNER.log" || fail "$OWNER did not stop when its lock znode went"
check_runs
pass "ZooKeeper fencing: an owner whose lock znode is gone stops; the job succeeded"

# 3. A frozen owner (SIGSTOP past its session timeout): the other member takes the job;
#    when the frozen one wakes up it must not write.
#    (The start tasks wait on a gate until the job has changed hands, as in 2.)
GATE3="$T/gate-s1"
read -r _ JID <<< "$(create_cluster s1 4 "$(jq -cn --arg f "$GATE3" '{duration_ms: 200, hold_on: {task: "start", file: $f}}')")"
progressing "$JID" 8
OWNER=$(owner_of "$JID")
TOKEN1=$(token_of "$JID")
kill -STOP "$(pid_of "$OWNER")"
owner_is_not() { [ "$(owner_of "$1")" != "$2" ]; }
poll_until -e 0.2 60 owner_is_not "$JID" "$OWNER" ||
  { kill -CONT "$(pid_of "$OWNER")"; fail "nobody took the job of the frozen owner"; }
kill -CONT "$(pid_of "$OWNER")"
touch "$GATE3"
wait_job "$JID" succeeded 120
[ "$(token_of "$JID")" -gt "$TOKEN1" ] || fail "the token did not grow"
grep -q "event=job-lost job=$JID " "$T/$OWNER.log" || fail "the woken owner did not stop"
check_runs
check_tree_clean
pass "a frozen owner past its session: another member took the job; the woken one wrote nothing"
