#!/usr/bin/env bash
# A worker whose ZooKeeper session expires while it is busy, and that joins again with the same
# process (SIGSTOP past the session, as a host that sleeps), goes on taking tasks. Found by
# scripts/chaos (2026-11-28: two 60 s runs with lost answers, and run 4 of --hosts; their stack
# logs): a worker that joined again after its session expired took nothing for the rest of the
# run, each time shortly after it had passed over a retry that avoided it. Here worker-2 passes
# a retry over, is frozen past its session and joins again, three times, while jobs run on both
# workers; then worker-1 stops and worker-2 alone must run a new job to the end. (Not
# reproduced by this test: it passes on the code where chaos saw it; it holds the path.)
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

SESSION=4s
start_droverd 1
setup_tenant
CONCURRENCY=4
# worker-1's session is long: it stays a member while held (below), so worker-2 passes its
# retries over (it has a peer); worker-2's is short, so its freezes outlast it.
SESSION=60s start_worker worker-1
start_worker worker-2
member_there() { zk ls /drover/members/worker 2> /dev/null | grep -qx "$1"; }
wait_until 30 "worker-2 to be a member" member_there worker-2
W1=$(pid_of worker-1) W2=$(pid_of worker-2)
trap 'kill -CONT "$W1" "$W2" 2> /dev/null || true' EXIT

# Each round: a job whose first attempts of base/install fail, so that retries avoid the worker
# where they failed (docs/worker.md "Retrying elsewhere"); worker-2 is frozen right after it
# passed one over (as in each of the chaos runs where a worker came back and took nothing).
# worker-1 is held (SIGSTOP, within its long session) while the first attempts run, so that
# they run, and fail, on worker-2.
avoided() { grep -c "event=task-avoided worker=worker-2 " "$T/worker-2.log" || true; }
jobs=()
for round in 1 2 3; do
  before=$(avoided)
  kill -STOP "$W1"
  read -r _ J <<< "$(create_cluster "r$round" 4 '{"duration_ms": 40, "fail_on": {"service": "base", "task": "install", "attempts": 1}}')"
  jobs+=("$J")
  avoided_more() { [ "$(avoided)" -gt "$before" ]; }
  wait_until 60 "worker-2 to pass over a retry in round $round" avoided_more
  kill -STOP "$W2"
  kill -CONT "$W1"
  expired() { [ "$(grep -c "event=session-expired" "$T/worker-2.log" || true)" -ge "$round" ]; }
  # Frozen well past its session: its claims go to worker-1 meanwhile.
  sleep 7
  kill -CONT "$W2"
  wait_until 30 "worker-2 to see its session $round expired" expired
  wait_until 30 "worker-2 to join again" member_there worker-2
done
for J in "${jobs[@]}"; do wait_job "$J" succeeded 120; done

# worker-1 goes: worker-2, the one that came back, is the only one left to take anything.
kill -TERM "$(pid_of worker-1)"
wait_exit worker-1 40 > /dev/null || fail "worker-1 did not stop"
read -r _ J <<< "$(create_cluster alone 3 '{"duration_ms": 20}')"
wait_job "$J" succeeded 90
n=$(grep -c "event=task-ended worker=worker-2 task=$J\." "$T/worker-2.log" || true)
[ "$n" -ge 1 ] || fail "worker-2 ran none of the last job's tasks"
# (A plugin that ended just before a freeze ran again elsewhere: its outcome was not written,
# docs/worker.md. So no check_runs here; no two attempts overlapped, none recorded twice.)
check_overlaps
check_attempts
check_tree_clean
pass "worker-2 came back from three session expiries and alone ran the last job ($n tasks)"
