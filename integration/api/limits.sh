#!/usr/bin/env bash
# HTTP limits: idle (slow) clients do not block others; beyond
# http.max_connections a connection gets 503 (within the overflow lane's short
# head deadline when it sends nothing) and is closed; once clients leave, new
# ones are served again; oversized headers are refused (431); over TLS the
# connection beyond the limit gets the same 503 and /healthz still answers.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a "http.max_connections = 7"
TOKEN=$SUPER

# Five idle connections that never send a request (a slow client's worst).
for fd in 3 4 5 6 7; do
  eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"
done
# A half-sent request on a sixth one.
exec 8<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /v1/whoami HTTP/1.1\r\nHost: x\r\n' >&8
sleep 0.5
expect 200 "$(api GET /v1/whoami)" '.role == "superadmin"' "a request beside six slow clients"
pass "six slow clients do not block another"

# A seventh idle one reaches the limit; the next connection is refused with 503 and closed.
exec 9<>"/dev/tcp/127.0.0.1/$PORT"
sleep 0.5
exec 10<>"/dev/tcp/127.0.0.1/$PORT"
reply=$(timeout 10 cat <&10 || true)
echo "$reply" | head -n 1 | grep -q '^HTTP/1.1 503' || fail "beyond the limit: got \"$(echo "$reply" | head -n 1)\""
echo "$reply" | tail -n 1 | jq -e '.error.code == "unavailable"' > /dev/null || fail "refusal body: $reply"
exec 10<&-
pass "connection beyond http.max_connections: 503 and closed"

for fd in 3 4 5 6 7 8 9; do eval "exec $fd<&-"; done
wait_http "$PORT" /healthz 200 10 || fail "not served again after the slow clients left"
grep -q '^drover_http_connections_refused_total 1$' <<< "$(curl -s "http://127.0.0.1:$PORT/metrics")" ||
  fail "refusals not counted: $(curl -s "http://127.0.0.1:$PORT/metrics" | grep refused)"
pass "served again once the clients left; refusal counted in /metrics"

big=$(head -c 20000 /dev/zero | tr '\0' 'a')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $big" "http://127.0.0.1:$PORT/v1/whoami" || true)
case $code in 4*|000) ;; *) fail "oversized headers answered $code" ;; esac
expect 200 "$(api GET /v1/whoami)" '' "after oversized headers"
pass "oversized headers refused ($code)"

# Over TLS, a connection beyond the limit gets the same 503 JSON as over plain HTTP
# (issue 14), and the probes are still answered.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/tls.key" -out "$T/tls.crt" -days 1 \
  -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" > /dev/null 2>&1
chmod 600 "$T/tls.key"
tport=$(free_port)
write_droverd_conf droverd-tls "$tport" "http.tls_cert = $T/tls.crt" "http.tls_key = $T/tls.key" \
  "http.max_connections = 2" "secrets.key_file = $KEYFILE"
start_proc droverd-tls "$BIN/droverd"
wait_until -e 0.2 30 "the TLS droverd to be ready" \
  curl -sf -o /dev/null --cacert "$T/tls.crt" "https://127.0.0.1:$tport/readyz"
exec 3<>"/dev/tcp/127.0.0.1/$tport" 4<>"/dev/tcp/127.0.0.1/$tport" # two idle connections: the limit
sleep 0.5
code=$(curl -s -o "$T/tls.out" -w '%{http_code}' --cacert "$T/tls.crt" -H "Authorization: Bearer $SUPER" \
  "https://127.0.0.1:$tport/v1/whoami" || true)
[ "$code" = 503 ] && jq -e '.error.code == "unavailable"' "$T/tls.out" > /dev/null ||
  fail "TLS beyond the limit: $code $(cat "$T/tls.out" 2> /dev/null)"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/tls.crt" "https://127.0.0.1:$tport/healthz" || true)
[ "$code" = 200 ] || fail "TLS beyond the limit: /healthz got $code"
exec 3<&- 4<&-
pass "over TLS beyond the limit: the same 503 JSON; /healthz still 200"
