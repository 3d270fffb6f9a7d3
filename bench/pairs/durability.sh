#!/usr/bin/env bash
# bench/pairs/durability.sh (bench/run durability): the cost of syncing to disk, measured once side by side: the same build
# in the same run, on a durable stack (PostgreSQL fsync and full_page_writes on, ZooKeeper
# forceSync=yes) and on one without those syncs (scripts/with-stack --no-disk-sync, the
# tests' setting; synchronous_commit stays on), in interleaved pairs so that both sides share
# the machine's load (docs/benchmarks.md "The cost of durability").
#
#   bench/pairs/durability.sh BUILD_DIR [PAIRS (2)] [small|wide ...] (default: small wide)
#
# small: bench/engine/engine_small.sh with N jobs (default here 200; IN_FLIGHT, CLIENTS as
# there, LONE default 1); wide: bench/engine/engine_bench.sh wide (BENCH_WARMUP default 2 here).
# The side that goes first alternates from pair to pair. The last lines are the ratios.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
build=$(cd "$1" && pwd) pairs=${2:-2}
shift $(($# >= 2 ? 2 : 1))
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(small wide)
export DROVER_ZK_JVM=${DROVER_ZK_JVM:--Xms512m -Xmx1g -XX:+UseParallelGC}
export BENCH_WARMUP=${BENCH_WARMUP:-2} N=${N:-200} LONE=${LONE:-1}
cd "$top"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

one() { # WHAT SIDE
  local args=()
  [ "$2" = off ] && args=(--no-disk-sync)
  echo "== $1 $2 pair $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  case $1 in
    small) DROVER_BUILD_DIR=$build DROVER_SOURCE_DIR=$top scripts/with-stack "${args[@]}" -- \
      bench/engine/engine_small.sh 2>&1 | grep -E '^(small|lone):|FAIL' | sed "s/^/$2 /" | tee -a "$out" ;;
    wide) DROVER_BUILD_DIR=$build DROVER_SOURCE_DIR=$top scripts/with-stack "${args[@]}" -- \
      bench/engine/engine_bench.sh wide 2>&1 | grep -E '^wide:|FAIL' | sed "s/^/$2 /" | tee -a "$out" ;;
    *) echo "bench/pairs/durability.sh: unknown \"$1\"" >&2; exit 2 ;;
  esac
}

for ((i = 1; i <= pairs; i++)); do
  for w in "${what[@]}"; do
    if ((i % 2)); then one "$w" durable; one "$w" off; else one "$w" off; one "$w" durable; fi
  done
done

# durable / off of each figure, pair by pair (a run's figures in order of appearance).
awk '
  $2 == "small:" && $4 == "jobs/s" { v[$1, "small jobs/s", ++n[$1, "s"]] = $3 }
  $2 == "small:" && $3 == "request" { x = $7; sub(/,/, "", x); v[$1, "small median ms", ++n[$1, "m"]] = x }
  $2 == "wide:" && $0 ~ /tasks\/s end to end/ { for (k = 3; k < NF; k++) if ($(k + 1) == "tasks/s") { v[$1, "wide tasks/s", ++n[$1, "w"]] = $k; break } }
  END {
    split("small jobs/s|small median ms|wide tasks/s", names, "|")
    split("s|m|w", keys, "|")
    for (f = 1; f <= 3; f++) {
      line = ""
      for (p = 1; p <= n["durable", keys[f]] && p <= n["off", keys[f]]; p++) {
        d = v["durable", names[f], p]; o = v["off", names[f], p]
        line = line sprintf(" pair %d: %s / %s = %.2f;", p, d, o, o ? d / o : 0)
      }
      if (line != "") print "durability: " names[f] ", durable / syncs off:" line
    }
  }' "$out"
