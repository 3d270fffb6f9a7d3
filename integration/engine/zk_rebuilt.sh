#!/usr/bin/env bash
# ZooKeeper rebuilt from nothing under a running job (issue 33 item 5): its data directory
# lost (a disk replaced, an ensemble made anew), so the job's znodes are gone and the new
# zxids, so the new lock tokens, start low again, below the token PostgreSQL records for the
# job (jobs.owner_token). The next owner must still reach the ZooKeeper-state-lost defence
# (engine_zk_state_lost): end the job failed (tasks were begun), saying why, and run nothing
# again; and take the job once, not over and over. Before the fix every load was fenced out by
# the higher recorded token, and the job was taken and let go every 200 ms for ever (the test
# timed out waiting for the failure). The token is now the pair (incarnation, zxid): the
# incarnation is the ctime of /drover/ensemble, made once per ZooKeeper (job.c).
#
# zk_rebuilt.sh live (engine_zk_rebuilt_live): the owner is not killed but frozen (SIGSTOP)
# across the rebuild and thawed after it: its session expires, its lock with it, and on its
# new session it reads the incarnation again (once per session generation) before it takes the
# job again: the same end, by the same droverd.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

GATE="$T/gate"
start_droverd 1
start_worker worker-1
setup_tenant
read -r _ JID <<< "$(create_cluster rebuilt 2 "$(jq -cn --arg f "$GATE" '{hold_on: {task: "bootstrap", file: $f}}')")"
creates_done() { [ "$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $JID AND id LIKE '%/create' AND status = 'succeeded'")" = 2 ]; }
wait_until 120 "job $JID's creates to succeed" creates_done
zk get /drover/ensemble > /dev/null || fail "droverd-1 made no /drover/ensemble"
if [ "${1:-}" = live ]; then
  # The worker stops first (the gate opened), then the owner is frozen.
  touch "$GATE"
  kill -TERM "$(pid_of worker-1)"
  wait_exit worker-1 90 > /dev/null || fail "worker-1 did not stop"
  kill -STOP "$(pid_of droverd-1)"
else
  kill -KILL "$(pid_of droverd-1)"
  wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not die"
fi
# A long-lived ZooKeeper's zxids carry its epoch (leader elections, restarts) in their high 32
# bits; a fresh test server's are a few dozen, which the rebuilt one's would pass within
# seconds. The token recorded is given epoch 5, as a ZooKeeper five elections old, while
# nobody owns the job: the rebuilt one's zxids (epoch 0) stay below it.
psql_q "UPDATE jobs SET owner_token = (5::bigint << 32) | owner_token WHERE id = $JID" > /dev/null
old=$(psql_q "SELECT owner_zk || ':' || owner_token FROM jobs WHERE id = $JID")
if [ "${1:-}" != live ]; then
  # Whatever was held at the gate ends now; the worker stops once it has (its grace).
  touch "$GATE"
  kill -TERM "$(pid_of worker-1)"
  wait_exit worker-1 90 > /dev/null || fail "worker-1 did not stop"
fi

# ZooKeeper rebuilt: stopped, its data (snapshots and logs) gone, started again empty.
zk_stop 1
rm -rf "$T/zk1/data/version-2"
zk_start 1
zk_up() { zk ls / > /dev/null 2>&1; }
wait_until 60 "ZooKeeper to serve again" zk_up
zk get /drover/ensemble > /dev/null 2>&1 && fail "ZooKeeper kept its data"

if [ "${1:-}" = live ]; then
  owner=droverd-1
  before=$(grep -c "event=job-acquired job=$JID " "$T/droverd-1.log" || true)
  kill -CONT "$(pid_of droverd-1)"
else
  owner=droverd-2
  before=0
  PORT=
  start_droverd 2
fi
wait_job "$JID" failed 90
err=$(job_status_field "$JID" .error)
[[ $err == *"ZooKeeper state is gone though PostgreSQL records"*"tasks dispatched"* ]] ||
  fail "job $JID's error does not say its ZooKeeper state was lost: $err"
grep -q "event=job-unresumable job=$JID " "$T/$owner.log" || fail "$owner did not say job $JID is unresumable"
[ "$owner" = droverd-2 ] && grep -q "event=job-started job=$JID " "$T/$owner.log" && fail "$owner started job $JID over"
taken=$(($(grep -c "event=job-acquired job=$JID " "$T/$owner.log" || true) - before))
[ "$taken" = 1 ] || fail "$owner took job $JID $taken times after the rebuild"
[ "$(grep -c "event=zk-ensemble " "$T/$owner.log" || true)" -ge $((before > 0 ? 2 : 1)) ] ||
  fail "$owner did not read the rebuilt ZooKeeper's incarnation"
new=$(psql_q "SELECT owner_zk || ':' || owner_token FROM jobs WHERE id = $JID")
[ "${new%%:*}" -gt "${old%%:*}" ] || fail "the incarnation recorded did not grow: $old, then $new"
[ "${new#*:}" -lt "${old#*:}" ] || fail "the rebuilt ZooKeeper's token is not lower than the old one ($old, then $new): the test tested nothing"
creates=$(grep -c "^$JID\\.f[0-9]*\\.[0-9]* node-[12]/create " "$RUNS/runs.log")
[ "$creates" = 2 ] || fail "job $JID's creates ran $creates times, not 2: $(grep "^$JID\\." "$RUNS/runs.log")"
pass "ZooKeeper rebuilt from nothing (token $old, then $new): $owner took the job once more, ended it failed, and ran nothing again"
