#!/usr/bin/env bash
# fleet: what a fleet of workers costs ZooKeeper as it grows, at equal task slots (issue 37).
#
#   DROVER_BUILD_DIR=build-rel scripts/with-stack -- bench/engine/fleet.sh
#   (or bench/run fleet)
#
# One ZooKeeper, PostgreSQL and three droverd (as engine_bench.sh), then for each fleet size
# W in FLEET (default "4 16 64 256") W workers of concurrency SLOTS / W (default SLOTS 64;
# at least 1, so 256 workers have 256 slots), noop plugins, the production session timeout
# (SESSION, default 20s here: a session pings every third of it, the floor of an idle
# worker's cost). Per fleet size, one line "fleet:" with:
#   - joining: ZooKeeper requests per worker from the first start until the fleet settled
#     (fewer than W / 2 + 20 requests a second): the member group watches' reads;
#   - idle: ZooKeeper requests per second per worker over IDLE_S seconds (default 10) with
#     nothing queued, after the jobs below, every client's packets (pings included) divided
#     by W, and the workers' own (their connections, from the server's per-connection
#     counters) per worker, beside their pings' floor (one a third of the session timeout);
#   - wide: a WIDE_NODES-node create of `single` (default 300, 5 tasks a node: 1,500 tasks):
#     tasks/s (first start to last end of its attempts), ZooKeeper requests and transactions
#     (zxid growth) per task, every client's, and CPU per task (droverd, workers, ZooKeeper,
#     PostgreSQL; /proc);
#   - small: SMALL 3-node creates of `single` (default 20), four at a time, ZooKeeper requests
#     per job;
#   - BIG_NODES (unset: none): a create of that many `single` nodes, which must dispatch and
#     succeed (issue 37: FLEET="4 64" BIG_NODES=10000).
# A warm-up job first (ZooKeeper's JIT; engine_bench.sh). DROVER_BASE_BIN=DIR (a build's
# src/bin) runs the workers of every other fleet size from DIR as well, so that a before and
# after are measured interleaved on one stack: FLEET="4 4 64 64" DROVER_BASE_BIN=... gives
# the base's figures on the even lines ("fleet(base):"). FLEET_SLOTS=1: the workers offer
# slots (worker.slots = true, docs/engine.md "Tasks to slots"; label "fleet(slots)"); alt: on
# the odd lines only, the even ones take from the queue as by default ("fleet(queue)"), so
# FLEET="4 4 64 64" FLEET_SLOTS=alt is a before and after of the setting on one stack.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SESSION=${SESSION:-20s}
. "$here/../lib.sh"

read -r -a sizes <<< "${FLEET:-4 16 64 256}"
SLOTS=${SLOTS:-64}
IDLE_S=${IDLE_S:-10}
WIDE_NODES=${WIDE_NODES:-300}
SMALL=${SMALL:-20}
LOG_LEVEL=${LOG_LEVEL:-warn}

echo "fleet: durable $([ "${DROVER_DISK_SYNC:-1}" = 1 ] && echo yes || echo "no (--no-disk-sync)"), session timeout $SESSION, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
BASE_BIN=${DROVER_BASE_BIN:-}
main_bin=$BIN
for n in 1 2 3; do start_droverd "$n" "postgres.pool_size = 4"; done
setup_tenant
catalogue_json "$FIXTURES" > "$T/coopr.json"
expect 200 "$(api POST /v1/import "@$T/coopr.json")" '' "import the Coopr catalogue"
expect 200 "$(api PUT /v1/tenants/acme/quotas '{"clusters": 0, "jobs": 0}' "$SUPER")" '' "lift acme's quotas"

running=0
stop_workers() {
  local k
  for ((k = 1; k <= running; k++)); do kill "$(pid_of "fw-$k")" 2> /dev/null || true; done
  for ((k = 1; k <= running; k++)); do wait_exit "fw-$k" 60 > /dev/null || true; done
  running=0
}
members() { zk ls /drover/members/worker 2> /dev/null | grep -c '^fw-' || true; }
members_are() { [ "$(members)" -eq "$1" ]; }
start_workers() { # W CONCURRENCY
  local k
  for ((k = 1; k <= $1; k++)); do
    WORKER_PLUGINS=noop,noop-provider CONCURRENCY=$2 start_worker "fw-$k"
  done
  running=$1
  wait_until 300 "$1 workers to join" members_are "$1"
}

