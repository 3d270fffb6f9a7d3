#!/usr/bin/env bash
# Issue 23: the old primary rejoins, and nothing it had not replicated is acknowledged anywhere.
# Under scripts/with-stack --ha (three PostgreSQL servers under Patroni, synchronous replication
# in strict mode).
#
#   1. A writer (pg_writer.py) commits numbered rows through the stack's multi-host string, one
#      transaction each, and records a number only once its COMMIT returned.
#   2. The synchronous standby's WAL receiver is frozen (SIGSTOP), and a transaction of about
#      60 MB (rows numbered below zero) is committed on the primary: its WAL is in the primary's
#      own files, commit record included, but cannot all reach the standby (more than any socket
#      buffer holds), so strict mode acknowledges nothing: the COMMIT and the writer wait.
#   3. kill -9 of the primary's Patroni and postgres, the standby thawed: Patroni promotes it and
#      the writer goes on there.
#   4. The old primary's Patroni started again: it rejoins as a replica, rewound (pg_rewind) or
#      cloned again, since its WAL holds a commit the new timeline lacks; then every server
#      holds exactly the new primary's rows: every acknowledged number, and none of the big
#      transaction's rows, which the old primary alone had committed.
. "$(dirname "$0")/../../testlib/test-lib.sh"

[ "${DROVER_PG_HA:-0}" -ge 3 ] || fail "run me under scripts/with-stack --ha"

psql_q "CREATE TABLE burst (i bigint PRIMARY KEY, pad text)"
start_writer() {
  setsid /usr/bin/python3 "$(dirname "$0")/pg_writer.py" "$DROVER_PG" "$T/acked" "$T/writer.stop" \
    >> "$T/writer.log" 2>&1 < /dev/null &
  echo $! > "$T/pids/writer.pid"
}
acked() { wc -l < "$T/acked" 2> /dev/null || echo 0; }
acked_at_least() { [ "$(acked)" -ge "$1" ]; }
: > "$T/acked"
start_writer
wait_until 60 "50 acknowledged writes" acked_at_least 50

OLD=$(pg_primary)
SYNC=
for n in $(seq 1 "$DROVER_PG_HA"); do
  [ "$n" != "$OLD" ] && pg_role_is "$n" sync && SYNC=$n
done
[ -n "$OLD" ] && [ -n "$SYNC" ] || fail "no primary ($OLD) or synchronous standby ($SYNC)"
sync_pm=$(head -n 1 "$T/pg$SYNC/data/postmaster.pid")
recv=$(ps --ppid "$sync_pm" -o pid=,args= | awk '/walreceiver/ {print $1}')
[ -n "$recv" ] || fail "no WAL receiver under pg$SYNC's postmaster $sync_pm: $(ps --ppid "$sync_pm" -o pid=,args=)"
# Whatever happens, the receiver is thawed (else the stack's teardown waits on it).
trap 'kill -CONT "$recv" 2> /dev/null || true' EXIT
kill -STOP "$recv"

# The big transaction, on the primary itself; its COMMIT waits for the frozen standby.
read -r old_port _ < "$T/pg$OLD.ports"
setsid psql "host=127.0.0.1 port=$old_port dbname=drover user=drover" -qAtX \
  -c "INSERT INTO burst SELECT -g, repeat(md5(g::text), 32) FROM generate_series(1, 60000) g" \
  > "$T/big.log" 2>&1 < /dev/null &
echo $! > "$T/pids/big.pid"
big_waits() {
  [ "$(pg_psql "$OLD" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'
    AND query LIKE 'INSERT INTO burst SELECT%'")" = 1 ]
}
wait_until 120 "the big transaction's COMMIT to wait for the standby" big_waits
n_before=$(acked)
pass "pg$SYNC's WAL receiver frozen: the big transaction is committed in pg$OLD's WAL and waits, acknowledged writes stopped at $n_before"

pg_kill "$OLD"
kill -CONT "$recv"
t0=$(now_ms)
wait_until 120 "a new primary" pg_primary_is_not "$OLD"
NEW=$(pg_primary)
wait_until 120 "writes acknowledged by pg$NEW" acked_at_least $((n_before + 50))
pass "pg$NEW promoted; the writer went on ($(acked) acknowledged, $((($(now_ms) - t0) / 1000)) s after the kill)"

# 4. The old primary rejoins.
"$STACK" patroni-start "$OLD" --dir "$T"
wait_until 180 "pg$OLD to rejoin as a replica" pg_role_is "$OLD" replica
touch "$T/writer.stop"
wait_exit writer 30 > /dev/null || fail "the writer did not stop"
want=$(psql_q "SELECT count(*) || ' ' || coalesce(sum(i), 0) || ' ' || coalesce(min(i), 0) FROM burst")
read -r _ _ lowest <<< "$want"
[ "$lowest" -gt 0 ] || fail "the new primary holds the unacknowledged big transaction's rows ($want)"
missing=$(/usr/bin/python3 - "$T/acked" "$DROVER_PG" << 'PY'
import sys
import psycopg2
acked = {int(x) for x in open(sys.argv[1]).read().split()}
with psycopg2.connect(sys.argv[2]) as c, c.cursor() as cur:
    cur.execute("SELECT i FROM burst")
    have = {r[0] for r in cur.fetchall()}
print(" ".join(str(i) for i in sorted(acked - have)[:20]))
PY
)
[ -z "$missing" ] || fail "acknowledged writes missing on the new primary: $missing"
same() {
  local n
  for n in $(seq 1 "$DROVER_PG_HA"); do
    [ "$(pg_psql "$n" "SELECT count(*) || ' ' || coalesce(sum(i), 0) || ' ' || coalesce(min(i), 0) FROM burst" 2> /dev/null)" = "$want" ] || return 1
  done
}
poll_until 120 same || {
  for n in $(seq 1 "$DROVER_PG_HA"); do
    echo "pg$n: $(pg_psql "$n" "SELECT count(*) || ' ' || coalesce(sum(i), 0) || ' ' || coalesce(min(i), 0) FROM burst" 2>&1)" >&2
  done
  fail "the servers do not all hold the new primary's rows ($want: count sum min)"
}
rewinds=$(grep -c -i 'rewind' "$T/pg$OLD/patroni.log" || true)
pass "pg$OLD rejoined as a replica ($rewinds rewind lines in its log); all $DROVER_PG_HA servers hold exactly pg$NEW's rows: $(wc -l < "$T/acked") acknowledged writes, none of the big transaction's"
