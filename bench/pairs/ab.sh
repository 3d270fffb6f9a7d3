#!/usr/bin/env bash
# bench/pairs/ab.sh (bench/run ab): two builds side by side on this tree's durable stack, in interleaved pairs, so
# that a change's cost is a ratio taken under one load (docs/benchmarks.md "Comparing two builds").
#
#   bench/run ab OLD_BUILD_DIR NEW_BUILD_DIR [PAIRS (3)] [engine_bench.sh what (wide)]
#
# Build each side first, e.g. for a commit C:
#   git worktree add /tmp/old C && cmake -S /tmp/old -B /tmp/old/build-rel \
#     -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/build-rel -j2
# Both sides run this tree's scripts (stack, engine_bench.sh), so both get the same
# server settings (durable: PostgreSQL and ZooKeeper sync to disk).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 2 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) pairs=${3:-3} what=${4:-wide}
export DROVER_ZK_JVM=${DROVER_ZK_JVM:--Xms512m -Xmx1g -XX:+UseParallelGC}
export BENCH_WARMUP=${BENCH_WARMUP:-2}
cd "$top"
for ((i = 1; i <= pairs; i++)); do
  for side in old new; do
    dir=$old
    [ "$side" = new ] && dir=$new
    echo "== pair $i $side $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
    DROVER_BUILD_DIR=$dir DROVER_SOURCE_DIR=$top scripts/with-stack -- \
      bench/engine/engine_bench.sh "$what" 2>&1 | grep -E "^$what:|FAIL" || true
  done
done
