#!/usr/bin/env bash
# Autoscaling by queue length (docs/operations.md): scripts/scaler follows the queue's
# recommended worker count. A burst of 2,002 sleep tasks (one cluster create of 286 nodes
# of template "single", 7 tasks a node) grows the fleet from --min, the backlog drains,
# and the fleet shrinks back to --min once idle, the workers drained by SIGTERM (they
# finish what they run). Every task succeeds once: no attempt lost, failed or run twice.
# Prints the figures for docs/benchmarks.md (peak workers, time to drain the burst).
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

NODES=${NODES:-286} SLEEP_MS=${SLEEP_MS:-100} MAX=${MAX:-6}
LOG_LEVEL=warn
start_droverd 1 "autoscale.target_wait = 2s" "autoscale.worker_slots = 4"
setup_tenant

# The workers' config (scripts/scaler adds node.id): tenant acme, the sleep plugins.
write_worker_conf scaled "worker.tenant = acme" "worker.plugin_dir = $DROVER_BUILD_DIR/plugins" \
  "worker.plugins = sleep,sleep-provider" "worker.concurrency = 4" "secrets.tenant_key_file = $(tenant_key_file acme)" \
  "log.level = warn"
sed -i "s/^zookeeper.session_timeout = 20s/zookeeper.session_timeout = $SESSION/" "$T/scaled.conf"
mkdir -p "$T/scaler"
setsid "$DROVER_SOURCE_DIR/scripts/scaler" --url "http://127.0.0.1:$PORT" --token "$TOKEN" \
  --conf "$T/scaled.conf" --dir "$T/scaler" --pid-dir "$T/pids" --worker "$BIN/drover-worker" \
  --min 1 --max "$MAX" --interval 1 --up-cooldown 2 --down-cooldown 5 >> "$T/scaler.log" 2>&1 < /dev/null &
echo $! > "$T/pids/scaler.pid"

state() { cat "$T/scaler/scaler.state" 2> /dev/null || true; }
# wait_state REGEX SECONDS
wait_state() { poll_until -e 0.2 "$2" scaler_in "$1" || fail "scaler state $(state), expected $1 after $2 s"; }
scaler_in() {
  state | grep -Eq "$1" && return 0
  [ -d "/proc/$(pid_of scaler)" ] || fail "the scaler exited: $(tail -5 "$T/scaler.log")"
  return 1
}
wait_state '^running=1 draining=0' 30
pass "scaler: one worker (--min) while idle"

body=$(jq -cn --argjson k "$NODES" --argjson c "$(sleep_config "{\"duration_ms\": $SLEEP_MS}")" \
  '{name: "burst", template: "single", nodes: $k, config: $c}')
t0=$(now_ms)
r=$(api POST /v1/clusters "$body")
expect 202 "$r" '' "create the burst"
JID=$(body_of "$r" | jq -r .job.id)
wait_job "$JID" succeeded 600
t1=$(now_ms)
peak=$(state | sed -n 's/.*peak=\([0-9]*\).*/\1/p')
tasks=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND status = 'succeeded'")
[ "$tasks" -ge 2000 ] || fail "only $tasks tasks succeeded"
bad=$(psql_q "SELECT count(*) FROM task_attempts WHERE job_id = $JID AND status <> 'succeeded'")
[ "$bad" = 0 ] || DROVER_KEEP_LOGS=${DROVER_KEEP_LOGS:-} fail "attempts not succeeded: $(psql_q "SELECT status, count(*) FROM task_attempts WHERE job_id = $JID GROUP BY 1")"
check_runs
[ "${peak:-0}" -ge $((MAX < 3 ? MAX : 3)) ] || fail "the fleet did not grow: peak $peak ($(grep -c worker-started "$T/scaler.log") started)"
pass "burst of $tasks tasks: the fleet grew to $peak workers, the backlog drained in $((t1 - t0)) ms, every task succeeded once"

t2=$(now_ms)
wait_state '^running=1 draining=0' 120
t3=$(now_ms)
drained=$(grep -c 'event=worker-exited' "$T/scaler.log" || true)
[ "$drained" -ge $((peak - 1)) ] || fail "$drained workers exited, expected $((peak - 1))"
! grep 'event=worker-exited' "$T/scaler.log" | grep -v 'status=0' | grep -q . ||
  fail "a drained worker exited badly: $(grep 'event=worker-exited' "$T/scaler.log" | grep -v 'status=0')"
! grep -q 'event=worker-died' "$T/scaler.log" || fail "a worker died: $(grep worker-died "$T/scaler.log")"
pass "idle: back to 1 worker $((t3 - t2)) ms after the job ended; $drained workers drained by SIGTERM, each exited 0"

kill -TERM "$(pid_of scaler)"
wait_exit scaler 60 > /dev/null || fail "the scaler did not stop in 60 s"
grep -q 'event=scaler-stopped' "$T/scaler.log" || fail "the scaler did not stop cleanly: $(tail -3 "$T/scaler.log")"
for f in "$T"/scaler/pids/*.pid; do
  [ -e "$f" ] && fail "a worker is left: $f"
done
pass "scaler stopped: its workers drained and gone"
echo "figures: nodes=$NODES tasks=$tasks sleep_ms=$SLEEP_MS max=$MAX peak=$peak drain_ms=$((t1 - t0)) shrink_ms=$((t3 - t2))"
