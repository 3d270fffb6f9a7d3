#!/usr/bin/env bash
# A worker cut off from ZooKeeper by a network that silently drops its packets, in the
# middle of a task: it must kill its plugin before the task can be given to anyone else
# (its claim is reported lost well before the server can expire its session). The task
# runs again on the other worker after the session expired, never at the same time (the
# plugin's record and flock), and the job succeeds.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

SESSION=6s
start_droverd 1
PPORT=$(free_port)
ZKPORT=${DROVER_ZK##*:}
# The stack's teardown stops a recorded pid only when its command line names the stack's
# directory (scripts/stack pid_alive), which a bare tcpproxy's does not, so it leaked after
# every run. Now it is named after the directory (exec -a, as scripts/stack names Patroni's
# proxies), so a test killed outright still has it stopped, and the EXIT trap stops it by pid.
# shellcheck disable=SC2016 # expanded by the inner bash
setsid bash -c 'exec -a "$0" "$1" "$2" "$3"' "$T/proxy" "$DROVER_BUILD_DIR/integration/engine/tcpproxy" \
  "$PPORT" "$ZKPORT" > "$T/proxy.log" 2>&1 < /dev/null &
PROXY=$!
echo "$PROXY" > "$T/pids/proxy.pid"
stop_proxy() {
  kill -CONT "$PROXY" 2> /dev/null || true
  kill -TERM "$PROXY" 2> /dev/null || true
  wait "$PROXY" 2> /dev/null || true
}
trap stop_proxy EXIT
CONCURRENCY=2
start_worker worker-1
sed -i "s/^zookeeper.hosts = .*/zookeeper.hosts = 127.0.0.1:$PPORT/" "$T/worker-1.conf"
kill -9 "$(pid_of worker-1)"; start_proc worker-1 "$BIN/drover-worker"
setup_tenant

# worker-1 alone takes node-1's create, which lasts long: cut while it runs.
victim=node-1/create
read -r _ JID <<< "$(create_cluster part 1 '{"duration_ms": 50, "durations": {"node-1/create": 15000}}')"
runs_on() { # JID TASK WORKER: the task is running on the worker
  [ "$(psql_q "SELECT worker FROM tasks WHERE job_id = $1 AND id = '$2' AND status = 'running'")" = "$3" ]
}
wait_until 60 "$victim to run on worker-1" runs_on "$JID" "$victim" worker-1
start_worker worker-2
sleep 1
t_cut=$(now_ms)
kill -USR1 "$PROXY"
wait_until 30 "worker-1 to notice it lost its claim" grep -q "event=claim-lost worker=worker-1 " "$T/worker-1.log"
t_lost=$(now_ms)
echo "worker-1 gave its claim up $((t_lost - t_cut)) ms after the cut (session timeout $SESSION)"
wait_job "$JID" succeeded 120
kill -USR2 "$PROXY"
again=$(awk -v t="$victim" '$2 == t && $5 == "ok" { print $3 }' "$RUNS/runs.log")
[ "$(echo "$again" | wc -w)" = 1 ] || fail "task $victim succeeded $(echo "$again" | wc -w) times: its first run was not killed"
[ "$again" -gt "$t_lost" ] || fail "task $victim ran again before worker-1 gave it up"
[ "$(psql_q "SELECT string_agg(worker || ':' || status, ',' ORDER BY started_at) FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")" = "worker-1:lost,worker-2:succeeded" ] ||
  fail "attempts of $victim: $(psql_q "SELECT string_agg(worker || ':' || status, ',') FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")"
check_runs
stop_proxy
[ ! -d "/proc/$PROXY" ] || fail "tcpproxy (pid $PROXY) still runs after its stop"
pass "a worker cut off silently killed its plugin $((t_lost - t_cut)) ms after the cut; the task ran again elsewhere afterwards"
