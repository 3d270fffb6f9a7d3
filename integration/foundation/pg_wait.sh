#!/usr/bin/env bash
# A droverd started while PostgreSQL is down waits for it (event=database-wait)
# instead of exiting, and serves once the database is back, with no restart.
# SIGTERM during that wait ends it cleanly (exit 0). A database that answers
# but refuses the login (an unknown database here) is a configuration error:
# the start ends at once with exit 1, it is not waited for.
. "$(dirname "$0")/../../testlib/test-lib.sh"

pg_stop
pass "postgresql stopped"

port=$(free_port)
write_droverd_conf droverd-a "$port"
start_proc droverd-a "$BIN/droverd"
port_b=$(free_port)
write_droverd_conf droverd-b "$port_b"
start_proc droverd-b "$BIN/droverd"

# Waiting, and alive: a node that exited fails the test at once with its last lines.
waiting() {
  [ -d "/proc/$(pid_of "$1")" ] || fail "$1 exited with postgresql down: $(tail -n 3 "$T/$1.log")"
  grep -q 'event=database-wait' "$T/$1.log"
}
for n in droverd-a droverd-b; do
  wait_until 30 "$n to say it waits for postgresql" waiting "$n"
done
sleep 2
for n in droverd-a droverd-b; do
  [ -d "/proc/$(pid_of "$n")" ] || fail "$n exited while waiting: $(tail -n 3 "$T/$n.log")"
done
pass "both droverd wait for postgresql (event=database-wait), alive"

kill -TERM "$(pid_of droverd-b)"
# wait_exit in this shell (not in $(...)): only the parent can wait for the exit status.
wait_exit droverd-b 10 > "$T/exit.status" || fail "droverd-b still running 10 s after SIGTERM during the wait"
st=$(cat "$T/exit.status")
[ "$st" = 0 ] || fail "droverd-b exited $st after SIGTERM during the wait (want 0)"
grep -q 'event=stopped-before-start reason=signal' "$T/droverd-b.log" ||
  fail "droverd-b did not log its stop before start"
pass "SIGTERM during the wait: exit 0 at once"

pg_start
pass "postgresql started"
wait_ready droverd-a "$port" 60
grep -q 'event=database-back' "$T/droverd-a.log" || fail "droverd-a did not log the database's return"
grep -q 'event=schema_ready' "$T/droverd-a.log" || fail "droverd-a did not apply the schema"
pass "droverd-a ready once postgresql is back (same process, pid $(pid_of droverd-a))"

# An answering server that refuses the login: not waited for.
port_c=$(free_port)
write_droverd_conf droverd-c "$port_c"
sed -i "s|^postgres.conninfo = .*|postgres.conninfo = $DROVER_PG dbname=drover_no_such_db|" "$T/droverd-c.conf"
start_proc droverd-c "$BIN/droverd"
wait_exit droverd-c 20 > "$T/exit.status" || fail "droverd-c waits on a database that refuses its login"
st=$(cat "$T/exit.status")
[ "$st" = 1 ] || fail "droverd-c exited $st (want 1)"
grep -q 'event=migrate_failed' "$T/droverd-c.log" || fail "droverd-c did not say why it stopped"
grep -q 'event=database-wait' "$T/droverd-c.log" && fail "droverd-c waited on a refused login"
pass "a refused login ends the start at once (exit 1, migrate_failed)"
