#!/usr/bin/env bash
# A worker cut from ZooKeeper while its plugin runs (docs/operations.md "When the network
# fails"): its lease on the claim runs out before the server can expire its session, so it
# kills the plugin (event=claim-lost) before the task can be given to anyone else; worker-2
# runs the task again after that, never at the same time (the plugin's record and flock), and
# the job succeeds. The attempts say so: worker-1's lost, worker-2's succeeded.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=6s
CONCURRENCY=2
start_droverd 1
setup_tenant
start_worker worker-1
victim=node-1/create
read -r _ JID <<< "$(create_cluster part 1 '{"duration_ms": 50, "durations": {"node-1/create": 15000}}')"
runs_on() { [ "$(psql_q "SELECT worker FROM tasks WHERE job_id = $1 AND id = '$2' AND status = 'running'")" = "$3" ]; }
wait_until 60 "$victim to run on worker-1" runs_on "$JID" "$victim" worker-1
start_worker worker-2
t_cut=$(now_ms)
nf cut worker-1 zk1 > /dev/null
wait_until 30 "worker-1 to give its claim up" grep -q "event=claim-lost worker=worker-1 " "$T/worker-1.log"
t_lost=$(now_ms)
wait_job "$JID" succeeded 120
nf heal > /dev/null
again=$(awk -v t="$victim" '$2 == t && $5 == "ok" { print $3 }' "$RUNS/runs.log")
[ "$(echo "$again" | wc -w)" = 1 ] || fail "task $victim succeeded $(echo "$again" | wc -w) times: its first run was not killed"
[ "$again" -gt "$t_lost" ] || fail "task $victim ran again before worker-1 gave it up"
att=$(psql_q "SELECT string_agg(worker || ':' || status, ',' ORDER BY started_at) FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")
[ "$att" = "worker-1:lost,worker-2:succeeded" ] || fail "attempts of $victim: $att"
check_runs
check_tree_clean
pass "worker-1, cut from ZooKeeper, killed its plugin $((t_lost - t_cut)) ms after the cut (session $SESSION); the task ran again on worker-2 afterwards, once"
