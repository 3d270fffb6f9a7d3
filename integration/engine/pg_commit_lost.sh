#!/usr/bin/env bash
# The owner's PostgreSQL transactions commit and their answers are lost: droverd runs with
# DROVER_FAULT=pg-commit-lost:SQL (the store's test hook: every other COMMIT of a
# transaction that ran a statement holding SQL is sent, its answer read, so the server
# committed, then the connection is shut down and the engine hears DRV_EAGAIN, as when the
# connection drops between COMMIT and its answer). First the hook itself, through the API:
# a tenant's insert committed though the caller heard 503. Then each of the engine's
# fenced writes: those that update the job's row (start, rounds, final write), then those
# that record attempts, the start's plan into job_plans: the owner sends them again (each is
# safe to repeat: job_pg.h) and every job succeeds, each task once, each attempt row once.
# Last the catalogue's pin, in a create's transaction (the API) and in an engine's start.
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
for sql in "UPDATE jobs" "INTO task_attempts" "INTO job_plans"; do
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
# The catalogue's pin (once per version, docs/schema.md "Version 9"), lost with its COMMIT:
# first in a create's transaction (the API: the client hears 503, the cluster and its job
# are there and the job is planned from the version it names), then in an engine's start
# (an operation that names no version: the tenant's version when it starts, made new by an
# entity written just before). Each pin is an insert that leaves a pinned version as it is.
n=$((n + 1))
DROVER_FAULT="pg-commit-lost:INTO catalogs" start_droverd "$n"
PORT=${DPORTS[n]}
expect 201 "$(api POST /v1/hardwaretypes '{"name":"h-pin1","description":"d","providermap":{"fake":{"flavor":"x1"}}}')" '' \
  "a new catalogue version"
body=$(jq -cn --argjson c "$(sleep_config)" '{name: "cpin", template: "simple", nodes: 1, config: $c}')
expect 503 "$(api POST /v1/clusters "$body")" '' "a create whose COMMIT's answer is lost"
JID=$(psql_q "SELECT j.id FROM jobs j JOIN clusters c ON c.id = j.cluster_id WHERE c.name = 'cpin'")
[ -n "$JID" ] || fail "the create's COMMIT did not apply"
V=$(psql_q "SELECT catalog_version FROM jobs WHERE id = $JID")
[ "$(psql_q "SELECT count(*) FROM catalogs WHERE version = $V")" = 1 ] || fail "version $V not pinned"
wait_job "$JID" succeeded 120
pass "a create's pin of version $V lost its answer (503): its cluster and job are there, the job succeeded"
CID=$(psql_q "SELECT id FROM clusters WHERE name = 'cpin'")
expect 201 "$(api POST /v1/hardwaretypes '{"name":"h-pin2","description":"d","providermap":{"fake":{"flavor":"x1"}}}')" '' \
  "another catalogue version"
before=$(grep -c 'event=fault-injected fault=pg-commit-lost' "$T/droverd-$n.log")
r=$(api POST "/v1/clusters/$CID/stop")
expect 202 "$r" '' "a stop (no catalogue version named)"
JID=$(body_of "$r" | jq -r .job.id)
wait_job "$JID" succeeded 120
[ "$(grep -c 'event=fault-injected fault=pg-commit-lost' "$T/droverd-$n.log")" -gt "$before" ] ||
  fail "the engine's pin did not lose its answer"
V2=$(psql_q "SELECT catalog_version FROM jobs WHERE id = $JID")
[ "$V2" != "$V" ] && [ "$(psql_q "SELECT count(*) FROM catalogs WHERE version = $V2")" = 1 ] ||
  fail "the stop's version ($V2) is not the new one, pinned once"
pass "an engine's start with its pin of version $V2 lost its answer: sent again, the job succeeded"

check_runs
check_tree_clean
