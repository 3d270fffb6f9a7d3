#!/usr/bin/env bash
# engine_bench: the engine end to end on this machine (docs/benchmarks.md).
#
#   DROVER_BUILD_DIR=build-rel scripts/with-stack -- bench/engine/engine_bench.sh [what...]
#
# what: wide (10,000 noop tasks), big (hadoop-distributed, 10,000 nodes, 140,007 tasks),
# expand (one node onto a 9,999-node cluster), makespan (sleep tasks of random durations),
# resume (that 140,007-task create's owner killed mid-job: the next owner's reconciliation;
# BENCH_RESUME_NODES, default 10000, BENCH_RESUME_AT tasks done before the kill, default 10000),
# taskflow (the wide DAG's shape run by TaskFlow 5.0 with its ZooKeeper persistence on this
# stack's ZooKeeper: bench/peers/taskflow_wide.py; BENCH_TASKFLOW_CHAINS chains of five,
# default 2,000), failover (kill -9, then SIGTERM, of a running job's owner among this
# bench's three droverd: the new owner's first dispatch and the handover's lock, as
# integration/engine/failover.sh measures them; it restarts the droverd at log level info
# first, for their timestamps, so it goes last). A word may repeat: `wide taskflow wide
# taskflow failover` is bench/run peers, every figure from one stack in one run.
# Default: wide makespan (big and expand take minutes). BENCH_WARMUP and BENCH_PERF: below;
# BENCH_ZK_ACL: digest ACLs and per-tenant worker identities on.
#
# One ZooKeeper, three droverd, four workers. Throughput is tasks / (last task's end - first
# task's start), from the attempts recorded in PostgreSQL: queued to completed and recorded.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(wide makespan)

# resume reads the new owner's info lines (job-acquired, job-reconciled, job-resumed).
for w in "${what[@]}"; do [ "$w" != resume ] || LOG_LEVEL=info; done
echo "engine: durable $([ "${DROVER_DISK_SYNC:-1}" = 1 ] && echo yes || echo "no (--no-disk-sync)"), load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
LOG_LEVEL=${LOG_LEVEL:-warn}
# BENCH_ZK_ACL=1: digest ACLs on, every worker with its tenant's own identity
# (docs/zookeeper-tree.md "ACLs"), to compare with a run without (bench/run zk-acl).
acl=()
if [ -n "${BENCH_ZK_ACL:-}" ]; then
  (umask 077 && echo "drover:$(openssl rand -hex 16)" > "$T/zk.digest" &&
    echo "ops:$(openssl rand -hex 16)" > "$T/ops.digest")
  ZK_DROVERD_ID=$("$BIN/drover" key zk-id "$T/zk.digest")
  ZK_READERS=$("$BIN/drover" key zk-id "$T/ops.digest")
  acl=("zookeeper.digest_file = $T/zk.digest" "zookeeper.acl_readers = $ZK_READERS")
fi
for n in 1 2 3; do start_droverd "$n" "postgres.pool_size = 4" "${acl[@]}"; done
setup_tenant
catalogue_json "$FIXTURES" > "$T/coopr.json"
expect 200 "$(api POST /v1/import "@$T/coopr.json")" '' "import the Coopr catalogue"

workers() { # PLUGINS CONCURRENCY: four workers, replacing the earlier ones
  local w lvl
  for w in 1 2 3 4; do
    if [ -e "$T/pids/bw-$w.pid" ]; then
      kill "$(pid_of "bw-$w")" 2>/dev/null || true
      wait_exit "bw-$w" 30 > /dev/null || true
    fi
    # BENCH_DEBUG: info, for the workers' requests by kind in their event=worker-stopped
    lvl=$LOG_LEVEL
    [ -z "${BENCH_DEBUG:-}" ] || lvl=info
    LOG_LEVEL=$lvl WORKER_PLUGINS=$1 CONCURRENCY=$2 start_worker "bw-$w"
  done
}

# ZooKeeper's last zxid (its srvr four-letter word): transactions applied, within one epoch.
# (zk_requests, its requests received: testlib/engine.sh.)
zk_zxid() { printf '%d\n' "$(zk_4lw srvr | awk '$1 == "Zxid:" { print $2 }')"; }

