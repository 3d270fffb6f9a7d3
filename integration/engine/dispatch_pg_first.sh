#!/usr/bin/env bash
# A job's first dispatch waits for PostgreSQL to record its tasks begun (issue 33 item 5d;
# docs/engine.md "Resuming after a failover"). The defence against a ZooKeeper that lost a
# job's state (engine_zk_state_lost) reads PostgreSQL's tasks_begun: a state gone while tasks
# are begun ends the job for an operator, a state gone with none begun starts the job over.
# The task log runs ahead of PostgreSQL, so before, a first round's items went to the queue
# in the same turn as its `queued` rows went to PostgreSQL, and a state lost before those rows
# were written read 0 begun: the job started over and its tasks ran twice.
#
# Here a trigger refuses every task row past waiting (PostgreSQL cannot record a task begun)
# while droverd-1 owns a new job of two nodes and a worker serves the queue. Now the job's
# first multi-op that puts is parked (event=job-dispatch-waits-for-pg) and its round fails
# (event=job-pg-write-failed): nothing is dispatched. Before, the items went out and the
# worker ran the creates. Then droverd-1 is killed, the job's znodes deleted (what ZooKeeper
# lost), the trigger dropped, and droverd-2 takes the job: it finds no state and no task
# begun and starts the job over, which is right only if nothing ran: each create runs once
# and the job succeeds. Before, each ran twice (or the job never ended: the first items
# were still on the queue).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
start_droverd 1
start_worker worker-1
setup_tenant
psql_q "CREATE FUNCTION refuse_begun() RETURNS trigger LANGUAGE plpgsql AS \$\$
  BEGIN
    IF NEW.status NOT IN ('waiting', 'skipped') THEN
      RAISE EXCEPTION 'task % begun: refused by the test', NEW.id;
    END IF;
    RETURN NEW;
  END \$\$;
  CREATE TRIGGER refuse_begun BEFORE INSERT OR UPDATE ON tasks FOR EACH ROW
  EXECUTE FUNCTION refuse_begun()" > /dev/null
read -r _ JID <<< "$(create_cluster first 2)"

log1="$T/droverd-1.log"
creates() {
  local n
  n=$(grep -c "^$JID\\.f[0-9]*\\.[0-9]* node-[12]/create " "$RUNS/runs.log" 2> /dev/null)
  echo "${n:-0}"
}
# Either the first dispatch went without PostgreSQL (the code before: a create ran) or it
# waits for a round that cannot commit (now).
ran_or_parked() {
  [ "$(creates)" -ge 1 ] && return 0
  grep -q "event=job-dispatch-waits-for-pg job=$JID " "$log1" &&
    grep -q "event=job-pg-write-failed job=$JID .*refused by the test" "$log1"
}
wait_until 120 "job $JID's first dispatch to run or to wait for PostgreSQL" ran_or_parked
[ "$(creates)" = 0 ] || fail "a create of job $JID ran while PostgreSQL recorded no task begun"
[ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND status NOT IN ('waiting', 'skipped')")" = 0 ] ||
  fail "PostgreSQL records tasks of job $JID begun despite the trigger"
kill -KILL "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not die"
queued=$(zk ls /drover/queues/acme/default/keys 2> /dev/null | grep -c "^$JID\\." || true)
[ "$queued" = 0 ] || fail "job $JID has $queued items on the queue though PostgreSQL records none begun"
pass "job $JID's first dispatch waited for PostgreSQL to record its tasks: nothing went to the queue"

# What ZooKeeper lost: the job's whole subtree (the announcement with it).
echo "deleteall /drover/jobs/$JID" | "$ZKCLI" -server "$DROVER_ZK" > "$T/zkcli.out" 2>&1 || true
zk get "/drover/jobs/$JID/state" > /dev/null 2>&1 && fail "the job's state is still there: $(tail -3 "$T/zkcli.out")"
psql_q "DROP TRIGGER refuse_begun ON tasks" > /dev/null

PORT=
start_droverd 2
wait_job "$JID" succeeded 180
grep -q "event=job-started job=$JID " "$T/droverd-2.log" || fail "droverd-2 did not start job $JID over"
n=$(creates)
[ "$n" = 2 ] || fail "job $JID's creates ran $n times, not 2: $(grep "^$JID\\." "$RUNS/runs.log")"
check_attempts
pass "ZooKeeper lost the state of a job whose first dispatch had not gone: started over, each create ran once"
