#!/usr/bin/env bash
# droverd and drover-worker refuse a bad config file at once, naming the
# file, the line, the key and the reason, and exit non-zero. No server needed.
set -euo pipefail
: "${DROVER_BUILD_DIR:?}"
BIN="$DROVER_BUILD_DIR/src/bin"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

check() { # check PROGRAM FILE-TEXT EXPECTED-MESSAGE
  local prog=$1 text=$2 want=$3 out rc
  printf '%s' "$text" > "$d/bad.conf"
  set +e
  out=$(timeout 5 "$BIN/$prog" --config "$d/bad.conf" 2>&1)
  rc=$?
  set -e
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { echo "FAIL: $prog exited $rc on: $text" >&2; exit 1; }
  case "$out" in
    *"$want"*) echo "ok: $prog: $out" ;;
    *) echo "FAIL: $prog said \"$out\", expected \"$want\"" >&2; exit 1 ;;
  esac
}

base=$'zookeeper.hosts = 127.0.0.1:1\npostgres.conninfo = host=127.0.0.1\n'
check droverd "${base}zookeeper.hostz = x"$'\n' "$d/bad.conf:3: unknown key \"zookeeper.hostz\""
check droverd "${base}http.listen = 127.0.0.1"$'\n' "$d/bad.conf:3: key \"http.listen\": expected host:port"
check droverd "${base}postgres.pool_size = 0"$'\n' "$d/bad.conf:3: key \"postgres.pool_size\": integer 0 out of range 1..64"
check droverd "${base}log.level = chatty"$'\n' "$d/bad.conf:3: key \"log.level\": expected one of debug|info|warn|error"
check droverd $'zookeeper.hosts = 127.0.0.1:1\n' "$d/bad.conf: required key \"postgres.conninfo\" is missing"
# One tenant may never hold every heavy thread of a node (issue 20): the default 4 above 2 was.
check droverd "${base}api.max_heavy_per_tenant = 2"$'\n' "$d/bad.conf: key \"api.max_heavy_per_tenant\": 2 must be below api.heavy_threads (2)"
check drover-worker $'zookeeper.hosts = h:1\nworker.concurrency = many\n' "$d/bad.conf:2: key \"worker.concurrency\": expected an integer"
# A missing file is an error too, and a good file passes --check-config.
set +e
out=$("$BIN/droverd" --config "$d/none.conf" 2>&1); rc=$?
set -e
[ $rc -ne 0 ] && [[ "$out" == *"$d/none.conf: cannot open"* ]] || { echo "FAIL: missing file: $out" >&2; exit 1; }
"$BIN/droverd" --check-config "$DROVER_SOURCE_DIR/conf/droverd.conf" > /dev/null
"$BIN/drover-worker" --check-config "$DROVER_SOURCE_DIR/conf/drover-worker.conf" > /dev/null
echo "ok: example configs pass --check-config"

# The command line: --help lists the commands; CMD --help is usage on stdout, status 0;
# a wrong command or argument is status 2.
out=$("$BIN/drover" --help)
for c in solve plan zk cluster job import members; do
  grep -q "^  $c " <<< "$out" || { echo "FAIL: drover --help does not list $c" >&2; exit 1; }
done
for c in cluster import solve zk; do
  out=$("$BIN/drover" "$c" --help 2> /dev/null) || { echo "FAIL: drover $c --help failed" >&2; exit 1; }
  [[ "$out" == usage:* ]] || { echo "FAIL: drover $c --help printed \"$out\"" >&2; exit 1; }
done
set +e
"$BIN/drover" frobnicate > /dev/null 2>&1; rc1=$?
"$BIN/drover" cluster frobnicate > /dev/null 2>&1; rc2=$?
set -e
[ $rc1 = 2 ] && [ $rc2 = 2 ] || { echo "FAIL: usage errors exit $rc1 and $rc2, not 2" >&2; exit 1; }
echo "ok: drover --help, CMD --help and usage errors"
