#!/usr/bin/env bash
# Migration 9 (docs/schema.md "Version 9": the catalogue by version, the plan off the job
# row, no job row write per task write) on a database of version 8, and the fleet's rolling
# upgrade around it:
#  - a database stopped at version 8 (DROVER_FAULT=schema-upto:8) gets an ended and an
#    unfinished job as version 8 wrote them, then version 9 alone (schema-upto:9): the ended
#    job's inputs, plan, snapshot and rollback plan move to job_plans, byte for byte, and its
#    row keeps none; the unfinished one keeps its own on its row (an older node resuming it
#    reads them there); every tenant has a catalogue version; a task's update no longer
#    writes the job row (task_changes stays);
#  - a fleet with a member that says schema 8 (DROVER_FAULT=member-schema:8, standing in for
#    an older droverd) starts jobs as version 8 did: inputs with the catalogue's rows, plan and
#    snapshot on the row, nothing in job_plans; an owner of the new build runs it to the end
#    and its plan reads back;
#  - once that member left, jobs keep their plan in job_plans and name their catalogue's
#    version (pinned once in catalogs); a new entity gives the tenant a new version, pinned by
#    the next create; every job succeeds and its plan reads back;
#  - a database newer than the build is refused at start, clearly.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

# --- version 8, filled as version 8 wrote it ----------------------------------------------
port=$(free_port)
write_droverd_conf "droverd-old" "$port" "secrets.key_file = $KEYFILE"
DROVER_FAULT=schema-upto:8 start_proc droverd-old "$BIN/droverd"
wait_exit droverd-old 60 > "$T/old.status" || fail "droverd with schema-upto:8 did not stop"
[ "$(psql_q "SELECT max(version) FROM schema_migrations")" = 8 ] ||
  fail "schema-upto:8 left version $(psql_q "SELECT max(version) FROM schema_migrations")"
psql_q "INSERT INTO tenants (name) VALUES ('oldco');
  INSERT INTO entities (tenant_id, kind, name, version, body)
    SELECT id, 'provider', 'p', 1, '{\"name\": \"p\"}' FROM tenants WHERE name = 'oldco';
  INSERT INTO jobs (tenant_id, operation, status, inputs, plan, snapshot, rollback_plan, plan_sha,
      started_at, ended_at)
    SELECT id, 'create', 'succeeded', '{\"catalog\": [{\"kind\": \"provider\"}], \"op\": \"create\"}',
      '{\"format_version\": 1, \"tasks\": [{\"id\": \"a\"}]}', '{\"nodes\": []}',
      '{\"format_version\": 1, \"tasks\": []}', 'sha-ended', now(), now()
    FROM tenants WHERE name = 'oldco';
  INSERT INTO jobs (tenant_id, operation, status, inputs, plan, snapshot, plan_sha, started_at)
    SELECT id, 'create', 'running', '{\"catalog\": [], \"op\": \"create\"}',
      '{\"format_version\": 1, \"tasks\": [{\"id\": \"b\"}]}', '{\"nodes\": [1]}', 'sha-open', now()
    FROM tenants WHERE name = 'oldco';
  INSERT INTO tasks (job_id, phase, idx, id, action, status)
    SELECT id, 'f', 0, 'b', 'create', 'waiting' FROM jobs WHERE plan_sha = 'sha-open';" > /dev/null
ENDED=$(psql_q "SELECT id FROM jobs WHERE plan_sha = 'sha-ended'")
OPEN=$(psql_q "SELECT id FROM jobs WHERE plan_sha = 'sha-open'")
digest() { # JID TABLE.COLUMNS...: md5 of the job's written-once values where they are now
  psql_q "SELECT md5(concat_ws('|', inputs::text, plan::text, snapshot::text, rollback_plan::text))
    FROM $2 WHERE $3 = $1"
}
ended_before=$(digest "$ENDED" jobs id)
open_before=$(digest "$OPEN" jobs id)
psql_q "UPDATE tasks SET status = 'queued' WHERE job_id = $OPEN" > /dev/null
[ "$(psql_q "SELECT task_changes FROM jobs WHERE id = $OPEN")" = 2 ] ||
  fail "version 8's trigger did not count the task's writes on the job row"
pass "a database of version 8 with an ended and an unfinished job as version 8 wrote them"

: > "$T/droverd-old.log"
DROVER_FAULT=schema-upto:9 start_proc droverd-old "$BIN/droverd"
wait_exit droverd-old 60 > "$T/old.status" || fail "droverd with schema-upto:9 did not stop"
grep -q 'event=migration_applied version=9' "$T/droverd-old.log" || fail "migration 9 not applied"
[ "$(digest "$ENDED" job_plans job_id)" = "$ended_before" ] ||
  fail "the ended job's inputs, plan, snapshot and rollback plan did not move whole to job_plans"
[ "$(psql_q "SELECT count(*) FROM jobs WHERE id = $ENDED AND inputs IS NULL AND plan IS NULL
  AND snapshot IS NULL AND rollback_plan IS NULL")" = 1 ] || fail "the ended job's row keeps its plan"
[ "$(digest "$OPEN" jobs id)" = "$open_before" ] || fail "the unfinished job's row changed"
[ "$(psql_q "SELECT count(*) FROM job_plans WHERE job_id = $OPEN")" = 0 ] ||
  fail "the unfinished job's plan left its row (an older node resuming it reads it there)"
