#!/usr/bin/env bash
# zk_follower_srvr.sh [TRIES (3)] (bench/run zk-follower-srvr): does a follower leave a four-letter word unanswered when its
# leader stops? On a three-server ensemble of its own (scripts/stack up --ensemble --no-pg, a
# directory under /tmp, taken down at the end), srvr is asked in a loop of each follower (3 s
# limit each, as testlib/test-lib.sh's zk_four) while the leader is sent SIGTERM; each try
# prints, per follower, the asks, the unanswered ones and when (seconds after the stop), and
# the "not currently serving" answers of the election. ZooKeeper's Learner.shutdown closes
# every client connection when a follower loses its leader, a srvr in flight too: that is
# why engine_catalog_zookeeper's sampler asks a silent server twice (docs/testing.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tries=${1:-3}
D=$(mktemp -d /tmp/drover-zkprobe.XXXXXX)
trap 'touch "$D/stop"; wait; scripts/stack down --dir "$D/stack" > /dev/null 2>&1 || true; rm -rf "$D"' EXIT
four() { ( (exec 3<> "/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && timeout 3 cat <&3) 2> /dev/null || true); }
ask() { # PORT: srvr in a loop until $D/stop, one line per ask: time, then empty / serving / not
  local out
  while [ ! -e "$D/stop" ]; do
    out=$(four "$1" srvr)
    case $out in
      "") echo "$(date +%s.%N) empty" ;;
      *Mode:*) echo "$(date +%s.%N) serving" ;;
      *) echo "$(date +%s.%N) not-serving" ;;
    esac
  done
}
for t in $(seq "$tries"); do
  rm -f "$D/stop"
  scripts/stack up --dir "$D/stack" --ensemble --no-pg > /dev/null
  # shellcheck disable=SC1091 # written by scripts/stack
  . "$D/stack/stack.env"
  read -r -a ports <<< "$DROVER_ZK_PORTS"
  lead=
  for i in 0 1 2; do four "${ports[i]}" srvr | grep -q 'Mode: leader' && lead=$i; done
  [ -n "$lead" ] || { echo "try $t: no leader" >&2; exit 1; }
  pids=() fols=()
  for i in 0 1 2; do
    [ "$i" = "$lead" ] && continue
    fols+=("${ports[i]}")
    ask "${ports[i]}" > "$D/f${ports[i]}" &
    pids+=($!)
  done
  sleep 2
  stopped=$(date +%s.%N)
  kill -TERM "$(cat "$D/stack/pids/zk$((lead + 1)).pid")"
  sleep 5
  touch "$D/stop"
  wait "${pids[@]}"
  for p in "${fols[@]}"; do
    awk -v t0="$stopped" -v try="$t" -v p="$p" '
      { n++ } $2 == "empty" { e++; at = at sprintf(" %.2f", $1 - t0) } $2 == "not-serving" { ns++ }
      END { printf "try %d, follower :%s: %d asks, %d unanswered%s, %d not serving\n", try, p, n, e,
            e ? " (s after the stop:" at ")" : "", ns }' "$D/f$p"
  done
  scripts/stack down --dir "$D/stack" > /dev/null 2>&1
done
