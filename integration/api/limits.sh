#!/usr/bin/env bash
# HTTP limits: idle (slow) clients do not block others; beyond
# http.max_connections a connection gets 503 and is closed at once; once
# clients leave, new ones are served again; oversized headers are refused.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/api_lib.sh"

start_api_node droverd-a "http.max_connections = 7"
TOKEN=$SUPER

# Five idle connections that never send a request (a slow client's worst).
for fd in 3 4 5 6 7; do
  eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"
done
# A half-sent request on a sixth one.
exec 8<>/dev/tcp/127.0.0.1/$PORT
printf 'GET /v1/whoami HTTP/1.1\r\nHost: x\r\n' >&8
sleep 0.5
expect 200 "$(api GET /v1/whoami)" '.role == "superadmin"' "a request beside six slow clients"
pass "six slow clients do not block another"

# A seventh idle one reaches the limit; the next connection is refused with 503 and closed.
exec 9<>/dev/tcp/127.0.0.1/$PORT
sleep 0.5
exec 10<>/dev/tcp/127.0.0.1/$PORT
reply=$(timeout 10 cat <&10 || true)
echo "$reply" | head -n 1 | grep -q '^HTTP/1.1 503' || fail "beyond the limit: got \"$(echo "$reply" | head -n 1)\""
echo "$reply" | tail -n 1 | jq -e '.error.code == "unavailable"' > /dev/null || fail "refusal body: $reply"
exec 10<&-
pass "connection beyond http.max_connections: 503 and closed"

for fd in 3 4 5 6 7 8 9; do eval "exec $fd<&-"; done
deadline=$((SECONDS + 10))
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")" = 200 ]; do
  [ $SECONDS -ge $deadline ] && fail "not served again after the slow clients left"
  sleep 0.1
done
curl -s "http://127.0.0.1:$PORT/metrics" | grep -q '^drover_http_connections_refused_total 1$' ||
  fail "refusals not counted: $(curl -s "http://127.0.0.1:$PORT/metrics" | grep refused)"
pass "served again once the clients left; refusal counted in /metrics"

big=$(head -c 20000 /dev/zero | tr '\0' 'a')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $big" "http://127.0.0.1:$PORT/v1/whoami" || true)
case $code in 4*|000) ;; *) fail "oversized headers answered $code" ;; esac
expect 200 "$(api GET /v1/whoami)" '' "after oversized headers"
pass "oversized headers refused ($code)"