[ "$(psql_q "SELECT count(*) FROM catalog_heads h JOIN tenants t ON t.id = h.tenant_id
  WHERE t.name = 'oldco'")" = 1 ] || fail "the tenant has no catalogue version"
psql_q "UPDATE tasks SET status = 'running' WHERE job_id = $OPEN" > /dev/null
[ "$(psql_q "SELECT task_changes FROM jobs WHERE id = $OPEN")" = 2 ] ||
  fail "a task's update still writes the job row"
[ "$(psql_q "SELECT n FROM job_task_counts WHERE job_id = $OPEN AND status = 'running'")" = 1 ] ||
  fail "the task counts are no longer kept"
pass "version 9: the ended job's plan moved to job_plans byte for byte, the unfinished job's stayed on its row; counts kept without writing the job row"
# The hand-made jobs have no cluster: out of the fleet's way.
psql_q "DELETE FROM jobs WHERE id IN ($ENDED, $OPEN)" > /dev/null

# --- a fleet with an older member -----------------------------------------------------------
DROVER_FAULT=member-schema:8 start_droverd 1
start_droverd 2
setup_tenant
start_worker worker-1
slim_is() { grep -q "event=job-plans-kept-apart node=droverd-2 kept_apart=$1" "$T/droverd-2.log"; }
! slim_is 1 || fail "droverd-2 keeps plans apart with a member of schema 8"
read -r _ J1 <<< "$(create_cluster c1 2)"
wait_job "$J1" succeeded 120
[ "$(psql_q "SELECT count(*) FROM job_plans WHERE job_id = $J1")" = 0 ] ||
  fail "a job of a fleet with a schema-8 member was written to job_plans"
[ "$(psql_q "SELECT jsonb_typeof(inputs->'catalog') || ' ' || (plan IS NOT NULL)
  || ' ' || (snapshot IS NOT NULL) FROM jobs WHERE id = $J1")" = "array true true" ] ||
  fail "the job's row lacks what an older node reads: $(psql_q "SELECT jsonb_typeof(inputs->'catalog'), plan IS NOT NULL FROM jobs WHERE id = $J1")"
expect 200 "$(api GET "/v1/jobs/$J1/plan")" '.tasks | length > 0' "job $J1's plan"
pass "with a member of schema 8 a job keeps its catalogue's rows, plan and snapshot on its row"

# --- the older member gone -----------------------------------------------------------------
kill -TERM "$(pid_of droverd-1)"
wait_exit droverd-1 30 > /dev/null || fail "droverd-1 did not stop"
PORT=${DPORTS[2]}
wait_until 30 "droverd-2 to keep plans apart" slim_is 1
read -r _ J2 <<< "$(create_cluster c2 2)"
wait_job "$J2" succeeded 120
V2=$(psql_q "SELECT catalog_version FROM jobs WHERE id = $J2")
[ -n "$V2" ] || fail "job $J2 names no catalogue version"
[ "$(psql_q "SELECT (j.inputs IS NULL AND j.plan IS NULL AND j.snapshot IS NULL)
  || ' ' || (p.inputs->'catalog'->>'version') || ' ' || (p.plan IS NOT NULL AND p.snapshot IS NOT NULL)
  FROM jobs j JOIN job_plans p ON p.job_id = j.id WHERE j.id = $J2")" = "true $V2 true" ] ||
  fail "job $J2 is not kept apart: $(psql_q "SELECT * FROM job_plans WHERE job_id = $J2")"
[ "$(psql_q "SELECT count(*) FROM catalogs WHERE version = $V2")" = 1 ] || fail "version $V2 not pinned"
expect 200 "$(api GET "/v1/jobs/$J2/plan")" '.tasks | length > 0' "job $J2's plan"
pass "every member of schema 9: job $J2's plan in job_plans, its catalogue by version $V2, pinned"

expect 201 "$(api POST /v1/hardwaretypes '{"name":"h-new","description":"d","providermap":{"fake":{"flavor":"x1"}}}')" '' \
  "a new hardware type"
read -r _ J3 <<< "$(create_cluster c3 1)"
wait_job "$J3" succeeded 120
V3=$(psql_q "SELECT catalog_version FROM jobs WHERE id = $J3")
[ "$V3" != "$V2" ] && [ "$(psql_q "SELECT count(*) FROM catalogs WHERE version = $V3")" = 1 ] ||
  fail "the new entity did not give a new catalogue version pinned by the next create ($V2, $V3)"
[ "$(psql_q "SELECT count(*) FROM catalogs")" = 2 ] || fail "catalogues pinned more than once per version"
pass "a new entity: a new catalogue version ($V3), pinned once by the next create"
check_runs

# --- newer than the build -----------------------------------------------------------------
psql_q "INSERT INTO schema_migrations (version, name, applied_by) VALUES (99, 'later', 'test')" > /dev/null
port=$(free_port)
write_droverd_conf "droverd-3" "$port" "secrets.key_file = $KEYFILE"
start_proc droverd-3 "$BIN/droverd"
wait_exit droverd-3 60 > "$T/d3.status" || fail "droverd-3 ran on a newer schema"
[ "$(cat "$T/d3.status")" != 0 ] || fail "droverd-3 exited 0 on a newer schema"
grep -q 'database schema version 99 is newer than this build' "$T/droverd-3.log" ||
  fail "droverd-3 did not say why: $(tail -3 "$T/droverd-3.log")"
psql_q "DELETE FROM schema_migrations WHERE version = 99" > /dev/null
pass "a database newer than the build: refused at start, saying so"
