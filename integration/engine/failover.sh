#!/usr/bin/env bash
# Failover and handover of a running job between three droverd:
#  - kill -9 of the owner: another member resumes the job and it succeeds; no task that
#    had succeeded runs again; the time from the kill to the new owner's first dispatch is
#    printed (target: the session timeout + 1 s);
#  - SIGTERM of the owner: it hands the job over at once (no session timeout): the time
#    from the signal to the next owner's lock is printed (target: under 1 s);
#  - a member that joins takes its share of running jobs the same way.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

for n in 1 2 3; do start_droverd $n; done
CONCURRENCY=6
for w in 1 2 3; do start_worker worker-$w; done
setup_tenant

port_of() { echo "${DPORTS[${1#droverd-}]}"; }
metric_of() { metric_value "$(port_of "$1")" "$2"; } # NODE SERIES: its value on NODE
log_ms() { # FILE EVENT JOB: the at_ms of the first line with event=EVENT job=JOB
  grep "event=$2 job=$3 " "$1" | head -n 1 | sed 's/.*at_ms=\([0-9]*\).*/\1/'
}

# --- kill -9 of the owner
read -r _ JID <<< "$(create_cluster f1 6 '{"duration_ms": 250}')"
progressing "$JID" 12
OLD=$(owner_of "$JID")
PORT=$(port_of "$(for n in 1 2 3; do [ "droverd-$n" != "$OLD" ] && echo "droverd-$n" && break; done)")
done_before=$(done_of "$JID")
t_kill=$(now_ms)
kill -9 "$(pid_of "$OLD")"
wait_job "$JID" succeeded 120
NEW=$(owner_of "$JID")
[ "$NEW" != "$OLD" ] || fail "the owner did not change"
first=$(log_ms "$T/$NEW.log" first-dispatch "$JID")
[ -n "$first" ] || fail "no first dispatch of $NEW for job $JID"
echo "failover: kill -9 of $OLD at $t_kill, first dispatch by $NEW after $((first - t_kill)) ms (session timeout $SESSION), $done_before tasks were done"
check_runs
[ "$(metric_of "$NEW" drover_engine_failovers_total)" -ge 1 ] &&
  [ "$(metric_of "$NEW" drover_engine_failover_duration_seconds_count)" -ge 1 ] ||
  fail "$NEW's /metrics shows no failover: $(curl -s "http://127.0.0.1:$(port_of "$NEW")/metrics" | grep failover)"
pass "kill -9 of the owner: $NEW resumed job $JID, it succeeded, no task ran twice; /metrics counts the failover"

# --- SIGTERM of the owner: handover
read -r _ JID2 <<< "$(create_cluster f2 6 '{"duration_ms": 250}')"
progressing "$JID2" 12
OLD=$(owner_of "$JID2")
t_term=$(now_ms)
kill -TERM "$(pid_of "$OLD")"
# In this shell, the process's parent: its exit status can be waited for.
wait_exit "$OLD" 20 > "$T/exit.status" || echo timeout > "$T/exit.status"
[ "$(cat "$T/exit.status")" = 0 ] || fail "$OLD did not exit 0 after SIGTERM: $(cat "$T/exit.status")"
wait_job "$JID2" succeeded 120
NEW=$(owner_of "$JID2")
[ "$NEW" != "$OLD" ] || fail "the owner did not change"
acq=$(log_ms "$T/$NEW.log" job-acquired "$JID2")
took=$((acq - t_term))
echo "handover: SIGTERM of $OLD at $t_term, $NEW acquired job $JID2 after $took ms"
[ "$took" -lt 4000 ] || fail "the handover waited for the session timeout ($took ms)"
grep -q "event=job-released job=$JID2 " "$T/$OLD.log" || fail "$OLD did not release the job"
check_runs
pass "SIGTERM of the owner: job handed over at once, succeeded"

# --- a member that joins takes its share
for n in 1 2 3; do
  [ -d "/proc/$(pid_of droverd-$n)" ] && PORT=${DPORTS[$n]} && break
done
jobs=()
for c in 1 2 3 4 5 6; do
  read -r _ J <<< "$(create_cluster j$c 2 '{"duration_ms": 400}')"
  jobs+=("$J")
done
sleep 1
for n in 4 5; do start_droverd $n; done
for J in "${jobs[@]}"; do wait_job "$J" succeeded 120; done
moved=0
for J in "${jobs[@]}"; do
  grep -q "event=job-handover job=$J " "$T"/droverd-*.log && moved=$((moved + 1))
done
[ "$moved" -ge 1 ] || fail "no running job moved to the members that joined"
handed=0 timed=0
for n in 1 2 3 4 5; do
  [ -d "/proc/$(pid_of droverd-$n)" ] || continue
  handed=$((handed + $(metric_of droverd-$n drover_engine_handovers_total)))
  timed=$((timed + $(metric_of droverd-$n drover_engine_handover_duration_seconds_count)))
done
[ "$handed" -ge "$moved" ] && [ "$timed" = "$handed" ] ||
  fail "/metrics: $handed handovers ($timed timed), $moved jobs moved"
check_runs
check_tree_clean
pass "members that joined took $moved of 6 running jobs; all succeeded"
