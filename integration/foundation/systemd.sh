#!/usr/bin/env bash
# The systemd units (conf/systemd) and the readiness they rely on: both units
# pass `systemd-analyze verify` with this build's paths (any warning fails);
# droverd and drover-worker, started with $NOTIFY_SOCKET as systemd would,
# send READY=1 once they serve (droverd's /readyz answers 200 by then) and
# STOPPING=1 when SIGTERM starts their drain, then exit 0.
. "$(dirname "$0")/../../testlib/test-lib.sh"

units="$DROVER_SOURCE_DIR/conf/systemd"
port=$(free_port)
write_droverd_conf droverd-a "$port"
write_worker_conf worker-a "worker.plugin_dir = $DROVER_BUILD_DIR/plugins"

for u in droverd drover-worker; do
  conf=droverd-a
  [ "$u" = drover-worker ] && conf=worker-a
  sed -e "s|/usr/sbin/$u |$BIN/$u |g" -e "s|/etc/drover/$u.conf|$T/$conf.conf|g" \
    "$units/$u.service" > "$T/$u.service"
  # Documentation=man:PROG(8): the page this build generated (build/share/man) must exist.
  MANPATH="$DROVER_BUILD_DIR/share/man" systemd-analyze verify "$T/$u.service" > "$T/verify-$u.out" 2>&1 ||
    fail "systemd-analyze verify $u.service: $(cat "$T/verify-$u.out")"
  [ ! -s "$T/verify-$u.out" ] || fail "systemd-analyze verify $u.service warns: $(cat "$T/verify-$u.out")"
done
grep -q '^u drover ' "$units/drover.sysusers" || fail "no drover user in drover.sysusers"
pass "units verified: droverd.service, drover-worker.service (Type=notify, User=drover)"

# A datagram listener standing in for systemd's notify socket, one per process.
listen() { # NAME: datagrams to $T/NAME.notify, one per line
  python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(4096).decode() + "\n")
' "$T/$1.sock" "$T/$1.notify" &
  echo $! > "$T/pids/notify-$1.pid"
  for _ in $(seq 50); do [ -S "$T/$1.sock" ] && return 0; sleep 0.1; done
  fail "the notify listener for $1 did not start"
}
wait_line() { # NAME LINE SECONDS
  poll_until -e 0.05 "$3" grep -sqx "$2" "$T/$1.notify" ||
    fail "$1 did not send $2 (got: $(cat "$T/$1.notify" 2> /dev/null))"
}

for name in droverd-a worker-a; do
  listen "$name"
  bin=$BIN/droverd
  [ "$name" = worker-a ] && bin=$BIN/drover-worker
  NOTIFY_SOCKET="$T/$name.sock" start_proc "$name" "$bin"
  wait_line "$name" READY=1 30
  if [ "$name" = droverd-a ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")
    [ "$code" = 200 ] || fail "droverd said READY=1 but /readyz answers $code"
  fi
  grep -q STOPPING "$T/$name.notify" && fail "$name sent STOPPING=1 before any signal"
  kill -TERM "$(pid_of "$name")"
  wait_line "$name" STOPPING=1 10
  rc=0
  wait "$(pid_of "$name")" || rc=$?
  [ "$rc" = 0 ] || fail "$name exited $rc after SIGTERM"
  pass "$name: READY=1 when serving, STOPPING=1 on SIGTERM, exit 0"
done
