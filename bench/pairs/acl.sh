#!/usr/bin/env bash
# bench/pairs/acl.sh (bench/run zk-acl-pairs): the cost of ZooKeeper ACLs on the wide DAG, measured side by side: the same
# build in the same run, bench/engine/engine_bench.sh wide without credentials ("open") and
# with digest ACLs on and every worker logged in with its tenant's own identity ("acl",
# BENCH_ZK_ACL=1), in interleaved pairs so that both sides share the machine's load
# (docs/benchmarks.md "ZooKeeper ACLs"; issue 20: no figure more than 10% worse).
#
#   bench/pairs/acl.sh BUILD_DIR [PAIRS (2)]
#
# Each side on its own stack (scripts/with-stack; BENCH_DURABLE=0: without disk syncs, as the
# tests run). BENCH_WARMUP default 2 here. The side that goes first alternates from pair to
# pair. The last lines are the ratios acl / open of tasks/s and of ZooKeeper requests a task.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
build=$(cd "$1" && pwd) pairs=${2:-2}
export DROVER_ZK_JVM=${DROVER_ZK_JVM:--Xms512m -Xmx1g -XX:+UseParallelGC}
export BENCH_WARMUP=${BENCH_WARMUP:-2}
stack=()
[ "${BENCH_DURABLE:-1}" = 0 ] && stack=(--no-disk-sync)
cd "$top"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

one() { # SIDE
  local a=
  [ "$1" = acl ] && a=1
  echo "== wide $1 pair $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  DROVER_BUILD_DIR=$build DROVER_SOURCE_DIR=$top BENCH_ZK_ACL=$a scripts/with-stack "${stack[@]}" -- \
    bench/engine/engine_bench.sh wide 2>&1 | grep -E '^wide:|FAIL' | sed "s/^/$1 /" | tee -a "$out"
}

for ((i = 1; i <= pairs; i++)); do
  if ((i % 2)); then one open; one acl; else one acl; one open; fi
done

# acl / open of each figure, pair by pair.
awk '
  $2 == "wide:" && $0 ~ /tasks\/s end to end/ { for (k = 3; k < NF; k++) if ($(k + 1) == "tasks/s") { v[$1, "tasks/s", ++n[$1, "t"]] = $k; break } }
  $2 == "wide:" && $0 ~ /ZooKeeper received/ { for (k = 3; k < NF; k++) if ($(k + 1) == "per") { v[$1, "requests a task", ++n[$1, "r"]] = $k; break } }
  END {
    split("tasks/s|requests a task", names, "|")
    split("t|r", keys, "|")
    for (f = 1; f <= 2; f++) {
      line = ""
      for (p = 1; p <= n["acl", keys[f]] && p <= n["open", keys[f]]; p++) {
        a = v["acl", names[f], p]; o = v["open", names[f], p]
        line = line sprintf(" pair %d: %s / %s = %.2f;", p, a, o, o ? a / o : 0)
      }
      if (line != "") print "acl-pairs: wide " names[f] ", acl / open:" line
    }
  }' "$out"
