#!/usr/bin/env bash
# engine_small: many small jobs through the API, and a lone one at rest (docs/benchmarks.md).
#
#   DROVER_BUILD_DIR=build-rel scripts/with-stack -- bench/engine/engine_small.sh
#   (or bench/run engine-small; N=200 bench/run engine-small is the short form)
#
# Knobs (environment): N jobs (default 1000) of 1 to 3 nodes of the Coopr `single` template
# (5 noop tasks a node), IN_FLIGHT unfinished at most (default 100, the default quota.jobs),
# CLIENTS submitting in parallel (default 16, spread over the three droverd), LONE lone
# 3-node jobs (default 3), BENCH_SMALL_WARMUP small jobs first, unmeasured (default N / 5,
# at most 100: a fresh ZooKeeper's JIT compiler, docs/benchmarks.md), API_HEAVY creates of
# the tenant solving at once on each droverd (default: droverd's own default, 1: the API's
# fair use, docs/api.md; API_HEAVY=K sets api.max_heavy_per_tenant and _per_user to K and
# api.heavy_threads to K + 1, to see the engine's bound past the API's), POOL database
# connections of each droverd, the API's and the engine's (default 4, droverd's default),
# BENCH_DEBUG=1 the workers' requests by kind and their queue counters at the end (the workers
# at info, stopped after the N jobs), BENCH_PG_STATEMENTS=1 PostgreSQL's statements per job
# (pg_stat_statements: run it under DROVER_PG_STATEMENTS=1, which loads it in the stack),
# BENCH_PERF=droverd or pg a profile of droverd or of PostgreSQL during the N jobs.
#
# One ZooKeeper, PostgreSQL, three droverd and four workers (noop plugins, concurrency 64),
# as engine_bench.sh. Order: the warm-up, then the lone jobs one after the other with
# nothing else running, then the N jobs. bench/engine/small_load.py submits and measures
# (what each figure is: its header). Its lines start "lone:" and "small:".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"

N=${N:-1000}
IN_FLIGHT=${IN_FLIGHT:-100}
CLIENTS=${CLIENTS:-16}
LONE=${LONE:-3}
warm=$((N / 5 < 100 ? N / 5 : 100))
warm=${BENCH_SMALL_WARMUP:-$warm}

heavy=()
if [ -n "${API_HEAVY:-}" ]; then
  heavy=("api.heavy_threads = $((API_HEAVY + 1))" "api.max_heavy_per_tenant = $API_HEAVY"
    "api.max_heavy_per_user = $API_HEAVY")
fi
# droverd at info: the lone job's split reads its owner's event=first-dispatch (a few lines
# per job, none per task); the workers at warn.
for n in 1 2 3; do LOG_LEVEL=info start_droverd "$n" "postgres.pool_size = ${POOL:-4}" "${heavy[@]}"; done
setup_tenant
catalogue_json "$FIXTURES" > "$T/coopr.json"
expect 200 "$(api POST /v1/import "@$T/coopr.json")" '' "import the Coopr catalogue"
# One cluster per job, and as many unfinished jobs as the bench asks.
expect 200 "$(api PUT /v1/tenants/acme/quotas '{"clusters": 0, "jobs": 0}' "$SUPER")" '' "lift acme's quotas"
# BENCH_DEBUG=1: the workers at info, stopped at the end, so that their event=worker-stopped
# says what they cost ZooKeeper by kind of request and what their queue takes did (below).
wlvl=warn
[ -z "${BENCH_DEBUG:-}" ] || wlvl=info
for w in 1 2 3 4; do
  WORKER_PLUGINS=noop,noop-provider CONCURRENCY=64 LOG_LEVEL=$wlvl start_worker "sw-$w"
done

