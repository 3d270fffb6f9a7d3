#!/usr/bin/env bash
# A worker meets queue items of a newer format than it reads (issue 33 item 6): "v" 3, as a
# newer droverd writes for newer workers, met by a worker of this build (an older worker
# joining a newer ring, a rollback of a worker). It must not drop them (their tasks would stay
# in flight on their owner for ever): it gives each claim back and passes the item over
# (event=task-item-too-new, counted as too_new), so that a worker that reads it takes it.
#
# No worker runs, so the job's first tasks wait in the queue; the owner hands the job over to
# nobody (SIGTERM). The test rewrites every item's "v" to 3 and starts worker-1: it must leave
# them all in the queue, unclaimed, and run nothing. Then the items are made readable again
# ("v" 2: a newer worker stands in by reading them) and a fresh worker and a droverd come:
# the job succeeds, every task ran once. Before the fix worker-1 dropped the items
# (event=bad-task-item, the items completed) and the job stalled.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

ZKCLI=/usr/share/zookeeper/bin/zkCli.sh

queued_job_orphaned toonew
queue_items
n=${#items[@]}
[ "$n" -ge 2 ] || fail "expected at least 2 queue items of job $JID, found $n"

# item_data PATH: an item's data (drover zk get prints "PATH  DATA").
item_data() {
  local d
  d=$(zk get "$1")
  echo "${d#"$1  "}"
}
# set_v V: every item's "v" set to V (its data otherwise as droverd wrote it).
set_v() {
  local i d
  for i in "${items[@]}"; do
    d=$(item_data "$i")
    [[ $d == *'"v":'* ]] || fail "item $i has no \"v\": $d"
    d=$(sed -E 's/"v":[0-9]+/"v":'"$1"'/' <<< "$d")
    [[ $d != *"'"* ]] || fail "item $i holds a quote zkCli cannot pass: $d"
    printf "set %s '%s'\n" "$i" "$d" | "$ZKCLI" -server "$DROVER_ZK" > "$T/zkcli.out" 2>&1 || true
    [ "$(item_data "$i")" = "$d" ] || fail "could not set item $i: $(tail -3 "$T/zkcli.out")"
  done
}
set_v 3

start_worker worker-1
# Met: left (task-item-too-new), or, as before the fix, dropped (bad-task-item).
met() { [ "$(grep -Ec "event=(task-item-too-new .* v=3 |bad-task-item)" "$T/worker-1.log" || true)" -ge "$n" ]; }
wait_until 60 "worker-1 to meet the $n items of version 3" met
count_items() {
  local c=0 s
  for s in $(zk ls "$Q/items"); do c=$((c + $(zk ls "$Q/items/$s" | grep -c . || true))); done
  echo "$c"
}
# Its claims given back: the claims are gone once their releases are answered.
unclaimed() { [ -z "$(zk ls "$Q/claims")" ]; }
wait_until 30 "worker-1 to give the claims back" unclaimed
[ "$(count_items)" = "$n" ] || fail "worker-1 dropped items: $(count_items) of $n left"
grep -q "event=bad-task-item" "$T/worker-1.log" && fail "worker-1 dropped an item of a newer format as a bad one"
grep -q "event=task-dropped" "$T/worker-1.log" && fail "worker-1 dropped a task"
grep -q "^$JID\\." "$RUNS/runs.log" 2> /dev/null && fail "worker-1 ran a task of an item it cannot read"
kill -TERM "$(pid_of worker-1)"
wait_exit worker-1 60 > /dev/null || fail "worker-1 did not stop"
grep -Eq "event=worker-stopped .* too_new=[1-9]" "$T/worker-1.log" || fail "worker-1 did not count the items too new"
[ "$(count_items)" = "$n" ] || fail "items lost when worker-1 stopped: $(count_items) of $n left"
pass "a worker left $n items of a newer format in the queue, unclaimed, and ran nothing"

# A worker that reads them: the items as a newer worker reads them, a fresh worker takes them.
set_v 2
start_droverd 2
PORT=${DPORTS[2]}
start_worker worker-2
wait_job "$JID" succeeded 120
check_runs
check_tree_clean
pass "a worker that reads them took the items: the job succeeded, every task ran once"