zk_zxid() { printf '%d\n' "$(zk_4lw srvr | awk '$1 == "Zxid:" { print $2 }')"; }

# zk_workers: packets received so far from the workers' connections (the server's 4lw cons,
# mapped to processes by port with ss; connections closed meanwhile are missed).
zk_workers() {
  local hp=${DROVER_ZK%%,*} out
  hp=${hp%%/*}
  exec 3<> "/dev/tcp/${hp%:*}/${hp##*:}"
  printf cons >&3
  out=$(cat <&3)
  exec 3<&-
  awk -v ss="$(ss -tnpH 2> /dev/null)" 'BEGIN {
      n = split(ss, l, "\n")
      for (i = 1; i <= n; i++) {
        split(l[i], f, " "); p = f[4]; sub(/.*:/, "", p)
        if (l[i] ~ /"drover-worker"/) w[p] = 1
      }
    }
    match($0, /:[0-9]+\[/) && match($0, /recved=[0-9]+/) {
      port = $0; sub(/^[^:]*:/, "", port); sub(/\[.*/, "", port)
      if (port in w) c += substr($0, RSTART + 7, RLENGTH - 7)
    }
    END { print c + 0 }' <<< "$out"
}

# CPU (clock ticks) of the stack's parts, "droverd workers zookeeper postgres": each process
# with its reaped children, and the live children of PostgreSQL's postmaster (backends).
ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2> /dev/null || echo 0; }
cpu_all() {
  local d=0 w=0 z p k c
  for k in 1 2 3; do d=$((d + $(ticks "$(pid_of "droverd-$k")"))); done
  for ((k = 1; k <= running; k++)); do w=$((w + $(ticks "$(pid_of "fw-$k")"))); done
  z=$(ticks "$(pid_of zk1)")
  p=$(ticks "$(pid_of pg)")
  for c in $(pgrep -P "$(pid_of pg)" || true); do
    p=$((p + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2> /dev/null || echo 0)))
  done
  echo "$d $w $z $p"
}

# settle W: until ZooKeeper hears fewer than W / 2 + 20 requests a second (a fleet's joins
# are over: each worker's member group watch reads every member on each join), 300 s at most.
settle() {
  local r0 r1 k
  for ((k = 0; k < 150; k++)); do
    r0=$(zk_requests)
    sleep 2
    r1=$(zk_requests)
    (((r1 - r0) / 2 < $1 / 2 + 20)) && return 0
  done
  echo "fleet: $1 workers did not settle in 300 s" >&2
}

job_of() { body_of "$1" | jq -r .job.id; }
wide_job() { # NAME: prints the job id once it succeeded
  local J
  J=$(job_of "$(api POST /v1/clusters "$(jq -cn --arg n "$1" --argjson k "$WIDE_NODES" '{name: $n, template: "single", nodes: $k}')")")
  WAIT_JOB_POLL=0.5 wait_job "$J" succeeded 1200
  echo "$J"
}
small_jobs() { # PREFIX: SMALL 3-node jobs, four at a time
  local i k ids=()
  for ((i = 1; i <= SMALL; i += 4)); do
    ids=()
    for ((k = i; k < i + 4 && k <= SMALL; k++)); do
      ids+=("$(job_of "$(api POST /v1/clusters "$(jq -cn --arg n "$1-$k" '{name: $n, template: "single", nodes: 3}')")")")
    done
    for k in "${ids[@]}"; do WAIT_JOB_POLL=0.2 wait_job "$k" succeeded 600; done
  done
}
throughput() { # JID: "tasks seconds tasks/s" from its attempts
  psql_q "SELECT count(*), round(extract(epoch FROM max(ended_at) - min(started_at))::numeric, 3),
                 round((count(*) / extract(epoch FROM max(ended_at) - min(started_at)))::numeric)
          FROM task_attempts WHERE job_id = $1 AND status = 'succeeded'" | tr '|' ' '
}

# Warm-up: ZooKeeper's JIT and PostgreSQL's caches, with the first fleet size.
start_workers 4 16
wide_job warm-up > /dev/null
stop_workers

