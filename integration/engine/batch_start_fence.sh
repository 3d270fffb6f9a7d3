#!/usr/bin/env bash
# Batching across jobs carries the jobs' starts and ends too, and keeps each job's fencing
# there (docs/engine.md "Batching across jobs"): one droverd, drained while K small jobs are
# submitted (nobody owns them), then undrained, so that it takes the K jobs at once and their
# loads and starts go out together. Two of them are fenced out as a new owner would fence
# them, by a newer token recorded in PostgreSQL (a trigger, once each):
#   - job P between its load and its start: its start's part fails (its owner is fenced out
#     at its start), and only its own;
#   - job E when its last task row says succeeded: its final write's part fails, and only its
#     own.
# Each of the two is lost by this owner, taken again and finished; every other job goes on
# without a failed or lost write, and every job ends succeeded with its attempt rows. The
# transactions carried more than one job's start and more than one job's end (counts, from
# the owner's /metrics: drover_engine_pg_shared_starts_total, _pg_shared_ends_total).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

# The owner gathers the jobs' starts until all K have one, and its first final write until
# all K jobs have a part (DROVER_FAULT gather-starts and gather-ends, batch.c): whether a
# fenced job's start, or any end, met others' in a transaction was the scheduling's (CI saw
# neither once).
K=6
DROVER_FAULT=gather-starts=$K,gather-ends=$K start_droverd 1
setup_tenant
WORKER_PLUGINS=noop,noop-provider CONCURRENCY=16 start_worker worker-1
D() { DROVER_URL="http://127.0.0.1:${DPORTS[1]}" DROVER_TOKEN=$SUPER "$BIN/drover" "$@"; }
owner_metric() { metric_value "${DPORTS[1]}" "$1"; } # SERIES: droverd-1's value

D node drain droverd-1 --wait 20 > "$T/drain.out" || fail "drover node drain: $(cat "$T/drain.out")"
ids=()
for ((i = 1; i <= K; i++)); do ids+=("$(submit "b$i")"); done
P=${ids[1]}
E=${ids[4]}
[ "$(psql_q "SELECT count(*) FROM jobs WHERE id IN ($(
  IFS=,
  echo "${ids[*]}"
)) AND owner IS NULL")" = "$K" ] || fail "a job was taken while droverd-1 was drained"

# P: a newer token recorded by its load's own update (as a new owner's load right after it
# would). E: a newer token recorded once its last task row says succeeded, in the round
# that says so (as a new owner's load right after that round would).
psql_q "CREATE TABLE stale_once (id bigint, at text);
  INSERT INTO stale_once VALUES ($P, 'start'), ($E, 'end');
  CREATE FUNCTION stale_start() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
    DELETE FROM stale_once WHERE id = NEW.id AND at = 'start';
    IF FOUND THEN NEW.owner_token := NEW.owner_token + 1; END IF;
    RETURN NEW; END \$\$;
  CREATE TRIGGER stale_start BEFORE UPDATE OF owner_token ON jobs FOR EACH ROW
    WHEN (NEW.owner_token > OLD.owner_token) EXECUTE FUNCTION stale_start();
  CREATE FUNCTION stale_end() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM tasks WHERE job_id = NEW.job_id
                   AND status NOT IN ('succeeded', 'skipped')) THEN
      DELETE FROM stale_once WHERE id = NEW.job_id AND at = 'end';
      IF FOUND THEN UPDATE jobs SET owner_token = owner_token + 1 WHERE id = NEW.job_id; END IF;
    END IF;
    RETURN NULL; END \$\$;
  CREATE TRIGGER stale_end AFTER UPDATE ON tasks FOR EACH ROW
    WHEN (NEW.job_id = $E AND NEW.status = 'succeeded') EXECUTE FUNCTION stale_end()" > /dev/null

s0=$(owner_metric drover_engine_pg_shared_starts_total)
e0=$(owner_metric drover_engine_pg_shared_ends_total)
D node undrain droverd-1 > /dev/null || fail "drover node undrain"
for J in "${ids[@]}"; do WAIT_JOB_POLL=0.5 wait_job "$J" succeeded 180; done
[ "$(psql_q "SELECT count(*) FROM stale_once")" = 0 ] || fail "a trigger did not fire: $(psql_q "SELECT * FROM stale_once")"
pass "the $K jobs succeeded, the two fenced out included"

log="$T/droverd-1.log"
grep -q "event=job-lost job=$P .*at its start" "$log" || fail "job $P was not fenced out at its start: $(grep "job=$P " "$log" | grep -E 'lost|fenced')"
grep -q "event=job-lost job=$E .*at its final write" "$log" ||
  fail "job $E was not fenced out at its final write: $(grep "job=$E " "$log" | grep -E 'lost|fenced')"
lost=$(grep -o 'event=job-lost job=[0-9]*' "$log" | sort -u | sed 's/.*=//' | paste -sd' ')
[ "$lost" = "$(printf '%s\n' "$P" "$E" | sort | paste -sd' ')" ] || fail "jobs lost: $lost (want $P and $E only)"
! grep -E "event=job-(pg-write|load|start|final-write)-failed|event=job-part-failed-in-batch" "$log" ||
  fail "a write failed"
grep -q "event=fault-injected fault=gather-starts parts=$K " "$log" || fail "the starts did not gather"
grep -q "event=fault-injected fault=gather-ends parts=$K " "$log" || fail "the ends did not gather"
grep -qE "event=job-fenced-in-batch job=$P .*part=start" "$log" || fail "job $P was not found out in a batch of several"
# The ends gather until every job has a part, released by the first final write: E's is in
# that transaction only when E ends first, so it is said, not asserted.
grep -qE "event=job-fenced-in-batch job=$E .*part=final" "$log" ||
  echo "note: job $E's final write was found out alone this run"
pass "only job $P (at its start, in a batch of several) and job $E (at its end) were fenced out; no other job lost or failed a write"

s1=$(owner_metric drover_engine_pg_shared_starts_total)
e1=$(owner_metric drover_engine_pg_shared_ends_total)
echo "starts (loads and starts) in a transaction with other jobs' parts: $((s1 - s0)); ends: $((e1 - e0))"
[ $((s1 - s0)) -gt 0 ] || fail "no job's load or start went in a transaction with another job's parts"
[ $((e1 - e0)) -gt 0 ] || fail "no job's final write went in a transaction with another job's parts"
pass "the transactions carried several jobs' starts and ends"

tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $P AND action <> 'anchor'")
check_attempt_rows "$tasks" "${ids[@]}"
check_attempts
check_tree_clean
pass "every job has its $tasks succeeded attempt rows, no task succeeded twice, the tree is clean"
