#!/usr/bin/env bash
# A worker frozen (SIGSTOP) in the middle of a task, for longer than its ZooKeeper session
# (issue 22): its loop can neither notice the claim is lost nor kill anything, so its
# plugin's guard must, when the lease the loop no longer renews runs out, which is before
# the session can expire and the queue can give the item to the other worker. Checks: when
# the other worker takes the task, worker-1 (still frozen) has no plugin process alive;
# no two deliveries of the task overlapped (the sleep plugin's flock and its runs log);
# the job succeeds; the frozen attempt is recorded lost; and the frozen worker, once
# woken, logged event=lease-expired.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

SESSION=4s
start_droverd 1
CONCURRENCY=2
start_worker worker-1
setup_tenant

# worker-1 alone takes node-1's create, which lasts long: freeze it while it runs.
victim=node-1/create
read -r _ JID <<< "$(create_cluster frz 1 '{"duration_ms": 50, "durations": {"node-1/create": 12000}}')"
runs_on() { # JID TASK WORKER: the task is running on the worker
  [ "$(psql_q "SELECT worker FROM tasks WHERE job_id = $1 AND id = '$2' AND status = 'running'")" = "$3" ]
}
wait_until 60 "$victim to run on worker-1" runs_on "$JID" "$victim" worker-1
# (debug: its log says when it starts a plugin; the victim is the only task to start.)
LOG_LEVEL=debug start_worker worker-2
wait_until 30 "worker-2 to be ready" grep -q "event=worker-ready worker=worker-2 " "$T/worker-2.log"

# group_procs PID: "pid state" of each process in a process group led by a child of PID:
# the worker's guards and their plugins (/proc/PID/stat: pid, then after "(comm) " the
# state, ppid and pgrp). Through cat: a process may exit between the glob and the read.
group_procs() {
  cat /proc/[0-9]*/stat 2> /dev/null | awk -v w="$1" '{
      pid = $1; line = $0; sub(/^[0-9]+ \(.*\) /, "", line); split(line, f, " ")
      st[pid] = f[1]; pp[pid] = f[2]; pg[pid] = f[3]
    } END {
      for (p in pp) if (pp[p] == w) lead[p] = 1
      for (p in pg) if (pg[p] in lead) print p, st[p]
    }' || true
}
# live_plugin PID: a process of PID's plugin groups is alive (not a zombie).
live_plugin() { group_procs "$1" | grep -qv ' Z$'; }

W1=$(pid_of worker-1)
# (The run record is written before the plugin starts: wait for the plugin itself.)
wait_until 30 "worker-1's plugin to run" live_plugin "$W1"
# Whatever happens from here on, worker-1 does not stay stopped.
trap 'kill -CONT "$W1" 2> /dev/null || true' EXIT
kill -STOP "$W1"
t_stop=$(now_ms)
# The other worker takes the task once worker-1's session has expired (or, with a plugin
# left running, the sleep plugin's flock reports the overlap at once).
taken_again() {
  grep -q "event=task-started worker=worker-2 task=" "$T/worker-2.log" || [ -s "$RUNS/overlaps" ]
}
wait_until 60 "$victim to be taken by worker-2" taken_again
t_again=$(now_ms)
# Still frozen: nothing of worker-1's plugin may be alive (its guard is a zombie at most).
if live_plugin "$W1"; then
  procs=$(group_procs "$W1" | tr '\n' ' ')
  fail "worker-1's plugin still runs while worker-1 is frozen and $victim is taken again (pid state: $procs)"
fi
# Frozen for the session and a few seconds more, then woken.
sleep 3
kill -CONT "$W1"
echo "worker-1 was frozen for $(($(now_ms) - t_stop)) ms; worker-2 took $victim $((t_again - t_stop)) ms into it (session timeout $SESSION)"

wait_until 30 "worker-1 to log that its plugin's lease expired" \
  grep -q "event=lease-expired worker=worker-1 task=" "$T/worker-1.log"
grep "event=lease-expired" "$T/worker-1.log" | head -3
wait_job "$JID" succeeded 120
again=$(awk -v t="$victim" '$2 == t && $5 == "ok" { print $3 }' "$RUNS/runs.log")
[ "$(echo "$again" | wc -w)" = 1 ] || fail "task $victim succeeded $(echo "$again" | wc -w) times: its frozen run was not killed"
[ "$again" -gt "$t_stop" ] || fail "task $victim ran again before worker-1 was frozen"
rows=$(psql_q "SELECT string_agg(worker || ':' || status, ',' ORDER BY started_at) FROM task_attempts WHERE job_id = $JID AND task_id = '$victim'")
[ "$rows" = "worker-1:lost,worker-2:succeeded" ] || fail "attempts of $victim: $rows"
check_runs
check_tree_clean
pass "a worker frozen past its session lost its plugin to the lease; the task ran again elsewhere, never at the same time"
