#!/usr/bin/env bash
# A create's quota check holds up nothing it need not (docs/api.md "Quotas"): far from every
# limit, the tenant's creates do not wait for each other (each share-locks the tenant row,
# FOR SHARE, and counts in one of 8 lanes); near a limit, a create takes the tenant row's
# lock (FOR NO KEY UPDATE) after its inserts and holds it from its count to its commit.
# Inserts that name the tenant (their foreign key's FOR KEY SHARE: the tenant's entities,
# users) wait for neither.
#
# A create of tenant acme is held in its COMMIT, its quota checked (a deferred trigger waits
# on an advisory lock the test's own session holds). Meanwhile the tenant's admin adds a
# hardware type: it is written at once (on the code before, the create's FOR UPDATE from its
# first statement made it wait for the create's commit). A second create, far from the
# limits, is answered at once: creates do not serialise (on the code before, it waited for the
# first's commit). Then, with acme's clusters quota two above its use, a held create and a
# second one: the second waits for the first (the exact count must see it), after its
# inserts; released, both answer 202, and a third create is refused: the quota held.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a "log.level = warn"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
catalogue_json "$DROVER_SOURCE_DIR/integration/engine/catalog" > "$T/catalogue.json"
expect 200 "$(api POST /v1/import "@$T/catalogue.json")" '' "acme's catalogue"

advisory() { # GRANTED (t or f): the backends that hold (t) or wait for (f) advisory lock 4242
  psql_q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted = '$1'"
}
holding() { [ "$(advisory t)" = 1 ]; }
create_held() { [ "$(advisory f)" = 1 ]; }
# post NAME PATH BODY: a request in the background, its status in $T/NAME.code, its body in
# $T/NAME.out, its pid recorded
post() {
  curl -s -o "$T/$1.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$3" "http://127.0.0.1:$PORT$2" > "$T/$1.code" 7>&- &
  echo $! > "$T/pids/$1.pid"
}
answered() { [ -s "$T/$1.code" ]; }
# waits_on_tenant_after_inserts: a backend waits for a tenant row's lock while holding a
# lock on table clusters (its inserts are made)
waits_on_tenant_after_inserts() {
  [ "$(psql_q "SELECT count(*) FROM pg_locks w JOIN pg_locks c ON c.pid = w.pid
    JOIN pg_class k ON k.oid = c.relation
    WHERE NOT w.granted AND w.locktype IN ('tuple', 'transactionid') AND k.relname = 'clusters'
    AND c.mode = 'RowExclusiveLock'")" -ge 1 ]
}

# The test's session holds advisory lock 4242; a create of a cluster named "held*" waits for
# it in its COMMIT (a deferred constraint trigger), after its quota's lock is taken.
psql_q "CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
    PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END \$\$;
  CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT ON clusters DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.name LIKE 'held%') EXECUTE FUNCTION hold_commit()" > /dev/null
mkfifo "$T/hold.in"
psql "$DROVER_PG" -qAtX < "$T/hold.in" > "$T/hold.out" 2>&1 &
echo $! > "$T/pids/psql-hold.pid"
exec 7> "$T/hold.in"
echo "SELECT pg_advisory_lock(4242);" >&7
wait_until 30 "the test's session to hold the advisory lock" holding
post held /v1/clusters '{"name": "held", "template": "single", "nodes": 1}'
poll_until 60 create_held || fail "the create did not wait in its commit: $(cat "$T/held.code" "$T/held.out" 2> /dev/null)"
pass "a create of acme is held in its commit, its quota checked"

post hw /v1/hardwaretypes '{"name":"h-extra","description":"d","providermap":{"fake":{"flavor":"x1"}}}'
poll_until 30 answered hw || fail "acme's hardware type waited for the held create"
[ "$(cat "$T/hw.code")" = 201 ] || fail "acme's hardware type: $(cat "$T/hw.code") $(cat "$T/hw.out")"
create_held || fail "the create was let go before the hardware type was written"
pass "acme's hardware type was written while the create held the tenant's quota lock"

post second /v1/clusters '{"name": "second", "template": "single", "nodes": 1}'
poll_until 60 answered second || fail "a second create far from the limits waited for the first"
[ "$(cat "$T/second.code")" = 202 ] || fail "the second create: $(cat "$T/second.code") $(cat "$T/second.out")"
create_held || fail "the held create was let go before the second answered"
pass "far from the limits, a second create of acme is answered while the first is held: creates do not serialise"

release() { # the held create goes on; both answer
  echo "SELECT pg_advisory_unlock(4242);" >&7
  wait_exit "$1" 60 > /dev/null || fail "the held create $1 did not answer"
  [ "$(cat "$T/$1.code")" = 202 ] || fail "the held create $1: $(cat "$T/$1.code") $(cat "$T/$1.out")"
}
release held
[ "$(psql_q "SELECT count(*) FROM clusters c JOIN tenants t ON t.id = c.tenant_id
  WHERE t.name = 'acme' AND c.name IN ('held', 'second')")" = 2 ] || fail "acme lacks a cluster"
pass "released, both creates answered 202 and acme has both clusters"

# Near a limit: acme may have two clusters more. The next held create and a second one: the
# second waits for the first's commit, after its own inserts.
expect 200 "$(api PUT /v1/tenants/acme/quotas '{"clusters": 4}' "$SUPER")" '.quotas.clusters.used == 2' \
  "acme's clusters quota: two above its use"
echo "SELECT pg_advisory_lock(4242);" >&7
poll_until 30 holding || fail "the test's session did not take the advisory lock again"
post held2 /v1/clusters '{"name": "held2", "template": "single", "nodes": 1}'
poll_until 60 create_held || fail "the create did not wait in its commit: $(cat "$T/held2.code" "$T/held2.out" 2> /dev/null)"
post second2 /v1/clusters '{"name": "second2", "template": "single", "nodes": 1}'
wait_until 60 "the second create to wait for the tenant's lock after its inserts" waits_on_tenant_after_inserts
! answered second2 || fail "near the limit, the second create did not wait for the first: $(cat "$T/second2.code")"
pass "near a limit, a second create of acme waits for the first's commit, after its own inserts"

release held2
wait_exit second2 60 > /dev/null || fail "the second create did not answer"
[ "$(cat "$T/second2.code")" = 202 ] || fail "the second create: $(cat "$T/second2.code") $(cat "$T/second2.out")"
expect 422 "$(api POST /v1/clusters '{"name": "third", "template": "single", "nodes": 1}')" \
  '.error.quota == "clusters" and .error.used == 4 and .error.limit == 4' "a create past the limit"
pass "released, both answered 202; the next is refused: acme has its 4 clusters"

echo '\q' >&7
exec 7>&-
wait_exit psql-hold 30 > /dev/null || fail "the test's session did not end"
