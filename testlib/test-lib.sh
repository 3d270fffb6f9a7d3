# shellcheck shell=bash
# test-lib.sh: the shell test library's base, for the integration tests and the benchmarks
# (git's t/test-lib.sh is the model): sourced first, by a script that scripts/with-stack
# runs (DROVER_STACK_DIR, DROVER_ZK, DROVER_PG are set), by the integration tests and
# through bench/lib.sh. It sets strict mode and the stack's paths, and has what every test needs:
# fail and pass, processes and ports, waiting, HTTP, ZooKeeper, PostgreSQL and its server.
# What the API and the engine take is in api.sh and engine.sh beside it; a helper that two
# tests need lives in one of these three, once.
#
# Processes a test starts go through start_proc, which records their pid in
# the stack's pid directory: if the test dies, the stack's teardown stops
# them too. Nothing is ever stopped by name.
set -euo pipefail

: "${DROVER_STACK_DIR:?run me under scripts/with-stack}"
: "${DROVER_BUILD_DIR:?DROVER_BUILD_DIR must point at the build tree}"
: "${DROVER_SOURCE_DIR:?DROVER_SOURCE_DIR must point at the source tree}"
BIN="$DROVER_BUILD_DIR/src/bin"
STACK="$DROVER_SOURCE_DIR/scripts/stack"
T="$DROVER_STACK_DIR"

fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$T"/*.log; do
    [ -e "$f" ] || continue
    if grep -q 'ERROR: AddressSanitizer\|runtime error:' "$f"; then
      echo "--- $f (sanitizer report)" >&2
      grep -A 40 'ERROR: AddressSanitizer\|runtime error:' "$f" | head -n 60 >&2
    fi
    echo "--- $f (last lines)" >&2
    tail -n 15 "$f" >&2
  done
  # DROVER_KEEP_LOGS=DIR: the failed test's logs are copied there whole.
  if [ -n "${DROVER_KEEP_LOGS:-}" ]; then
    local keep
    keep="$DROVER_KEEP_LOGS/$(basename "$0" .sh).$$"
    mkdir -p "$keep" && cp "$T"/*.log "$keep"/ 2>/dev/null && echo "logs kept in $keep" >&2
  fi
  exit 1
}
pass() { echo "ok: $*"; }

free_port() { "$STACK" port --dir "$T"; }

# On hosts (scripts/with-stack --hosts: DROVER_HOSTS is the stack's range): every process
# start_proc starts runs on a host of its own named after it (scripts/stack host NAME), a
# droverd listens on its host's address, and the helpers reach a port at the address of the
# host that listens on it (PORT_ADDR, filled by write_droverd_conf). On loopback all of it is
# 127.0.0.1.
declare -gA PORT_ADDR=()
on_hosts() { [ -n "${DROVER_HOSTS:-}" ]; }
# addr_of NAME: host NAME's address (the host made when missing); 127.0.0.1 on loopback.
addr_of() { if on_hosts; then "$STACK" host "$1" --dir "$T"; else echo 127.0.0.1; fi; }
# ns_of NAME: host NAME's network namespace.
ns_of() { echo "drv$(cat "$T/hosts/net")-$1"; }
# at PORT: the address that listens on PORT.
at() { echo "${PORT_ADDR[$1]:-127.0.0.1}"; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# conf_sets KEY LINE...: true when one of the config lines sets KEY.
conf_sets() {
  local key=$1 l
  shift
  for l in "$@"; do
    [[ "$l" == "$key "* || "$l" == "$key="* ]] && return 0
  done
  return 1
}

# write_droverd_conf NAME PORT [extra lines...]: a config for one droverd (mode 0600).
# The test stack lets every tenant use the loopback provider (api.loopback_tenants = *,
# docs/security.md) unless an extra line sets the key.
write_droverd_conf() {
  local name=$1 port=$2 addr
  shift 2
  addr=$(addr_of "$name")
  PORT_ADDR[$port]=$addr
  (
    umask 077
    echo "node.id = $name"
    echo "http.listen = $addr:$port"
    echo "zookeeper.hosts = $DROVER_ZK"
    echo "zookeeper.session_timeout = 20s"
    echo "postgres.conninfo = $DROVER_PG"
    conf_sets api.loopback_tenants "$@" || echo "api.loopback_tenants = *"
    printf '%s\n' "$@"
  ) > "$T/$name.conf"
  chmod 600 "$T/$name.conf"
}

# write_worker_conf NAME [extra lines...]: a config for one worker (mode 0600). Plugins run
# as their tenant's own unprivileged uid (recorded in $T/plugin-homes), but for loopback (root by design), container (LXC,
# mounts, the bridge) and the test plugins
# sleep and sleep-provider, which write to the test's own files (worker.privileged_plugins,
# docs/security.md), unless an extra line sets the key. WORKER_SLOTS=1 or 0: worker.slots =
# true or false (docs/worker.md "Slots") unless an extra line sets it; unset: the build's
# default. The engine's tests run again on either path so (integration/engine/CMakeLists.txt).
write_worker_conf() {
  local name=$1
  shift
  (
    umask 077
    echo "node.id = $name"
    echo "zookeeper.hosts = $DROVER_ZK"
    echo "zookeeper.session_timeout = 20s"
    conf_sets worker.privileged_plugins "$@" ||
      echo "worker.privileged_plugins = loopback,container,sleep,sleep-provider"
    # The record of the tenants' plugin uids on this host (docs/security.md): the stack's.
    conf_sets worker.plugin_homes "$@" || echo "worker.plugin_homes = $T/plugin-homes"
    # The tests' plugins (noop, sleep: "testing": true) run here, not in production.
    conf_sets worker.testing_plugins "$@" || echo "worker.testing_plugins = true"
    case "${WORKER_SLOTS:-}" in
      1) conf_sets worker.slots "$@" || echo "worker.slots = true" ;;
      0) conf_sets worker.slots "$@" || echo "worker.slots = false" ;;
      '') ;;
      *) echo "WORKER_SLOTS=$WORKER_SLOTS: 1 or 0" >&2 && return 1 ;;
    esac
    printf '%s\n' "$@"
  ) > "$T/$name.conf"
  chmod 600 "$T/$name.conf"
}

# start_proc NAME BINARY: start BINARY --config $T/NAME.conf, log to $T/NAME.log.
start_proc() {
  local name=$1 bin=$2 nsx=()
  if on_hosts; then
    addr_of "$name" > /dev/null
    nsx=(nsenter --net="/run/netns/$(ns_of "$name")" --)
  fi
  setsid "${nsx[@]}" "$bin" --config "$T/$name.conf" >> "$T/$name.log" 2>&1 < /dev/null &
  echo $! > "$T/pids/$name.pid"
}

pid_of() { cat "$T/pids/$1.pid"; }

# poll_until [-e EVERY] SECONDS CMD [ARGS...]: run CMD every EVERY seconds (0.1 by default)
# until it succeeds; status 1 if SECONDS pass first. CMD runs in this shell, so it may set
# variables or fail the test itself; it runs at least once, and once more at the deadline.
# A condition with a command substitution goes in a function, so that it is run each time.
poll_until() {
  local poll__every=0.1 poll__deadline
  if [ "$1" = -e ]; then
    poll__every=$2
    shift 2
  fi
  poll__deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt "$poll__deadline" ] || return 1
    sleep "$poll__every"
  done
}

# wait_until [-e EVERY] SECONDS WHAT CMD [ARGS...]: poll_until, and fail the test with
# "timed out after SECONDS s waiting for WHAT" if SECONDS pass first. Where the message
# should show what was there at the end, use poll_until ... || fail "...".
wait_until() {
  local wait__every=()
  if [ "$1" = -e ]; then
    wait__every=(-e "$2")
    shift 2
  fi
  local wait__limit=$1 wait__what=$2
  shift 2
  poll_until "${wait__every[@]}" "$wait__limit" "$@" ||
    fail "timed out after $wait__limit s waiting for $wait__what"
}

# (-m: a stopped process accepts the connection and never answers.)
http_code() { curl -s -m 10 -o /dev/null -w '%{http_code}' "http://$(at "$1"):$1$2" || true; }
http_code_is() { [ "$(http_code "$1" "$2")" = "$3" ]; }

# wait_http PORT PATH CODE [SECONDS]: until GET answers CODE; status 1 if it does not.
wait_http() { poll_until "${4:-30}" http_code_is "$1" "$2" "$3"; }

# wait_ready NAME PORT [SECONDS]: until /readyz answers 200; fails at once if NAME died.
wait_ready() {
  local name=$1 port=$2 limit=${3:-30}
  poll_until "$limit" ready_or_dead "$name" "$(pid_of "$name")" "$port" ||
    fail "$name not ready after $limit s"
}
ready_or_dead() { # NAME PID PORT
  http_code_is "$3" /readyz 200 && return 0
  [ -d "/proc/$2" ] || fail "$1 (pid $2) exited before it was ready"
  return 1
}

# gone PID: the process has exited (is gone or a zombie).
gone() { ! [ -d "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# wait_exit NAME [SECONDS]: until the process is gone; prints its exit status.
wait_exit() {
  local pid
  pid=$(pid_of "$1")
  poll_until -e 0.05 "${2:-10}" gone "$pid" || return 1
  wait "$pid" 2>/dev/null && echo 0 || echo $?
}

zk() { "$BIN/drover" zk "$@" --zk "$DROVER_ZK"; }
psql_q() { psql "$DROVER_PG" -qAtX -c "$1"; }

# Jobs in PostgreSQL: the node that owns job JID, the count of its succeeded tasks.
owner_of() { psql_q "SELECT owner FROM jobs WHERE id = $1"; }
done_of() { psql_q "SELECT count(*) FROM tasks WHERE job_id = $1 AND status = 'succeeded'"; }
done_at_least() { [ "$(done_of "$1")" -ge "$2" ]; }
# progressing JID COUNT: until COUNT tasks of the job have succeeded (60 s at most).
progressing() { wait_until 60 "job $1 to progress ($2 tasks done)" done_at_least "$1" "$2"; }

# metric PORT SERIES [CURL_ARGS...]: the sample of SERIES on the droverd at PORT's /metrics
# (nothing if absent); CURL_ARGS such as --interface ADDR go to curl.
metric() {
  local port=$1 series=$2
  shift 2
  curl -s "$@" "http://$(at "$port"):$port/metrics" | awk -v s="$series" '$1 == s { print $2 }'
}

# metric_value PORT SERIES: the last sample of SERIES on the droverd at PORT's /metrics, 0
# while it has none (a counter not counted yet).
metric_value() {
  local v
  v=$(metric "$1" "$2" | tail -n 1)
  echo "${v:-0}"
}

# median: the median of the numbers on stdin, one a line, sorted.
median() { awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# zk_four ADDR WORD: ZooKeeper's four-letter command WORD to ADDR:2181 ("" if it does not answer).
zk_four() { ( (exec 3<> "/dev/tcp/$1/2181" && printf '%s' "$2" >&3 && timeout 3 cat <&3) 2> /dev/null || true); }
# zk_modes ADDR...: the sorted "Mode:" of every server's srvr, on one line.
zk_modes() {
  local a
  for a in "$@"; do zk_four "$a" srvr | awk -F': ' '/^Mode/ {print $2}'; done | sort | tr '\n' ' '
}
# wait_quorum ADDR...: until the three servers are one leader and two followers.
wait_quorum() {
  for _ in $(seq 600); do
    [ "$(zk_modes "$@")" = "follower follower leader " ] && return 0
    sleep 0.1
  done
  fail "no quorum: modes \"$(zk_modes "$@")\""
}

# zk_stop [N]: stop ZooKeeper server N (default 1) of the stack by its pid, remembering its
# command line for zk_start. The server's data stays, so sessions and znodes survive.
zk_stop() {
  local n=${1:-1} pid
  pid=$(cat "$T/pids/zk$n.pid")
  tr '\0' '\n' < "/proc/$pid/cmdline" > "$T/zk$n.cmdline"
  kill -TERM "$pid"
  until gone "$pid"; do sleep 0.1; done
}

# zk_start [N]: start it again as it was (zk_stop first), recording the new pid.
zk_start() {
  local n=${1:-1} args nsx=()
  mapfile -t args < "$T/zk$n.cmdline"
  on_hosts && nsx=(nsenter --net="/run/netns/$(ns_of "zk$n")" --)
  setsid "${nsx[@]}" "${args[@]}" >> "$T/zk$n/stdout.log" 2>&1 < /dev/null &
  echo $! > "$T/pids/zk$n.pid"
}

# pg_stop, pg_start: PostgreSQL of the stack, stopped (fast) and started again by pg_ctl.
pg_ctl_as() {
  local pgbin as=()
  pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$pgbin/pg_ctl" "$@"
}
pg_stop() { pg_ctl_as -D "$T/pg/data" -m fast -w stop > /dev/null; }
pg_start() {
  pg_ctl_as -D "$T/pg/data" -l "$T/pg/postgres.log" -w -t 60 start > /dev/null
  head -n 1 "$T/pg/data/postmaster.pid" > "$T/pids/pg.pid"
}

# PostgreSQL under Patroni (scripts/with-stack --ha): server N's ports are in $T/pgN.ports
# ("PG_PORT REST_PORT"), its Patroni's pid in $T/pids/patroniN.pid.
# patroni_code N PATH: the HTTP status of Patroni N's REST endpoint PATH (000: no answer).
patroni_code() {
  local pg rest
  read -r pg rest < "$T/pg$1.ports"
  curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$(addr_of "pg$1"):$rest$2" 2> /dev/null || true
}
# pg_primary: the number of the server Patroni calls primary; empty when none.
pg_primary() {
  local n
  for n in $(seq 1 "${DROVER_PG_HA:-0}"); do
    [ "$(patroni_code "$n" /primary)" = 200 ] && { echo "$n"; return 0; }
  done
  return 0
}
# pg_role_is N ROLE: Patroni N answers 200 on /ROLE (primary, replica, sync).
pg_role_is() { [ "$(patroni_code "$1" "/$2")" = 200 ]; }
# pg_primary_is_not N: some server other than N is primary.
pg_primary_is_not() {
  local p
  p=$(pg_primary)
  [ -n "$p" ] && [ "$p" != "$1" ]
}
# pg_kill N: kill -9 of server N's Patroni and of its postgres (postmaster).
pg_kill() {
  local n=$1 pm
  pm=$(head -n 1 "$T/pg$n/data/postmaster.pid")
  kill -9 "$(cat "$T/pids/patroni$n.pid")" "$pm"
}
# pg_psql N SQL: SQL on server N alone (whatever its role).
pg_psql() {
  local pg rest
  read -r pg rest < "$T/pg$1.ports"
  psql "host=$(addr_of "pg$1") port=$pg dbname=drover user=drover connect_timeout=2" -qAtX -c "$2"
}
