#!/usr/bin/env bash
# A retry that avoids the worker where its attempt failed (docs/worker.md "Retrying
# elsewhere") is left to the other workers for a while (5 s), then run where it failed if
# none took it. worker-2 is a member that takes nothing (frozen: SIGSTOP, its session long),
# so the only worker that runs is the one the retry avoids. Before the fix (found by
# scripts/chaos: a peer whose queue had stopped taking) the avoidance was forgotten when it
# ended, so the item was avoided again each time it came back, for ever, and the job never
# ended (or, when the expiry's rescan lost the race to a take, after several rounds: the old
# code passed this test only after avoiding the retry about ten times, in 70 s). Now the task
# is avoided once, then runs on worker-1, and the job succeeds.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
SESSION=${SESSION:-60s} # worker-2 stays a member while frozen
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
setup_tenant
start_worker worker-2
member_there() { zk ls /drover/members/worker 2> /dev/null | grep -qx "$1"; }
wait_until 30 "worker-2 to be a member" member_there worker-2
kill -STOP "$(pid_of worker-2)"
trap 'kill -CONT "$(pid_of worker-2)" 2> /dev/null || true' EXIT
start_worker worker-1
wait_until 30 "worker-1 to be a member" member_there worker-1
read -r _ JID <<< "$(create_cluster c1 1 '{"fail_on": {"node": "node-1", "service": "base", "task": "install", "attempts": 1}}')"
wait_job "$JID" succeeded 90
avoided=$(grep -c "event=task-avoided worker=worker-1 task=$JID\." "$T/worker-1.log" || true)
[ "$avoided" -ge 1 ] || fail "no retry avoided worker-1: the test tested nothing"
# Once avoided, the retry runs here when it comes back: avoided once, not again and again.
[ "$avoided" = 1 ] || fail "the retry avoided worker-1 $avoided times"
retried=$(grep -c "event=task-ended worker=worker-1 task=$JID\.f[0-9]*\.2 .* status=ok" "$T/worker-1.log" || true)
[ "$retried" -ge 1 ] || fail "no retry ran on worker-1"
pass "the retry avoided worker-1 $avoided times, then ran there ($retried attempt 2 ok)"
kill -CONT "$(pid_of worker-2)"
check_runs
check_tree_clean
