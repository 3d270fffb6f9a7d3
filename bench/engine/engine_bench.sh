#!/usr/bin/env bash
# engine_bench: the engine end to end on this machine (docs/benchmarks.md).
#
#   DROVER_BUILD_DIR=build-rel scripts/with-stack -- bench/engine/engine_bench.sh [what...]
#
# what: wide (10,000 noop tasks), big (hadoop-distributed, 10,000 nodes, 140,007 tasks),
# makespan (sleep tasks of random durations). Default: wide makespan (big takes minutes).
# Failover and handover times come from integration/engine/failover.sh (bench/run engine).
#
# One ZooKeeper, three droverd, four workers. Throughput is tasks / (last task's end - first
# task's start), from the attempts recorded in PostgreSQL: queued to completed and recorded.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export DROVER_SOURCE_DIR=${DROVER_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
export DROVER_BUILD_DIR=${DROVER_BUILD_DIR:-$DROVER_SOURCE_DIR/build-rel}
. "$DROVER_SOURCE_DIR/integration/lib.sh"
. "$DROVER_SOURCE_DIR/integration/api/api_lib.sh"
. "$DROVER_SOURCE_DIR/integration/engine/engine_lib.sh"
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(wide makespan)

LOG_LEVEL=warn
for n in 1 2 3; do start_droverd "$n" "postgres.pool_size = 4"; done
setup_tenant
catalogue_json "$FIXTURES" > "$T/coopr.json"
expect 200 "$(api POST /v1/import "@$T/coopr.json")" '' "import the Coopr catalogue"

workers() { # PLUGINS CONCURRENCY: four workers, replacing the earlier ones
  local w
  for w in 1 2 3 4; do
    if [ -e "$T/pids/bw-$w.pid" ]; then
      kill "$(pid_of "bw-$w")" 2>/dev/null || true
      wait_exit "bw-$w" 30 > /dev/null || true
    fi
    WORKER_PLUGINS=$1 CONCURRENCY=$2 start_worker "bw-$w"
  done
}

rss_of() { awk '/VmHWM/ { print $2 }' "/proc/$(pid_of "$1")/status"; }

# Throughput of one job from its recorded attempts.
throughput() { # JID
  psql_q "SELECT count(*), round(extract(epoch FROM max(ended_at) - min(started_at))::numeric, 3),
                 round((count(*) / extract(epoch FROM max(ended_at) - min(started_at)))::numeric)
          FROM task_attempts WHERE job_id = $1 AND status = 'succeeded'"
}

# The largest znode and children list under /drover, sampled while a job runs.
sample_tree() { # OUT-FILE
  while :; do
    "$BIN/drover" zk tree /drover --zk "$DROVER_ZK" 2>/dev/null |
      awk '{ d = $0; sub(/^ *[^ ]+ */, "", d); if (length(d) > max) max = length(d) } END { print max + 0 }' >> "$1.data" || true
    for p in /drover/jobs /drover/queues/acme/default/claims; do
      "$BIN/drover" zk ls "$p" --zk "$DROVER_ZK" 2>/dev/null | wc -l >> "$1.children" || true
    done
    for j in $("$BIN/drover" zk ls /drover/jobs --zk "$DROVER_ZK" 2>/dev/null); do
      for d in log runs nodes; do
        "$BIN/drover" zk ls "/drover/jobs/$j/$d" --zk "$DROVER_ZK" 2>/dev/null | wc -l >> "$1.children" || true
      done
    done
    for s in $(seq -w 0 15); do
      "$BIN/drover" zk ls "/drover/queues/acme/default/items/s$s" --zk "$DROVER_ZK" 2>/dev/null | wc -l >> "$1.children" || true
    done
    sleep 2
  done
}

for w in "${what[@]}"; do
  case $w in
  wide)
    workers noop,noop-provider 64
    nodes=2000 # x 5 tasks (create, confirm, bootstrap, base install and configure) = 10,000
    body=$(jq -cn --argjson k $nodes '{name: "wide", template: "single", nodes: $k}')
    t0=$(now_ms)
    J=$(body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id)
    wait_job "$J" succeeded 600
    t1=$(now_ms)
    read -r n secs rate <<< "$(throughput "$J" | tr '|' ' ')"
    echo "wide: $n noop tasks in $secs s: $rate tasks/s end to end (request to succeeded: $((t1 - t0)) ms)"
    psql_q "SELECT t.action, a.status, count(*) FROM tasks t LEFT JOIN task_attempts a ON a.job_id = t.job_id AND a.task_id = t.id WHERE t.job_id = $J GROUP BY 1, 2 ORDER BY 1" | paste -sd" " >&2
    ;;
  big)
    workers noop,noop-provider 64
    sample_tree "$T/tree" &
    sampler=$!
    t0=$(now_ms)
    J=$(body_of "$(api POST /v1/clusters '{"name":"big","template":"hadoop-distributed","nodes":10000,"provider":"rackspace"}')" | jq -r .job.id)
    wait_job "$J" succeeded 3600
    t1=$(now_ms)
    kill "$sampler" 2>/dev/null || true
    read -r n secs rate <<< "$(throughput "$J" | tr '|' ' ')"
    owner=$(psql_q "SELECT owner FROM jobs WHERE id = $J")
    echo "big: $n noop tasks in $secs s: $rate tasks/s end to end (request to succeeded: $((t1 - t0)) ms)"
    echo "big: peak RSS of the owner $owner: $(rss_of "$owner") kB; of the others: $(for n in 1 2 3; do echo -n "$(rss_of droverd-$n) "; done)kB"
    echo "big: largest znode data $(sort -n "$T/tree.data" | tail -1) bytes; longest children list $(sort -n "$T/tree.children" | tail -1)"
    ;;
  makespan)
    workers sleep,sleep-provider 16
    body=$(jq -cn --argjson c "$(sleep_config '{"duration_ms": 100, "jitter_ms": 400}')" \
      '{name: "ms", template: "simple", nodes: 12, config: $c}')
    J=$(body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id)
    wait_job "$J" succeeded 600
    # The critical path: the longest chain of the plan, each task weighing what it took.
    psql_q "SELECT t.idx, coalesce(extract(epoch FROM a.ended_at - a.started_at) * 1000, 0), t.deps
            FROM tasks t LEFT JOIN task_attempts a ON a.job_id = t.job_id AND a.phase = t.phase
              AND a.task_id = t.id AND a.status = 'succeeded'
            WHERE t.job_id = $J AND t.phase = 'f' ORDER BY t.idx" > "$T/dag"
    read -r cp makespan <<< "$(python3 - "$T/dag" "$J" <<'PY'
import json, sys, subprocess
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
dur = {int(r[0]): float(r[1]) for r in rows}
deps = {int(r[0]): json.loads(r[2]) for r in rows}
memo = {}
def finish(i):
    if i not in memo:
        memo[i] = dur[i] + max([finish(d) for d in deps[i]] or [0])
    return memo[i]
print(round(max(finish(i) for i in dur)), end=" ")
PY
)$(psql_q "SELECT round(extract(epoch FROM max(ended_at) - min(started_at)) * 1000) FROM task_attempts WHERE job_id = $J")"
    echo "makespan: $makespan ms, critical path $cp ms: ratio $(echo "scale=3; $makespan / $cp" | bc)"
    ;;
  *) echo "engine_bench: unknown \"$w\"" >&2; exit 2 ;;
  esac
done
