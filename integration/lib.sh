# lib.sh: helpers for shell integration tests; source it from a test run by
# scripts/with-stack (DROVER_STACK_DIR, DROVER_ZK, DROVER_PG are set).
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
    local keep="$DROVER_KEEP_LOGS/$(basename "$0" .sh).$$"
    mkdir -p "$keep" && cp "$T"/*.log "$keep"/ 2>/dev/null && echo "logs kept in $keep" >&2
  fi
  exit 1
}
pass() { echo "ok: $*"; }

free_port() { "$STACK" port --dir "$T"; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# write_droverd_conf NAME PORT [extra lines...]: a config for one droverd.
write_droverd_conf() {
  local name=$1 port=$2
  shift 2
  {
    echo "node.id = $name"
    echo "http.listen = 127.0.0.1:$port"
    echo "zookeeper.hosts = $DROVER_ZK"
    echo "zookeeper.session_timeout = 20s"
    echo "postgres.conninfo = $DROVER_PG"
    printf '%s\n' "$@"
  } > "$T/$name.conf"
}

write_worker_conf() {
  local name=$1
  shift
  {
    echo "node.id = $name"
    echo "zookeeper.hosts = $DROVER_ZK"
    echo "zookeeper.session_timeout = 20s"
    printf '%s\n' "$@"
  } > "$T/$name.conf"
}

# start_proc NAME BINARY: start BINARY --config $T/NAME.conf, log to $T/NAME.log.
start_proc() {
  local name=$1 bin=$2
  setsid "$bin" --config "$T/$name.conf" >> "$T/$name.log" 2>&1 < /dev/null &
  echo $! > "$T/pids/$name.pid"
}

pid_of() { cat "$T/pids/$1.pid"; }

# wait_http PORT PATH CODE [SECONDS]: until GET answers CODE.
wait_http() {
  local port=$1 path=$2 want=$3 limit=${4:-30} deadline code
  deadline=$((SECONDS + limit))
  while :; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$path" || true)
    [ "$code" = "$want" ] && return 0
    [ $SECONDS -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# wait_ready NAME PORT [SECONDS]: until /readyz answers 200; fails at once if NAME died.
wait_ready() {
  local name=$1 port=$2 limit=${3:-30} deadline pid
  pid=$(pid_of "$name")
  deadline=$((SECONDS + limit))
  while :; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)" = 200 ] &&
      return 0
    [ -d "/proc/$pid" ] || fail "$name (pid $pid) exited before it was ready"
    [ $SECONDS -ge "$deadline" ] && fail "$name not ready after $limit s"
    sleep 0.1
  done
}

# wait_exit NAME [SECONDS]: until the process is gone; prints its exit status.
wait_exit() {
  local pid limit=${2:-10} deadline
  pid=$(pid_of "$1")
  deadline=$((SECONDS + limit))
  while [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    [ $SECONDS -ge "$deadline" ] && return 1
    sleep 0.05
  done
  wait "$pid" 2>/dev/null && echo 0 || echo $?
}

zk() { "$BIN/drover" zk "$@" --zk "$DROVER_ZK"; }
psql_q() { psql "$DROVER_PG" -qAtX -c "$1"; }

# zk_stop [N]: stop ZooKeeper server N (default 1) of the stack by its pid, remembering its
# command line for zk_start. The server's data stays, so sessions and znodes survive.
zk_stop() {
  local n=${1:-1} pid
  pid=$(cat "$T/pids/zk$n.pid")
  tr '\0' '\n' < "/proc/$pid/cmdline" > "$T/zk$n.cmdline"
  kill -TERM "$pid"
  while [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" != Z ]; do
    sleep 0.1
  done
}

# zk_start [N]: start it again as it was (zk_stop first), recording the new pid.
zk_start() {
  local n=${1:-1} args
  mapfile -t args < "$T/zk$n.cmdline"
  setsid "${args[@]}" >> "$T/zk$n/stdout.log" 2>&1 < /dev/null &
  echo $! > "$T/pids/zk$n.pid"
}

# pg_stop, pg_start: PostgreSQL of the stack, stopped (fast) and started again by pg_ctl.
pg_ctl_as() {
  local pgbin as=()
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$pgbin/pg_ctl" "$@"
}
pg_stop() { pg_ctl_as -D "$T/pg/data" -m fast -w stop > /dev/null; }
pg_start() {
  pg_ctl_as -D "$T/pg/data" -l "$T/pg/postgres.log" -w -t 60 start > /dev/null
  head -n 1 "$T/pg/data/postmaster.pid" > "$T/pids/pg.pid"
}
