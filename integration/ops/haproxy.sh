#!/usr/bin/env bash
# HAProxy in front of three droverd (scripts/haproxy, conf/haproxy.cfg):
#  - a client sends requests through HAProxy the whole time (GETs, and every fifth a
#    cluster create: a POST that starts a job);
#  - one droverd is killed with kill -9, another drained (drover node drain, through HAProxy),
#    then stopped with SIGTERM;
#  - no request of the client fails past HAProxy's retries (a create retried after its first
#    attempt went through answers 409, and the cluster exists exactly once);
#  - the drained node stops receiving requests (HAProxy's log names the node of each one)
#    within 3 s of the drain (two failed health checks 0.5 s apart, measured 0.8 s), 6 s
#    before it stops.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

for n in 1 2 3; do start_droverd $n; done
setup_tenant
start_worker worker-1
URL=$("$DROVER_SOURCE_DIR/scripts/haproxy" up --dir "$T" \
  --backends "droverd-1=127.0.0.1:${DPORTS[1]},droverd-2=127.0.0.1:${DPORTS[2]},droverd-3=127.0.0.1:${DPORTS[3]}")
echo "haproxy at $URL"
"$DROVER_SOURCE_DIR/scripts/haproxy" status --dir "$T"
# Wait until HAProxy's checks see all three up.
spread_over_three() {
  [ "$(grep -c . <(for _ in 1 2 3 4 5 6; do curl -s "$URL/readyz" | jq -r .node; done | sort -u))" = 3 ]
}
wait_until -e 0.3 10 "haproxy to spread requests over the three nodes" spread_over_three

# --- the client: one request at a time, each line "ms method path cluster|- status"
CONFIG=$(sleep_config)
client() {
  local i=0 code path
  while [ ! -e "$T/client.stop" ]; do
    i=$((i + 1))
    if [ $((i % 5)) = 0 ]; then
      path=/v1/clusters
      code=$(curl -s -o "$T/client.out" -w '%{http_code}' --max-time 60 -X POST \
        -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        --data-binary "{\"name\":\"hp-$i\",\"template\":\"simple\",\"nodes\":1,\"config\":$CONFIG}" \
        "$URL$path") || code=000
      echo "$(now_ms) POST $path hp-$i $code"
    else
      case $((i % 3)) in 0) path=/v1/jobs ;; 1) path=/v1/clusters ;; *) path=/v1/whoami ;; esac
      code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 \
        -H "Authorization: Bearer $TOKEN" "$URL$path") || code=000
      echo "$(now_ms) GET $path - $code"
    fi
  done > "$T/client.log"
}
client &
CLIENT=$!
sleep 3
t_kill=$(now_ms)
kill -9 "$(pid_of droverd-1)"
echo "kill -9 droverd-1 at $t_kill"
sleep 3
t_drain=$(now_ms)
DROVER_URL=$URL DROVER_TOKEN=$SUPER "$BIN/drover" node drain droverd-2 --wait 30 ||
  fail "drover node drain droverd-2 through haproxy"
echo "drain of droverd-2 asked at $t_drain, drained at $(now_ms)"
sleep 6
t_stop=$(now_ms)
kill -TERM "$(pid_of droverd-2)"
sleep 3
touch "$T/client.stop"
wait "$CLIENT"

# --- no request failed past the retries
total=$(grep -c . "$T/client.log")
posts=$(grep -c ' POST ' "$T/client.log" || true)
bad=$(awk '$5 !~ /^2/ && !($2 == "POST" && $5 == 409)' "$T/client.log")
[ -z "$bad" ] || fail "requests that failed through haproxy: $(echo "$bad" | head -5)"
mapfile -t conflicts < <(awk '$2 == "POST" && $5 == 409 { print $4 }' "$T/client.log")
for name in "${conflicts[@]}"; do
  n=$(psql_q "SELECT count(*) FROM clusters WHERE name = '$name' AND deleted_at IS NULL")
  [ "$n" = 1 ] || fail "create of $name answered 409 but $n such clusters exist"
done
retried=$(awk '$0 ~ /retries=[1-9+]/' "$T/haproxy.log" | grep -c . || true)
echo "client: $total requests ($posts creates), none failed; haproxy retried $retried"
[ "$total" -ge 50 ] || fail "the client sent only $total requests"
pass "kill -9 of one droverd and drain of another: no client request failed past haproxy"

# --- the drained node stopped receiving requests before it stopped
before=$(awk -v t="$t_drain" '$3 == "droverd-2" && $1 * 1000 < t' "$T/haproxy.log" | grep -c . || true)
late=$(awk -v a="$t_drain" -v b="$t_stop" '$3 == "droverd-2" && $1 * 1000 > a + 3000 && $1 * 1000 < b' "$T/haproxy.log")
last=$(awk '$3 == "droverd-2" { t = $1 } END { printf "%.0f", t * 1000 }' "$T/haproxy.log")
[ "$before" -ge 5 ] || fail "droverd-2 served only $before requests before its drain"
[ -z "$late" ] || fail "haproxy sent droverd-2 requests after its drain: $(echo "$late" | head -3)"
echo "droverd-2: $before requests before the drain, the last one $((last - t_drain)) ms after the drain was asked, stopped $((t_stop - last)) ms after it"
[ "$last" -lt "$t_stop" ] || fail "droverd-2 served a request after it was stopped"
pass "the drained node stopped receiving traffic within $((last - t_drain)) ms of the drain, before it stopped"
"$DROVER_SOURCE_DIR/scripts/haproxy" down --dir "$T"
