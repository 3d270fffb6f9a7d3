#!/usr/bin/env bash
# pg_ha_bench: what PostgreSQL under Patroni costs and how long its failover stops the engine
# (docs/benchmarks.md, "PostgreSQL failover").
#
#   scripts/with-stack [--ha] -- bench/pg/pg_ha_bench.sh [throughput] [failover]
#
# throughput: tasks/s end to end of a wide job (400 nodes of `single`, 2,000 noop tasks) after
#   one warm-up job of the same size; with --ha every commit waits for the synchronous standby,
#   without it one durable server commits alone. bench/run pg-ha runs both, one after the other.
# failover (--ha only): jobs of sleep tasks run; kill -9 of the primary's Patroni and postgres;
#   prints the seconds from the kill to the first PostgreSQL write of the engine that succeeded
#   again (event=job-pg-write-resumed) and to the first task a worker started after that, and
#   the same through libpq's multi-host string and through HAProxy checking Patroni's /primary
#   (the first INSERT that succeeds through each, polled every 0.1 s).
#
# Three droverd, two workers (concurrency 32), the stack's servers syncing to disk unless
# with-stack was given --no-disk-sync.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(throughput)
mode=$([ "${DROVER_PG_HA:-0}" -gt 0 ] && echo "synchronous replication (${DROVER_PG_HA} servers under Patroni)" ||
  echo "one durable server")

LOG_LEVEL=info
for n in 1 2 3; do start_droverd "$n" "postgres.pool_size = 4"; done
setup_tenant
catalogue_json "$FIXTURES" > "$T/coopr.json"
expect 200 "$(api POST /v1/import "@$T/coopr.json")" '' "import the Coopr catalogue"
for w in 1 2; do WORKER_PLUGINS=noop,noop-provider,sleep,sleep-provider CONCURRENCY=32 start_worker "bw-$w"; done

wide() { # NAME: a 400-node create of `single` (2,000 noop tasks); prints its job id
  local body
  body=$(jq -cn --arg n "$1" '{name: $n, template: "single", nodes: 400}')
  body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id
}