# cpu_of NAME...: CPU time (user + system, clock ticks) of the processes whose pids the stack
# recorded under these names, with their live children and the children they reaped (the
# postmaster's backends). Sampled around a job, it says what each part of the stack costs per
# task whatever else the machine runs.
cpu_of() {
  local n p c t=0
  for n in "$@"; do
    p=$(cat "$T/pids/$n.pid" 2> /dev/null) || continue
    t=$((t + $(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$p/stat" 2> /dev/null || echo 0)))
    for c in $(pgrep -P "$p" || true); do
      t=$((t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2> /dev/null || echo 0)))
    done
  done
  echo "$t"
}
cpu_all() { # the stack's parts, in the order cpu_line prints them
  echo "$(cpu_of droverd-1 droverd-2 droverd-3) $(cpu_of bw-1 bw-2 bw-3 bw-4) $(cpu_of zk1) $(cpu_of pg)"
}
cpu_line() { # BEFORE AFTER TASKS
  local hz
  hz=$(getconf CLK_TCK)
  awk -v b="$1" -v a="$2" -v n="$3" -v hz="$hz" 'BEGIN {
    split(b, x, " "); split(a, y, " "); split("droverd workers zookeeper postgres", name, " ")
    for (i = 1; i <= 4; i++) { d = (y[i] - x[i]) / hz; tot += d; line = line sprintf(" %s %.2f s,", name[i], d) }
    printf "wide: CPU during the job:%s total %.2f s: %.3f ms per task (%.0f tasks/s if the job had both cores alone)\n",
      line, tot, tot * 1000 / n, tot ? n * 2 / tot : 0 }'
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

# Warm-up: a fresh ZooKeeper's JIT compiler (BENCH_PERF=all: "C2 CompilerThread") takes a
# quarter of this machine's CPU for its first seconds under load, which a server pays once in
# its life. BENCH_WARMUP jobs of 10,000 tasks first (default 5; 0 measures a cold ZooKeeper).
warmed=
warm_up() {
  [ -z "$warmed" ] || return 0
  local k wu
  for ((k = 1; k <= ${BENCH_WARMUP:-5}; k++)); do
    wu=$(jq -cn --arg n "warm-up-$k" '{name: $n, template: "single", nodes: 2000}')
    WAIT_JOB_POLL=1 wait_job "$(body_of "$(api POST /v1/clusters "$wu")" | jq -r .job.id)" succeeded 600
  done
  warmed=1
}

# BENCH_PERF=all: perf record -a around the measured job, then each process's share of the
# samples; BENCH_PERF=droverd (or worker): call graphs of the droverd (or drover-worker)
# processes, then the functions with the largest inclusive share. (perf must be installed;
# the bench does not install it. DROVER_KEEP_STACK=1 keeps $T/perf.data.)
perf_pid=
perf_start() {
  [ -n "${BENCH_PERF:-}" ] || return 0
  command -v perf > /dev/null || fail "BENCH_PERF needs perf"
  if [ "$BENCH_PERF" = droverd ]; then
    perf record -F 49 --call-graph dwarf,32768 -o "$T/perf.data" \
      -p "$(pid_of droverd-1),$(pid_of droverd-2),$(pid_of droverd-3)" > "$T/perf.out" 2>&1 &
  elif [ "$BENCH_PERF" = worker ]; then
    perf record -F 49 --call-graph dwarf,32768 -o "$T/perf.data" \
      -p "$(pid_of bw-1),$(pid_of bw-2),$(pid_of bw-3),$(pid_of bw-4)" > "$T/perf.out" 2>&1 &
  else
    perf record -a -F 199 -o "$T/perf.data" > "$T/perf.out" 2>&1 &
  fi
  perf_pid=$!
  sleep 1
}
perf_stop() { # LABEL
  [ -n "$perf_pid" ] || return 0
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  perf_pid=
  echo "$1: perf, share of the samples (BENCH_PERF=$BENCH_PERF):"
  if [ "$BENCH_PERF" != all ]; then
    perf report -i "$T/perf.data" --children --sort sym --stdio -g none 2> /dev/null |
      awk '$1 ~ /%$/ && $4 !~ /^0x/ { print "  " $1, $4 }' | head -40
  else
    perf report -i "$T/perf.data" --sort comm --stdio 2> /dev/null |
      awk '$1 ~ /%$/ { $1 = $1; print "  " $0 }' | head -12
  fi
}

# failover_and_handover: the two figures of integration/engine/failover.sh, on this bench's
# stack and load: kill -9 of a running job's owner to the new owner's first dispatch (target:
# the session timeout + 1 s), then SIGTERM of an owner to the lock taken by the next (issue
# 25: under 200 ms). Six-node `simple` jobs of 250 ms sleep tasks, so that the jobs run long
# enough to be caught.
log_ms() { # FILE EVENT JOB: the at_ms of the first line with event=EVENT job=JOB
  grep "event=$2 job=$3 " "$1" | head -n 1 | sed 's/.*at_ms=\([0-9]*\).*/\1/'
}
failover_and_handover() {
  local n old new jid first acq t_kill t_term
  # The droverd again, at level info: the events timed below are logged at info.
  unset PORT
  for n in 1 2 3; do
    kill -TERM "$(pid_of "droverd-$n")"
    wait_exit "droverd-$n" 30 > /dev/null || fail "droverd-$n did not stop"
    LOG_LEVEL=info start_droverd "$n" "postgres.pool_size = 4" "${acl[@]}"
  done
  workers sleep,sleep-provider 16
  read -r _ jid <<< "$(create_cluster f1 6 '{"duration_ms": 250}')"
  progressing "$jid" 12
  old=$(owner_of "$jid")
  for n in 1 2 3; do [ "droverd-$n" = "$old" ] || PORT=${DPORTS[$n]}; done
  t_kill=$(now_ms)
  kill -9 "$(pid_of "$old")"
  wait_job "$jid" succeeded 120
  new=$(owner_of "$jid")
  [ "$new" != "$old" ] || fail "failover: the owner did not change"
  first=$(log_ms "$T/$new.log" first-dispatch "$jid")
  [ -n "$first" ] || fail "failover: no first dispatch of $new for job $jid"
  echo "failover: kill -9 of the owner $old, first dispatch by $new after $((first - t_kill)) ms (session timeout $SESSION; load $(cut -d' ' -f1 /proc/loadavg))"
  LOG_LEVEL=info start_droverd "${old#droverd-}" "postgres.pool_size = 4" "${acl[@]}"
  read -r _ jid <<< "$(create_cluster f2 6 '{"duration_ms": 250}')"
  progressing "$jid" 12
  old=$(owner_of "$jid")
  for n in 1 2 3; do [ "droverd-$n" = "$old" ] || PORT=${DPORTS[$n]}; done
  t_term=$(now_ms)
  kill -TERM "$(pid_of "$old")"
  wait_job "$jid" succeeded 120
  new=$(owner_of "$jid")
  [ "$new" != "$old" ] || fail "handover: the owner did not change"
  acq=$(log_ms "$T/$new.log" job-acquired "$jid")
  [ -n "$acq" ] || fail "handover: no job-acquired of $new for job $jid"
  echo "handover: SIGTERM of the owner $old, $new acquired the job after $((acq - t_term)) ms (load $(cut -d' ' -f1 /proc/loadavg))"
}

wides=0
for w in "${what[@]}"; do
  case $w in
  wide)
    workers noop,noop-provider 64
    warm_up
    nodes=2000 # x 5 tasks (create, confirm, bootstrap, base install and configure) = 10,000
    wides=$((wides + 1))
    body=$(jq -cn --argjson k $nodes --arg n "wide-$wides" '{name: $n, template: "single", nodes: $k}')
    t0=$(now_ms)
    z0=$(zk_requests)
    x0=$(zk_zxid)
    c0=$(cpu_all)
    perf_start
    J=$(body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id)
    WAIT_JOB_POLL=1 wait_job "$J" succeeded 600
    t1=$(now_ms)
    z1=$(zk_requests)
    x1=$(zk_zxid)
    c1=$(cpu_all)
    perf_stop wide
    read -r n secs rate <<< "$(throughput "$J" | tr '|' ' ')"
    echo "wide: $n noop tasks in $secs s: $rate tasks/s end to end (request to succeeded: $((t1 - t0)) ms; load $(cut -d' ' -f1 /proc/loadavg))"
    if [ -n "${BENCH_DEBUG:-}" ]; then # requests per client: ZooKeeper's cons, by process
      hp=${DROVER_ZK%%,*}; hp=${hp%%/*}
      exec 9<> "/dev/tcp/${hp%:*}/${hp#*:}"; printf 'cons' >&9; cat <&9 > "$T/cons"; exec 9<&-
      ss -tnpH state established "( sport = :${hp#*:} or dport = :${hp#*:} )" > "$T/ss"
      python3 - "$T/cons" "$T/ss" <<'PY' >&2
import re, sys
procs = {}
for l in open(sys.argv[2]):
    f = l.split()
    m = re.search(r'"([^"]+)",pid=(\d+)', l)
    if m:
        procs[f[2].rsplit(":", 1)[1]] = "%s/%s" % (m.group(1), m.group(2))
for l in open(sys.argv[1]):
    m = re.search(r':(\d+)\[\d+\]\(.*recved=(\d+),sent=(\d+)', l)
    if m:
        print("%-24s recved %s sent %s" % (procs.get(m.group(1), m.group(1)), m.group(2), m.group(3)))
PY
      # Each worker's requests by kind per task it took (warm-up included): stopped here.
      for b in 1 2 3 4; do
        kill "$(pid_of "bw-$b")" 2> /dev/null || true
        wait_exit "bw-$b" 30 > /dev/null || true
        grep -h 'event=worker-stopped' "$T/bw-$b.log" | tail -1 |
          awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                 printf "bw-%s per task:", w; for (k in v) if (k ~ /^zk_/ && v["taken"] > 0)
                   printf " %s=%.3f", substr(k, 4), v[k] / v["taken"]; printf "\n" }' w="$b" >&2
      done
    fi
    echo "wide: ZooKeeper received $((z1 - z0)) requests: $(echo "scale=2; ($z1 - $z0) / $n" | bc) per task (every client, idle ones too)"
    echo "wide: ZooKeeper applied $((x1 - x0)) transactions: $(echo "scale=3; ($x1 - $x0) / $n" | bc) per task (zxid, one epoch)"
    cpu_line "$c0" "$c1" "$n"
    psql_q "SELECT t.action, a.status, count(*) FROM tasks t LEFT JOIN task_attempts a ON a.job_id = t.job_id AND a.task_id = t.id WHERE t.job_id = $J GROUP BY 1, 2 ORDER BY 1" | paste -sd" " >&2
    ;;
  big)
    workers noop,noop-provider 64
    warm_up
    sample_tree "$T/tree" &
    sampler=$!
    t0=$(now_ms)
    perf_start
    J=$(body_of "$(api POST /v1/clusters '{"name":"big","template":"hadoop-distributed","nodes":10000,"provider":"rackspace"}')" | jq -r .job.id)
    WAIT_JOB_POLL=1 wait_job "$J" succeeded 3600
    t1=$(now_ms)
    perf_stop big
    kill "$sampler" 2>/dev/null || true
    read -r n secs rate <<< "$(throughput "$J" | tr '|' ' ')"
    owner=$(psql_q "SELECT owner FROM jobs WHERE id = $J")
    echo "big: $n noop tasks in $secs s: $rate tasks/s end to end (request to succeeded: $((t1 - t0)) ms)"
    echo "big: peak RSS of the owner $owner: $(rss_of "$owner") kB; of the others: $(for d in 1 2 3; do echo -n "$(rss_of droverd-$d) "; done)kB"
    api_node=$(rss_of droverd-1)
    bytes=$(curl -s -o /dev/null -w '%{size_download}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs/$J")
    echo "big: one GET /v1/jobs/$J with its $n tasks: $bytes bytes; peak RSS of the node serving it $api_node -> $(rss_of droverd-1) kB"
    echo "big: largest znode data $(sort -n "$T/tree.data" | tail -1) bytes; longest children list $(sort -n "$T/tree.children" | tail -1)"
    # A small job on the 10,000-node cluster: what a job costs for the cluster's size alone
    # (loading, the nodes map, the final write of every node row). It once took minutes.
    CID=$(psql_q "SELECT cluster_id FROM jobs WHERE id = $J")
    t0=$(now_ms)
    J2=$(body_of "$(api POST "/v1/clusters/$CID/shrink" '{"nodes":1}')" | jq -r .job.id)
    WAIT_JOB_POLL=0.1 wait_job "$J2" succeeded 600
    echo "big: shrink of the 10,000-node cluster by one node ($(psql_q "SELECT count(*) FROM tasks WHERE job_id = $J2") tasks): $(($(now_ms) - t0)) ms from request to succeeded"
    ;;
  resume)
    # Reconciliation on resume (docs/engine.md) of a large job: the owner of a running
    # 140,007-task create is killed (-9) once BENCH_RESUME_AT tasks are done, its workers
    # running on. Measured on the next owner: from its lock (job-acquired at_ms) to reconciled
    # and resumed (its log lines), and to its first dispatch (its
    # drover_engine_tasks_dispatched_total moving, polled every 50 ms: the results the workers
    # recorded meanwhile step their tasks and the successors go out); the new owner's
    # multi-ops and PostgreSQL transactions and ZooKeeper's requests (every client, the
    # workers' too) from the kill to that dispatch; the new owner's peak RSS. Then the job to
    # its end. BENCH_RESUME_QUIET=1: the workers stop before the kill and start again once the
    # job is resumed, so that ZooKeeper's requests from the kill to resumed are the new
    # owner's alone (and the idle sessions' pings); with no result to step, the first
    # dispatch then waits for the workers and is not a figure of the resume.
    nodes=${BENCH_RESUME_NODES:-10000}
    workers noop,noop-provider 64
    body=$(jq -cn --argjson k "$nodes" '{name: "resume", template: "hadoop-distributed", nodes: $k, provider: "rackspace"}')
    t0=$(now_ms)
    J=$(body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id)
    at=${BENCH_RESUME_AT:-10000}
    poll_until -e 1 3600 done_at_least "$J" "$at" || fail "job $J: $at tasks not done in an hour"
    quiet=${BENCH_RESUME_QUIET:-}
    if [ -n "$quiet" ]; then
      for k in 1 2 3 4; do kill "$(pid_of "bw-$k")"; done
      for k in 1 2 3 4; do wait_exit "bw-$k" 120 > /dev/null || true; done
    fi
    old=$(owner_of "$J")
    declare -A d0 m0 p0
    for d in 1 2 3; do
      [ "droverd-$d" != "$old" ] || continue
      d0[$d]=$(metric "${DPORTS[d]}" drover_engine_tasks_dispatched_total)
      m0[$d]=$(metric "${DPORTS[d]}" drover_engine_zk_multis_total)
      p0[$d]=$(metric "${DPORTS[d]}" drover_engine_pg_transactions_total)
    done
    z0=$(zk_requests)
    kill -9 "$(pid_of "$old")"
    n_tasks=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $J")
    q=$(psql_q "SELECT count(*) FROM tasks WHERE job_id = $J AND status IN ('queued', 'running')")
    echo "resume: job $J, $n_tasks tasks, $(done_of "$J") done and $q queued or running when its owner $old was killed ($(($(now_ms) - t0)) ms after the request)"
    acquired() { grep -h "event=job-acquired job=$J " "$T"/droverd-*.log | grep -v "node=$old " | tail -n 1; }
    wait_until -e 0.05 600 "a new owner of job $J" acquired > /dev/null
    new=$(acquired | sed 's/.* node=\([^ ]*\) .*/\1/')
    t_lock=$(acquired | sed 's/.*at_ms=\([0-9]*\).*/\1/')
    nd=${new#droverd-}
    dispatched_new() { [ "$(metric "${DPORTS[nd]}" drover_engine_tasks_dispatched_total)" -gt "${d0[$nd]}" ]; }
    resumed() { grep -q "event=job-resumed job=$J " "$T/$new.log"; }
    t_disp=
    if [ -n "$quiet" ]; then
      wait_until -e 0.05 600 "$new to resume job $J" resumed
    else
      ! poll_until -e 0.05 600 dispatched_new || t_disp=$(now_ms)
    fi
    z1=$(zk_requests)
    m1=$(metric "${DPORTS[nd]}" drover_engine_zk_multis_total)
    p1=$(metric "${DPORTS[nd]}" drover_engine_pg_transactions_total)
    log_ms() { # EVENT: the new owner's log time of its line for job J, in ms
      date -d "$(grep -h "event=$1 job=$J " "$T/$new.log" | tail -n 1 | sed 's/^ts=\([^ ]*\) .*/\1/')" +%s%3N
    }
    echo "resume: $new took the lock $((t_lock - t0)) ms after the request; reconciled +$(($(log_ms job-reconciled) - t_lock)) ms, resumed +$(($(log_ms job-resumed) - t_lock)) ms, first dispatch +${t_disp:+$((t_disp - t_lock))} ms (polled)"
    grep -h "event=job-reconciled job=$J " "$T/$new.log" | tail -n 1 | sed 's/^.*event=job-reconciled/resume: reconciled:/'
    grep -h "event=job-resumed job=$J " "$T/$new.log" | tail -n 1 | sed 's/^.*event=job-resumed/resume: resumed:/'
    if [ -n "$quiet" ]; then
      echo "resume: from the kill to resumed (workers stopped): the new owner made $((m1 - m0[$nd])) multi-ops and $((p1 - p0[$nd])) PostgreSQL transactions; ZooKeeper received $((z1 - z0)) requests (the new owner's, and idle sessions' pings)"
    else
      echo "resume: from the kill to the first dispatch: the new owner made $((m1 - m0[$nd])) multi-ops and $((p1 - p0[$nd])) PostgreSQL transactions; ZooKeeper received $((z1 - z0)) requests (every client: the workers run on)"
    fi
    echo "resume: peak RSS of the new owner $new: $(rss_of "$new") kB (the third node: $(for d in 1 2 3; do [ "droverd-$d" = "$old" ] || [ "droverd-$d" = "$new" ] || echo -n "$(rss_of "droverd-$d") "; done)kB)"
    [ -z "$quiet" ] || workers noop,noop-provider 64
    WAIT_JOB_POLL=1 wait_job "$J" succeeded 3600
    echo "resume: job $J succeeded $(($(now_ms) - t0)) ms after the request"
    check_attempts
    ;;
  expand)
    # An expand by one node of a 9,999-node cluster: its start and end cost what the cluster's
    # size costs (loading, the new nodes' rows, the nodes map, the final write of every row).
    # Before 2026-11-23 both were quadratic and this job took 468 s.
    workers noop,noop-provider 64
    J=$(body_of "$(api POST /v1/clusters '{"name":"ex","template":"hadoop-distributed","nodes":9999,"provider":"rackspace"}')" | jq -r .job.id)
    WAIT_JOB_POLL=1 wait_job "$J" succeeded 3600
    CID=$(psql_q "SELECT cluster_id FROM jobs WHERE id = $J")
    t0=$(now_ms)
    perf_start
    J2=$(body_of "$(api POST "/v1/clusters/$CID/expand" '{"nodes":1}')" | jq -r .job.id)
    WAIT_JOB_POLL=0.1 wait_job "$J2" succeeded 1200
    t1=$(now_ms)
    perf_stop expand
    echo "expand: one node onto 9,999 ($(psql_q "SELECT count(*) FROM tasks WHERE job_id = $J2") tasks): $((t1 - t0)) ms from request to succeeded;" \
      "owner's start $(psql_q "SELECT round(extract(epoch FROM started_at - created_at) * 1000) FROM jobs WHERE id = $J2") ms after the request," \
      "final write at $(psql_q "SELECT round(extract(epoch FROM ended_at - created_at) * 1000) FROM jobs WHERE id = $J2") ms"
    ;;
  makespan)
    workers sleep,sleep-provider 16
    body=$(jq -cn --argjson c "$(sleep_config '{"duration_ms": 100, "jitter_ms": 400}')" \
      '{name: "ms", template: "simple", nodes: 12, config: $c}')
    J=$(body_of "$(api POST /v1/clusters "$body")" | jq -r .job.id)
    wait_job "$J" succeeded 600
    # The critical path: the longest chain of the plan, each task weighing what it took. With
    # one running task per node (max_per_node, docs/planner.md), a node's tasks also run one
    # after another, so the bound no schedule can beat is the larger of the critical path
    # and, for every node, the earliest its first task could start plus the time all its
    # tasks took.
    psql_q "SELECT t.idx, coalesce(extract(epoch FROM a.ended_at - a.started_at) * 1000, 0), t.deps,
                   coalesce(extract(epoch FROM a.started_at) * 1000, 0),
                   coalesce(extract(epoch FROM a.ended_at) * 1000, 0), coalesce(t.node_id, '')
            FROM tasks t LEFT JOIN task_attempts a ON a.job_id = t.job_id AND a.phase = t.phase
              AND a.task_id = t.id AND a.status = 'succeeded'
            WHERE t.job_id = $J AND t.phase = 'f' ORDER BY t.idx" > "$T/dag"
    python3 - "$T/dag" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
dur = {int(r[0]): float(r[1]) for r in rows}
deps = {int(r[0]): json.loads(r[2]) for r in rows}
start = {int(r[0]): float(r[3]) for r in rows}
end = {int(r[0]): float(r[4]) for r in rows}
node = {int(r[0]): r[5] for r in rows}
memo = {}
def finish(i):  # the earliest a task can end, by its dependencies alone
    if i not in memo:
        memo[i] = dur[i] + max([finish(d) for d in deps[i]] or [0])
    return memo[i]
cp = max(finish(i) for i in dur)
by_node = {}
for i in dur:
    if node[i] and dur[i]:
        by_node.setdefault(node[i], []).append(i)
node_bound = max((min(finish(i) - dur[i] for i in ts) + sum(dur[i] for i in ts), n)
                 for n, ts in by_node.items())
ran = [i for i in dur if start[i]]
makespan = max(end[i] for i in ran) - min(start[i] for i in ran)
bound = max(cp, node_bound[0])
print("makespan: %.0f ms, critical path %.0f ms (ratio %.3f), busiest node %s %.0f ms: "
      "makespan / max(both) = %.3f" % (makespan, cp, makespan / cp, node_bound[1], node_bound[0],
                                        makespan / bound))
# The engine's share, a hop: from the moment a task could start (its dependencies ended and
# its node's previous task too) to its plugin's start: the owner sees the outcome, dispatches,
# a worker claims, records and starts the plugin.
hops = []
for i in ran:
    before = [end[d] for d in deps[i] if end[d]]
    before += [end[j] for j in by_node.get(node[i], []) if j != i and start[j] and end[j] <= start[i]]
    if before:
        hops.append(start[i] - max(before))
hops.sort()
if hops:
    print("hop (ready to started), ms: median %.0f, p90 %.0f, max %.0f over %d tasks"
          % (hops[len(hops) // 2], hops[int(len(hops) * 0.9)], hops[-1], len(hops)))
PY
    ;;
  taskflow)
    /usr/bin/python3 -c 'import taskflow' 2> /dev/null ||
      fail "taskflow needs python3-taskflow (bench/run peers installs it)"
    /usr/bin/python3 "$here/../peers/taskflow_wide.py" --zk "${DROVER_ZK%%/*}" \
      --chains "${BENCH_TASKFLOW_CHAINS:-2000}" --zk-pid "$(cat "$T/pids/zk1.pid")" ;;
  failover) failover_and_handover ;;
  *) echo "engine_bench: unknown \"$w\"" >&2; exit 2 ;;
  esac
done
