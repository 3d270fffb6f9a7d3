#!/usr/bin/env bash
# HAProxy cut from one droverd (docs/operations.md "When the network fails"): its health
# checks of droverd-1 go unanswered, so it marks droverd-1 down (inter 500 ms, fall 2, connect
# timeout 2 s: conf/haproxy.cfg) and sends everything to droverd-2; a request caught on the
# way is retried there (retries 3, redispatch). Every request through HAProxy is answered
# right; droverd-1 itself goes on serving its jobs (it reaches ZooKeeper and PostgreSQL).
# Healed, HAProxy marks it up again and sends to both.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

fleet 2 1
url=$("$DROVER_SOURCE_DIR/scripts/haproxy" up --dir "$T" \
  --backends "droverd-1=$(at "${DPORTS[1]}"):${DPORTS[1]},droverd-2=$(at "${DPORTS[2]}"):${DPORTS[2]}")
hp=${url#http://}
PORT_ADDR[${hp##*:}]=${hp%:*}
HPORT=${hp##*:}
# through N: N reads of the job list through HAProxy; each answer's status, one a line.
through() {
  local i
  for i in $(seq 1 "$1"); do PORT=$HPORT api GET /v1/jobs | cut -d' ' -f1; done
}
served_by() { awk -v s="$1" '$3 == s' "$T/haproxy.log" | wc -l; }
[ "$(through 6 | sort -u)" = 200 ] || fail "HAProxy does not answer 200 before the cut"
[ "$(served_by droverd-1)" -gt 0 ] && [ "$(served_by droverd-2)" -gt 0 ] ||
  fail "HAProxy did not send to both droverd: $(tail -n 6 "$T/haproxy.log")"
jobs=("$(long_job c1 2 300)" "$(long_job c2 2 300)")
nf cut haproxy droverd-1 > /dev/null
t0=$(now_ms)
down() { grep -q 'droverd-1 is DOWN' "$T/haproxy.log"; }
# Requests while HAProxy finds out: each is answered, by droverd-2 or by a retry there.
codes=$(through 10 | sort | uniq -c | tr '\n' ' ')
[ "$(through 10 | sort -u)" = 200 ] || fail "answers through HAProxy after the cut: $codes"
wait_until 30 "HAProxy to mark droverd-1 down" down
t1=$(now_ms)
before=$(served_by droverd-1)
[ "$(through 10 | sort -u)" = 200 ] || fail "answers through HAProxy with droverd-1 down"
[ "$(served_by droverd-1)" = "$before" ] || fail "HAProxy still sent to droverd-1 after marking it down"
[ "$(http_code "${DPORTS[1]}" /readyz)" = 200 ] || fail "droverd-1 itself is not ready (it reaches both servers)"
nf heal > /dev/null
up() { grep -q 'droverd-1 is UP' "$T/haproxy.log"; }
wait_until 30 "HAProxy to mark droverd-1 up again" up
sent_again() { through 4 > /dev/null; [ "$(served_by droverd-1)" -gt "$before" ]; }
wait_until 30 "HAProxy to send to droverd-1 again" sent_again
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
pass "HAProxy cut from droverd-1: marked down $(((t1 - t0) / 1000)) s after the cut, every answer through it 200 ($codes during the change), droverd-1 served its jobs; healed, it sends to both again"