# ts_ms LINE: the ts= of a log line, in ms since the epoch.
ts_ms() {
  local t=${1#ts=}
  echo $(($(date -d "${t%% *}" +%s%N) / 1000000))
}

for w in "${what[@]}"; do
  case $w in
  throughput)
    WAIT_JOB_POLL=1 wait_job "$(wide warm-up)" succeeded 600
    J=$(wide measured)
    t0=$(now_ms)
    WAIT_JOB_POLL=1 wait_job "$J" succeeded 600
    t1=$(now_ms)
    read -r n secs rate <<< "$(psql_q "SELECT count(*), round(extract(epoch FROM max(ended_at) - min(started_at))::numeric, 3),
      round((count(*) / extract(epoch FROM max(ended_at) - min(started_at)))::numeric)
      FROM task_attempts WHERE job_id = $J AND status = 'succeeded'" | tr '|' ' ')"
    echo "pg-ha throughput, $mode: $n noop tasks in $secs s: $rate tasks/s (request to succeeded $((t1 - t0)) ms)"
    ;;
  failover)
    [ "${DROVER_PG_HA:-0}" -gt 0 ] || fail "failover needs scripts/with-stack --ha"
    # HAProxy in TCP mode in front of the servers, checking each Patroni's /primary.
    hport=$(free_port)
    {
      echo "global"
      echo "  maxconn 200"
      echo "defaults"
      echo "  mode tcp"
      echo "  timeout connect 2s"
      echo "  timeout client 60s"
      echo "  timeout server 60s"
      echo "listen pg"
      echo "  bind 127.0.0.1:$hport"
      echo "  option httpchk GET /primary"
      echo "  http-check expect status 200"
      echo "  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions"
      for n in $(seq 1 "$DROVER_PG_HA"); do
        read -r pg rest < "$T/pg$n.ports"
        echo "  server pg$n 127.0.0.1:$pg check port $rest"
      done
    } > "$T/haproxy-pg.cfg"
    setsid haproxy -db -f "$T/haproxy-pg.cfg" > "$T/haproxy-pg.log" 2>&1 < /dev/null &
    echo $! > "$T/pids/haproxy-pg.pid"
    via_haproxy="host=127.0.0.1 port=$hport dbname=drover user=drover connect_timeout=2"
    wait_until 30 "HAProxy to reach the primary" psql "$via_haproxy" -qAtXc 'SELECT 1'
    psql_q "CREATE TABLE IF NOT EXISTS bench_probe (via text, at timestamptz DEFAULT clock_timestamp())"
    # Jobs of sleep tasks, running when the primary dies.
    read -r _ J1 <<< "$(create_cluster f1 6 '{"duration_ms": 3000}')"
    for k in 2 3; do create_cluster "f$k" 6 '{"duration_ms": 3000}' > /dev/null; done
    wait_until 120 "tasks to be done" done_at_least "$J1" 2
    P=$(pg_primary)
    done_at_kill=$(psql_q "SELECT count(*) FROM tasks WHERE status = 'succeeded'")
    t_kill=$(now_ms)
    pg_kill "$P"
    # The first INSERT that succeeds through each way in, each polled every 0.1 s.
    probe_until() { # NAME CONNINFO: prints the ms from the kill to the first INSERT that succeeded
      until psql "$2" -qAtXc "INSERT INTO bench_probe (via) VALUES ('$1')" > /dev/null 2>&1; do sleep 0.1; done
      echo $(($(now_ms) - t_kill))
    }
    probe_until libpq "$DROVER_PG" > "$T/probe.libpq" &
    p1=$!
    probe_until haproxy "$via_haproxy" > "$T/probe.haproxy" &
    p2=$!
    poll_until 120 pg_primary_is_not "$P" || fail "no new primary in 120 s"
    t_promoted=$(now_ms)
    wait "$p1" "$p2"
    printf 'pg-ha failover: kill -9 of pg%s; Patroni said primary after %.1f s; first INSERT through libpq multi-host %.1f s, through HAProxy on /primary %.1f s\n' \
      "$P" "$(echo "($t_promoted - $t_kill) / 1000" | bc -l)" "$(echo "$(cat "$T/probe.libpq") / 1000" | bc -l)" \
      "$(echo "$(cat "$T/probe.haproxy") / 1000" | bc -l)"
    # The engine's first PostgreSQL write that succeeded after the kill: a round's batch
    # again (job-pg-write-resumed) or a final write (job-finished).
    resumed=""
    engine_wrote() {
      local f l ms
      for f in "$T"/droverd-*.log; do
        while read -r l; do
          ms=$(ts_ms "$l")
          [ "$ms" -gt "$t_kill" ] || continue
          if [ -z "$resumed" ] || [ "$ms" -lt "$resumed" ]; then resumed=$ms; fi
          break
        done < <(grep -h 'event=job-pg-write-resumed\|event=job-finished' "$f")
      done
      [ -n "$resumed" ]
    }
    wait_until 120 "an engine write to succeed again" engine_wrote
    first_task=""
    next_task() {
      first_task=$(psql_q "SELECT (extract(epoch FROM min(started_at)) * 1000)::bigint FROM task_attempts
        WHERE started_at >= to_timestamp($resumed / 1000.0)")
      [ -n "$first_task" ]
    }
    wait_until 120 "a task to start after the engine wrote again" next_task
    printf 'pg-ha failover: first engine write again %.1f s after the kill; first task started after it %.1f s after the kill (%s tasks were done at the kill)\n' \
      "$(echo "($resumed - $t_kill) / 1000" | bc -l)" "$(echo "($first_task - $t_kill) / 1000" | bc -l)" "$done_at_kill"
    for J in $(psql_q "SELECT id FROM jobs WHERE status NOT IN ('succeeded') ORDER BY id"); do
      WAIT_JOB_POLL=1 wait_job "$J" succeeded 300
    done
    echo "pg-ha failover: every job succeeded"
    ;;
  *) fail "unknown benchmark \"$w\"" ;;
  esac
done
