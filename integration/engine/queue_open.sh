#!/usr/bin/env bash
# A task queue whose first open failed is not unusable: ZooKeeper refuses the owner's first
# open of /drover/queues/acme/default (a read-only ACL on /drover/queues/acme, put there by
# this test); the job waits, nothing is dispatched; once the ACL is lifted, coord's retry
# opens the queue and the owner dispatches: the job succeeds (engine.c engine__queue,
# commit.c asks coord_queue_is_open each round).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
zkcli() { "$ZKCLI" -server "$DROVER_ZK" "$@" > "$T/zkcli.out" 2>&1 || true; }

start_droverd 1
setup_tenant
[ -z "$(zk ls /drover/queues/acme 2>/dev/null)" ] || fail "the queue exists already: nothing to refuse"
zkcli create /drover/queues '{}'
zkcli create /drover/queues/acme '{}' world:anyone:ra # read and admin: no create
zkcli getAcl /drover/queues/acme
grep -q "world,'anyone" "$T/zkcli.out" && ! grep -q ": cdrwa" "$T/zkcli.out" ||
  fail "the read-only ACL is not there: $(cat "$T/zkcli.out")"

read -r _ JID <<< "$(create_cluster q 2)"
open_failed() { grep -q 'event=queue-open-failed path=/drover/queues/acme/default' "$T/droverd-1.log"; }
wait_until 60 "the owner's first open of the queue to fail" open_failed
wait_job "$JID" running 30
[ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND attempts > 0")" = 0 ] ||
  fail "tasks dispatched with no queue: $(psql_q "SELECT id, status FROM tasks WHERE job_id = $JID AND attempts > 0")"

zkcli setAcl /drover/queues/acme world:anyone:cdrwa
start_worker worker-1
opened() { grep -q 'event=queue-opened path=/drover/queues/acme/default' "$T/droverd-1.log"; }
wait_until 60 "coord's retry to open the queue" opened
wait_job "$JID" succeeded 120
check_runs
check_tree_clean
pass "a queue whose first open failed opened on a retry, and the job dispatched and succeeded"
