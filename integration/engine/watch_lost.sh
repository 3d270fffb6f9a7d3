#!/usr/bin/env bash
# Watches lost (issue 34, the chaos run 2 of 2026-11-28): a droverd whose watch on the job
# list or on the ring hears nothing still takes its jobs, within engine.resync_interval (5 s
# and 2 s here), by reading both again whatever its watches said. coord's test hook drops every
# watch event of one path (DROVER_FAULT=zk-watch-lost:PATH), as a watch the server or a
# reconnection lost:
#  - droverd-1 never hears a job announced (/drover/jobs): it takes the job at its next
#    resync (event=jobs-list-stale), the job succeeds, and droverd-1 takes it once (its
#    list, stale, still names the ended job: before, it took it again every 200 ms until
#    the next resync, 5 s after the one that found it, longer than the job runs);
#  - droverd-2 never hears a member join or leave (/drover/members/droverd): droverd-1 is
#    killed while it owns a running job, and droverd-2 takes the job at its next resync.
# On the code before (no resync), the jobs stayed pending or running for ever.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

DROVER_FAULT=zk-watch-lost:/drover/jobs start_droverd 1 "engine.resync_interval = 5s"
CONCURRENCY=6
start_worker worker-1
setup_tenant

# --- the job list: every event of /drover/jobs lost
read -r _ JID <<< "$(create_cluster c1 2)"
wait_job "$JID" succeeded 60
grep -q 'event=fault-injected fault=zk-watch-lost path=/drover/jobs ' "$T/droverd-1.log" ||
  fail "no event of /drover/jobs was dropped: the test tested nothing"
grep -q "event=jobs-list-stale node=droverd-1 added=1 .*first_added=$JID " "$T/droverd-1.log" ||
  fail "droverd-1 did not find job $JID by its resync: $(grep jobs-list-stale "$T/droverd-1.log")"
n=$(grep -c "event=job-acquired job=$JID " "$T/droverd-1.log")
[ "$n" = 1 ] || fail "droverd-1 took job $JID $n times (its stale list named the ended job)"
pass "a job no watch told of was taken by the resync and succeeded; taken once"

# --- the ring: every event of /drover/members/droverd lost on droverd-2
DROVER_FAULT=zk-watch-lost:/drover/members/droverd start_droverd 2 "engine.resync_interval = 2s"
wait_until 30 "droverd-2 to see both members" grep -q 'event=ring-changed node=droverd-2 members=2' "$T/droverd-2.log"
JOBS=()
for i in 1 2 3 4; do
  read -r _ J <<< "$(create_cluster r$i 4 '{"duration_ms": 300}')"
  JOBS+=("$J")
done
on_1() { # a job of droverd-1's, running: its id in VICTIM
  local J
  for J in "${JOBS[@]}"; do
    [ "$(owner_of "$J")" = droverd-1 ] && done_at_least "$J" 2 && VICTIM=$J && return 0
  done
  return 1
}
wait_until 60 "a job of droverd-1's to run" on_1
kill -9 "$(pid_of droverd-1)"
PORT=${DPORTS[2]}
for J in "${JOBS[@]}"; do wait_job "$J" succeeded 90; done
[ "$(owner_of "$VICTIM")" = droverd-2 ] || fail "job $VICTIM ended with owner $(owner_of "$VICTIM")"
grep -q 'event=fault-injected fault=zk-watch-lost path=/drover/members/droverd ' "$T/droverd-2.log" ||
  fail "no event of the ring was dropped on droverd-2: the test tested nothing"
grep -q 'event=ring-changed node=droverd-2 members=1' "$T/droverd-2.log" ||
  fail "droverd-2 never saw droverd-1 leave"
pass "droverd-2, deaf to the ring, took job $VICTIM of the killed droverd-1 at its resync; every job succeeded"
check_runs
check_tree_clean
