#!/usr/bin/env bash
# PostgreSQL restarted under a running droverd: while it is down, API requests
# get 503 (code "unavailable") and /readyz says not ready; once it is back,
# the same requests work again, with no restart of droverd. Nothing is
# half-written: the write refused during the outage is simply absent.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
svc='{"name":"s1","provisioner":{"actions":{}}}'
expect 201 "$(api POST /v1/services "$svc")" '' "create before"
pid=$(pid_of droverd-a)

pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
data="$T/pg/data"
as=()
[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
"${as[@]}" "$pgbin/pg_ctl" -D "$data" -m fast -w stop > /dev/null || fail "pg_ctl stop"
pass "postgresql stopped"

expect 503 "$(api GET /v1/services/s1)" '.error.code == "unavailable"' "read while down"
expect 503 "$(api POST /v1/services '{"name":"s2","provisioner":{"actions":{}}}')" '.error.code == "unavailable"' "write while down"
wait_http "$PORT" /readyz 503 15 || fail "/readyz still ready with postgresql down"
wait_http "$PORT" /healthz 200 5 || fail "/healthz not alive with postgresql down"
pass "while down: 503 unavailable, /readyz 503, /healthz 200"

"${as[@]}" setsid "$pgbin/pg_ctl" -D "$data" -l "$T/pg/postgres.log" -w -t 60 start > /dev/null ||
  fail "pg_ctl start"
head -n 1 "$data/postmaster.pid" > "$T/pids/pg.pid"
wait_http "$PORT" /readyz 200 30 || fail "/readyz not ready after postgresql came back"
# Eight reads at once: every pool thread serves one, none on a connection from before.
pids=()
for i in 1 2 3 4 5 6 7 8; do
  curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $TOKEN" \
    "http://127.0.0.1:$PORT/v1/services/s1" > "$T/after.$i" &
  pids+=($!)
done
wait "${pids[@]}"
[ "$(cat "$T"/after.* | sort -u)" = 200 ] || fail "reads right after: $(cat "$T"/after.* | sort | uniq -c)"
expect 200 "$(api GET /v1/services/s1)" '.name == "s1"' "read after"
expect 404 "$(api GET /v1/services/s2)" '.error.code == "not-found"' "the refused write left nothing"
expect 201 "$(api POST /v1/services '{"name":"s2","provisioner":{"actions":{}}}')" '' "write after"
[ "$(pid_of droverd-a)" = "$pid" ] && [ -d "/proc/$pid" ] || fail "droverd was restarted"
pass "after the restart: reads and writes work again, same droverd (pid $pid)"
