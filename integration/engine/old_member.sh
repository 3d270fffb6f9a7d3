#!/usr/bin/env bash
# A rolling upgrade's mixed ring with run records kept (issue 33 item 4, milestone 5): a
# member of an older build (its member data without "keeps_runs": droverd with
# DROVER_FAULT=member-old-build, which also deletes each record at once as that build did)
# joins while jobs run, both ways round:
#  1. droverd-1 (this build) runs four jobs, keeping their records (rows written, results in
#     the log); the worker is stopped once some tasks are done and every ended record's row
#     is written. The older droverd-2 joins: droverd-1 hands it its share, and must delete the
#     kept records before it lets each lock go, or the older owner merges them again in its
#     listing's order (two results of one node writing one key can resolve to the wrong
#     value). droverd-2's resume finds no record of a task already done (handed=0 merged=0).
#     Before the fix droverd-1 let the lock go with the records kept.
#  2. droverd-1 drains and stops: the older droverd-2 owns every job alone; new jobs come;
#     droverd-3 (this build) joins while they run and takes its share; droverd-2 stops, and
#     droverd-3 keeps records again once no older member is left.
# Every job succeeds, each task once; the tree is clean.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
SESSION=${SESSION:-60s} # the worker is stopped a while: it must not suspect its session
. "$(dirname "$0")/../../testlib/engine.sh"

start_droverd 1
CONCURRENCY=4 start_worker worker-1
setup_tenant
JOBS=()
for i in 1 2 3 4; do
  read -r _ J <<< "$(create_cluster c$i 2 '{"duration_ms": 150}')"
  JOBS+=("$J")
done
for J in "${JOBS[@]}"; do progressing "$J" 3; done
kill -STOP "$(pid_of worker-1)"

# Every ended record of the job has its attempt row (so nothing is left to record, and
# every record of a done task is a kept one).
ended_records() {
  zk tree "/drover/jobs/$1/runs" 2> /dev/null | grep -c '"status"' || true
}
rows_written() {
  local J
  for J in "${JOBS[@]}"; do
    [ "$(ended_records "$J")" = "$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $J AND status = 'succeeded'")" ] || return 1
  done
}
wait_until 60 "every ended record's row to be written" rows_written
kept=0
for J in "${JOBS[@]}"; do kept=$((kept + $(ended_records "$J"))); done
[ "$kept" -gt 0 ] || fail "no record kept before the older member joined: the test tested nothing"
echo "records kept before the older member joined: $kept"

DROVER_FAULT=member-old-build start_droverd 2
kept_is() { [ "$(grep -c "event=run-records-kept node=$1 kept=$2" "$T/$1.log")" -ge "$3" ]; }
wait_until 30 "droverd-1 to see the older member" kept_is droverd-1 0 1
handed_over() { grep -q "event=job-released" "$T/droverd-1.log"; }
wait_until 30 "droverd-1 to hand a job over" handed_over
resumed_all() {
  local J
  while read -r J; do
    grep -q "event=job-resumed job=$J " "$T/droverd-2.log" || return 1
  done < <(grep -o 'event=job-released job=[0-9]*' "$T/droverd-1.log" | sed 's/.*=//' | sort -u)
}
wait_until 30 "droverd-2 to resume the jobs handed to it" resumed_all
MOVED=$(grep -o 'event=job-resumed job=[0-9]*' "$T/droverd-2.log" | sed 's/.*=//' | sort -u)
[ -n "$MOVED" ] || fail "no job moved to the older member"
for J in $MOVED; do
  line=$(grep "event=job-reconciled job=$J " "$T/droverd-2.log" | head -1)
  echo "droverd-2 resumed job $J: $line"
  [[ $line == *" handed=0 merged=0 "* ]] ||
    fail "the older member found records of done tasks of job $J: $line"
done
kill -CONT "$(pid_of worker-1)"
pass "an older member joined: $kept records were kept, none reached it ($(echo "$MOVED" | wc -w) jobs moved)"

# --- 2. the older member alone, then this build joins while its jobs run
DROVER_URL="http://127.0.0.1:${DPORTS[2]}" DROVER_TOKEN=$SUPER "$BIN/drover" node drain droverd-1 --wait 60 \
  > "$T/drain.out" || fail "drain of droverd-1: $(cat "$T/drain.out")"
kill -TERM "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not stop"
PORT=${DPORTS[2]}
for i in 5 6 7; do
  read -r _ J <<< "$(create_cluster c$i 2 '{"duration_ms": 150}')"
  JOBS+=("$J")
done
for J in "${JOBS[@]:4}"; do progressing "$J" 2; done
# The worker waits while droverd-3 joins, so that the jobs still run when it comes (a slow
# start under load once found them all finished: nothing to take).
kill -STOP "$(pid_of worker-1)"
start_droverd 3
took() { grep -q "event=job-resumed" "$T/droverd-3.log"; }
wait_until 60 "droverd-3 to take its share of the older member's jobs" took
kill -CONT "$(pid_of worker-1)"
kept_is droverd-3 1 1 && fail "droverd-3 kept records beside an older member"
kill -TERM "$(pid_of droverd-2)"
wait_exit droverd-2 30 > /dev/null || fail "droverd-2 did not stop"
wait_until 30 "droverd-3 to keep records again" kept_is droverd-3 1 1
PORT=${DPORTS[3]}
for J in "${JOBS[@]}"; do wait_job "$J" succeeded 120; done
pass "the older member's jobs went on under this build; all ${#JOBS[@]} jobs succeeded"
check_runs
check_tree_clean