# cpu_ticks: CPU clock ticks so far of the stack's parts, "droverd workers zk pg busy": the
# three droverd, the four workers with their plugins (reaped children), ZooKeeper, PostgreSQL
# (the postmaster with its reaped backends, and the live backends), and the whole machine's
# busy time (others' processes too: /proc/stat).
cpu_ticks() {
  local f pid d=0 w=0 z=0 p=0 pg
  for f in "$T"/pids/*.pid; do
    pid=$(cat "$f")
    [ -r "/proc/$pid/stat" ] || continue
    case $(basename "$f" .pid) in
      droverd-*) d=$((d + $(proc_ticks "$pid" 4))) ;;
      sw-*) w=$((w + $(proc_ticks "$pid" 4))) ;;
      zk*) z=$((z + $(proc_ticks "$pid" 2))) ;;
    esac
  done
  pg=$(cat "$T/pids/pg.pid")
  p=$(proc_ticks "$pg" 4)
  for f in /proc/[0-9]*/stat; do
    pid=${f#/proc/}
    pid=${pid%/stat}
    [ "$(sed 's/.*) //' "$f" 2> /dev/null | cut -d' ' -f2)" = "$pg" ] && p=$((p + $(proc_ticks "$pid" 2)))
  done
  echo "$d $w $z $p $(awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)"
}
# proc_ticks PID K: the sum of the first K of utime, stime, cutime, cstime (0 when gone).
proc_ticks() {
  sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | awk -v k="$2" '{s = 0; for (i = 12; i < 12 + k; i++) s += $i; print s + 0}' || echo 0
}

# zk_by_client: requests each kind of ZooKeeper client has sent so far, "droverd workers
# other": the server's per-connection counters (4lw cons) mapped to processes by port (ss).
zk_by_client() {
  local hp=${DROVER_ZK%%,*} out
  exec 3<> "/dev/tcp/${hp%:*}/${hp##*:}"
  printf cons >&3
  out=$(cat <&3)
  exec 3<&-
  awk -v ss="$(ss -tnpH 2> /dev/null)" 'BEGIN {
      n = split(ss, l, "\n")
      for (i = 1; i <= n; i++) {
        split(l[i], f, " "); p = f[4]; sub(/.*:/, "", p)
        who[p] = l[i] ~ /"droverd"/ ? "d" : l[i] ~ /"drover-worker"/ ? "w" : "o"
      }
    }
    match($0, /:[0-9]+\[/) && match($0, /recved=[0-9]+/) {
      port = $0; sub(/^[^:]*:/, "", port); sub(/\[.*/, "", port)
      r = substr($0, RSTART + 7, RLENGTH - 7)
      k = (port in who) ? who[port] : "o"; c[k] += r
    }
    END { printf "%d %d %d\n", c["d"], c["w"], c["o"] }' <<< "$out"
}

# zk_by_path: the three droverd's ZooKeeper requests so far by kind and path class, one
# "kind path count" a line (their /metrics, drover_zk_requests_total, summed).
zk_by_path() {
  local n
  for n in 1 2 3; do curl -s "http://127.0.0.1:${DPORTS[$n]}/metrics"; done |
    sed -n 's/^drover_zk_requests_total{kind="\([^"]*\)",path="\([^"]*\)"} \([0-9]*\)$/\1 \2 \3/p' |
    awk '{ c[$1 " " $2] += $3 } END { for (k in c) print k, c[k] }'
}

load() { # PREFIX JOBS
  /usr/bin/python3 "$here/small_load.py" load --ports "${DPORTS[1]},${DPORTS[2]},${DPORTS[3]}" \
    --token "$TOKEN" --pg "$DROVER_PG" --zk "${DROVER_ZK%%,*}" --jobs "$2" \
    --in-flight "$IN_FLIGHT" --clients "$CLIENTS" --prefix "$1"
}

echo "small: durable $([ "${DROVER_DISK_SYNC:-1}" = 1 ] && echo yes || echo "no (--no-disk-sync)"), creates solving at once per droverd and tenant ${API_HEAVY:-1 (default)}, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
if [ "$warm" -gt 0 ]; then
  load warm "$warm" > "$T/warm.out" || { cat "$T/warm.out" >&2; fail "warm-up"; }
fi
/usr/bin/python3 "$here/small_load.py" lone --ports "${DPORTS[1]}" --token "$TOKEN" --pg "$DROVER_PG" \
  --logs "$T/droverd-*.log" --runs "$LONE" --prefix lone || fail "lone jobs"
if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
  psql_q "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" > /dev/null
  psql_q "SELECT pg_stat_statements_reset()" > /dev/null
fi
zk_by_path > "$T/zkpath0"
read -r zd0 zw0 zo0 < <(zk_by_client)
read -r d0 w0 z0 p0 b0 < <(cpu_ticks)
# BENCH_PERF=droverd (or pg): call graphs of the three droverd (or of PostgreSQL's backends,
# system-wide samples of the postgres processes) during the N jobs, then the functions with
# the largest inclusive share (perf must be installed). BENCH_PERF=zk: ZooKeeper's JVM, its
# threads' shares of its samples (the JIT compiler's, the transaction log's SyncThread, the
# network's, ...) and its functions with the largest own share (the JIT's symbols from `jcmd
# PID Compiler.perfmap`, written after the jobs while the server is up).
perf_pid=
if [ -n "${BENCH_PERF:-}" ]; then
  if [ "$BENCH_PERF" = droverd ]; then
    perf record -F 99 --call-graph dwarf,16384 -o "$T/perf.data" \
      -p "$(pid_of droverd-1),$(pid_of droverd-2),$(pid_of droverd-3)" > "$T/perf.out" 2>&1 &
  elif [ "$BENCH_PERF" = zk ]; then
    perf record -F 99 -o "$T/perf.data" -p "$(pid_of zk1)" > "$T/perf.out" 2>&1 &
  else
    perf record -F 99 -a -g -o "$T/perf.data" > "$T/perf.out" 2>&1 &
  fi
  perf_pid=$!
  sleep 1
fi
load small "$N" || fail "small jobs"
read -r d1 w1 z1 p1 b1 < <(cpu_ticks)
if [ -n "$perf_pid" ]; then
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  if [ "$BENCH_PERF" = zk ]; then
    jcmd "$(pid_of zk1)" Compiler.perfmap > /dev/null 2>&1 || true
    echo "small: perf, ZooKeeper's threads (share of its samples):"
    perf report -i "$T/perf.data" --no-children --sort comm --stdio -g none 2> /dev/null |
      awk '$1 ~ /%$/ { $1 = $1; print "small:   " $0 }' | head -20 || true
    echo "small: perf, ZooKeeper's functions with the largest own share:"
    perf report -i "$T/perf.data" --no-children --sort sym --stdio -g none 2> /dev/null |
      awk '$1 ~ /%$/ { $1 = $1; print "small:   " substr($0, 1, 160) }' | head -30 || true
  fi
  [ "$BENCH_PERF" = zk ] || echo "small: perf, the largest inclusive shares (BENCH_PERF=$BENCH_PERF):"
  comm=()
  [ "$BENCH_PERF" = droverd ] || comm=(--comm postgres)
  [ "$BENCH_PERF" = zk ] ||
    perf report -i "$T/perf.data" "${comm[@]}" --children --sort sym --stdio -g none 2> /dev/null |
    awk '$1 ~ /%$/ && $4 !~ /^0x/ { print "small:   " $1, $4 }' | head -50 || true # head's early close
fi
read -r zd1 zw1 zo1 < <(zk_by_client)
zk_by_path > "$T/zkpath1"
# droverd's requests per job by kind and path class, the largest first (ids written {}).
echo "small: droverd's ZooKeeper requests per job by kind and path:"
awk -v n="$N" 'NR == FNR { b[$1 " " $2] = $3; next } { d = $3 - b[$1 " " $2]; if (d > 0) printf "%.2f %s %s\n", d / n, $1, $2 }' \
  "$T/zkpath0" "$T/zkpath1" | sort -rn | head -40 | sed 's/^/small:   /'

# Whose ZooKeeper requests (live connections only: one that closed meanwhile is missed).
awk -v n="$N" -v d=$((zd1 - zd0)) -v w=$((zw1 - zw0)) -v o=$((zo1 - zo0)) 'BEGIN {
  printf "small: ZooKeeper requests per job by client: droverd %.1f, workers %.1f, others %.1f\n", d / n, w / n, o / n }'
hz=$(getconf CLK_TCK)
# CPU per job: what bounds the rate on a machine of this many cores, whatever else runs.
awk -v n="$N" -v hz="$hz" -v d=$((d1 - d0)) -v w=$((w1 - w0)) -v z=$((z1 - z0)) -v p=$((p1 - p0)) \
  -v b=$((b1 - b0)) -v cores="$(nproc)" 'BEGIN {
    t = d + w + z + p; ms = 1000 / hz / n
    printf "small: CPU per job %.1f ms (droverd %.1f, workers and plugins %.1f, ZooKeeper %.1f, PostgreSQL %.1f); the machine busy %.1f ms per job (others too); %d cores at this CPU per job: %.0f jobs/s at most\n",
      t * ms, d * ms, w * ms, z * ms, p * ms, b * ms, cores, (t > 0 ? cores * 1000 / (t * ms) : 0)
  }'
