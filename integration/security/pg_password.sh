#!/usr/bin/env bash
# Attack (issue 32, the stack's PostgreSQL trusts every local user): the local stack made
# PostgreSQL with initdb --auth=trust, so any process of the machine (a plugin run as a
# tenant's uid included) could connect to the system of record as its superuser, over TCP or
# the local socket, and read or change every tenant's entities, tokens and jobs.
# Expected (docs/security.md "The stack's PostgreSQL"): every connection needs the stack's
# password (scram-sha-256), the local socket's included; a client without it is refused with
# PostgreSQL's authentication error and gets nothing; the stack's own clients (DROVER_PG with
# its passfile, PGPASSFILE for psql and the tests) connect, and droverd serves.
. "$(dirname "$0")/../../testlib/test-lib.sh"

[ -n "$DROVER_PG_PORT" ] || fail "no PostgreSQL in this stack"
# The connection as the stack's clients make it: with the password file.
[ "$(psql_q 'SELECT 1')" = 1 ] || fail "the stack's own client could not connect"
# What an intruder on the machine tries: as a tenant's plugin uid, no password, over TCP and
# over the local socket (the stack's socket directory is postgres's own, so also as postgres).
sock="$T/pg"
tries=(
  "nobody|host=127.0.0.1 port=$DROVER_PG_PORT dbname=drover user=drover"
  "root|host=127.0.0.1 port=$DROVER_PG_PORT dbname=drover user=drover passfile=/dev/null"
  "postgres|host=$sock port=$DROVER_PG_PORT dbname=drover user=drover"
  "postgres|host=$sock port=$DROVER_PG_PORT dbname=drover user=postgres"
)
for t in "${tries[@]}"; do
  who=${t%%|*} conn=${t#*|}
  out=$(cd / && env -u PGPASSFILE -u PGPASSWORD setpriv --reuid="$who" --regid="$(id -g "$who")" --clear-groups \
    psql "$conn" -qAtXc 'SELECT 1' 2>&1) &&
    fail "attack succeeded: $who connected without a password ($conn): $out"
  case $out in
  *"password authentication failed"* | *"no password supplied"*) ;;
  *) fail "$who ($conn): refused, but not for want of a password: $out" ;;
  esac
done
pass "no password, no connection: over TCP and over the local socket, as a plugin's uid and as postgres"
grep -q '^local *all *all *scram-sha-256' "$T/pg/data/pg_hba.conf" ||
  fail "pg_hba.conf: $(grep -v '^#' "$T/pg/data/pg_hba.conf" | grep .)"
! grep -v '^#' "$T/pg/data/pg_hba.conf" | grep -qw trust || fail "pg_hba.conf still trusts: $(grep -w trust "$T/pg/data/pg_hba.conf")"
pass "pg_hba.conf: scram-sha-256 for every connection, trust nowhere"
