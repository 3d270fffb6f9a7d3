#!/usr/bin/env bash
# The owner's PostgreSQL transactions commit and their answers are lost: droverd runs with
# DROVER_FAULT=pg-commit-lost:SQL (the store's test hook: every other COMMIT of a
# transaction that ran a statement holding SQL is sent, its answer read, so the server
# committed, then the connection is shut down and the engine hears DRV_EAGAIN, as when the
# connection drops between COMMIT and its answer). First the hook itself, through the API:
# a tenant's insert committed though the caller heard 503. Then each of the engine's
# fenced writes: those that update the job's row (start, rounds, final write), then those
# that record attempts:
# the owner sends them again (each is safe to repeat: job_pg.h) and every job succeeds,
# each task once, each attempt row once.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

DROVER_FAULT="pg-commit-lost:INSERT INTO tenants:1" start_droverd 9
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SUPER" \
  -H 'Content-Type: application/json' -d '{"name":"lost1"}' "http://127.0.0.1:${DPORTS[9]}/v1/tenants")
[ "$r" = 503 ] || fail "the tenant's create answered $r, want 503 (its answer lost)"
[ "$(psql_q "SELECT count(*) FROM tenants WHERE name = 'lost1'")" = 1 ] ||
  fail "the hook lost a COMMIT that did not apply"
grep -q 'event=fault-injected fault=pg-commit-lost' "$T/droverd-9.log" || fail "no fault logged"
pass "the hook is real: the tenant's COMMIT applied, its answer was lost"
kill -TERM "$(pid_of droverd-9)"
wait_exit droverd-9 30 > /dev/null || fail "droverd-9 did not stop"
unset PORT

n=0
for sql in "UPDATE jobs" "INTO task_attempts"; do
  n=$((n + 1))
  DROVER_FAULT="pg-commit-lost:$sql" start_droverd "$n"
  [ "$n" = 1 ] && setup_tenant && start_worker worker-1
  PORT=${DPORTS[n]}
  read -r _ JID <<< "$(create_cluster "c$n" 2)"
  wait_job "$JID" succeeded 120
  lost=$(grep -c 'event=fault-injected fault=pg-commit-lost' "$T/droverd-$n.log")
  [ "$lost" -ge 1 ] || fail "$sql: no COMMIT lost its answer"
  pass "$sql: the job succeeded though $lost COMMITs' answers were lost"
  kill -TERM "$(pid_of "droverd-$n")"
  wait_exit "droverd-$n" 30 > /dev/null || fail "droverd-$n did not stop"
done
check_runs
check_tree_clean
