#!/usr/bin/env bash
# Three droverd starting together against an empty database apply each
# migration exactly once; a restart applies nothing and changes nothing.
. "$(dirname "$0")/../../testlib/test-lib.sh"

ports=()
for n in 1 2 3; do
  ports[n]=$(free_port)
  write_droverd_conf "droverd-$n" "${ports[$n]}"
done
for n in 1 2 3; do start_proc "droverd-$n" "$BIN/droverd"; done
for n in 1 2 3; do
  wait_ready "droverd-$n" "${ports[$n]}" 60
done
pass "three droverd ready"

versions=$(psql_q "SELECT count(*) FROM schema_migrations")
distinct=$(psql_q "SELECT count(DISTINCT version) FROM schema_migrations")
max=$(psql_q "SELECT max(version) FROM schema_migrations")
[ "$versions" = "$max" ] && [ "$distinct" = "$max" ] ||
  fail "schema_migrations has $versions rows for versions up to $max"
applied=$(cat "$T"/droverd-*.log | grep -c 'event=migration_applied' || true)
[ "$applied" = "$max" ] || fail "$applied migration_applied log lines for $max migrations"
for table in tenants users api_tokens entities clusters nodes jobs tasks audit_log snapshots; do
  [ "$(psql_q "SELECT to_regclass('public.$table') IS NOT NULL")" = t ] || fail "table $table missing"
done
pass "schema version $max applied once, by $(psql_q "SELECT string_agg(DISTINCT applied_by, ',') FROM schema_migrations")"

# Restart one node: nothing is applied again.
before=$(psql_q "SELECT string_agg(version || '@' || applied_at, ',' ORDER BY version) FROM schema_migrations")
kill -TERM "$(pid_of droverd-1)"
wait_exit droverd-1 10 > /dev/null || fail "droverd-1 did not stop"
: > "$T/droverd-1.log"
start_proc droverd-1 "$BIN/droverd"
wait_ready droverd-1 "${ports[1]}" 60
after=$(psql_q "SELECT string_agg(version || '@' || applied_at, ',' ORDER BY version) FROM schema_migrations")
[ "$before" = "$after" ] || fail "schema_migrations changed on restart: $before -> $after"
grep -q 'event=migration_applied' "$T/droverd-1.log" && fail "restart applied a migration again"
grep -q "event=schema_ready version=$max applied=0" "$T/droverd-1.log" ||
  fail "restart did not report schema_ready applied=0"
pass "restart applied nothing"
