#!/usr/bin/env bash
# task_counts.sh: what the triggers that keep job_task_counts cost PostgreSQL (run under
# scripts/with-stack; docs/benchmarks.md "API").
#
#   DROVER_BUILD_DIR=$PWD/build-rel DROVER_SOURCE_DIR=$PWD \
#     scripts/with-stack -- bench/api/task_counts.sh
#
# Writes the engine's shape of rows for a 140,007-task job twice, once with the tasks'
# triggers disabled and once with them: 14 inserts of 10,000 rows and 7 more in one
# transaction, then 140 updates of 1,000 rows' status (the engine's batches), and prints the
# sums of PostgreSQL's statement times, then the counts the triggers kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
start_api_node droverd-1 "log.level = warn"
api POST /v1/tenants '{"name":"bench"}' "$SUPER" > /dev/null
psql_q "INSERT INTO clusters (tenant_id, name, template_name, template_version, status) SELECT id, 'c', 't', 1, 'active' FROM tenants LIMIT 1"
psql_q "INSERT INTO jobs (tenant_id, cluster_id, operation, status, request) SELECT tenant_id, id, 'create', 'running', '{}' FROM clusters"
psql_q "INSERT INTO jobs (tenant_id, cluster_id, operation, status, request) SELECT tenant_id, id, 'create', 'running', '{}' FROM clusters LIMIT 1"
run() { # JOB: insert 140,007 rows in chunks of 10,000, then 140 batches of 1,000 status updates, like the engine
  local j=$1
  psql "$DROVER_PG" -qAtX <<SQL
\timing on
BEGIN;
$(for c in $(seq 0 13); do echo "INSERT INTO tasks (job_id, phase, idx, id, node_id, service, action, status, deps) SELECT $j, 'f', i, 't' || i, 'n' || (i/14), 's', 'install', 'waiting', '[]' FROM generate_series($((c*10000)), $((c*10000+9999))) i;"; done)
INSERT INTO tasks (job_id, phase, idx, id, node_id, service, action, status, deps) SELECT $j, 'f', i, 't' || i, NULL, 's', 'anchor', 'skipped', '[]' FROM generate_series(140000, 140006) i;
COMMIT;
SQL
}
upd() {
  local j=$1
  psql "$DROVER_PG" -qAtX <<SQL
\timing on
$(for b in $(seq 0 139); do echo "UPDATE tasks t SET status = 'succeeded', attempts = 1 FROM generate_series($((b*1000)), $((b*1000+999))) u(i) WHERE t.job_id = $j AND t.phase = 'f' AND t.idx = u.i;"; done)
SQL
}
sum_ms() { awk '/^Time:/ {s += $2} END {printf "%.0f", s}'; }
psql_q "ALTER TABLE tasks DISABLE TRIGGER USER"
echo "without:       insert $(run 2 | sum_ms) ms, 140 updates of 1,000: $(upd 2 | sum_ms) ms"
psql_q "ALTER TABLE tasks ENABLE TRIGGER USER"
echo "with triggers: insert $(run 1 | sum_ms) ms, 140 updates of 1,000: $(upd 1 | sum_ms) ms"
echo "counts: $(psql_q "SELECT string_agg(job_id || ':' || status || '=' || n, ' ') FROM job_task_counts WHERE n <> 0")"
