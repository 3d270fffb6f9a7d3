#!/usr/bin/env bash
# The rounds of several jobs in one PostgreSQL batch: their task states and attempt rows go in
# one statement of each kind for all the jobs (engine__pg_multi_work's merge_rounds, docs/engine.md
# "Batching across jobs"), and a merged statement that fails falls back to each job's part alone,
# so one job's bad row fails that job's part only. Two jobs run to success, then rounds_merge
# sends a round for each in one batch: both written, each to its own job's rows; then again with
# the second job's attempt row unreadable: the first job's part written, the second's refused
# with nothing of it written, and the batch committed.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

MERGE="$DROVER_BUILD_DIR/integration/engine/rounds_merge"

start_droverd 1
start_worker worker-1
setup_tenant
read -r _ J1 <<< "$(create_cluster c1 1)"
read -r _ J2 <<< "$(create_cluster c2 1)"
wait_job "$J1" succeeded 120
wait_job "$J2" succeeded 120

# written TAG JOB: the job's first forward task carries TAG-JOB and its attempt row is there.
written() {
  psql_q "SELECT (SELECT message FROM tasks WHERE job_id = $2 AND phase = 'f' ORDER BY idx LIMIT 1),
    (SELECT count(*) FROM task_attempts WHERE job_id = $2 AND run = '$1-$2' AND attempt = 7)"
}

out=$("$MERGE" "$DROVER_PG" m - "$J1" "$J2" 2> "$T/merge.err") || fail "the merged batch failed: $out"
grep -q event=pg-rounds-merge-failed "$T/merge.err" && fail "the merged statements failed: $(cat "$T/merge.err")"
[ "$(sort <<< "$out")" = "$(printf '%s 0\n%s 0' "$J1" "$J2" | sort)" ] || fail "merged batch: $out"
for J in "$J1" "$J2"; do
  [ "$(written m "$J")" = "m-$J|1" ] || fail "job $J's merged round: $(written m "$J")"
done
pass "two jobs' rounds in one batch: each job's task and attempt written to its own rows"

out=$("$MERGE" "$DROVER_PG" b "$J2" "$J1" "$J2" 2> "$T/merge.err") || fail "the batch with a bad part failed: $out"
grep -q event=pg-rounds-merge-failed "$T/merge.err" || fail "no fallback logged: $(cat "$T/merge.err")"
grep -qx "$J1 0" <<< "$out" || fail "job $J1's good part was not written: $out"
grep -qx "$J2 0" <<< "$out" && fail "job $J2's bad part was written: $out"
[ "$(written b "$J1")" = "b-$J1|1" ] || fail "job $J1's part after the fallback: $(written b "$J1")"
[ "$(written b "$J2")" = "m-$J2|0" ] || fail "job $J2's bad part left something: $(written b "$J2")"
pass "a merged statement that fails: each part alone, the good one written, the bad one refused whole"
