#!/usr/bin/env bash
# A job that cannot be resumed ends failed, once, saying why, instead of being locked,
# loaded, rebuilt and released every 200 ms forever (job.c engine__job_unresumable):
#  - its state's plan digest is not the plan its inputs make (a changed planner, changed
#    inputs): the state znode is altered while no node owns the job;
#  - its task log cannot be read: a chunk is overwritten with garbage.
# Each time: the owner is stopped (SIGTERM: it hands the job over, to nobody), the znode
# altered, another node started; that node ends the job failed with the cause, and its
# log says so once.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
zk_set() { "$ZKCLI" -server "$DROVER_ZK" set "$1" "$2" > "$T/zkcli.out" 2>&1 || true; }
zk_data() { zk get "$1" | sed 's/^[^ ]*  //'; }

start_worker worker-1
n=0
# stop_owner JID: the job's owner, stopped (SIGTERM hands it over; nobody is left to take it).
stop_owner() {
  local owner
  owner=$(owner_of "$1")
  kill -TERM "$(pid_of "$owner")"
  wait_exit "$owner" 30 > /dev/null || fail "$owner did not stop"
}
# unresumable JID WHAT NODE: the job ends failed with "cannot resume: ... WHAT", once.
unresumable() {
  local jid=$1 what=$2 node=$3 k
  wait_job "$jid" failed 60
  expect 200 "$(api GET "/v1/jobs/$jid")" ".error | test(\"cannot resume: .*$what\")" "the job says why it cannot be resumed"
  k=$(grep -c "event=job-unresumable job=$jid " "$T/$node.log" || true)
  [ "$k" = 1 ] || fail "$node gave up on job $jid $k times, not once"
  k=$(grep -c "event=job-acquired job=$jid " "$T/$node.log" || true)
  [ "$k" = 1 ] || fail "$node took job $jid $k times: the job went round"
  not_announced() { ! zk ls /drover/jobs | grep -qx "$jid"; }
  wait_until 30 "job $jid's znodes to go" not_announced
}

# --- the plan digest
n=$((n + 1))
start_droverd $n
setup_tenant
read -r _ JID <<< "$(create_cluster d 2 '{"duration_ms": 1500}')"
progressing "$JID" 1
stop_owner "$JID"
state=$(zk_data "/drover/jobs/$JID/state")
echo "$state" | jq -e .plan_sha > /dev/null || fail "no plan digest in the state: $state"
zk_set "/drover/jobs/$JID/state" "$(echo "$state" | jq -c '.plan_sha = ("0" * 64)')"
[ "$(zk_data "/drover/jobs/$JID/state" | jq -r .plan_sha)" = "$(printf '0%.0s' $(seq 64))" ] ||
  fail "the state was not altered: $(cat "$T/zkcli.out")"
n=$((n + 1))
start_droverd $n
PORT=${DPORTS[n]} # the API of the node left
unresumable "$JID" "digest" "droverd-$n"
grep -q "event=job-plan-mismatch job=$JID " "$T/droverd-$n.log" || fail "no plan mismatch logged"
pass "a plan digest that does not match: the job ended failed, once, saying why"

# --- the task log
read -r _ JID <<< "$(create_cluster t 2 '{"duration_ms": 1500}')"
progressing "$JID" 1
stop_owner "$JID"
zk_set "/drover/jobs/$JID/log/f0" 'garbage'
[ "$(zk_data "/drover/jobs/$JID/log/f0")" = garbage ] || fail "the task log was not altered: $(cat "$T/zkcli.out")"
n=$((n + 1))
start_droverd $n
PORT=${DPORTS[n]} # the API of the node left
unresumable "$JID" "task log" "droverd-$n"
pass "a task log that cannot be read: the job ended failed, once, saying why"
