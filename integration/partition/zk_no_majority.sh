#!/usr/bin/env bash
# A split that leaves ZooKeeper no majority (docs/operations.md "When the network fails"): the
# three servers cut from each other, for twice the session timeout, while jobs run. No server
# serves: droverd and the workers wait (no task is dispatched or started; /readyz is 503; the
# workers' leases run out and their plugins are killed; a client may give its session up after
# two timeouts, coord/session.c); API writes still go to PostgreSQL. Healed, a leader is elected and everything goes
# on: every job succeeds, nothing ran twice or overlapped, nothing is left in the tree.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

[ -f "$T/hosts/zk3" ] || fail "run me under scripts/with-stack --hosts --ensemble"
SESSION=4s
RERUN_OK=1 # a plugin that ended during the split could not write its outcome: it runs again
fleet 2 1
jobs=()
for i in 1 2 3; do jobs+=("$(long_job "c$i" 2 600)"); done
progressing "${jobs[0]}" 2
nf split zk1 zk2,zk3 > /dev/null
nf split zk2 zk3 > /dev/null
t0=$(now_ms)
none_serves() {
  local n
  for n in 1 2 3; do
    [ -z "$(zk_four "$(cat "$T/hosts/zk$n")" srvr | awk -F': ' '/^Mode/ {print $2}')" ] || return 1
  done
}
wait_until 30 "every ZooKeeper server to stop serving" none_serves
pass "ZooKeeper split three ways: no server serves"
wait_until 30 "droverd-1's /readyz to answer 503" ready_is droverd-1 503
# Nothing starts while there is no quorum: the attempts' count stands still for a session
# timeout and more (an attempt is recorded before it starts).
attempts() { psql_q "SELECT count(*) FROM task_attempts"; }
a0=$(attempts)
PORT=${DPORTS[2]}
read -r _ late <<< "$(create_cluster late 1 '{"duration_ms": 100}')"
jobs+=("$late")
poll_until $((2 * ${SESSION%s})) false || true # the split lasts twice the session timeout
a1=$(attempts)
[ "$a1" = "$a0" ] || fail "attempts started without a ZooKeeper quorum: $a0 -> $a1"
nf heal > /dev/null
t1=$(now_ms)
addrs=()
for n in 1 2 3; do addrs+=("$(cat "$T/hosts/zk$n")"); done
wait_quorum "${addrs[@]}"
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
pass "no quorum for $(((t1 - t0) / 1000)) s: nothing started ($a0 attempts before and after), job $late accepted meanwhile; healed, every job succeeded, nothing ran twice or overlapped, the tree is clean"