echo "small: load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
if [ -n "${BENCH_PG_STATEMENTS:-}" ]; then
  # PostgreSQL's statements during the N jobs, the largest total time first: per job, calls,
  # execution ms, rows, shared blocks dirtied and WAL bytes (pg_stat_statements; the bench's
  # own polls are among them, named by their text).
  echo "small: PostgreSQL statements per job (calls, exec ms, rows, blocks dirtied, WAL bytes; the largest exec time first):"
  psql_q "SELECT round(calls::numeric / $N, 2), round((total_exec_time / $N)::numeric, 3),
                 round(rows::numeric / $N, 1), round(shared_blks_dirtied::numeric / $N, 1),
                 round(wal_bytes::numeric / $N), left(regexp_replace(query, '\s+', ' ', 'g'), 110)
          FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT ${BENCH_PG_STATEMENTS_TOP:-30}" |
    sed 's/^/small:   /'
  psql_q "SELECT 'small: all statements per job: ' || round(sum(calls)::numeric / $N, 1) || ' calls, '
                 || round((sum(total_exec_time) / $N)::numeric, 2) || ' ms executing, '
                 || round(sum(wal_bytes)::numeric / $N) || ' WAL bytes' FROM pg_stat_statements"
fi
if [ -n "${BENCH_DEBUG:-}" ]; then
  # The workers' requests by kind and their takes' counters, per task taken and per job of 10
  # tasks (the warm-up and lone jobs included: the counters start with the worker).
  for w in 1 2 3 4; do
    kill "$(pid_of "sw-$w")" 2> /dev/null || true
    wait_exit "sw-$w" 60 > /dev/null || true
  done
  grep -h 'event=worker-stopped' "$T"/sw-*.log | awk '{
      for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "taken" || kv[1] ~ /^(zk|q)_/) v[kv[1]] += kv[2] }
    } END {
      printf "small: workers by kind, per task taken (%d tasks) and per 10 tasks:", v["taken"]
      for (k in v) if (k != "taken" && v["taken"] > 0) printf " %s=%.2f/%.1f", k, v[k] / v["taken"], 10 * v[k] / v["taken"]
      printf "\n" }'
fi
