#!/usr/bin/env bash
# Periodic duties split by the ring (docs/operations.md "Periodic duties", seed 003), across a
# member's death: three droverd; ZooKeeper stopped; twenty-four creates accepted (recorded in
# PostgreSQL, their announcements failed); droverd-3 killed with SIGKILL; ZooKeeper started.
# Each surviving member's janitor announces the jobs of its share, and droverd-3's share once
# its session has expired and the ring no longer names it. Every job is announced exactly
# once (no object swept twice) and every one runs to success (none forgotten).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

N=${N:-24}
for n in 1 2 3; do start_droverd "$n"; done
start_worker worker-1
setup_tenant

zk_stop 1
JIDS=()
for i in $(seq 1 "$N"); do
  read -r _ jid <<< "$(create_cluster "c$i" 1 '{"duration_ms": 10}')"
  JIDS+=("$jid")
done
pass "ZooKeeper down: $N creates accepted"
kill -KILL "$(pid_of droverd-3)"
t_kill=$(now_ms)
zk_start 1
for jid in "${JIDS[@]}"; do wait_job "$jid" succeeded 180; done
t_done=$(now_ms)

by1=0 by2=0
for jid in "${JIDS[@]}"; do
  c1=$(grep -c "event=job-announced-by-janitor job=$jid\$" "$T/droverd-1.log" || true)
  c2=$(grep -c "event=job-announced-by-janitor job=$jid\$" "$T/droverd-2.log" || true)
  c3=$(grep -c "event=job-announced-by-janitor job=$jid\$" "$T/droverd-3.log" || true)
  [ $((c1 + c2 + c3)) = 1 ] || fail "job $jid announced $c1 + $c2 + $c3 times"
  by1=$((by1 + c1)) by2=$((by2 + c2))
done
[ "$by1" -gt 0 ] && [ "$by2" -gt 0 ] || fail "one member announced everything: $by1 / $by2"
# droverd-3's share: announced by the others after the ring lost droverd-3 (with 24 jobs, the
# chance that its share was empty is (2/3)^24, below 1 in 10,000).
late=0
for n in 1 2; do
  # The first ring of two members after the last of three (members' data changes, such as
  # their owned-job counts, report the same ring again later).
  t=$(grep 'event=ring-changed ' "$T/droverd-$n.log" |
    awk '/members=3$/ { three = 1; t = ""; next } three && /members=2$/ && t == "" { t = $1 } END { print t }' |
    cut -d= -f2)
  [ -n "$t" ] || fail "droverd-$n never saw the ring without droverd-3"
  late=$((late + $(grep 'event=job-announced-by-janitor' "$T/droverd-$n.log" | cut -d' ' -f1 | cut -d= -f2 |
    awk -v t="$t" '$1 >= t' | wc -l)))
done
[ "$late" -gt 0 ] || fail "nothing announced after droverd-3 left the ring: its share was forgotten?"
check_attempts
pass "every job announced once ($by1 by droverd-1, $by2 by droverd-2, $late of them droverd-3's share after it left the ring) and succeeded, $((t_done - t_kill)) ms after droverd-3's death"