run=0
hz=$(getconf CLK_TCK)
for W in "${sizes[@]}"; do
  run=$((run + 1))
  label=fleet
  BIN=$main_bin
  export WORKER_SLOTS=0
  if [ "${FLEET_SLOTS:-0}" = 1 ] || { [ "${FLEET_SLOTS:-0}" = alt ] && ((run % 2 == 1)); }; then
    WORKER_SLOTS=1
    label="fleet(slots)"
  elif [ "${FLEET_SLOTS:-0}" = alt ]; then
    label="fleet(queue)"
  fi
  if [ -n "$BASE_BIN" ] && ((run % 2 == 0)); then
    BIN=$BASE_BIN
    label="fleet(base)"
  fi
  conc=$((SLOTS / W))
  ((conc >= 1)) || conc=1
  f0=$(zk_requests)
  t0=$(now_ms)
  start_workers "$W" "$conc"
  settle "$W"
  form=$(awk -v z=$(($(zk_requests) - f0)) -v ms=$(($(now_ms) - t0)) -v n="$W" 'BEGIN {
    printf "%.0f requests per worker joining (%.1f s)", z / n, ms / 1000 }')
  # The wide create.
  z0=$(zk_requests)
  x0=$(zk_zxid)
  c0=$(cpu_all)
  J=$(wide_job "wide-$run")
  z1=$(zk_requests)
  x1=$(zk_zxid)
  c1=$(cpu_all)
  read -r n _ rate <<< "$(throughput "$J")"
  wide=$(awk -v b="$c0" -v a="$c1" -v n="$n" -v hz="$hz" -v z=$((z1 - z0)) -v x=$((x1 - x0)) \
    -v rate="$rate" 'BEGIN {
      split(b, p, " "); split(a, q, " ")
      for (i = 1; i <= 4; i++) { d[i] = (q[i] - p[i]) * 1000 / hz / n; t += d[i] }
      printf "%d tasks %s tasks/s, %.2f requests and %.3f transactions per task, CPU %.2f ms per task (droverd %.2f, workers %.2f, ZooKeeper %.2f, PostgreSQL %.2f)",
        n, rate, z / n, x / n, t, d[1], d[2], d[3], d[4] }')
  # BIG_NODES: a create of that many `single` nodes (5 tasks a node) with this fleet: it must
  # dispatch (rounds that fit: issue 37) and succeed.
  big=
  if [ -n "${BIG_NODES:-}" ]; then
    t0=$(now_ms)
    J=$(job_of "$(api POST /v1/clusters "$(jq -cn --arg n "big-$run" --argjson k "$BIG_NODES" '{name: $n, template: "single", nodes: $k}')")")
    WAIT_JOB_POLL=2 wait_job "$J" succeeded 3600
    read -r n _ rate <<< "$(throughput "$J")"
    big="; a $BIG_NODES-node create: $n tasks succeeded, $rate tasks/s, $(($(now_ms) - t0)) ms request to succeeded"
  fi
  # Small jobs.
  z0=$(zk_requests)
  x0=$(zk_zxid)
  small_jobs "small-$run"
  z1=$(zk_requests)
  x1=$(zk_zxid)
  small=$(awk -v z=$((z1 - z0)) -v x=$((x1 - x0)) -v n="$SMALL" 'BEGIN {
    if (n > 0) printf "%.0f requests, %.1f transactions per 3-node job", z / n, x / n; else printf "none" }')
  # Idle, after the jobs (the fleet settled: joins and first listings are not idle cost).
  sleep 3
  z0=$(zk_requests)
  w0=$(zk_workers)
  t0=$(now_ms)
  sleep "$IDLE_S"
  z1=$(zk_requests)
  w1=$(zk_workers)
  t1=$(now_ms)
  idle=$(awk -v z=$((z1 - z0)) -v w=$((w1 - w0)) -v ms=$((t1 - t0)) -v n="$W" -v s="${SESSION%s}" 'BEGIN {
    printf "%.2f req/s per worker (every client; the workers alone %.2f, their pings %.2f)", z * 1000 / ms / n, w * 1000 / ms / n, 3 / s }')
  echo "$label: $W workers x $conc: $form; idle $idle; wide $wide; small $small$big; load $(cut -d' ' -f1 /proc/loadavg)"
  stop_workers
done
BIN=$main_bin
