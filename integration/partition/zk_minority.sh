#!/usr/bin/env bash
# A ZooKeeper server in the minority (docs/operations.md "When the network fails"): the server
# with the most of the fleet's connections is cut from the other two servers (its clients
# still reach it). It loses the quorum and stops serving; its clients move to the majority
# within the session timeout, keep their sessions (no event=session-expired anywhere), and the
# jobs go on. Healed, the server rejoins the ensemble as a follower. The server notices it lost
# the leader only after syncLimit (10 ticks of 500 ms: 5 s), writes meanwhile unanswered; a
# worker connected there suspects its session first (half the timeout without an answer,
# src/coord/session.c) and gives its running plugins up: those tasks run again, never at the
# same time, recorded succeeded once (RERUN_OK).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

[ -f "$T/hosts/zk3" ] || fail "run me under scripts/with-stack --hosts --ensemble"
SESSION=6s
RERUN_OK=1
fleet 2 1
jobs=()
for i in 1 2 3; do jobs+=("$(long_job "c$i" 2 800)"); done
progressing "${jobs[0]}" 2
# conns N: the fleet's connections to zkN (its cons lines naming a host of the stack but the
# operator's address, from which these probes come).
conns() {
  zk_four "$(cat "$T/hosts/zk$1")" cons | grep -F "/10.252." | grep -vcF "/${DROVER_HOSTS%.0/24}.1:" || true
}
best=1 most=-1
for n in 1 2 3; do
  c=$(conns "$n")
  [ "$c" -gt "$most" ] && best=$n most=$c
done
others=$(for n in 1 2 3; do [ "$n" = "$best" ] || printf 'zk%s,' "$n"; done)
others=${others%,}
nf split "zk$best" "$others" > /dev/null
t0=$(now_ms)
pass "zk$best (the fleet's $most connections) cut from $others"
not_serving() { [ -z "$(zk_four "$(cat "$T/hosts/zk$best")" srvr | awk -F': ' '/^Mode/ {print $2}')" ]; }
wait_until 30 "zk$best to stop serving" not_serving
moved() { [ "$(conns "$best")" = 0 ]; }
wait_until 30 "zk$best's clients to leave it" moved
t1=$(now_ms)
jobs+=("$(long_job c9 2 300)")
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
! grep -l 'event=session-expired' "$T"/droverd-*.log "$T"/worker-*.log 2> /dev/null ||
  fail "a session expired: its clients did not move within the session timeout"
nf heal > /dev/null
addrs=()
for n in 1 2 3; do addrs+=("$(cat "$T/hosts/zk$n")"); done
wait_quorum "${addrs[@]}"
pass "the minority's clients moved to the majority in $(((t1 - t0) / 1000)) s, no session expired, every job succeeded; healed, zk$best follows again"
