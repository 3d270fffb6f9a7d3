#!/usr/bin/env bash
# bench/pairs/ab_small.sh (bench/run ab-small): the small-jobs benchmark (bench/engine/engine_small.sh) on two builds side by
# side, in interleaved pairs on this tree's durable stack and scripts, the side that goes first
# alternating: a change's cost or gain as a ratio taken under one load (docs/benchmarks.md
# "The workers' listings paced").
#
#   bench/run ab-small OLD_BUILD_DIR NEW_BUILD_DIR [PAIRS (3)]
#
# N (default here 200), BENCH_DEBUG (default here 1: the workers' requests by kind) and the
# other knobs of engine_small.sh pass through. Build each side first, as for bench/run ab.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) pairs=${3:-3}
export DROVER_ZK_JVM=${DROVER_ZK_JVM:--Xms512m -Xmx1g -XX:+UseParallelGC}
export N=${N:-200} BENCH_DEBUG=${BENCH_DEBUG:-1}
cd "$top"
for ((i = 1; i <= pairs; i++)); do
  order=(old new)
  ((i % 2)) || order=(new old)
  for side in "${order[@]}"; do
    dir=$old
    [ "$side" = new ] && dir=$new
    echo "== pair $i $side $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    DROVER_BUILD_DIR=$dir DROVER_SOURCE_DIR=$top scripts/with-stack -- \
      bench/engine/engine_small.sh 2>&1 | grep -E '^(small|lone): |FAIL' || true
  done
done
