#!/usr/bin/env bash
# A resuming owner's delete of a stale queue key record (jobresume.c, "stale-queue-key": fenced
# by its lock, at the version read) racing a second owner's resume of the same job.
#
# As in engine_lost_items, a job's queued tasks lose their items and all but one key record
# while no node owns it; the key record left names an item that is gone (stale). droverd-1
# takes the job and stops itself between its read of that record and its delete
# (DROVER_FAULT=stop-before-stale-delete; its session is long, so it outlives the stop).
# Meanwhile the lock moves: droverd-1's member and lock contender znodes are deleted behind
# its back (as an operator, or a server that lost them, would), droverd-2 takes the job, deletes
# the stale record itself and puts the task again, with a new key record of the same name and
# the same version. Continued, droverd-1 sends its delete as it would have: fenced by a lock it
# no longer holds, it must fail (an unfenced one would delete droverd-2's record: the put's
# idempotence gone), and droverd-1 let the job go. The new key record stays, the task runs
# exactly once, the job succeeds.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
W1=
trap '[ -z "$W1" ] || kill -CONT "$W1" 2> /dev/null || true' EXIT

queued_job_orphaned race

# Every item of the queue and all but one key record, deleted in one zkCli session.
queue_items
queue_keys
[ ${#items[@]} -ge 2 ] && [ ${#keys[@]} -ge 2 ] || fail "expected 2 items and key records, found ${#items[@]} and ${#keys[@]}"
stale=${keys[0]}
printf 'delete %s\n' "${items[@]}" "${keys[@]:1}" | timeout 120 "$ZKCLI" -server "$DROVER_ZK" > "$T/zkcli.out" 2>&1 || true
[ "$(zk ls "$Q/keys" | grep -c . || true)" = 1 ] || fail "expected only the stale key record left: $(tail -5 "$T/zkcli.out")"

# droverd-1 resumes the job and stops itself before its delete: started as before, with a
# long session, and not waited for (it may stop before it answers /readyz).
sed -i "s/^zookeeper.session_timeout = .*/zookeeper.session_timeout = 60s/" "$T/droverd-1.conf"
DROVER_FAULT=stop-before-stale-delete start_proc droverd-1 "$BIN/droverd"
W1=$(pid_of droverd-1)
stopped() { [ "$(awk '{print $3}' "/proc/$W1/stat" 2> /dev/null)" = T ]; }
wait_until 60 "droverd-1 to stop before deleting the stale key record" stopped
grep -q "event=fault-injected fault=stop-before-stale-delete job=$JID key=$stale" "$T/droverd-1.log" ||
  fail "droverd-1 stopped, but not at the stale key record $stale"

# The lock moves while droverd-1's session lives: its member znode (the ring) and its lock
# contender, deleted behind its back; droverd-2 takes the job.
start_droverd 2
PORT=${DPORTS[2]}
gone_paths=()
for m in $(zk ls /drover/members/droverd); do
  [[ $m == droverd-1* ]] && gone_paths+=("/drover/members/droverd/$m")
done
for c in $(zk ls "/drover/locks/jobs/$JID"); do gone_paths+=("/drover/locks/jobs/$JID/$c"); done
[ ${#gone_paths[@]} -ge 2 ] || fail "droverd-1's member and contender znodes not found: ${gone_paths[*]}"
printf 'delete %s\n' "${gone_paths[@]}" | timeout 120 "$ZKCLI" -server "$DROVER_ZK" > "$T/zkcli2.out" 2>&1 || true
put_again() { grep -q "event=task-reconciled job=$JID .* action=put" "$T/droverd-2.log"; }
wait_until 90 "droverd-2 to take job $JID and put its lost tasks again" put_again
grep -q "event=stale-queue-key job=$JID key=$stale " "$T/droverd-2.log" ||
  fail "droverd-2 did not find the key record $stale stale"
has_key() { zk ls "$Q/keys" 2> /dev/null | grep -q "^${stale##*/}\$"; }
wait_until 30 "droverd-2's put to make the key record ${stale##*/} again" has_key
pass "droverd-2 took job $JID while droverd-1 was stopped, deleted the stale key record and put the task again"

# droverd-1 goes on: its delete, fenced by the lock it lost, fails.
kill -CONT "$W1"
failed_delete() { grep -q "event=stale-key-delete-failed job=$JID key=$stale " "$T/droverd-1.log"; }
wait_until 60 "droverd-1's delete of the stale key record to fail" failed_delete
how=$(grep -o "event=stale-key-delete-failed job=$JID key=$stale error=[^ ]*" "$T/droverd-1.log" | head -n 1)
has_key || fail "droverd-1's late delete removed droverd-2's key record ${stale##*/}"
if grep -q "event=session-expired" "$T/droverd-1.log"; then
  why="its session had expired"
else
  why="its session alive, the lock's check failed"
fi
pass "droverd-1's late delete failed (${how##*error=}; $why); droverd-2's key record stays"

start_worker worker-1
wait_job "$JID" succeeded 120
check_runs
check_tree_clean
pass "the job succeeded, every task ran once"
