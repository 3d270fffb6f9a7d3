#!/usr/bin/env bash
# small_short: the short form of bench/engine/engine_small.sh that CI runs (ctest
# bench_engine_small_short): 20 small jobs and one lone job. It asserts only that every job
# succeeded and that each figure is printed and sane (positive, in order); never a timing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export DROVER_SOURCE_DIR=${DROVER_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
: "${DROVER_STACK_DIR:?run me under scripts/with-stack}"
out="$DROVER_STACK_DIR/small_short.out"
N=20 IN_FLIGHT=8 CLIENTS=4 LONE=1 BENCH_SMALL_WARMUP=0 "$here/engine_small.sh" 2>&1 | tee "$out" ||
  { echo "FAIL: engine_small.sh failed" >&2; exit 1; }

bad() { echo "FAIL: $*" >&2; exit 1; }
line() { grep -E "$1" "$out" | head -n 1 || true; }
num() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
pos() { num "$1" && awk -v x="$1" 'BEGIN { exit !(x > 0) }'; }

l=$(line '^small: 20 jobs ')
[[ "$l" =~ \(([0-9]+)\ tasks\).*:\ 20\ succeeded,\ 0\ not$ ]] || bad "not every job succeeded: ${l:-no summary}"
tasks=${BASH_REMATCH[1]}
# 1 to 3 nodes of 5 tasks each: job i has 1 + i % 3 nodes, so 20 jobs have 39 nodes.
[ "$tasks" = 195 ] || bad "20 jobs of 39 nodes should have run 195 tasks, not $tasks"

l=$(line '^small: [0-9.]+ jobs/s ')
read -r _ rate _ <<< "$l"
pos "$rate" || bad "no jobs/s: ${l:-missing}"

l=$(line '^small: request to succeeded: ')
[[ "$l" =~ median\ ([0-9]+)\ ms,\ p99\ ([0-9]+)\ ms,\ max\ ([0-9]+)\ ms ]] || bad "no latencies: ${l:-missing}"
m=("${BASH_REMATCH[@]}")
pos "${m[1]}" && [ "${m[1]}" -le "${m[2]}" ] && [ "${m[2]}" -le "${m[3]}" ] || bad "latencies out of order: $l"

l=$(line '^small: PostgreSQL: ')
[[ "$l" =~ ([0-9.]+)\ transaction\ ids\ per\ job\ \(writing\ transactions\ and\ their\ savepoints\),\ ([0-9.]+)\ commits\ per\ job ]] || bad "no PostgreSQL figures: ${l:-missing}"
m=("${BASH_REMATCH[@]}")
pos "${m[1]}" && pos "${m[2]}" || bad "PostgreSQL figures not positive: $l"

l=$(line '^small: PostgreSQL WAL: ')
[[ "$l" =~ ,\ ([0-9.]+)\ KB\ per\ job ]] && pos "${BASH_REMATCH[1]}" || bad "no WAL bytes per job: ${l:-missing}"

l=$(line '^small: ZooKeeper: ')
[[ "$l" =~ ([0-9.]+)\ requests\ per\ job.*\ ([0-9.]+)\ transactions\ per\ job ]] || bad "no ZooKeeper figures: ${l:-missing}"
m=("${BASH_REMATCH[@]}")
pos "${m[1]}" && pos "${m[2]}" || bad "ZooKeeper figures not positive: $l"

# Under load, the parts of a job's time: printed, each a number of milliseconds.
l=$(line '^small: under load, median ')
[[ "$l" =~ request\ to\ job\ row\ -?[0-9]+\ \(-?[0-9]+\)\ ms.*hop\ -?[0-9]+\ \(-?[0-9]+\).*succeeded\ -?[0-9]+\ \(-?[0-9]+\)$ ]] ||
  bad "no split of the jobs' time under load: ${l:-missing}"

# CPU per job: the stack's parts add up to it, each one measured (the workers run plugins).
l=$(line '^small: CPU per job ')
[[ "$l" =~ CPU\ per\ job\ ([0-9.]+)\ ms\ \(droverd\ ([0-9.]+),\ workers\ and\ plugins\ ([0-9.]+),\ ZooKeeper\ ([0-9.]+),\ PostgreSQL\ ([0-9.]+)\) ]] ||
  bad "no CPU per job: ${l:-missing}"
m=("${BASH_REMATCH[@]}")
for k in 1 2 3 4 5; do pos "${m[k]}" || bad "a CPU figure is not positive: $l"; done

# The lone job's timeline: request, job row, first dispatch, last task's end, succeeded, in
# that order, and the parts add up to the whole.
l=$(line '^lone: job ')
[[ "$l" =~ 15\ tasks:\ request\ to\ succeeded\ (-?[0-9]+)\ ms\ =\ request\ to\ job\ row\ (-?[0-9]+)\ \+\ job\ row\ to\ first\ dispatch\ (-?[0-9]+).*\+\ first\ dispatch\ to\ last\ task.s\ end\ (-?[0-9]+)\ \(tasks.\ own\ time\ along\ the\ longest\ chain\ (-?[0-9]+).*\+\ last\ task.s\ end\ to\ succeeded\ (-?[0-9]+)$ ]] ||
  bad "no lone job's split: ${l:-missing}"
m=("${BASH_REMATCH[@]}")
total=${m[1]} sum=0
for k in 2 3 4 6; do
  [ "${m[k]}" -ge 0 ] || bad "a part of the lone job's time is negative: $l"
  sum=$((sum + m[k]))
done
[ "${m[5]}" -ge 0 ] && [ "${m[5]}" -le "${m[4]}" ] ||
  bad "the tasks' own time is not within first dispatch to last end: $l"
# Each part is rounded on its own: the sum may be off by one per part.
[ $((sum - total)) -le 4 ] && [ $((total - sum)) -le 4 ] || bad "the parts ($sum ms) do not add up to $total ms: $l"
echo "ok: 20 small jobs and a lone one succeeded, every figure printed and sane"
