#!/usr/bin/env bash
# The database turns read-only under a running droverd (as a demoted primary does under
# Patroni, docs/operations.md "PostgreSQL under Patroni"): a write then answers SQLSTATE 25006
# on connections libpq still calls open. The API must answer 503 "unavailable" (try again),
# never 500, the pool must drop those connections (event=postgres-connection-dropped
# why=server-state, drover_store_connections_dropped_total), and once the database takes
# writes again the same request succeeds, with no restart of droverd.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
expect 201 "$(api POST /v1/services '{"name":"s1","provisioner":{"actions":{}}}')" '' "create before"
# Eight reads at once: every pool thread holds a connection made while the database took writes.
pids=()
for _ in 1 2 3 4 5 6 7 8; do
  curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/services/s1" &
  pids+=($!)
done
wait "${pids[@]}"

read_only() { # on|off, for every session, existing ones included (a reload)
  psql "$DROVER_PG" -qAtX -c "SET default_transaction_read_only = off" \
    -c "ALTER SYSTEM SET default_transaction_read_only = $1" -c "SELECT pg_reload_conf()" > /dev/null
}
read_only on
k=0
refused() {
  k=$((k + 1))
  r=$(api POST /v1/services "{\"name\":\"r$k\",\"provisioner\":{\"actions\":{}}}")
  case ${r%% *} in
  503) return 0 ;;
  201) return 1 ;;
  *) fail "a write to a read-only database answered: $r" ;;
  esac
}
r=
# The reload reaches each backend at its next command: the first writes may still go through
# before it does; a write after it must be refused with 503, never 500.
poll_until 30 refused || fail "no write refused with 503 in 30 s: $r"
expect 503 "$r" '.error.code == "unavailable"' "write to a read-only database"
for _ in 1 2 3; do
  expect 503 "$(api POST /v1/services '{"name":"s3","provisioner":{"actions":{}}}')" '.error.code == "unavailable"' "write again"
done
grep -q 'event=postgres-connection-dropped why=server-state' "$T/droverd-a.log" ||
  fail "the pool did not drop the read-only connection"
[ "$(metric "$PORT" drover_store_connections_dropped_total)" -ge 1 ] || fail "drover_store_connections_dropped_total did not count it"
expect 200 "$(api GET /v1/services/s1)" '.name == "s1"' "a read meanwhile"
pass "read-only database: writes answered 503 unavailable, never 500; the pool dropped the connections"

read_only off
wrote() { r=$(api POST /v1/services '{"name":"s4","provisioner":{"actions":{}}}'); [ "${r%% *}" = 201 ]; }
poll_until 30 wrote || fail "no write went through 30 s after the database took writes again: $r"
expect 200 "$(api GET /v1/services/s4)" '.name == "s4"' "read after"
pass "writable again: the same droverd writes (no restart)"
