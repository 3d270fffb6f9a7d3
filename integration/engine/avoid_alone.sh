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
# A second retry avoided while the first's entry is kept (its timer armed for that entry's
# forget time, ten minutes away): it runs here after its own 5 s. Before, the timer was not
# armed again for it, so it waited the ten minutes, or until something else made the queue
# look again: here worker-2's session ending (scripts/chaos --hosts, 2026-11-28: four minutes).
read -r _ J2 <<< "$(create_cluster c2 1 '{"fail_on": {"node": "node-1", "service": "base", "task": "install", "attempts": 1}}')"
wait_job "$J2" succeeded 60
grep -q "event=task-avoided worker=worker-1 task=$J2\." "$T/worker-1.log" ||
  fail "the second job's retry did not avoid worker-1: the test tested nothing"
member_there worker-2 || fail "worker-2's session ended first: the second retry may have waited for it"
pass "a second retry, avoided while the first's entry was kept, ran after its own time"
kill -CONT "$(pid_of worker-2)"
check_runs
check_tree_clean
