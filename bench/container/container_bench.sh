#!/usr/bin/env bash
# container_bench.sh: the container provider's figures, with the image cached (run under
# scripts/with-stack --no-pg, as root; bench/run container). Reports, asserts nothing:
#
#   nodes created per second: N nodes (BENCH_NODES, default 6) created at once through
#     the plugin, as N workers would, from the first create's start until every node's
#     sshd answers; then confirmed, then deleted at once (also timed);
#   seconds to a working 3-node ensemble: the catalogue's zookeeper-ensemble created on
#     container nodes (solver, planner, the shell engine of testlib/catalog.sh, the real
#     plugins) until all three servers answer with one leader and two followers.
PROVIDER=container
. "$DROVER_SOURCE_DIR/testlib/catalog.sh"

n=${BENCH_NODES:-6}
ms() { date +%s%3N; }
t0=$(ms)
pids=()
for i in $(seq "$n"); do
  (ct_task create "b-$i" 1 "$i" | "$CT" > "$T/create-b-$i.json" 2>> "$T/plugins.log") &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
t1=$(ms)
for i in $(seq "$n"); do
  cp "$T/create-b-$i.json" "$T/last.json"
  [ "$(last .status)" = ok ] || fail "create b-$i: $(last .message)"
  merge "b-$i"
done
for i in $(seq "$n"); do ct_task confirm "b-$i" 1 "$i" | run "$CT" || fail "confirm b-$i: $(last .message)"; done
t2=$(ms)
pids=()
for i in $(seq "$n"); do
  (ct_task delete "b-$i" 1 "$i" | "$CT" > /dev/null 2>> "$T/plugins.log") &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
t3=$(ms)
awk -v n="$n" -v c=$((t1 - t0)) -v f=$((t2 - t1)) -v d=$((t3 - t2)) 'BEGIN {
  printf "container: %d nodes created at once in %.2f s: %.2f nodes/s (confirm of all, one by one: %.2f s; delete of all at once: %.2f s)\n",
    n, c / 1000, n / (c / 1000), f / 1000, d / 1000 }'

TEMPLATE=zookeeper-ensemble
LAYOUT="$CL/target.json"
t0=$(ms)
layout_solve 3
run_op create --target "$LAYOUT" > /dev/null
mapfile -t addrs < <(for x in $(layout_nodes); do kv "$x" .ipaddresses.access_v4; done)
wait_quorum "${addrs[@]}"
t1=$(ms)
awk -v s=$((t1 - t0)) 'BEGIN { printf "container: a working 3-node zookeeper-ensemble (one leader, two followers) in %.1f s\n", s / 1000 }'
run_op delete --existing "$LAYOUT" > /dev/null
