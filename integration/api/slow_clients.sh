#!/usr/bin/env bash
# Slow clients (issue 14, item 1), with slowhttptest (Debian's package) as the
# attacker on 127.0.0.1 and curl as everyone else on 127.0.0.2:
#
#   1. slowloris (headers trickled one line a second, never finished), more
#      connections than http.max_connections: the attacker's address gets
#      http.max_connections_per_source of them, each is cut when its head is
#      not in within http.header_timeout, and the other client is served
#      throughout; slowhttptest itself finds no connection left before its
#      time is up;
#   2. the same attack when one address may fill every slot: /healthz and
#      /readyz are still answered (the overflow lane), other requests get the
#      503 JSON, and are served again once the slow heads are cut;
#   3. slow bodies (R-U-Dead-Yet) from slowhttptest, and one from a client
#      with a valid token: a body has http.body_timeout to arrive, then 408.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

command -v slowhttptest > /dev/null || fail "slowhttptest is not installed (scripts/deps)"
OTHER=127.0.0.2 # another client's address (loopback answers to all of 127/8)

start_api_node droverd-a "http.max_connections = 300" "http.max_connections_per_source = 100" \
  "http.header_timeout = 3s" "http.body_timeout = 3s"
TOKEN=$SUPER

# other PATH: the status of a GET from the other client's address.
other() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 --interface "$OTHER" \
    -H "Authorization: Bearer $SUPER" "http://127.0.0.1:$PORT$1" || true
}

# slow MODE SECONDS NAME ARGS...: run slowhttptest in the background (pid in $slow_pid).
slow() {
  local mode=$1 secs=$2 name=$3
  shift 3
  (cd "$T" && exec timeout $((secs + 30)) slowhttptest "$mode" -l "$secs" -p 2 -g -o "$T/$name" "$@") \
    > "$T/$name.out" 2>&1 &
  slow_pid=$!
}
# slow_result NAME: "SECOND STATUS" from slowhttptest's last words.
slow_result() {
  sed 's/\x1b\[[0-9;]*m//g' "$T/$1.out" |
    awk '/^Test ended on/ {s = $4} /^Exit status:/ {sub(/^Exit status: */, ""); e = $0} END {print s + 0, e}'
}

# 1. Slowloris beyond the connection limit, from one address.
slow -H 20 loris -c 400 -r 200 -i 1 -x 10 -u "http://127.0.0.1:$PORT/v1/whoami"
sleep 1.5 # the attack is under way: its connections are open
n=0 peak=0
while kill -0 "$slow_pid" 2> /dev/null; do
  for p in /v1/whoami /healthz /readyz; do
    code=$(other "$p")
    [ "$code" = 200 ] || fail "slowloris: another client's GET $p got $code"
  done
  open=$(metric "$PORT" drover_http_connections --interface "$OTHER")
  [ "${open:-0}" -gt "$peak" ] && peak=$open
  n=$((n + 1))
  sleep 0.5
done
wait "$slow_pid" || true
[ "$n" -ge 2 ] || fail "slowloris ended before the other client could check ($n rounds)"
read -r second status <<< "$(slow_result loris)"
[ "$status" = "No open connections left" ] && [ "$second" -lt 20 ] ||
  fail "slowloris: slowhttptest says \"$status\" on second $second (connections held to the end)"
[ "$(metric "$PORT" drover_http_request_timeouts_total --interface "$OTHER")" -ge 50 ] ||
  fail "slow heads were not cut: timeouts $(metric "$PORT" drover_http_request_timeouts_total --interface "$OTHER")"
# How many of the 400 the attacker got to open at once is the machine's
# scheduling (beside two CPU hogs it refused 64, not 300); that the address
# was held to its 100 is not: the open connections never passed it (the
# other client's few requests are the few more), and some were refused.
[ "$peak" -le 104 ] || fail "the attacker's address was not limited: $peak connections open at once"
[ "$(metric "$PORT" drover_http_connections_refused_total --interface "$OTHER")" -ge 1 ] ||
  fail "the attacker's address never reached its limit: refused $(metric "$PORT" drover_http_connections_refused_total --interface "$OTHER")"
pass "slowloris, 400 connections: every head cut after http.header_timeout (slowhttptest: \"$status\" on second $second), another client served in all $n rounds"

# 2. One address may take every slot: the probes still answer.
start_api_node droverd-b "http.max_connections = 40" "http.max_connections_per_source = 1000" \
  "http.header_timeout = 5s"
PORT=$(api_port droverd-b)
slow -H 30 full -c 200 -r 200 -i 1 -x 10 -u "http://127.0.0.1:$PORT/v1/whoami"
connections_at_least() { [ "$(metric "$PORT" drover_http_connections --interface "$OTHER")" -ge "$1" ]; }
wait_until -e 0.2 20 "slowhttptest to fill the connection limit" connections_at_least 40
for p in /healthz /readyz; do
  code=$(other "$p")
  [ "$code" = 200 ] || fail "every slot held: GET $p got $code"
done
r=$(curl -s --interface "$OTHER" -H "Authorization: Bearer $SUPER" "http://127.0.0.1:$PORT/v1/whoami")
echo "$r" | jq -e '.error.code == "unavailable"' > /dev/null || fail "every slot held: /v1/whoami said $r"
pass "every slot held by one address: /healthz and /readyz answer 200, other paths the 503 JSON"
other_is() { [ "$(other "$1")" = "$2" ]; }
wait_until -e 0.2 20 "being served again after the slow heads were cut" other_is /v1/whoami 200
pass "served again once the slow heads were cut"
kill "$slow_pid" 2> /dev/null || true
wait "$slow_pid" 2> /dev/null || true
PORT=$(api_port droverd-a)

# 3. Slow bodies. slowhttptest sends no token; a client with one trickles a body by curl.
slow -B 20 rudy -c 200 -r 200 -i 1 -x 10 -s 100000 -t POST -u "http://127.0.0.1:$PORT/v1/tenants"
sleep 1.5
while kill -0 "$slow_pid" 2> /dev/null; do
  code=$(other /v1/whoami)
  [ "$code" = 200 ] || fail "slow bodies: another client got $code"
  sleep 0.5
done
wait "$slow_pid" || true
read -r second status <<< "$(slow_result rudy)"
[ "$status" = "No open connections left" ] && [ "$second" -lt 20 ] ||
  fail "slow bodies: slowhttptest says \"$status\" on second $second"
pass "slow bodies (slowhttptest -B, 200 connections): none held (\"$status\" on second $second), others served"

# A body of 30 KiB at 1 KiB/s with a valid token: 408 once http.body_timeout (3 s) has passed,
# long before the 30 s the body would take.
head -c 30000 /dev/zero | tr '\0' a | jq -Rc '{name: .}' > "$T/slow.json"
t0=$(now_ms)
code=$(curl -s -o "$T/slow.out" -w '%{http_code}' --limit-rate 1K -X POST -H "Authorization: Bearer $SUPER" \
  -H 'Expect:' --data-binary "@$T/slow.json" "http://127.0.0.1:$PORT/v1/tenants" || true)
t1=$(now_ms)
[ "$code" = 408 ] && jq -e '.error.code == "timeout"' "$T/slow.out" > /dev/null ||
  fail "a trickled body: $code $(cat "$T/slow.out")"
[ $((t1 - t0)) -lt 15000 ] || fail "a trickled body held its connection $((t1 - t0)) ms"
pass "a body trickled at 1 KiB/s: 408 after $((t1 - t0)) ms (it would take 30 s)"
